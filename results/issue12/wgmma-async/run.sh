#!/bin/bash
# One device run: 4096³ TF32 variants of the cp.async-fed warpgroup MMA (mm-wgmma-async, A; and in
# 2-block clusters sharing B, mm-wgmma-pair, P) checked (integers exact, B = I and A = I bit for
# bit, float64 within 2e-3) and timed beside cuBLAS TF32 (torch, allow_tf32) and the
# register-staged wgmma kernels (G), CUDA events, medians of 30; the GPU tests between the two
# tables (a hang in the cluster kernels would cost only what follows it).
#   run(command="bash results/issue12/wgmma-async/run.sh", carry=[".device-kit", ".device-extra"])
set -o pipefail
export PYTHONUNBUFFERED=1
source .device-kit/setup.sh >/dev/null || exit 1
pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl >/dev/null 2>&1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
TILES=${TILES:-tf32z:256x128x32w8s4A,tf32z:256x128x32w8s3A,tf32:256x128x32w8s4A,tf32:256x128x32w8s3A,tf32z:128x256x32w8s4A,tf32z:128x128x32w8s3A,tf32z:128x128x32w8s6A,tf32:128x256x32w8s3G}
timeout 200 python3 benchmarks/cuda_patterns.py mma --repeat 30 --tiles "$TILES" --json "$OUT/async.json" 2>&1 | tee "$OUT/bench_async.log"
timeout 150 python3 -m pytest -q -m gpu -p no:randomly -p no:cacheprovider tests/codegen/test_cuda_wgmma_async.py 2>&1 | tail -30 | tee "$OUT/gpu_tests.log"
PAIRS=${PAIRS:-tf32z:128x256x32w8s3P,tf32z:128x256x32w8s4P,tf32:128x256x32w8s4P,tf32z:128x128x32w8s4P}
timeout 150 python3 benchmarks/cuda_patterns.py mma --repeat 30 --tiles "$PAIRS" --json "$OUT/pair.json" 2>&1 | tee "$OUT/bench_pair.log"
