#!/bin/bash
# Session 23 (helper H3), run 2: the shipped profile after run 1 (SGEMM TN on tiles-async with
# Aᵀ tiled as stored; NT through the nn plan) beside cuBLAS in one process, SGEMM NN/NT/TN at
# 1024/4096/8192 (benchmarks/blas_cuda.py: each row checked against float64 first), NT on
# tiles-async with Bᵀ's rows alone rotated (run 1 rotated A's too), and the GPU tests of the layouts.
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue15/sgemm23/run2.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-sgemm23
OUT=${OUT:-.}
[ -d .clean-h3/src ] && export PYTHONPATH="$PWD/.clean-h3/src:$PYTHONPATH"
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-60} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_cuda_layouts.py 2>&1 | tail -40 | tee $OUT/tests.log
timeout ${T_BENCH:-150} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --dtypes float32 --layouts NN,NT,TN --odd "" --gemv "" --transpose "" --repeat 20 \
    --alt "float32/NT@1024=tiles-async(tm=64,tn=64,tk=16,rm=8,rn=8,stages=2,rot=1)" \
    --alt "float32/NT@4096=tiles-async(tm=128,tn=64,tk=32,rm=8,rn=8,stages=2,rot=1,split=5,slots=396,bound=3)" \
    --alt "float32/NT@4096=tiles-async(tm=128,tn=64,tk=16,rm=8,rn=8,stages=2,rot=1,split=5,slots=396,bound=3)" \
    --alt "float32/NT@8192=tiles-async(tm=128,tn=64,tk=32,rm=8,rn=8,stages=2,rot=1,split=4,slots=396,bound=3)" \
    --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 | tee $OUT/bench.log | cut -c1-230
echo "bench rc $?"
