#!/bin/bash
# Run 7 (follows run 6, results in run6/): DGEMM with DMMA m16n8k8 issued inside 16/32-deep tiles
# (`:k8`, an experiment of benchmarks/cuda_gemm.py: the code generator's instruction choice, not
# a derivation parameter) beside the m16n8k16 kernels at 4096³, 8192³ and 1024³, more 1024³
# tilings, the rotated-A SGEMM again (NVRTC's register counts in every row), then liftkit.blas
# DGEMM per call with run 6's profile and two other 1024 derivations (--alt).
# On the device: source .device-kit/setup.sh && OUT=$OUT bash results/issue12/gemm6/run7.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-7
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
DG=${DG:-4096=128x64x16w4s4L,128x64x16w4s4L:k8,128x64x16w4s3L:k8,128x64x32w4s2L:k8,64x128x16w4s4L:k8,128x64x8w4s4L;8192=128x64x16w4s4L,128x64x16w4s4L:k8,128x64x16w4s3L:k8;1024=64x64x8w4s4L,64x64x16w4s3L:k8,64x64x16w2s4L,64x64x16w2s4L:k8,64x64x8w2s4L,64x64x8w4s3L}
timeout ${T_GEMM:-90} python3 benchmarks/cuda_gemm.py --sgemm-extra "4096x4096x4096=128x64:32:8x8:2,128x64:32:8x8:2:r" \
    --dgemm "$DG" --repeat ${REPEAT:-20} --json $OUT/gemm.json 2>&1 | tee $OUT/gemm.log | tail -32
echo "gemm rc $?"
LIFTKIT_BLAS_PROFILES=results/issue12/gemm6/run6 timeout ${T_BLAS:-60} python3 benchmarks/blas_cuda.py \
    --sizes 1024,4096 --dtypes float64 --layouts NN,NT,TN --odd "" --big "" --gemv "" --transpose "" \
    --alt "float64/NN@1024=mma(tm=64,tn=64,tk=16,warps=2,staged=4,lines=1)" \
    --alt "float64/NN@1024=mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1)" \
    --repeat 20 --jsonl $OUT/blas.jsonl --out $OUT/blas.json 2>&1 | tee $OUT/blas.log | cut -c1-220 | tail -14
echo "blas rc $?"
