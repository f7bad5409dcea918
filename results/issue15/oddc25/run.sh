#!/bin/bash
# Issue 15, complex GEMMs at odd sizes on the complex kernels (session 25, helper H7): every row
# of oddc25.py beside cuBLAS, then the GPU tests of tests/blas/test_odd_complex.py.
# From a clean checkout whose results/issue15/oddc25/kernels.pkl was built by `oddc25.py --build`
# from the same sources (carry .device-kit .device-extra .clean-h7):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/oddc25/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-oddc25}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-100} python3 "$here/oddc25.py" --out "$OUT" --kernels "$here/kernels.pkl" \
    --rounds ${ROUNDS:-5} ${ODD_ARGS:-} 2>&1 | tee "$OUT/stdout.log" | cut -c1-250 | tail -40
echo "== oddc25 rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-60} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_odd_complex.py 2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
