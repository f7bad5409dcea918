#!/bin/bash
# GEMV on the CPU device, two commits side by side in alternating rounds (each round: before
# and after, NumPy with its default threads, then with one). BEFORE/AFTER are commits; their
# src/ trees are unpacked under /tmp and run through PYTHONPATH. Writes
# results/issue15/cpu-final/ab_{before,after}_{default,1thread}_N.json and ab_numpy_N.json (NumPy
# alone in its process, default threads); `python3 ab_table.py` prints the per-call table.
cd "$(dirname "$0")/../../.." || exit 1
D=results/issue15/cpu-final
for c in ${BEFORE:-e6d2922} ${AFTER:-HEAD}; do
  rm -rf /tmp/gemv_ab/$c && mkdir -p /tmp/gemv_ab/$c && git archive $c src | tar -x -C /tmp/gemv_ab/$c
done
bench() {  # commit, tag, extra env
  env $3 PYTHONPATH=/tmp/gemv_ab/$1/src liftkit blas bench --device cpu --ops gemv \
      --sizes ${SIZES:-1024,2048} --dtypes float32,float64 --repeat 9 --out $D/ab_$2.json \
      | grep -E "^gemv" | cut -c1-150 | sed "s/^/$2 /"
}
for i in $(seq 1 ${ROUNDS:-5}); do
  python3 $D/numpy_gemv.py $D/ab_numpy_$i.json ${SIZES:-1024,2048}
  bench ${BEFORE:-e6d2922} before_default_$i
  bench ${AFTER:-HEAD} after_default_$i
  bench ${BEFORE:-e6d2922} before_1thread_$i OPENBLAS_NUM_THREADS=1
  bench ${AFTER:-HEAD} after_1thread_$i OPENBLAS_NUM_THREADS=1
done
