#!/bin/bash
# GEMV N on the CPU device beside NumPy in alternating processes (side.py): each round NumPy
# (default 2 threads, alone in its process), then liftkit (OPENBLAS_NUM_THREADS=1) for each
# tree of TREES ("tag=src-dir", "tag=" for the working tree's installed package), with the
# load average. Appends JSON lines to $OUT; `python3 results/issue15/cpu23/rounds_table.py
# FILE` prints the table.
#   git archive <commit> src | tar -x -C /tmp/before
#   TREES="before=/tmp/before/src after=" ROUNDS=20 bash results/issue15/cpu23/rounds.sh
cd "$(dirname "$0")/../../.." || exit 1
OUT=${OUT:-results/issue15/cpu23/rounds.jsonl}
run() {  # round, tag, src, side, threads
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  env OPENBLAS_NUM_THREADS=$5 ${3:+PYTHONPATH=$3} python3 results/issue15/cpu23/side.py $4 \
    ${SIZES:-1024,2048} ${DTYPES:-float32,float64} ${BATCHES:-25} 2>/dev/null \
    | sed "s/^{/{\"round\": $1, \"load\": $load, \"tag\": \"$2\", /" >> $OUT
}
for i in $(seq 1 ${ROUNDS:-10}); do
  run $i numpy "" numpy ${NUMPY_THREADS:-2}
  for t in ${TREES:-head=}; do
    run $i "${t%%=*}" "${t#*=}" liftkit 1
  done
done
