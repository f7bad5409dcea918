#!/bin/bash
# Issue 15, odd sizes: liftkit.blas GEMM padded (operands copied into padded buffers) against
# guarded (the tiled derivations' guarded forms, rewrite/rules/mm_edges.py: no copies), beside
# cuBLAS (CuPy), S/D/C/ZGEMM NN at 1000^3, 4097x4095x4095 and 1023x1025x999; every result
# checked against a float64 NumPy product first. One device command (<= 60 s):
#   source .device-kit/setup.sh && bash results/issue15/cuda/edges/run.sh
# Without a GPU: `bash results/issue15/cuda/edges/run.sh --dry` derives and NVRTC-compiles
# every kernel the run builds. Writes $OUT/edges.log (lines, the rows as JSON, then the GPU
# test of tests/blas/test_edges.py where time is left) and $OUT/stdout.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-edges}
here=$(dirname "$0")
if [ "$1" = "--dry" ]; then
    exec python3 "$here/edges.py" --dry
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${T_EDGES:-48} python3 "$here/edges.py" --repeat ${REPEAT:-10} --log "$OUT/edges.log" \
    2>&1 | tee "$OUT/stdout.log" | cut -c1-220
left=$(( ${BUDGET:-58} - SECONDS ))   # the GPU test of the guarded kernels in what time is left
if [ $left -ge 8 ]; then
    timeout $left python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
        tests/blas/test_edges.py 2>&1 | tail -3 | tee -a "$OUT/edges.log"
fi
