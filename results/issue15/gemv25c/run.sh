#!/bin/bash
# Session 25, helper H11: GEMV T through the tree form with u private accumulators (u row loads
# in flight per work-item, a column block's whole rows in one work-group) on the H100, one
# device command. Run inside .clean-h11 (a `git archive` of the commit under test: src
# benchmarks tests pyproject.toml results/issue15/gemv25b results/issue15/gemv25c) after
# `source .device-kit/setup.sh`:
#   1. the GPU test of the deep tree forms (NVIDIA OpenCL and CUDA);
#   2. gemv25c.py: every variant checked, timed by kernel and per call beside cuBLAS, then the
#      profile's (lastWrg) form, the run's best and the profile's choice per call in
#      alternating rounds; each tree kernel's registers on this card.
# Writes under $OUT: card.txt, tests.log, log, gemv.jsonl, regs.jsonl, regs_tree.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv25c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_BENCH:-60} python3 results/issue15/gemv25c/gemv25c.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-260
timeout ${T_TEST:-20} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_tree.py 2>&1 | tail -8 | tee $OUT/tests.log
echo "GPU tests: $(tail -1 $OUT/tests.log)"
