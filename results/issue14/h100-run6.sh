#!/bin/bash
# Issue 14, H100 run 6 (<= 90 s wall): the GPU tests of tests/jit, the host overhead of a call and
# a launch, and the whole JIT suite against Numba's CUDA target and CuPy, after the host-path
# work (launch plans, cheaper GPU-argument calls). Every reference runs in the same process.
#   source .device-kit/setup.sh && OUT=... bash results/issue14/h100-run6.sh
# Limits: tests 38 s (run 5: 35 s for the two GPU tests, NVRTC builds included), suite 36 s
# (each row is printed as it is measured, so a cut keeps the rows done), overhead 12 s.
set -o pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp}"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 \
    | grep -v "root" | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== GPU tests (tests/jit, marker gpu)"
timeout 38 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu tests/jit 2>&1 | tail -30
echo "== JIT suite vs Numba CUDA and CuPy (benchmarks/jit/gpu.py)"
timeout 36 python3 benchmarks/jit/gpu.py --repeat 3 --skip runtime pressure matmul \
    --json "$OUT/gpu_bench.json" 2>&1 | grep -v -e NumbaPerformanceWarning -e "warn(errors"
echo "== host overhead (benchmarks/jit/overhead.py)"
timeout 12 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 3 \
    --json "$OUT/overhead.json" 2>&1 | tail -14
