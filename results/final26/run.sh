#!/bin/bash
# Session 26, coordinator's check of HEAD on the GPU (one device command): every gpu-marked test,
# the random-program differential on NVIDIA OpenCL, liftkit.blas per call beside cuBLAS (CuPy) in
# one process (every dtype x layout at 1024/4096/8192, three odd shapes, GEMV, transpose).
#   source .device-kit/setup.sh && OUT=DIR bash results/final26/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-final26
OUT=${OUT:-.}
start=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
stamp "gpu tests"
timeout ${T_TESTS:-150} python3 -m pytest -m gpu -q -p no:randomly -p no:cacheprovider -n 8 tests \
    2>&1 | grep -v Warning | tail -30 > $OUT/tests.log
echo "tests rc $?" >> $OUT/tests.log
stamp "random programs on NVIDIA OpenCL"
LIFTKIT_TEST_DEVICE=gpu timeout ${T_RANDOM:-45} python3 -m pytest -q -p no:randomly -p no:cacheprovider -n 8 \
    tests/codegen/test_random_programs.py -k "test_random_program and not without and not iterate" \
    2>&1 | tail -5 >> $OUT/tests.log
stamp "blas table"
timeout ${T_BENCH:-200} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --odd 1000x1000x1000,1023x1025x999,4097x4095x4095 --gemv 4096,8192 --transpose 4096,8192 \
    --repeat 20 --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 | cut -c1-260 > $OUT/bench.log
echo "bench rc $?" >> $OUT/bench.log
stamp end
