#!/bin/bash
# One device command (issue 15, session 25, helper H9): the GPU tests of the guarded vector stores
# and the slot pointers, then fp64_25b.py (every row checked against cuBLAS, then timed per call
# in alternating rounds). Run from the sources of a commit unpacked under .clean-h9 (carried with
# .device-kit and .device-extra):
#   rm -rf .clean-h9 && mkdir .clean-h9 && git archive HEAD src benchmarks pyproject.toml \
#       tests/conftest.py tests/codegen results/issue15/fp64-25 results/issue15/fp64-25b | tar -x -C .clean-h9
#   cd .clean-h9 && ln -s ../.device-kit .device-kit && ln -s ../.device-extra .device-extra && \
#       source .device-kit/setup.sh && python3 -m pip install -q --no-index --no-deps \
#       --target /tmp/device-site .device-extra/*.whl && OUT=$OUT bash results/issue15/fp64-25b/run.sh
# Writes $OUT/fp64_25b.log, $OUT/fp64_25b.jsonl, $OUT/test.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-h9
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/fp64_25b.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/fp64_25b.log
timeout ${T_TEST:-25} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/codegen/test_cuda_mma_edge_stores.py tests/codegen/test_cuda_mma_slots.py 2>&1 \
    | tail -4 | tee $OUT/test.log
timeout ${T_RUN:-55} python3 results/issue15/fp64-25b/fp64_25b.py --jsonl $OUT/fp64_25b.jsonl \
    ${FP64_ARGS:-} 2>&1 | tee -a $OUT/fp64_25b.log
echo "fp64_25b rc $?" | tee -a $OUT/fp64_25b.log
