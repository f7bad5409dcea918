#!/bin/bash
# Issue 15, SGEMM 1023x1025x999 on narrow guarded tiles (session 25, helper H10): every row of
# odd25b.py beside cuBLAS, then the GPU tests of tests/blas/test_odd_sgemm.py.
# From a clean checkout whose results/issue15/odd25b/kernels.pkl.gz was built by `odd25b.py --build`
# from the same sources (carry .device-kit .device-extra .clean-h10):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd25b/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd25b}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-65} python3 "$here/odd25b.py" --out "$OUT" --kernels "$here/kernels.pkl.gz" \
    --rounds ${ROUNDS:-5} ${ODD_ARGS:-} 2>&1 | tee "$OUT/stdout.log" | cut -c1-250 | tail -30
echo "== odd25b rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-20} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_odd_sgemm.py 2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
