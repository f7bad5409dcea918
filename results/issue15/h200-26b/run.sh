#!/bin/bash
# Issue 15, session 26, helper H10 (one device command on the H200): the shipped H200 CUDA
# profile less the classes other helpers' H100 work changed (prune.py: DGEMM NN/TN, GEMV
# float32/float64, the float32/float64 transposes, the split-size follow-ups of SGEMM/CGEMM NN
# at 1023x1025x999) re-tuned with `liftkit blas tune --timing batch` (seeded by the H100 profile
# except the transposes, explored in full: the 64-wide tiles are new), then benchmarks/blas_cuda.py
# as results/final25/run.sh runs it, with the refreshed profile, plus the old DGEMM choices
# again (--alt) in the same process.
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/h200-26b/run.sh
# CAP (s, default 310) bounds the whole; the tuning ends by TUNE_END (default 165 s).
# REQUIRE=H200 stops at once on another card.
# Dry run on the CPU device (tuning only, the same flags): DEV=cpu SEED=FILE CLASSES=small
#   BENCH=0 SHIPPED=<the CPU profile> (the seed must be a profile of the tuned device's kind)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-h200-26b}
OUT=${OUT:-.}; CAP=${CAP:-310}; TUNE_END=${TUNE_END:-165}; DEV=${DEV:-gpu}; SEED=${SEED:-H100}
CLASSES=${CLASSES:-large,huge}; ODD=${ODD:-large}; BENCH=${BENCH:-1}
HERE=results/issue15/h200-26b
SHIPPED=${SHIPPED:-src/liftkit/blas/profiles/profile-dc1c1a649d0d8e1d.json}
PROF=${PROF:-/tmp/lk-h200-26b-prof}; rm -rf "$PROF"; mkdir -p "$PROF" "$OUT"
start=$(date +%s)
now() { echo $(( $(date +%s) - start )); }
stamp() { echo "== $1 at $(now) s" | tee -a $OUT/card.txt; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true) > $OUT/card.txt
cat $OUT/card.txt
if [ -n "$REQUIRE" ] && ! grep -q "$REQUIRE" $OUT/card.txt; then
    echo "not an $REQUIRE: stopping (this run tunes that card)"; exit 3
fi
git rev-parse --short HEAD 2>/dev/null >> $OUT/card.txt
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
run_until $TUNE_END tune.log $S --ops mm --dtypes float64 --layouts NN,TN --classes $CLASSES
run_until $TUNE_END tune.log $S --ops mm --dtypes float32,complex64 --layouts NN --classes $ODD
run_until $TUNE_END tune.log $T --ops transpose --dtypes float32,float64 --classes $CLASSES
run_until $TUNE_END tune.log $S --seed-top 8 --ops gemv --dtypes float32,float64 --classes $CLASSES
stamp "tuning done"
grep -E "measurements in|seeded by" $OUT/tune.log
cp $PROF/profile-*.json $OUT/
[ "$BENCH" = 1 ] || exit 0
# the old DGEMM choices (the shipped profile's) at 1024 and 4096, timed again in the same process
OLD_NN_1024="mma(ahead=2,group=4,ik=8,lines=1,staged=3,tk=16,tm=128,tn=64,warps=4)"
OLD_TN_1024="mma(ahead=2,ik=8,lines=1,staged=4,tk=16,tm=64,tn=64,warps=4)"
OLD_NN_4096="mma(ahead=2,group=4,ik=8,lines=1,staged=4,tk=16,tm=128,tn=64,warps=4)"
OLD_TN_4096="mma(ahead=2,group=8,ik=8,lines=1,staged=4,tk=16,tm=128,tn=64,warps=4)"
run_until $(( CAP - 3 )) bench.log python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --odd 1000x1000x1000,1023x1025x999,4097x4095x4095 --gemv 4096,8192 --transpose 4096,8192 \
    --repeat 20 --alt "float64/NN@1024=$OLD_NN_1024" --alt "float64/TN@1024=$OLD_TN_1024" \
    --alt "float64/NN@4096=$OLD_NN_4096" --alt "float64/TN@4096=$OLD_TN_4096" \
    --jsonl $OUT/gemm.jsonl --out $OUT/bench.json
stamp end
