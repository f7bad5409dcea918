#!/bin/bash
# Run 22b (one device command, <= 110 s), after run22.sh's: the GEMMs again beside cuBLAS with
# DGEMM TN on its own DMMA derivation (the new CUDA default) and complex TN's op(A) by the
# transpose kernel (instead of cprep), at least 3 calls per timed batch at every size (run 22
# timed single 8192 calls), and a cProfile of planned calls' host path. Run after
# `source .device-kit/setup.sh`, with the commit's sources under .clean/src (as run22.sh).
# Writes under $OUT: card.txt, tests.log, bench.log, gemm.jsonl, bench.json, host_profile.txt.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-22
export PYTHONPATH="$PWD/.clean/src:$PYTHONPATH"
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-25} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    -k "repeat_calls or test_gemm[cuda-2]" tests/blas/test_cuda.py tests/blas/test_properties.py \
    2>&1 | tail -4 | tee $OUT/tests.log
timeout ${T_BENCH:-80} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --odd 1000x1000x1000 --gemv "" --transpose "" --repeat 20 \
    --host-profile $OUT/host_profile.txt \
    --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 | tee $OUT/bench.log | cut -c1-200
