#!/bin/bash
# Run 21c (one device command, <= 60 s): liftkit.blas's call plans (CUDA host path planned once
# per call kind, futures on re-recorded driver events) on the GPU. Run after
# `source .device-kit/setup.sh` (as run21b.sh). Writes under $OUT: card.txt, tests.log, bench.log,
# bench.json.
#   1. the GPU tests of tests/blas/test_cuda.py (marker gpu, but the DMMA tests at any size and
#      the random-shape property tests, which build more kernels than this run has time for);
#      test_repeat_calls_on_their_call_plans checks the plans' results: new operands per call,
#      futures read after more calls than the 64-event ring, alpha/beta, padded sizes, complex
#      through one real GEMM, NumPy operands; 26 s at most;
#   2. per call beside cuBLAS (benchmarks/blas_cuda.py: `repeat` calls back to back between CUDA
#      events, each side's host path included; device span of one call beside it): SGEMM/DGEMM NN
#      1024 and 4096, GEMV N/T 8192^2 float32/float64, transpose 4096^2 float32/float64 (copy
#      as reference), 30 s at most (about 10 kernels compiled by NVRTC first, ~2.5 s each,
#      some built by step 1);
#      ODD=1000x1000x1000 adds the padded GEMM (planned too) where the time allows.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-21c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-26} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu \
    -k "not tensor_cores" tests/blas/test_cuda.py 2>&1 | tail -6 | tee $OUT/tests.log
timeout ${T_BENCH:-30} python3 benchmarks/blas_cuda.py --sizes 1024,4096 \
    --dtypes float32,float64 --layouts NN --odd "${ODD:-}" --big "" --gemv 8192 --transpose 4096 --repeat 20 \
    --out $OUT/bench.json 2>&1 | tee $OUT/bench.log | cut -c1-200 | tail -20
