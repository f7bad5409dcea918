#!/bin/bash
# Issue 15, odd sizes (session 24, helper H3): S/D/C/ZGEMM NN at 1023x1025x999 (candidates:
# guarded float4/DMMA-lines forms on operands padded by the derived pad2d kernel, tiled
# variants padded, pad2d/crop2d against cuMemcpy2D), and the library as committed at 1000^3,
# 4097x4095x4095 and CGEMM 1999^3; every row checked against cuBLAS's product, then timed per
# call in alternating rounds beside cuBLAS (CuPy) (odd24.py); then the GPU tests of the copy
# kernels and the guarded forms. One device command, from a `git archive HEAD` copy:
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd24/run.sh
# (run 2: ODD_ARGS="--auto-only --only S,D,C": the library's own choices only)
# Without a GPU: python results/issue15/odd24/odd24.py --dry   (derives and NVRTC-compiles all)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd24}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-170} python3 "$here/odd24.py" --out "$OUT" --rounds ${ROUNDS:-5} ${ODD_ARGS:-} 2>&1 \
    | tee "$OUT/stdout.log" | cut -c1-200 | tail -${TAIL:-70}
echo "== odd24 rc $? at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
timeout ${T_TESTS:-45} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_pad_kernels.py tests/blas/test_edges.py 2>&1 | tail -4 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
