#!/bin/bash
# Session 25, helper H4: GEMV T through lastWrg on the H100 (one device command). Run inside
# .clean-h4 (a `git archive` of the commit under test: src benchmarks tests results/issue15/gemv25)
# after `source .device-kit/setup.sh`:
#   1. the GPU test of the lastWrg form (NVIDIA OpenCL and CUDA: thousands of work-groups
#      through the counters, repeated calls, odd shapes);
#   2. gemv25.py: every variant checked, timed by kernel and per call beside cuBLAS, then the
#      best lastWrg form, the run's best and the profile's choice per call in alternating rounds.
# Writes under $OUT: card.txt, tests.log, log, gemv.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv25
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_TEST:-90} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_gemv_last.py 2>&1 | tail -8 | tee $OUT/tests.log
timeout ${T_BENCH:-200} python3 results/issue15/gemv25/gemv25.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-260
echo "GPU tests: $(tail -1 $OUT/tests.log)"
