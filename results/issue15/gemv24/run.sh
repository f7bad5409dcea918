#!/bin/bash
# Session 24, helper H4: GEMV and the CUDA host path on the H100 (one device command).
# Run inside .clean-h4 (a `git archive` of the commit under test: src benchmarks tests results),
# after `source .device-kit/setup.sh`, with the commit before the host change's src in
# ../.clean-h4-base/src:
#   1. the GPU tests of the CUDA call plans (test_cuda.py: CuPy/PyTorch in and out, repeat calls
#      on their plans, futures, wrong arrays, NumPy results read late);
#   2. host24.py before / after / (gemv24.py) / before / after: one call's host µs and per call
#      beside CuPy, GEMV float32 N/T 4096², DGEMM 1024, and the driver pieces;
#   3. gemv24.py: every GEMV variant checked, timed by kernel and per call beside cuBLAS, the
#      best and the profile's choice per call in alternating rounds.
# Writes under $OUT: card.txt, tests.log, host.log, host.jsonl, log, gemv.jsonl.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-gemv24
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
python3 -c "import liftkit, cupy; print('liftkit from', liftkit.__file__, '| cupy', cupy.__version__)"
timeout ${T_TEST:-50} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_cuda.py tests/blas/test_plan_calls.py -k "cupy or torch or repeat or futures or wrong or late" 2>&1 \
    | tail -6 | tee $OUT/tests.log
BASE="$PWD/../.clean-h4-base/src"
host() {  # label, python path first
    PYTHONPATH="$2:$PYTHONPATH" timeout ${T_HOST:-35} python3 results/issue15/gemv24/host24.py \
        --label $1 --out $OUT 2>&1 | tee -a $OUT/host.log | grep -v "rel error"
}
host before1 "$BASE"
host after1 "$PWD/src"
timeout ${T_BENCH:-120} python3 results/issue15/gemv24/gemv24.py --out $OUT ${ARGS:-} 2>&1 \
    | tee $OUT/log | cut -c1-240
host before2 "$BASE"
host after2 "$PWD/src"
echo "GPU tests: $(tail -1 $OUT/tests.log)"
