#!/bin/bash
# The CPU device's closing table (issue 15): liftkit blas bench (GEMM, GEMV, transpose at
# 1024 and 2048, float32/float64) beside NumPy in alternating rounds, NumPy with its default
# threads (2 here) and then with one (OPENBLAS_NUM_THREADS=1).
# Writes results/issue15/cpu-final/final_{default,1thread}_N.json; table.py prints the table.
cd "$(dirname "$0")/../../.." || exit 1
D=results/issue15/cpu-final
for i in $(seq 1 ${ROUNDS:-4}); do
  liftkit blas bench --device cpu --ops gemm,gemv,transpose --sizes 1024,2048 \
      --dtypes float32,float64 --repeat 5 --out $D/final_default_$i.json | grep -E "^(gemm|gemv|transpose)" | cut -c1-150
  OPENBLAS_NUM_THREADS=1 liftkit blas bench --device cpu --ops gemm,gemv,transpose --sizes 1024,2048 \
      --dtypes float32,float64 --repeat 5 --out $D/final_1thread_$i.json | grep -E "^(gemm|gemv|transpose)" | cut -c1-150
done
