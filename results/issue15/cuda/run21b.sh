#!/bin/bash
# GEMV / transpose variants, DGEMM/SGEMM 4096 and the host path beside cuBLAS on the H100 (one
# device command; results/issue15/cuda/run21b/). Writes under $OUT: card.txt, log,
# variants.jsonl (one JSON row per measurement), host_profile.txt (cProfile of the host path).
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-21b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_VARIANTS:-100} python3 benchmarks/blas_cuda_variants.py --sizes 8192,16384 \
    --transpose 4096,8192 --repeat 10 --dgemm 4096 --out $OUT/variants.jsonl \
    --profile $OUT/host_profile.txt 2>&1 | tee $OUT/log | cut -c1-230 | grep -v "^ \+[0-9]" | head -150
