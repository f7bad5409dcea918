#!/bin/bash
# Issue 14, second short device call (<= 80 s wall): after run 1 (run.sh), lanes chosen per
# launch are at most 8, lane kernels are built for full occupancy (32 registers) and a deferred
# check's failure record is smaller. The lanes GPU test (15 s), spmv's variants and julia
# against Numba (25 s), the whole JIT suite against Numba and CuPy (40 s).
#   source .device-kit/setup.sh && OUT=... bash results/issue14/lanes-pressure/run2.sh
set -o pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp}"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 \
    | grep -v -e "root" -e "already exists" | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== lanes GPU test (tests/jit/test_gpu_lanes.py, marker gpu)"
timeout 15 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/jit/test_gpu_lanes.py 2>&1 | tail -15
echo "== spmv lane variants, julia kernel time (benchmarks/jit/spmv_lanes.py)"
timeout 25 python3 benchmarks/jit/spmv_lanes.py --repeat 10 --json "$OUT/spmv_lanes2.json" 2>&1 \
    | grep -v -e NumbaPerformanceWarning -e "warn(errors" | tail -30
echo "== JIT suite vs Numba CUDA and CuPy (benchmarks/jit/gpu.py)"
timeout 40 python3 benchmarks/jit/gpu.py --repeat 3 --skip runtime overhead pressure matmul \
    --json "$OUT/gpu_bench2.json" 2>&1 | grep -v -e NumbaPerformanceWarning -e "warn(errors"
