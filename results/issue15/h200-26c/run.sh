#!/bin/bash
# Issue 15, session 26, helper H13 (one device command on the H200): the shipped H200 CUDA
# profile less the classes the H100's later winners touch (prune.py: GEMV float32/float64 N/T
# 4096²/8192² with the p=1 and h=1 forms; ZGEMM NN/NT/TN 4096³ on zmma / real on mma lines=3;
# the odd-size follow-ups of ZGEMM 1024³ (edge-zmma) and CGEMM 4096³ (swizzled guarded complex
# tiles at 4097x4095²)) re-tuned with `liftkit blas tune --seed H100 --timing batch`, then
# benchmarks/blas_cuda.py as results/final26/run.sh runs it (less --big 8192), with the
# refreshed profile.
#   source .device-kit/setup.sh && OUT=DIR REQUIRE=H200 bash results/issue15/h200-26c/run.sh
# CAP (s, default 215) bounds the whole; the tuning ends by TUNE_END (default 125 s).
# Dry run on the CPU device (tuning only, the same flags): DEV=cpu SEED=FILE CLASSES=small
#   ODDCLS=small BENCH=0 SHIPPED=<the CPU profile> (the seed: a profile of the tuned device's kind)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-h200-26c}
OUT=${OUT:-.}; CAP=${CAP:-215}; TUNE_END=${TUNE_END:-125}; DEV=${DEV:-gpu}; SEED=${SEED:-H100}
CLASSES=${CLASSES:-large,huge}; ZCLS=${ZCLS:-huge}; ZODD=${ZODD:-large}; CODD=${CODD:-huge}
BENCH=${BENCH:-1}
HERE=results/issue15/h200-26c
SHIPPED=${SHIPPED:-src/liftkit/blas/profiles/profile-dc1c1a649d0d8e1d.json}
PROF=${PROF:-/tmp/lk-h200-26c-prof}; rm -rf "$PROF"; mkdir -p "$PROF" "$OUT"
start=$(date +%s)
now() { echo $(( $(date +%s) - start )); }
stamp() { echo "== $1 at $(now) s" | tee -a $OUT/card.txt; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true) > $OUT/card.txt
cat $OUT/card.txt
if [ -n "$REQUIRE" ] && ! grep -q "$REQUIRE" $OUT/card.txt; then
    echo "not an $REQUIRE: stopping (this run tunes that card)"; exit 3
fi
python3 $HERE/prune.py prune "$SHIPPED" "$PROF/$(basename "$SHIPPED")" | tee -a $OUT/card.txt || exit 4
run_until() {  # DEADLINE LOG CMD...: CMD bounded by DEADLINE (s from the start), output to LOG
    local end=$1 log=$2; shift 2
    local left=$(( end - $(now) ))
    if [ $left -lt 10 ]; then echo "skipped (no time left): $*" | tee -a $OUT/$log; return; fi
    stamp "$*"
    LIFTKIT_BLAS_PROFILES=$PROF timeout -k 5 $left "$@" 2>&1 | grep -v Warning | cut -c1-300 >> $OUT/$log
    echo "rc $? ($*)" | tee -a $OUT/$log
}
T="python3 -m liftkit blas tune --device $DEV --no-progress --timing batch"
S="$T --seed $SEED"
run_until $TUNE_END tune.log $S --seed-top 8 --ops gemv --dtypes float32,float64 --classes $CLASSES
run_until $TUNE_END tune.log $S --ops mm --dtypes complex128 --classes $ZCLS --edges on
run_until $TUNE_END tune.log $S --ops mm --dtypes complex128 --classes $ZODD --edges on
run_until $TUNE_END tune.log $S --ops mm --dtypes complex64 --classes $CODD --edges on
stamp "tuning done"
grep -E "measurements in|seeded by" $OUT/tune.log
cp $PROF/profile-*.json $OUT/
[ "$BENCH" = 1 ] || exit 0
run_until $(( CAP - 3 )) bench.log python3 benchmarks/blas_cuda.py --sizes 1024,4096 \
    --odd 1000x1000x1000,1023x1025x999,4097x4095x4095 --gemv 4096,8192 --transpose 4096,8192 \
    --repeat 20 --jsonl $OUT/gemm.jsonl --out $OUT/bench.json
stamp end
