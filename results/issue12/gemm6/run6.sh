#!/bin/bash
# Run 6 of the SGEMM/DGEMM work (issue 12; issue 15's GEMM targets), one device command:
#   1. benchmarks/cuda_gemm.py: every derivation built first in worker processes; then SGEMM at
#      4096³ (rotated-A variants beside the shipped 128x64:32:8x8:2), the best two again at
#      8192³, 8192x8192x1024 and 1024x1024x8192 beside the shipped ones, SGEMM 1024³ (blas's
#      class), DGEMM (DMMA) at 1024³, 4096³ and 8192³; each checked against float64 first;
#   2. `cuda_gemm.py profile`: the run's rates into a copy of the shipped blas profile ($OUT/prof);
#   3. liftkit.blas per call beside cuBLAS with that profile: S/D GEMM NN/NT/TN at 1024 and 4096,
#      (benchmarks/blas_cuda.py; 8192 from step 1, kernels alone).
# On the device: source .device-kit/setup.sh && OUT=$OUT bash results/issue12/gemm6/run6.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-6
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
SG4096=${SG4096:-128x64:32:8x8:2,128x64:32:8x8:2:r,128x64:32:8x8:3:r,128x64:16:8x8:2:r,128x64:16:8x8:3:r,128x128:32:8x8:2,128x128:32:8x8:2:r,128x128:16:8x8:3:r,64x128:32:8x8:2:r,256x128:16:16x8:2:r,128x128:16:16x8:2:r,64x64:16:8x8:3:r}
SGBASE=${SGBASE:-128x64:32:8x8:2,64x64:16:8x8:3,64x64:16:8x8:3:r}
SGEXTRA=${SGEXTRA:-1024x1024x1024=64x64:16:8x8:2,64x64:16:8x8:2:r,64x64:16:8x8:3:r,64x128:16:8x8:2:r,64x64:32:8x8:2:r;1024x1024x8192=64x64:16:4x8:3,64x64:16:4x8:3:r,32x32:16:4x4:3,64x32:16:8x4:3}
DG=${DG:-1024=128x64x16w4s4L,64x64x16w4s4L,64x64x16w4s3L,64x64x32w4s2L,64x64x16w2s4L,64x128x16w4s4L,64x64x8w4s4L,32x32x16w2s2;4096=128x64x16w4s4L,128x64x16w4s3L,128x64x32w4s2L,64x128x32w4s2L,64x128x16w4s4L,64x64x16w4s4L;8192=128x64x16w4s4L,128x64x16w4s3L,128x64x32w4s2L}
timeout ${T_GEMM:-170} python3 benchmarks/cuda_gemm.py --sgemm "4096x4096x4096=$SG4096" --sgemm-top 2 \
    --sgemm-at 8192x8192x8192,8192x8192x1024,1024x1024x8192 --sgemm-base "$SGBASE" \
    --sgemm-extra "$SGEXTRA" --dgemm "$DG" --repeat ${REPEAT:-20} --json $OUT/gemm.json 2>&1 | tee $OUT/gemm.log | tail -60
echo "gemm rc $?"
mkdir -p /tmp/prof6
python3 benchmarks/cuda_gemm.py profile $OUT/gemm.json --into /tmp/prof6 2>&1 | tee $OUT/profile.log
cp /tmp/prof6/*.json $OUT/ 2>/dev/null
LIFTKIT_BLAS_PROFILES=/tmp/prof6 timeout ${T_BLAS:-100} python3 benchmarks/blas_cuda.py --sizes 1024,4096 \
    --dtypes float32,float64 --layouts NN,NT,TN --odd "" --big "" --gemv "" --transpose "" \
    --repeat 10 --jsonl $OUT/blas.jsonl --out $OUT/blas.json 2>&1 | tee $OUT/blas.log | cut -c1-220 | tail -20
echo "blas rc $?"
