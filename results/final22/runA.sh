#!/bin/bash
# Session 22, coordinator's check A (H100): the shipped GEMMs (issue 12 ship22), the guarded
# odd-size GEMMs (issue 15 edges), then the GPU tests this session added or changed.
#   source .device-kit/setup.sh && OUT=DIR bash results/final22/runA.sh
set -o pipefail
export PYTHONUNBUFFERED=1
mkdir -p $OUT/ship $OUT/edges
OUT=$OUT/ship bash results/issue12/ship22/run.sh 2>&1 | tail -30
OUT=$OUT/edges bash results/issue15/cuda/edges/run.sh 2>&1 | tail -30
echo "== GPU tests"
timeout ${T_TESTS:-100} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/rewrite/test_mm_schedule.py tests/codegen/test_cuda_mma_ahead.py \
    tests/codegen/test_cuda_mma_k8.py tests/rewrite/test_tiles_async.py \
    tests/codegen/test_cuda_wgmma_async.py tests/blas/test_cuda.py tests/jit/test_gpu_lanes.py \
    tests/jit/test_gpu_mm.py 2>&1 | tail -25 | tee $OUT/tests.log
