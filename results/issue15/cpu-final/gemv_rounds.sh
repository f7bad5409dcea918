#!/bin/bash
# GEMV N/T on the CPU device beside NumPy in alternating rounds (default threads / one thread).
# Writes results/issue15/cpu-final/gemv_{default,1thread}_N.json.
cd "$(dirname "$0")/../../.." || exit 1
D=results/issue15/cpu-final
for i in $(seq 1 ${ROUNDS:-3}); do
  liftkit blas bench --device cpu --ops gemv --sizes ${SIZES:-1024,2048} --dtypes float32,float64 \
      --repeat 9 --out $D/gemv${TAG}_default_$i.json | grep -E "^gemv" | cut -c1-160
  OPENBLAS_NUM_THREADS=1 liftkit blas bench --device cpu --ops gemv --sizes ${SIZES:-1024,2048} \
      --dtypes float32,float64 --repeat 9 --out $D/gemv${TAG}_1thread_$i.json | grep -E "^gemv" | cut -c1-160
done
