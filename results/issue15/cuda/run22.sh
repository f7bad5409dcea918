#!/bin/bash
# Run 22 (issue 15's GEMM targets beside cuBLAS; one device command, <= 155 s). Run after
# `source .device-kit/setup.sh`, with the sources of the commit to measure unpacked under
# .clean/src (`git archive HEAD src | tar -x -C .clean`, carried): other sessions' uncommitted
# edits in the working tree do not enter the run. Writes under $OUT: card.txt, tests.log,
# bench.log, gemm.jsonl (each row as it ends), bench.json.
#   1. GPU tests (20 s + 30 s at most): test_cuda.py's repeat calls on call plans (padded
#      GEMMs with new operands per call: the padded copies' margins cleared once per shape) and
#      CuPy in/out; 240 random GEMMs of test_properties.py on CUDA (every dtype, op flag, order,
#      sizes 1..300: the nn plans' transposes at sizes off their tiles);
#   2. benchmarks/blas_cuda.py: every GEMM dtype x layout (NN, NT, TN) at 1024 and 4096, the odd
#      sizes (NN), two derivations chosen otherwise (--alt: DGEMM TN on its own DMMA derivation
#      instead of the nn plan; CGEMM 1024's real kernel with the 4096 tiles), then 8192; per
#      row the call (host path included), the device work alone (`device`), and for packing
#      plans the product of operands packed once.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-22
export PYTHONPATH="$PWD/.clean/src:$PYTHONPATH"
python3 -c "import liftkit, sys; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-20} python3 -m pytest -q -x -p no:randomly -p no:cacheprovider -m gpu \
    -k "repeat_calls or cupy_in" tests/blas/test_cuda.py 2>&1 | tail -4 | tee $OUT/tests.log
timeout ${T_PROP:-30} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    -k "test_gemm[cuda-0] or test_gemm[cuda-1]" tests/blas/test_properties.py 2>&1 | tail -6 \
    | tee -a $OUT/tests.log
timeout ${T_BENCH:-95} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --odd 1000x1000x1000,4097x4095x4095 --gemv "" --transpose "" --repeat 20 \
    --alt "float64/TN@1024,4096=mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1)" \
    --alt "complex64/NN@1024:float32/NN=tiles-async(tm=64,tn=128,tk=32,rm=8,rn=8,stages=2)" \
    --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 | tee $OUT/bench.log | cut -c1-230
