source .device-kit/setup.sh && pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
# The shipped session-22 GEMMs (issue 12) through liftkit.blas on the H100, beside cuBLAS (CuPy)
# in the same run, writing $OUT/ship.log (and $OUT/ship.json, rows as they end in ship.jsonl):
# 1. streams.py: the split-tail SGEMM kernel of the shipped profile launched on two streams at
#    once (one module; each stream its own zero-filled flags and workspace), exact against NumPy
#    on integer inputs, the flags back at zero after; then two liftkit.blas Sessions (two
#    streams) issuing SGEMM 4096 calls interleaved, checked the same way.
# 2. benchmarks/blas_cuda.py: per call (and device span) SGEMM NN 4096/8192 (profile: tiles-async
#    split t4@396b3) and DGEMM NN 4096/8192 (profile: mma 128x64x16 w4 x4 ik=8 ahead=2), each
#    checked against a float64 product before it is timed; --alt rows re-time SGEMM 4096 split
#    5 ways and unsplit (the earlier shipped kernel) and DGEMM 4096 with ik=8 alone.
# On the device (carry .device-kit, .device-extra), from the repository root:
#   OUT=DIR bash results/issue12/ship22/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-ship22
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/ship.log
timeout ${T_STREAMS:-18} python3 results/issue12/ship22/streams.py 2>&1 | tee -a $OUT/ship.log
echo "streams rc $?" | tee -a $OUT/ship.log
T=tm=128,tn=64,tk=32,rm=8,rn=8,stages=2
timeout ${T_BLAS:-36} python3 benchmarks/blas_cuda.py --sizes 4096,8192 --dtypes float32,float64 \
    --layouts NN --odd "" --gemv "" --transpose "" --repeat ${REPEAT:-10} \
    --alt "float32/NN@4096=tiles-async($T,split=5,slots=396,bound=3)" \
    --alt "float32/NN@4096=tiles-async($T)" \
    --alt "float64/NN@4096=mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8)" \
    --jsonl $OUT/ship.jsonl --out $OUT/ship.json 2>&1 | tee -a $OUT/ship.log
echo "blas rc $?" | tee -a $OUT/ship.log
