#!/bin/bash
# Issue 15's CPU-device targets at HEAD, session 25: SGEMM/DGEMM 1024 >= 0.5x NumPy's BLAS,
# GEMV >= 0.8x, transpose >= NumPy's .T.copy(). liftkit with the shipped CPU profile on
# `--device cpu` (Intel's CPU OpenCL runtime here), operands resident as pyopencl arrays;
# NumPy (OpenBLAS, default threads) alone in a process of its own; the two sides in alternating
# processes, ROUNDS rounds, each round's load average recorded (the method of
# results/issue15/cpu23: OpenBLAS's spinning threads halve an OpenCL kernel in a shared
# process). Every result is checked before it is timed (side.py). Then table.py prints the table.
#   ROUNDS=7 bash results/issue15/cpu25/run.sh            # run it on a quiet machine
#   OUT=/tmp/x.jsonl ROUNDS=1 SIZES="gemm=64;gemv=64;transpose=64" BATCHES=3 bash ...   # smoke
cd "$(dirname "$0")/../../.." || exit 1
D=results/issue15/cpu25
OUT=${OUT:-$D/rounds.jsonl}
SIZES=${SIZES:-gemm=1024;gemv=1024,2048;transpose=1024,2048}
OPS=${OPS:-gemm,gemv,transpose}
DTYPES=${DTYPES:-float32,float64}
: > "$OUT"; : > "$OUT.err"
# the shipped CPU profile, not one a tuning run left in the user's profile directory
EMPTY=$(mktemp -d); export LIFTKIT_BLAS_PROFILES=$EMPTY
echo "$(date -u) HEAD $(git rev-parse --short HEAD 2>/dev/null) cores $(nproc); $OPS at $SIZES; $DTYPES" >&2
side() {  # round, side, threads
  local load rc; load=$(cut -d' ' -f1 /proc/loadavg)
  env ${3:+OPENBLAS_NUM_THREADS=$3} timeout ${T_SIDE:-300} python3 $D/side.py $2 "$OPS" "$SIZES" \
      "$DTYPES" ${BATCHES:-15} 2>>"$OUT.err" \
    | sed "s/^{/{\"round\": $1, \"load\": $load, /" >> "$OUT"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || echo "round $1 $2: rc $rc (see $OUT.err)" >&2
}
for i in $(seq 1 ${ROUNDS:-7}); do
  side $i numpy ${NUMPY_THREADS:-}
  side $i liftkit 1
  echo "round $i done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 $D/table.py "$OUT"
python3 $D/table.py --min "$OUT"
rmdir "$EMPTY"
