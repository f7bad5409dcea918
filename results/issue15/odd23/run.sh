#!/bin/bash
# Issue 15, odd sizes (session 23, helper H4): S/D/C/ZGEMM NN at 1000^3, 1023x1025x999,
# 4097x4095x4095 and 1999^3 through liftkit.blas, each real kernel candidate (guarded forms,
# padded variants) checked then timed per call beside cuBLAS (CuPy) in the same process
# (odd.py), then the GPU tests of the guarded forms. One device command:
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd23/run.sh
# Without a GPU: python results/issue15/odd23/odd.py --dry   (derives and NVRTC-compiles all)
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd23}
here=$(dirname "$0")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-170} python3 "$here/odd.py" --out "$OUT" --plan ${PLAN:-1} --repeat ${REPEAT:-20} 2>&1 \
    | tee "$OUT/stdout.log" | cut -c1-230 | tail -${TAIL:-60}
echo "== GPU tests"
timeout ${T_TESTS:-60} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_edges.py 2>&1 | tail -4 | tee "$OUT/tests.log"
