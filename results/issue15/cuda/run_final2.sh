#!/bin/bash
# Issue 15, for the next H100 run (not run yet; about 4-6 minutes), after
#   source .device-kit/setup.sh && pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
# What run_final.sh (session 22) left open:
#   1. S/D GEMM NN tuned from nothing, timed: run_final's 180 s limit stopped it in DGEMM's first
#      size class (SGEMM's four classes took 50 s); since then a derivation checks only its own
#      rule parameters (a DMMA derivation 3.5 s -> 0.02 s here) and `--no-progress` logs every
#      trial (when, what, how long), so tune_nn.log says where the time goes.
#   2. GEMV T float32 with float8 row steps (w=8, two 16-byte loads per step and work-item, as
#      float64's double4 that reached 3.0 TB/s = 1.03x cuBLAS) beside the 16-byte variants that
#      stopped at 2.73 TB/s (0.98x), each checked, per call / kernel / host beside cuBLAS.
#   3. The merged profile (shipped + 1 + GEMV T re-tuned with the float8 variants) per call
#      beside cuBLAS and the copy (benchmarks/blas_cuda.py).
# Writes under $OUT (8 files): log, tune_nn.log, tune_2d.log, variants.jsonl, bench.json,
# profile-nn.json, profile-2d.json, profile-merged.json.
set -o pipefail
export PYTHONUNBUFFERED=1
W=/tmp/lk-final2; rm -rf $W; mkdir -p $W/nn $W/2d $W/merged
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
t0=$(date +%s.%N)
LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/nn timeout ${T_NN:-240} python3 -m liftkit blas tune \
    --device gpu --ops mm --dtypes float32,float64 --layouts NN --peaks none --fresh --no-progress \
    > $OUT/tune_nn.log 2>&1
echo "tune S/D GEMM NN from nothing: rc $?, wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
grep -E "measurements" $OUT/tune_nn.log; tail -12 $OUT/tune_nn.log | cut -c1-160
t0=$(date +%s.%N)
LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/2d timeout ${T_2D:-40} python3 -m liftkit blas tune \
    --device gpu --ops gemv --dtypes float32,float64 --layouts T --classes large,huge --peaks none \
    --fresh --no-progress --max-variants 10 > $OUT/tune_2d.log 2>&1
echo "tune GEMV T: rc $?, wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
tail -8 $OUT/tune_2d.log
LIFTKIT_CACHE_DIR=$W/kernels timeout ${T_VAR:-50} python3 benchmarks/blas_cuda_variants.py --sizes 8192,4096 \
    --transpose "" --dtypes float32 --repeat 20 --dgemm "" --out $OUT/variants.jsonl --gemv-n "" \
    --gemv-t "column-groups(lanes=4,g=64,w=8);column-groups(lanes=2,g=128,w=8);column-groups(lanes=4,g=32,w=8);column-groups(lanes=4,g=64,w=4);column-groups(lanes=2,g=128,w=4)" \
    --transposes "" 2>&1 | cut -c1-200
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
