#!/bin/bash
# One device command (issue 15, session 26, helper H4): the GPU tests of the blocked k rows
# (lines=2) and of the k-permuted reads beside them, then fp64_26.py (every row checked against
# cuBLAS, then timed per call in alternating rounds). Run from the sources of a commit unpacked
# under .clean-h4 (carried with .device-kit and .device-extra):
#   rm -rf .clean-h4 && mkdir .clean-h4 && git archive HEAD src benchmarks pyproject.toml \
#       tests/conftest.py tests/codegen results/issue15/fp64-26 | tar -x -C .clean-h4
#   cd .clean-h4 && ln -sfn ../.device-kit .device-kit && source .device-kit/setup.sh && \
#       python3 -m pip install -q --no-index --no-deps --target /tmp/device-site ../.device-extra/*.whl && \
#       OUT=$OUT [FP64_ARGS="--set 2"] bash results/issue15/fp64-26/run.sh
# Writes $OUT/fp64_26.log, $OUT/fp64_26.jsonl, $OUT/test.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-h4
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/fp64_26.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/fp64_26.log
python3 -c "from cuda.bindings import nvrtc; print('NVRTC', nvrtc.nvrtcVersion()[1:])" | tee -a $OUT/fp64_26.log
timeout ${T_TEST:-90} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/codegen/test_cuda_mma_blocked.py tests/codegen/test_cuda_mma_pairs.py 2>&1 \
    | tail -4 | tee $OUT/test.log
timeout ${T_RUN:-240} python3 results/issue15/fp64-26/fp64_26.py --jsonl $OUT/fp64_26.jsonl \
    ${FP64_ARGS:-} 2>&1 | tee -a $OUT/fp64_26.log
echo "fp64_26 rc $?" | tee -a $OUT/fp64_26.log
