#!/bin/bash
# Issue 15, the split GEMM plan (session 24, helper H6): S/D at 1023x1025x999, the library's
# own plan against the split plan (an injected split entry), 1000^3 as the control, the split's
# interior and GEMV alone; every row checked against cuBLAS's product, then per call in
# alternating rounds beside cuBLAS (odd24b.py); then the GPU test of the split plan.
# One device command from the checkout (carry .device-kit .device-extra):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd24b/run.sh
# Without a GPU: python results/issue15/odd24b/odd24b.py --dry   (derives and NVRTC-compiles all)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd24b}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-60} python3 "$here/odd24b.py" --out "$OUT" --rounds ${ROUNDS:-5} 2>&1 \
    | tee "$OUT/stdout.log" | cut -c1-240 | tail -40
echo "== odd24b rc $? at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-25} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_split.py 2>&1 | tail -4 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
