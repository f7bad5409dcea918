#!/bin/bash
# Session 26, helper H9: GEMV T 4096² on the H100 beside cuBLAS: column-groups-tree with y's
# block read into local memory beside the rows (p = 1, 2), timed per call as blas_cuda times
# (commit d33f013: the end event on liftkit's stream when the last call is enqueued), and the
# shipped kernel's fixed cost taken apart (hand-edited diagnostics, never shipped); then the GPU
# test. Run inside .clean-h9 (a `git archive` of the commit under test: src benchmarks tests
# pyproject.toml results/issue15/gemv26b) after `source .device-kit/setup.sh`.
# Writes under $OUT: card.txt, log, gemv.jsonl, regs.jsonl, tests.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv26b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_BENCH:-150} python3 results/issue15/gemv26b/gemv26b.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-300
timeout ${T_TEST:-120} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_ycopy.py 2>&1 | tail -8 | tee $OUT/tests.log
echo "GPU tests: $(tail -1 $OUT/tests.log)"
