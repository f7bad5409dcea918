#!/bin/bash
# Issue 15, session 24, helper H5: S/D GEMM NN tuned from nothing on the GPU, timed (fresh
# profile directory and fresh kernel cache); the tuned entries
# against cuBLAS (CuPy) at each class's size; the tuned profile's choices against the shipped
# profile's and cuBLAS per call at 1024 and 4096; the JIT's GPU tests on CUDA.
# After: source .device-kit/setup.sh && pip install ... .device-extra/*.whl (see README.md).
# Writes under $OUT: log, tune2.log, compare.log, compare.json, jit.log,
# profile-tuned.json.
set -o pipefail
export PYTHONUNBUFFERED=1
W=/tmp/lk-tune24; rm -rf $W; mkdir -p $W/prof $W/kernels $W/jitk
TUNE="python3 -m liftkit blas tune --device gpu --ops mm --dtypes float32,float64 --layouts NN"
now() { python3 -c "import time; print(f'{time.time():.2f}')"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "host cores: $(nproc)"; date -u
# 1. the JIT's GPU tests (own kernel cache)
t=$(now)
LIFTKIT_CACHE_DIR=$W/jitk timeout ${T_JIT:-50} python3 -m pytest -m gpu -q -p no:randomly \
    -p no:cacheprovider tests/jit > $OUT/jit.log 2>&1
echo "jit GPU tests: rc $?, $(python3 -c "print(round($(now) - $t, 1))") s"; tail -6 $OUT/jit.log
# 2. tuning from nothing (fresh profile directory and kernel cache), a line per trial
export LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/prof
t0=$(now)
timeout ${T_TUNE:-190} $TUNE --fresh --no-progress > $OUT/tune2.log 2>&1
echo "tune: rc $?"
echo "S/D GEMM NN tuned from nothing: wall $(python3 -c "print(round($(now) - $t0, 1))") s"
grep -E "^tuning|measurements" $OUT/tune2.log | cut -c1-200
python3 results/issue15/tune24/count.py $W/prof/profile-*.json
cp $W/prof/profile-*.json $OUT/profile-tuned.json
echo "cubins in the fresh kernel cache: $(ls $W/kernels | wc -l)"
python3 -m liftkit blas profile show $OUT/profile-tuned.json 2>&1 | head -30 | cut -c1-160
# 3. tuned entries against cuBLAS; tuned vs shipped choices per call
timeout ${T_CMP:-45} python3 results/issue15/tune24/compare.py --tuned $OUT/profile-tuned.json \
    --shipped src/liftkit/blas/profiles/profile-397cb6df054d2a73.json --sizes 1024,4096 \
    --out $OUT/compare.json > $OUT/compare.log 2>&1
echo "compare: rc $?"; cat $OUT/compare.log | cut -c1-220
date -u
} 2>&1 | tee $OUT/log
true
