#!/bin/bash
# Session 26, helper H3: GEMV T's tree form in 512-work-item groups (k = 1) and with its rows
# read a step ahead (a = 1), GEMV N's lane rows with u accumulators, beside cuBLAS on the H100,
# one device command. Run inside .clean-h3 (a `git archive` of the commit under test: src
# benchmarks tests pyproject.toml results/issue15/gemv25b/gemv25b.py results/issue15/gemv26) after
# `source .device-kit/setup.sh`:
#   1. gemv26.py: every variant checked, timed by kernel and per call beside cuBLAS, then the
#      run's best and the profile's choice per call in alternating rounds; registers;
#   2. the GPU test of the new forms (NVIDIA OpenCL and CUDA).
# Writes under $OUT: card.txt, log, gemv.jsonl, regs.jsonl, tests.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv26
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_BENCH:-120} python3 results/issue15/gemv26/gemv26.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-240
timeout ${T_TEST:-90} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_wide.py 2>&1 | tail -8 | tee $OUT/tests.log
echo "GPU tests: $(tail -1 $OUT/tests.log)"
