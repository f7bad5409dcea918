#!/bin/bash
# Session 24 (helper H2), run 2: CGEMM NT and TN on ctiles-async with the transposed operand
# tiled as stored (kt=1: coalesced 8-byte copies; NT with Bᵀ's rows rotated, rot=1) beside
# the real plan and cuBLAS, per call in alternating rounds, every candidate checked first.
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue15/cgemm24/run2.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-cgemm24
OUT=${OUT:-.}
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
T=tm=128,tn=64,tk=16,rm=8,rn=4,stages=2,kt=1
timeout ${T_BENCH:-120} python3 results/issue15/cgemm24/bench_cgemm.py --layouts NT,TN --top 2 \
    --cand "NT=ctiles-async($T,rot=1)" --cand "NT=ctiles-async($T)" \
    --cand "NT=ctiles-async(tm=64,tn=64,tk=16,rm=4,rn=8,stages=2,kt=1,rot=1)" \
    --cand "TN=ctiles-async($T)" --cand "TN=ctiles-async(tm=64,tn=32,tk=16,rm=8,rn=4,stages=2,kt=1)" \
    --cand "TN=ctiles-async(tm=64,tn=64,tk=16,rm=4,rn=8,stages=2,kt=1)" \
    --jsonl $OUT/rows.jsonl 2>&1 | tee $OUT/bench.log
echo "bench rc $?"
timeout ${T_TEST:-45} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_ctiles_async.py 2>&1 | tail -20 | tee $OUT/tests.log
