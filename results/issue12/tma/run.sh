#!/bin/bash
# One device call: the TMA warpgroup GEMM checked (every offered tiling and launch-order group) and
# timed beside cuBLAS TF32 (before/after, and in alternating rounds), then the gpu-marked tests.
# Usage: run(command="bash results/issue12/tma/run.sh", carry=[".device-kit", ".device-extra"])
set -o pipefail
source .device-kit/setup.sh
pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
python3 -c "import cuda.core, cuda.bindings; print('cuda.core', cuda.core.__version__, 'cuda.bindings', cuda.bindings.__version__)" >> $OUT/gpu.txt 2>&1
timeout ${TMA_BENCH_S:-400} python3 benchmarks/cuda_wgmma_tma.py --repeat 30 --schedules ${TMA_SCHEDULES:-default} \
  ${TMA_ONLY:+--only $TMA_ONLY} ${TMA_COPIES:+--copies $TMA_COPIES} ${TMA_GROUPS:+--groups $TMA_GROUPS} \
  ${TMA_ROUNDS:+--rounds $TMA_ROUNDS} 2>&1 | tee $OUT/bench.log
rc=$?
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.txt 2>&1
timeout ${TMA_TEST_S:-120} python3 -m pytest -q -x -p no:randomly -m gpu tests/codegen/test_cuda_wgmma_tma.py 2>&1 | tail -15 | tee $OUT/gpu_tests.log
exit $rc
