#!/bin/bash
# Issue 15, odd-size margins on the H100 (session 26, helper H7): every row of odd26b.py beside
# cuBLAS (ZGEMM 1000³ / 1023×1025×999 on edge-zmma beside zmma padded, SGEMM 1023×1025×999's
# entry beside its neighbours), the winners shipped into this tree's profile (ship.py), the
# suite's table at the odd sizes with it (blas_cuda.py), then the GPU tests of test_edge_zmma.py.
# From a clean checkout whose results/issue15/odd26b/kernels.pkl.gz was built by
# `odd26b.py --build` from the same sources (carry .device-kit .clean-h7):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd26b/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd26b}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-150} python3 "$here/odd26b.py" --out "$OUT" --kernels "$here/kernels.pkl.gz" \
    --rounds ${ROUNDS:-7} ${ODD_ARGS:-} 2>&1 | tee "$OUT/stdout.log" | cut -c1-250 | tail -40
echo "== odd26b rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
if [ -n "${BENCH:-}" ] && [ -s "$OUT/odd26b.json" ]; then  # the suite's table, the winners shipped
    python3 "$here/ship.py" "$OUT/odd26b.json" 2>&1 | tee -a $OUT/card.txt
    timeout ${T_BENCH:-60} python3 benchmarks/blas_cuda.py --sizes 0 --dtypes complex128,float32 \
        --layouts NN --odd 1000x1000x1000,1023x1025x999 --gemv "" --transpose "" --repeat 20 \
        --out $OUT/bench.json 2>&1 | cut -c1-260 | tee $OUT/bench.log
    echo "== bench at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
fi
timeout ${T_TESTS:-60} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_edge_zmma.py 2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
