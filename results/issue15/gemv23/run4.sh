#!/bin/bash
# Session 23, helper H5, run 4 (one device command, <= 120 s): complex GEMV (complex64,
# complex128; N and T) on the work-group rules, one element per step (row-groups, column-groups,
# column-groups-split), beside cuBLAS at 4096² and 8192², each checked against complex128 first
# (gemv23.py --set 4; 10 calls per batch). As run.sh: after `source .device-kit/setup.sh`, the
# commit's sources under .clean-h5/src (carried). Writes under $OUT: card.txt, log, gemv.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv23
export PYTHONPATH="$PWD/.clean-h5/src:$PYTHONPATH"
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T_BENCH:-100} python3 results/issue15/gemv23/gemv23.py --out $OUT --set 4 --no-host \
    --rounds 0 --dtypes complex64,complex128 --repeat 10 2>&1 | tee $OUT/log | cut -c1-230
