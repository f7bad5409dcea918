#!/bin/bash
# Session 25 (helper H3): CGEMM per call beside cuBLAS on the H100: the shipped choice and the
# ctiles-async swizzled (rot=2/3), paired (pair=1) and 32-deep (tk=32) forms at 1024, 4096 and
# 8192, every candidate checked against cuBLAS's product first (bench.py). Sources from
# `git archive HEAD` in .clean-h3 (README.md). About 100-140 s on a warm H100 (T_BENCH caps it at 200).
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue15/cgemm25/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-cgemm25
OUT=${OUT:-.}
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_BENCH:-200} python3 results/issue15/cgemm25/bench.py --jsonl $OUT/rows.jsonl \
    2>&1 | tee $OUT/bench.log
echo "bench rc $?"
