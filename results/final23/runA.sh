#!/bin/bash
# Session 23, coordinator's check A of HEAD on the GPU (one device command): every gpu-marked
# test, the random-program differential on NVIDIA OpenCL, then issue 12's acceptance products
# beside cuBLAS in the same run: SGEMM 4096^3/8192^3 and the two non-square shapes from their
# derivations (cuda_sgemm_tail.py), SGEMM/DGEMM NN 4096/8192 per call through liftkit.blas
# (ship22), and the TMA-fed TF32 wgmma GEMM at 4096^3 (every offered tiling checked first).
#   source .device-kit/setup.sh && OUT=DIR bash results/final23/runA.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-final23
OUT=${OUT:-.}
start=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
stamp "gpu tests"
timeout ${T_TESTS:-170} python3 -m pytest -m gpu -q -p no:randomly -p no:cacheprovider -n 8 tests \
    2>&1 | tail -40 > $OUT/tests.log
echo "tests rc $?" >> $OUT/tests.log
stamp "random programs on NVIDIA OpenCL"
LIFTKIT_TEST_DEVICE=gpu timeout ${T_RANDOM:-45} python3 -m pytest -q -p no:randomly -p no:cacheprovider -n 8 \
    tests/codegen/test_random_programs.py -k "test_random_program and not without and not iterate" \
    2>&1 | tail -5 >> $OUT/tests.log
stamp "sgemm derivations"
S=128x64:32:8x8:2
PLAN="4096x4096x4096=$S:t5@396b3;8192x8192x8192=$S:t4@396b3;8192x8192x1024=$S;1024x1024x8192=64x64:16:8x8:3:t4@924"
timeout ${T_SGEMM:-90} python3 benchmarks/cuda_sgemm_tail.py --plan "$PLAN" --top 1 --repeat 20 \
    --log $OUT/sgemm.log --json /tmp/sgemm.json > /dev/null 2>&1
echo "sgemm rc $?" >> $OUT/sgemm.log
stamp "ship22 (blas per call)"
mkdir -p /tmp/ship && OUT=/tmp/ship T_BLAS=${T_SHIP:-70} bash results/issue12/ship22/run.sh > /dev/null 2>&1
cp /tmp/ship/ship.log $OUT/ship.log
stamp "tf32 tma"
timeout ${T_TMA:-120} python3 benchmarks/cuda_wgmma_tma.py --repeat 30 2>&1 | tail -60 > $OUT/tma.log
echo "tma rc $?" >> $OUT/tma.log
stamp end
