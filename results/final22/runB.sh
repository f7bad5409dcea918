#!/bin/bash
# Session 22, coordinator's check B (H100): the warpgroup variants one by one, the JIT run 7
# (GPU tests of tests/jit and tests/runtime, overhead and chain, A @ B, the suite), the blas
# DGEMM-any-size and guarded-kernel GPU tests.
#   source .device-kit/setup.sh && OUT=DIR bash results/final22/runB.sh
set -o pipefail
export PYTHONUNBUFFERED=1
echo "== warpgroup variants"
timeout ${T_WG:-45} python3 results/final22/wgmma_check.py 2>&1 | tee $OUT/wgmma.log
mkdir -p /tmp/j
echo "== jit run 7"
OUT=/tmp/j bash results/issue14/h100-run7.sh 2>&1 | tee $OUT/run7.log
cp /tmp/j/overhead.json $OUT/ 2>/dev/null
echo "== blas GPU tests"
timeout ${T_BLAS:-45} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_cuda.py -k "dgemm_on_the_tensor_cores or guarded_kernels" tests/blas/test_edges.py 2>&1 | tail -15 \
    | tee $OUT/blas_tests.log
