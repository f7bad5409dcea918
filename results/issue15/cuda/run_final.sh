#!/bin/bash
# The final H100 run (one device command): tune liftkit.blas on CUDA from nothing, then measure
# beside cuBLAS. Writes under $OUT: profiles/ (the CUDA profile, shipped), runtime/, logs, bench.json.
# Time limits: run 21 stopped S/D GEMM NN at 60 s after SGEMM's two classes (18 derivations,
# about 2.5 s each with NVRTC), so the full run needs about 9-10 minutes (estimates, not yet
# measured): S/D GEMM NN about 2-4 min (DMMA kernels compile slower), the rest of mm 1-3 min
# (plans over the NN kernels, peaks, queues), gemv/transpose about 1 min (about 100 small
# derivations). Run it where that much device time is left.
set -o pipefail
export LIFTKIT_BLAS_PROFILES=$OUT/profiles LIFTKIT_RUNTIME_PROFILES=$OUT/runtime PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
lk() { python3 -m liftkit "$@"; }
[ -n "$SKIP_TESTS" ] || timeout ${T_TEST:-45} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu tests/blas/test_cuda.py \
    tests/blas/test_transpose_blocks.py 2>&1 | tail -3 | tee $OUT/tests.log
# 1. S/D GEMM NN from nothing (no profile, no kernel cache), size classes large (1024) and huge (4096)
export LIFTKIT_CACHE_DIR=/tmp/lk-kernels-fresh; rm -rf $LIFTKIT_CACHE_DIR
t0=$(date +%s.%N)
timeout ${T_SD:-240} python3 -m liftkit blas tune --device gpu --ops mm --dtypes float32,float64 --layouts NN \
    --classes large,huge --peaks none --max-variants ${MV_SD:-9} --fresh --no-progress > $OUT/tune_sd_nn.log 2>&1
echo "tune S/D GEMM NN from nothing: rc $? in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
tail -8 $OUT/tune_sd_nn.log
# 2. the rest of the profile: peaks and queues, NT/TN, complex through real GEMMs, gemv, transpose
timeout ${T_MM:-180} python3 -m liftkit blas tune --device gpu --ops mm --layouts NN,NT,TN --classes large,huge \
    --peaks quick --max-variants 2 --no-progress > $OUT/tune_mm.log 2>&1; echo "tune mm rest: rc $?"
timeout ${T_2D:-120} python3 -m liftkit blas tune --device gpu --ops gemv,transpose --dtypes float32,float64 \
    --classes huge --peaks none --no-progress > $OUT/tune_2d.log 2>&1; echo "tune gemv/transpose: rc $?"
lk blas profile show --device gpu > $OUT/profile_show.txt 2>&1; head -12 $OUT/profile_show.txt
# 3. beside cuBLAS
timeout ${T_BENCH:-65} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 --gemv ${GEMV:-8192,16384} \
    --transpose ${TRANSPOSE:-4096,8192} --repeat 5 --out $OUT/bench.json 2>&1 | tee $OUT/bench.log | cut -c1-150 | tail -48
