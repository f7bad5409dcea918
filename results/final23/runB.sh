#!/bin/bash
# Session 23, coordinator's check B of HEAD on the GPU (one device command): every gpu-marked
# test again (after the last helpers' changes), then liftkit.blas per call beside cuBLAS (CuPy)
# in the same process: every dtype x layout at 1024/4096/8192, three odd shapes, GEMV, transpose;
# then `liftkit bench --backend both` (the 18 programs, OpenCL and CUDA beside the references).
#   source .device-kit/setup.sh && OUT=DIR bash results/final23/runB.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-final23b
OUT=${OUT:-.}
start=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - start )) s" | tee -a $OUT/card.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
stamp "gpu tests"
timeout ${T_TESTS:-150} python3 -m pytest -m gpu -q -p no:randomly -p no:cacheprovider -n 8 tests \
    2>&1 | grep -v Warning | tail -30 > $OUT/tests.log
echo "tests rc $?" >> $OUT/tests.log
stamp "blas table"
timeout ${T_BENCH:-170} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --odd 1000x1000x1000,1023x1025x999,4097x4095x4095 --gemv 4096,8192 --transpose 4096,8192 \
    --repeat 20 --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 | cut -c1-260 > $OUT/bench.log
echo "bench rc $?" >> $OUT/bench.log
stamp "the 18 programs on both backends"
mkdir -p /tmp/b18 && timeout ${T_18:-150} liftkit bench --device gpu --backend both --repeat 10 \
    --out /tmp/b18 > $OUT/bench18.log 2>&1
echo "bench18 rc $?" >> $OUT/bench18.log; cp /tmp/b18/bench.md $OUT/bench18.md 2>/dev/null
stamp end
