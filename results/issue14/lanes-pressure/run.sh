#!/bin/bash
# Issue 14: spmv's lanes and the literal memory-pressure workload, one device call (<= 150 s wall).
#   source .device-kit/setup.sh && OUT=... bash results/issue14/lanes-pressure/run.sh
# Parts, each with its own limit (a cut part leaves the others): the lanes GPU test (15 s),
# spmv's lane variants and julia's kernel time against Numba (22 s), 1.5x the device's memory
# in live arrays (55 s; a process of its own, so the device is empty), the whole JIT suite
# against Numba's CUDA target and CuPy (48 s; rows printed as measured).
set -o pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp}"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 \
    | grep -v "root" | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
free -g | head -2
echo "== lanes GPU test (tests/jit/test_gpu_lanes.py, marker gpu)"
timeout 15 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/jit/test_gpu_lanes.py 2>&1 | tail -15
echo "== spmv lane variants, julia kernel time (benchmarks/jit/spmv_lanes.py)"
timeout 22 python3 benchmarks/jit/spmv_lanes.py --repeat 10 --json "$OUT/spmv_lanes.json" 2>&1 \
    | grep -v -e NumbaPerformanceWarning -e "warn(errors"
echo "== memory pressure, 1.5x the device (benchmarks/jit/pressure.py)"
timeout 55 python3 benchmarks/jit/pressure.py --json "$OUT/pressure.json" 2>&1 | tail -36
echo "== JIT suite vs Numba CUDA and CuPy (benchmarks/jit/gpu.py)"
timeout 48 python3 benchmarks/jit/gpu.py --repeat 3 --skip runtime overhead pressure matmul \
    --json "$OUT/gpu_bench.json" 2>&1 | grep -v -e NumbaPerformanceWarning -e "warn(errors"
