#!/bin/bash
# SGEMM (FP32 FFMA, TF32 off) wave quantisation, issue 12: the tile schedule `mm-split-tail`
# (reduceSplitTail: the last partial wave's tiles split along K into P parts on the grid's z,
# partial sums added in order; bB: __launch_bounds__(T, B)) beside the shipped 128x64:32:8x8:2
# and cuBLAS (CuPy, TF32 off) in one process (benchmarks/cuda_sgemm_tail.py): every derivation
# built first (NVRTC registers/spills/gmem in the log), each variant checked against float64
# NumPy-style on fresh inputs (1e-5 relative; split variants twice), CUDA-event medians.
# On the device (carry .device-kit, .device-extra), from the repository root:
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue12/sgemm22/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-sgemm22
[ -d .device-extra ] && python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
S=128x64:32:8x8:2
PLAN="4096x4096x4096=$S,$S:t5@396,$S:t4@396,$S:t3@396,$S:t5@396b3,$S:t4@396b3,$S:t1@528b4,$S:t4@528b4"
PLAN="$PLAN;8192x8192x8192=$S;8192x8192x1024=$S"
PLAN="$PLAN;1024x1024x8192=64x64:16:8x8:3,$S,$S:t3@396,$S:t3@396b3,$S:t4@528b4,64x64:16:8x8:3:t3@924,64x64:16:8x8:3:t4@924"
timeout ${T_RUN:-120} python3 benchmarks/cuda_sgemm_tail.py --plan "$PLAN" --top ${TOP:-2} \
    --top-at 8192x8192x8192,8192x8192x1024 --repeat ${REPEAT:-20} \
    --log $OUT/sgemm.log --json $OUT/sgemm.json 2>&1 | tail -45
echo "rc $?"
