#!/bin/bash
# Issue 15, session 26, helper H5: the H200's CUDA profile, seeded by the shipped H100 one
# (`liftkit blas tune --seed H100`: the H100's 4 fastest class variants per operation, dtype,
# layout and size class, re-measured here, then the tuner's usual follow-ups), then
# benchmarks/blas_cuda.py per call beside cuBLAS with that profile and with none (the untuned
# defaults the H200 ran before). One device command:
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/h200-26/run.sh
# CAP (s, default 400) bounds the whole; the tuning ends by CAP - RESERVE (default 135);
# REQUIRE=H200 stops at once on another card.
# Dry run on the CPU device (tuning only): DEV=cpu SEED=FILE LARGE=small HUGE=medium BENCH=0
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-h200-26}
OUT=${OUT:-.}; CAP=${CAP:-400}; RESERVE=${RESERVE:-135}; DEV=${DEV:-gpu}; SEED=${SEED:-H100}
LARGE=${LARGE:-large}; HUGE=${HUGE:-huge}; BENCH=${BENCH:-1}
PROF=${PROF:-/tmp/lk-h200-26-prof}; EMPTY=/tmp/lk-h200-26-none
rm -rf "$PROF" "$EMPTY"; mkdir -p "$PROF" "$EMPTY" "$OUT"
start=$(date +%s)
now() { echo $(( $(date +%s) - start )); }
stamp() { echo "== $1 at $(now) s" | tee -a $OUT/card.txt; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true) > $OUT/card.txt
python3 - >> $OUT/card.txt 2>&1 <<'PY'
from liftkit.blas.session import Session
for backend in ("cuda", "opencl"):
    try:
        s = Session("gpu", backend=backend, warn=False)
        print(f"{backend}: fingerprint {s.device.fingerprint!r}, label {s.device.label!r}")
    except Exception as err:  # noqa: BLE001 - report and go on
        print(f"{backend}: {type(err).__name__}: {err}")
PY
cat $OUT/card.txt
if [ -n "$REQUIRE" ] && ! grep -q "$REQUIRE" $OUT/card.txt; then
    echo "not an $REQUIRE: stopping (this run tunes that card)"; exit 3
fi
# the tuning: GEMV and transposes first (cheap), then every GEMM's 1024 class, then 4096's;
# float32 NT is left to the default (the nn plan), as the H100 profile leaves it
tune() {  # ARGS...: one `liftkit blas tune` into $PROF, bounded by what is left of the tuning
    local left=$(( CAP - RESERVE - $(now) ))
    if [ $left -lt 10 ]; then echo "skipped (no time left): $*" | tee -a $OUT/tune.log; return; fi
    stamp "tune $*"
    LIFTKIT_BLAS_PROFILES=$PROF timeout -k 5 $left python3 -m liftkit blas tune --device $DEV --no-progress \
        --seed "$SEED" "$@" 2>&1 | grep -v Warning >> $OUT/tune.log
    echo "tune rc $? ($*)" | tee -a $OUT/tune.log
}
tune --ops gemv --classes $LARGE,$HUGE --fresh
tune --ops transpose --dtypes float32,float64 --classes $LARGE,$HUGE
tune --ops mm --dtypes float32 --layouts NN,TN --classes $LARGE
tune --ops mm --dtypes float64,complex64,complex128 --classes $LARGE
tune --ops mm --dtypes float32 --layouts NN,TN --classes $HUGE
tune --ops mm --dtypes float64,complex64,complex128 --classes $HUGE
stamp "tuning done"
grep -E "measurements in|seeded by|peak|copy bandwidth|compute queues" $OUT/tune.log
cp $PROF/profile-*.json $OUT/ 2>/dev/null
[ "$BENCH" = 1 ] || exit 0
bench() {  # NAME PROFILES ARGS...: benchmarks/blas_cuda.py with that profile directory
    local name=$1 dir=$2; shift 2
    local left=$(( CAP - 5 - $(now) ))
    if [ $left -lt 20 ]; then echo "$name: skipped (no time left)" | tee -a $OUT/$name.log; return; fi
    stamp "bench $name"
    LIFTKIT_BLAS_PROFILES=$dir timeout -k 5 $left python3 benchmarks/blas_cuda.py "$@" \
        --out $OUT/$name.json 2>&1 | grep -v Warning | cut -c1-260 > $OUT/$name.log
    echo "bench rc $?" >> $OUT/$name.log
}
bench tuned $PROF --sizes 1024,4096 --odd 1000x1000x1000,1023x1025x999 --gemv 4096,8192 \
    --transpose 4096,8192 --repeat 20
bench untuned $EMPTY --sizes 1024,4096 --odd "" --gemv 4096,8192 --transpose 4096,8192 --repeat 10
stamp end
