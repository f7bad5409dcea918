#!/bin/bash
# Run 8 (short, after runs 6/7): liftkit.blas DGEMM TN per call through the transposing plan (the
# CUDA default) and through TN's own DMMA derivation (mm-tensor-cores with lines: the transposed
# A tile copied along its stored rows), at 1024 and 4096, beside cuBLAS.
# On the device: source .device-kit/setup.sh && OUT=$OUT bash results/issue12/gemm6/run8.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-8
timeout ${T_BLAS:-60} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --dtypes float64 --layouts TN \
    --odd "" --big "" --gemv "" --transpose "" \
    --alt "float64/TN@1024=mma(tm=64,tn=64,tk=8,warps=4,staged=4,lines=1)" \
    --alt "float64/TN@4096=mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1)" \
    --repeat 20 --jsonl $OUT/blas.jsonl --out $OUT/blas.json 2>&1 | tee $OUT/blas.log | cut -c1-230 | tail -12
echo "blas rc $?"
