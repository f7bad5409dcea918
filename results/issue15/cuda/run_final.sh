#!/bin/bash
# Issue 15, session 22: one device command (about 4-5 minutes), after
#   source .device-kit/setup.sh && pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
# Every step checks its results before it times them, beside the reference in the same process.
#   1. S/D GEMM NN tuned from nothing, timed: a fresh profile and an empty kernel cache, the whole
#      CUDA tuning space (18 SGEMM, 23 DGEMM derivations) at the four size classes (128, 512,
#      1024, 4096), no peak micro-benchmarks (a device fact the shipped profile has); the wall
#      time and the profile's own tuning_seconds are printed.
#   2. GEMV T float32/float64 tuned (classes large 4096², huge 8192²): glb and the 12
#      column-groups variants, the narrow 4- and 2-lane blocks first (into a fresh profile).
#   3. GEMV T variants and the transposes, each checked, then timed per call (calls back to back),
#      by kernel (the stream held busy first) and host µs per call, beside cuBLAS / the copy.
#   4. The shipped profile merged with 1 and 2 (run_final_merge.py), then per call beside cuBLAS
#      (benchmarks/blas_cuda.py): SGEMM/DGEMM NN 1024, 4096; GEMV N/T 8192²; transposes 4096², 8192².
# Writes under $OUT (8 files): log, tune_nn.log, tune_2d.log, variants.jsonl, bench.json,
# profile-nn.json (from nothing), profile-2d.json, profile-merged.json.
set -o pipefail
export PYTHONUNBUFFERED=1
W=/tmp/lk-final; rm -rf $W; mkdir -p $W/nn $W/2d $W/merged
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc; date -u
# 1. from nothing
t0=$(date +%s.%N)
LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/nn timeout ${T_NN:-200} python3 -m liftkit blas tune \
    --device gpu --ops mm --dtypes float32,float64 --layouts NN --peaks none --fresh --no-progress \
    > $OUT/tune_nn.log 2>&1
rc=$?
echo "tune S/D GEMM NN from nothing: rc $rc, wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
grep -E "measurements|^peak|copy" $OUT/tune_nn.log
tail -14 $OUT/tune_nn.log
# 2. GEMV T
t0=$(date +%s.%N)
LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/2d timeout ${T_2D:-40} python3 -m liftkit blas tune \
    --device gpu --ops gemv --dtypes float32,float64 --layouts T --classes large,huge --peaks none \
    --fresh --no-progress --max-variants 13 > $OUT/tune_2d.log 2>&1
echo "tune GEMV T: rc $?, wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
tail -8 $OUT/tune_2d.log
# 3. variants beside cuBLAS / the copy
LIFTKIT_CACHE_DIR=$W/kernels timeout ${T_VAR:-50} python3 benchmarks/blas_cuda_variants.py --sizes 8192 \
    --transpose 4096,8192 --repeat 20 --dgemm "" --out $OUT/variants.jsonl \
    --gemv-n "group-rows(L=64,w=4)" \
    --gemv-t "column-groups(lanes=4,g=64,w=4);column-groups(lanes=2,g=128,w=4);column-groups(lanes=4,g=32,w=4);column-groups(lanes=8,g=32,w=4);column-groups(lanes=4,g=64,w=2);column-groups(lanes=16,g=32,w=2)" \
    --transposes "tiles-t(r=32,k=8);tiles-t(r=32,k=4)" 2>&1 | cut -c1-200
# 4. the merged profile per call
python3 results/issue15/cuda/run_final_merge.py $W/merged $W/nn/profile-*.json $W/2d/profile-*.json
LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/merged timeout ${T_BENCH:-40} python3 benchmarks/blas_cuda.py \
    --sizes 1024,4096 --dtypes float32,float64 --layouts NN --odd "" --big "" --gemv 8192 \
    --transpose 4096,8192 --repeat 20 --out $OUT/bench.json 2>&1 | cut -c1-220
date -u
} 2>&1 | tee $OUT/log
cp $W/nn/profile-*.json $OUT/profile-nn.json 2>/dev/null
cp $W/2d/profile-*.json $OUT/profile-2d.json 2>/dev/null
cp $W/merged/profile-*.json $OUT/profile-merged.json 2>/dev/null
true
