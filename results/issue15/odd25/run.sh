#!/bin/bash
# Issue 15, odd sizes (session 25, helper H5): the split plan on vector copies and a second
# stream, and every odd row beside cuBLAS with a per-piece breakdown (odd25.py); then the GPU
# tests of the split plan and the padded copies.
# One device command from a clean checkout (carry .device-kit .device-extra .clean-h5):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd25/run.sh
# Without a GPU: python results/issue15/odd25/odd25.py --dry   (derives and NVRTC-compiles all)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd25}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-150} python3 "$here/odd25.py" --out "$OUT" --rounds ${ROUNDS:-5} ${ODD_ARGS:-} \
    2>&1 | tee "$OUT/stdout.log" | cut -c1-260 | tail -60
echo "== odd25 rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-60} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_split.py tests/blas/test_pad_kernels.py \
    2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
