#!/bin/bash
# The one H100 run of this helper (issue 14): GPU tests, host overhead, the JIT suite, A @ B.
#   source .device-kit/setup.sh && bash results/issue14/h100-run5/run.sh   (OUT=... to keep logs)
set -o pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 | grep -v "root" | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== GPU tests"
timeout 70 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/jit/test_gpu.py tests/jit/test_gpu_gemv.py tests/jit/test_gpu_arrays.py 2>&1 | tail -40
echo "== host overhead (benchmarks/jit/overhead.py)"
timeout 30 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 10 2>&1 | tail -20
echo "== JIT suite and A @ B (benchmarks/jit/gpu.py)"
timeout 90 python3 benchmarks/jit/gpu.py --repeat 10 --skip runtime pressure \
    --json "${OUT:-/tmp}/gpu_bench.json" 2>&1 | grep -v -e NumbaPerformanceWarning -e "warn(errors"
