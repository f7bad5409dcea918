#!/bin/bash
# SGEMM/DGEMM 1024 on the CPU device (Intel's CPU OpenCL runtime) beside NumPy's OpenBLAS, in
# alternating rounds: NumPy with its default threads (2 here), then with one thread.
# Writes results/issue15/cpu-final/gemm_{default,1thread}_N.json.
cd "$(dirname "$0")/../../.." || exit 1
D=results/issue15/cpu-final
for i in $(seq 1 ${ROUNDS:-3}); do
  liftkit blas bench --device cpu --ops gemm --sizes 1024 --dtypes float32,float64 --repeat 3 \
      --out $D/gemm_default_$i.json | grep -E "^gemm" | cut -c1-160
  OPENBLAS_NUM_THREADS=1 liftkit blas bench --device cpu --ops gemm --sizes 1024 \
      --dtypes float32,float64 --repeat 3 --out $D/gemm_1thread_$i.json | grep -E "^gemm" | cut -c1-160
done
