#!/bin/bash
# Issue 15, CGEMM at odd sizes on the swizzled guarded complex tiles (session 26, helper H2):
# every row of oddc26.py beside cuBLAS, then the GPU tests of test_oddc26.py and
# test_odd_complex.py. From a clean checkout whose results/issue15/oddc26/kernels.pkl was built
# by `oddc26.py --build` from the same sources (carry .device-kit .device-extra .clean-h2):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/oddc26/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-oddc26}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-100} python3 "$here/oddc26.py" --out "$OUT" --kernels "$here/kernels.pkl" \
    --rounds ${ROUNDS:-5} 2>&1 | tee "$OUT/stdout.log" | cut -c1-250 | tail -40
echo "== oddc26 rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-60} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_oddc26.py tests/blas/test_odd_complex.py 2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
