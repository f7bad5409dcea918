#!/bin/bash
# DGEMM/ZGEMM on the FP64 tensor cores through liftkit.blas beside cuBLAS (issue 15, session 23,
# H2): the GPU test of wrg-row-groups, then dmma23.py (every variant checked against cuBLAS's
# float64/complex128 product, then timed per call and by device work). One device command,
# from the repository root after `source .device-kit/setup.sh`, with the commit's sources
# unpacked under .clean-h2 (`mkdir -p .clean-h2 && git archive HEAD src benchmarks
# results/issue15/dmma23 | tar -x -C .clean-h2`, carried). Appends to $OUT/dmma23.log, dmma23.jsonl.
# Run 1: DMMA23_ARGS empty. Run 2 (what the shipped profile chooses, 3 alternating rounds):
#   DMMA23_ARGS="--verify 3" bash results/issue15/dmma23/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-dmma23
ROOT=$PWD
[ -d .clean-h2/src ] && { export PYTHONPATH="$PWD/.clean-h2/src:$PYTHONPATH"; ROOT=$PWD/.clean-h2; }
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/dmma23.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/dmma23.log
[ -n "$NO_TEST" ] || timeout ${T_TEST:-40} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/rewrite/test_grid_order.py 2>&1 | tail -3 | tee -a $OUT/dmma23.log
timeout ${T_RUN:-200} python3 $ROOT/results/issue15/dmma23/dmma23.py --jsonl $OUT/dmma23.jsonl \
    ${DMMA23_ARGS:-} 2>&1 | tee -a $OUT/dmma23.log
echo "dmma23 rc $?" | tee -a $OUT/dmma23.log
