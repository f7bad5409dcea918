#!/bin/bash
# Session 26, helper H11: GEMV N/T float32/float64 4096² and 8192² on the H100 beside cuBLAS,
# each form without and with the `streamed` load hint on A (h = 1: CUDA ld.global.cs), per call
# in alternating rounds; then the GPU tests. Run inside .clean-h11 (a `git archive` of the commit
# under test: src benchmarks tests pyproject.toml results/issue15/gemv26c) after
# `source .device-kit/setup.sh`. Writes under $OUT: card.txt, log, gemv.jsonl, tests.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv26c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_BENCH:-150} python3 results/issue15/gemv26c/gemv26c.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-300
timeout ${T_TEST:-120} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_streamed.py 2>&1 | tail -8 | tee $OUT/tests.log
echo "GPU tests: $(tail -1 $OUT/tests.log)"
