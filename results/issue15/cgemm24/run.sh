#!/bin/bash
# Session 24 (helper H2): CGEMM on the complex FFMA tiles (ctiles-async) and the shipped real
# plan beside cuBLAS, per call in alternating rounds, every candidate checked first; the GPU
# tests of the codelet. Sources from `git archive HEAD` in .clean-h2 (see README.md).
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue15/cgemm24/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-cgemm24
OUT=${OUT:-.}
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-90} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_ctiles_async.py 2>&1 | tail -20 | tee $OUT/tests.log
timeout ${T_BENCH:-320} python3 results/issue15/cgemm24/bench_cgemm.py \
    --jsonl $OUT/rows.jsonl 2>&1 | tee $OUT/bench.log
echo "bench rc $?"
