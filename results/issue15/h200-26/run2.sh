#!/bin/bash
# Issue 15, session 26, helper H5, run 2 (one device command on the H200): run 1's profile
# less its GEMV, transposes and 1024³ GEMM classes (prune.py) re-tuned with batch timing
# (`liftkit blas tune --seed H100 --timing batch`), benchmarks/blas_cuda.py per call beside
# cuBLAS with the result; then the OpenCL backend's profile of the same card seeded by the
# shipped OpenCL H100 profile (GEMM NN, 128/512/1024) and `liftkit blas bench` on it.
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/h200-26/run2.sh
# CAP (s, default 250) bounds the whole; each phase has its own deadline inside it.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-h200-26}
OUT=${OUT:-.}; CAP=${CAP:-250}; HERE=results/issue15/h200-26
PROF=/tmp/lk-h200-26-prof; rm -rf "$PROF"; mkdir -p "$PROF" "$OUT"
start=$(date +%s)
now() { echo $(( $(date +%s) - start )); }
stamp() { echo "== $1 at $(now) s" | tee -a $OUT/card.txt; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true) > $OUT/card.txt
if [ -n "$REQUIRE" ] && ! grep -q "$REQUIRE" $OUT/card.txt; then
    cat $OUT/card.txt; echo "not an $REQUIRE: stopping (this run tunes that card)"; exit 3
fi
python3 $HERE/prune.py $HERE/run1/profile-dc1c1a649d0d8e1d.json $PROF/profile-dc1c1a649d0d8e1d.json
run_until() {  # DEADLINE LOG CMD...: CMD bounded by DEADLINE (s from the start), output to LOG
    local end=$1 log=$2; shift 2
    local left=$(( end - $(now) ))
    if [ $left -lt 10 ]; then echo "skipped (no time left): $*" | tee -a $OUT/$log; return; fi
    stamp "$*"
    LIFTKIT_BLAS_PROFILES=$PROF timeout -k 5 $left "$@" 2>&1 | grep -v Warning | cut -c1-260 >> $OUT/$log
    echo "rc $? ($*)" | tee -a $OUT/$log
}
T="python3 -m liftkit blas tune --device gpu --no-progress --seed H100 --timing batch"
run_until 125 tune.log $T --ops gemv --classes large,huge
run_until 125 tune.log $T --ops transpose --dtypes float32,float64 --classes large,huge
run_until 125 tune.log $T --ops mm --dtypes float32 --layouts NN,TN --classes large
run_until 125 tune.log $T --ops mm --dtypes float64,complex64,complex128 --classes large
grep -E "measurements in|seeded by" $OUT/tune.log
run_until 170 tuned.log python3 benchmarks/blas_cuda.py --sizes 1024,4096 \
    --odd 1000x1000x1000,1023x1025x999 --gemv 4096,8192 --transpose 4096,8192 --repeat 20 \
    --out $OUT/tuned.json
run_until 225 opencl.log $T --backend opencl --ops mm --layouts NN --classes small,medium,large --fresh
run_until $(( CAP - 5 )) opencl.log python3 -m liftkit blas bench --device gpu --backend opencl \
    --ops gemm --sizes 512,1024 --dtypes float32,float64,complex64,complex128
cp $PROF/profile-*.json $OUT/
stamp end
