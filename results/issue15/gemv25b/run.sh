#!/bin/bash
# Session 25, helper H8: GEMV T through lastWrg built for every slot of a multiprocessor (b > 0)
# on the H100 (one device command). Run inside .clean-h8 (a `git archive` of the commit under
# test: src benchmarks tests pyproject.toml results/issue15/gemv25b) after
# `source .device-kit/setup.sh`:
#   1. the GPU test of the lastWrg form (NVIDIA OpenCL and CUDA);
#   2. gemv25b.py: every variant checked, timed by kernel and per call beside cuBLAS, then the
#      best lastWrg form, the run's best and the profile's choice per call in alternating
#      rounds; each lastWrg kernel's registers on this card.
# Writes under $OUT: card.txt, tests.log, log, gemv.jsonl, regs.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv25b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_TEST:-40} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_last.py 2>&1 | tail -8 | tee $OUT/tests.log
timeout ${T_BENCH:-150} python3 results/issue15/gemv25b/gemv25b.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-260
echo "GPU tests: $(tail -1 $OUT/tests.log)"
