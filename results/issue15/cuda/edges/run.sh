#!/bin/bash
# Issue 15, odd sizes: liftkit.blas GEMM padded (operands copied into padded buffers) against
# guarded (the tiled derivations' guarded forms, rewrite/rules/mm_edges.py: no copies), beside
# cuBLAS (CuPy), S/D/C/ZGEMM NN at 1000^3, 4097x4095x4095 and 1023x1025x999; every result
# checked against a float64 NumPy product first. One device command (<= 60 s):
#   source .device-kit/setup.sh && bash results/issue15/cuda/edges/run.sh
# Without a GPU: `bash results/issue15/cuda/edges/run.sh --dry` derives and NVRTC-compiles
# every kernel the run builds. Writes $OUT/edges.log (lines, then the rows as JSON).
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-edges}
here=$(dirname "$0")
if [ "$1" = "--dry" ]; then
    exec python3 "$here/edges.py" --dry
fi
if [ -d .device-extra ] && ! python3 -c "import z3" 2>/dev/null; then
    pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl \
        && export PYTHONPATH="$PYTHONPATH:/tmp/device-site"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${T_EDGES:-52} python3 "$here/edges.py" --repeat ${REPEAT:-10} --log "$OUT/edges.log" \
    2>&1 | tee "$OUT/stdout.log" | cut -c1-220
