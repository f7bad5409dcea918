#!/bin/bash
# Session 23 (helper H3), one device command: SGEMM and CGEMM NN/NT/TN at 1024/4096/8192 through
# liftkit.blas beside cuBLAS (CuPy) in one process (benchmarks/blas_cuda.py: every row checked
# against a float64/complex128 product on the GPU first, NaN-poisoned outputs; per call = CUDA
# events around calls back to back, each side's host path included; `device` = the same calls
# queued behind a long product). Default rows run the shipped profile (NT/TN: the `nn` plan,
# transpose then NN; 4096 `huge` split 5 ways, 8192 `giant` split 4 ways); the --alt rows run:
# NT/TN on their own tiles-async derivations (kt: the transposed operand tiled as stored, no
# transpose pass; rot=1 for NT rotates A's and Bᵀ's rows), the split tail over the whole
# small grid at 1024 (slots 924), the grouped block order (wrg-row-groups), and CGEMM's real
# kernel with other split/group choices. Then the GPU tests of the layouts.
# On the device (carry .device-kit, .device-extra), from the repository root:
#   source .device-kit/setup.sh && OUT=$OUT bash results/issue15/sgemm23/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-kernels-sgemm23
[ -d .device-extra ] && python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
OUT=${OUT:-.}
# the committed sources (git archive HEAD src | tar -x -C .clean-h3, carried) where present
[ -d .clean-h3/src ] && export PYTHONPATH="$PWD/.clean-h3/src:$PYTHONPATH"
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/card.txt
S=tm=128,tn=64,tk=32,rm=8,rn=8,stages=2
T=tm=64,tn=64,tk=16,rm=8,rn=8,stages=2
ALT=()
for lay in NT TN; do
  ALT+=(--alt "float32/$lay@1024=tiles-async($T)" --alt "float32/$lay@1024=tiles-async($T,split=3,slots=924)"
        --alt "float32/$lay@4096=tiles-async($S)"
        --alt "float32/$lay@4096=tiles-async($S,split=5,slots=396,bound=3)"
        --alt "float32/$lay@8192=tiles-async($S,split=4,slots=396,bound=3)")
done
ALT+=(--alt "float32/NT@1024=tiles-async($T,rot=1)"
      --alt "float32/NT@4096=tiles-async($S,rot=1,split=5,slots=396,bound=3)"
      --alt "float32/NN@1024=tiles-async($T,split=3,slots=924)"
      --alt "float32/NN@4096,8192=tiles-async($S,group=8)"
      --alt "float32/NN@8192=tiles-async($S,group=4)"
      --alt "complex64/NN@1024:float32/NN=tiles-async($T,split=2,slots=924)"
      --alt "complex64/NN@1024:float32/NN=tiles-async($T,split=3,slots=924)"
      --alt "complex64/NN@4096:float32/NN=tiles-async($S,split=5,slots=396,bound=3)"
      --alt "complex64/NN@4096:float32/NN=tiles-async($S,group=8)")
timeout ${T_BENCH:-280} python3 benchmarks/blas_cuda.py --sizes 1024,4096 --big 8192 \
    --dtypes float32,complex64 --layouts NN,NT,TN --odd "" --gemv "" --transpose "" \
    --repeat 20 "${ALT[@]}" --jsonl $OUT/gemm.jsonl --out $OUT/bench.json 2>&1 \
    | tee $OUT/bench.log | cut -c1-230
echo "bench rc $?"
timeout ${T_TEST:-40} python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
    tests/blas/test_cuda_layouts.py 2>&1 | tail -4 | tee $OUT/tests.log
