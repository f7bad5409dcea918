#!/bin/bash
# Issue 14, H100 run 7a (diagnostic, <= 90 s wall): the new CUDA launch path's GPU tests, and
# where a call's and a launch's host time goes on the GPU machine's host: overhead.py on the
# GPU (with single driver calls timed) and over the stubbed driver (our Python alone), each for
# the sources before this round (base.tgz: git archive 32952f0 src benchmarks/jit) and after.
#   source .device-kit/setup.sh && OUT=... bash results/issue14/h100-run7/diag.sh
set -o pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp}"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 \
    | grep -v "root" | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import cuda.core, cupy, numpy, sys; print('python', sys.version.split()[0], 'cuda.core', cuda.core.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)"
mkdir -p /tmp/base && tar -xzf base.tgz -C /tmp/base
OLD="PYTHONPATH=/tmp/base/src:$PYTHONPATH"
echo "== GPU tests: tests/runtime and tests/jit/test_gpu_arrays.py (marker gpu)"
timeout 40 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu tests/runtime \
    tests/jit/test_gpu_arrays.py 2>&1 | tail -15
echo "== overhead, after (GPU, with driver calls)"
timeout 20 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 5 --driver \
    --json "$OUT/after.json" 2>&1 | tail -24
echo "== overhead, before (GPU)"
(cd /tmp/base && env $OLD timeout 15 python3 benchmarks/jit/overhead.py --device gpu \
    --backend cuda --repeat 5 --json "$OUT/before.json" 2>&1 | tail -16)
echo "== overhead over the stubbed driver on this host: after, before"
timeout 8 python3 benchmarks/jit/overhead.py --stub-cuda --repeat 5 --driver 2>&1 | tail -15
(cd /tmp/base && env $OLD timeout 8 python3 benchmarks/jit/overhead.py --stub-cuda --repeat 5 \
    2>&1 | tail -14)
echo "== profile, after (GPU)"
timeout 12 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 2 --profile \
    2>&1 | tail -34
