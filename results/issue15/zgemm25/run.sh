#!/bin/bash
# ZGEMM on the complex DMMA kernels (zmma) beside the shipped real plan and cuBLAS (issue 15,
# session 25, H2): the GPU tests of zmma, then zgemm25.py (every variant checked against
# cuBLAS's complex128 product, then per call in alternating rounds). One device command, from
# the repository root after `source .device-kit/setup.sh`, the commit's sources under .clean-h2:
#   (README.md, "Reproduce": src, benchmarks, the two zmma test files and their conftests)
# Writes $OUT/zgemm25.log, zgemm25.jsonl, test.log.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-zgemm25
ROOT=$PWD
[ -d .clean-h2/src ] && { export PYTHONPATH="$PWD/.clean-h2/src:$PYTHONPATH"; ROOT=$PWD/.clean-h2; }
HERE=$ROOT/results/issue15/zgemm25
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/zgemm25.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/zgemm25.log
[ -n "$NO_TEST" ] || (cd $ROOT && timeout ${T_TEST:-90} python3 -m pytest -q -p no:randomly \
    -p no:cacheprovider -m gpu tests/codegen/test_cuda_zmma.py tests/blas/test_zmma.py 2>&1 \
    | tail -15 | tee $OUT/test.log)
timeout ${T_RUN:-240} python3 $HERE/zgemm25.py --jsonl $OUT/zgemm25.jsonl ${Z_ARGS:-} 2>&1 \
    | tee -a $OUT/zgemm25.log
echo "zgemm25 rc $?" | tee -a $OUT/zgemm25.log
