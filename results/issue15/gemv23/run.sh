#!/bin/bash
# Session 23, helper H5: GEMV on the H100 beside cuBLAS (one device command, <= 170 s).
# Run after `source .device-kit/setup.sh`, with the commit's sources under .clean-h5/src
# (`mkdir -p .clean-h5 && git archive HEAD src | tar -x -C .clean-h5`, carried):
#   1. the GPU tests of the CUDA queue's ctypes driver calls (test_cuda_direct.py: test_cuda.py's
#      repeat calls and a DMMA DGEMM with them on) and test_cuda.py's repeat calls (off);
#   2. gemv23.py: every GEMV variant checked then timed per call and by kernel beside cuBLAS at
#      4096² and 8192², float32/float64, N/T, call plans cleared per variant; the profile's
#      choice per call with the direct calls on/off in alternating rounds; host pieces.
# Writes under $OUT: card.txt, tests.log, log, gemv.jsonl, host_profile.txt.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv23
export PYTHONPATH="$PWD/.clean-h5/src:$PYTHONPATH"
python3 -c "import liftkit, cupy, cuda.core; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__, '| cuda.core', cuda.core.__version__)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_TEST:-45} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_cuda_direct.py "tests/blas/test_cuda.py::test_repeat_calls_on_their_call_plans" \
    2>&1 | tail -6 | tee $OUT/tests.log
timeout ${T_BENCH:-110} python3 results/issue15/gemv23/gemv23.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-230
