#!/bin/bash
# Issue 15, SGEMM 1023x1025x999 on guarded tiles with A's rows rotated/swizzled (session 26,
# helper H1): every row of odd26.py beside cuBLAS, then the GPU tests of test_rot_edges.py and
# test_odd_sgemm.py. From a clean checkout whose results/issue15/odd26/kernels.pkl.gz was built
# by `odd26.py --build` from the same sources (carry .device-kit .clean-h1):
#   source .device-kit/setup.sh && OUT=DIR bash results/issue15/odd26/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=${LIFTKIT_CACHE_DIR:-/tmp/lk-kernels-odd26}
here=$(dirname "$0")
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
timeout ${T_ODD:-100} python3 "$here/odd26.py" --out "$OUT" --kernels "$here/kernels.pkl.gz" \
    --rounds ${ROUNDS:-5} ${ODD_ARGS:-} 2>&1 | tee "$OUT/stdout.log" | cut -c1-250 | tail -40
echo "== odd26 rc ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
mv -f "$OUT/odd25b.json" "$OUT/odd26.json" 2>/dev/null; mv -f "$OUT/odd25b.log" "$OUT/odd26.log" 2>/dev/null
if [ -n "${BENCH:-}" ]; then  # the suite's table at the odd sizes, the shipped profile as is
    timeout ${T_BENCH:-60} python3 benchmarks/blas_cuda.py --sizes 0 --dtypes float32 \
        --layouts NN --odd 1023x1025x999,1000x1000x1000,4097x4095x4095 --gemv "" \
        --transpose "" --repeat 20 --out $OUT/bench.json 2>&1 | cut -c1-260 | tee $OUT/bench.log
    echo "== bench at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
fi
timeout ${T_TESTS:-40} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_rot_edges.py tests/blas/test_odd_sgemm.py 2>&1 | tail -6 | tee "$OUT/tests.log"
echo "== tests at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt
