#!/bin/bash
# One device command (issue 15, session 26, helper H12): zgemm26.py (ZGEMM NN/NT/TN 4096, 8192:
# the shipped real plan, zmma, the real plan on the lines=3/lines=2 DGEMM kernels; every row
# checked against cuBLAS, then per call in alternating rounds). From the repository root after
# `source .device-kit/setup.sh`, the commit's sources unpacked under .clean-h12:
#   rm -rf .clean-h12 && mkdir .clean-h12 && git archive HEAD src benchmarks pyproject.toml \
#       results/issue15/zgemm26 | tar -x -C .clean-h12
# Writes $OUT/zgemm26.log, $OUT/zgemm26.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-h12
ROOT=$PWD
[ -d .clean-h12/src ] && { export PYTHONPATH="$PWD/.clean-h12/src:$PYTHONPATH"; ROOT=$PWD/.clean-h12; }
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/zgemm26.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/zgemm26.log
python3 -c "from cuda.bindings import nvrtc; print('NVRTC', nvrtc.nvrtcVersion()[1:])" | tee -a $OUT/zgemm26.log
timeout ${T_RUN:-170} python3 $ROOT/results/issue15/zgemm26/zgemm26.py --jsonl $OUT/zgemm26.jsonl \
    ${Z_ARGS:-} 2>&1 | tee -a $OUT/zgemm26.log
echo "zgemm26 rc $?" | tee -a $OUT/zgemm26.log
