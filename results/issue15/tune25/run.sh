#!/bin/bash
# Issue 15, session 25 (helper H6): S/D GEMM NN tuned from nothing on the GPU, re-timed at HEAD
# (fresh profile directory and fresh kernel cache, as results/issue15/tune24/run.sh did); what
# the profile holds (count.py: measurements, failures); each class's best tuned entry against
# cuBLAS, and the tuned profile's choices against the shipped profile's and cuBLAS per call at
# 1024 and 4096 (compare.py). Everything inside one hard cap: CAP seconds (default 300).
#
# From a `.clean` folder (see README.md), after `source .device-kit/setup.sh` and the z3 wheel:
#   OUT=DIR bash results/issue15/tune25/run.sh
# Dry run here (CPU device, small class, NumPy stand-in for CuPy): DRY=1 OUT=DIR bash ...
# Writes under $OUT: log (everything below), tune.log (a line per trial), profile-tuned.json,
# count.txt (count.py, phases.py), compare.log, compare.json, summary.txt.
set -o pipefail
export PYTHONUNBUFFERED=1
CAP=${CAP:-300}
if [ -z "$LK_TUNE25_CAPPED" ]; then  # the hard cap around the whole script
    LK_TUNE25_CAPPED=1 exec timeout -k 5 "$CAP" bash "$0" "$@"
fi
OUT=${OUT:?set OUT to the folder for the results}
HERE=results/issue15/tune25
W=${TMPDIR:-/tmp}/lk-tune25; rm -rf "$W"; mkdir -p "$W/prof" "$W/kernels" "$OUT"
SHIPPED=${SHIPPED:-src/liftkit/blas/profiles/profile-397cb6df054d2a73.json}  # the H100's
if [ -n "$DRY" ]; then  # CPU OpenCL device, small class only, the CPU's shipped profile
    DEVICE=cpu; CLASSES="--classes small --edges on --peaks quick"; SIZES=${SIZES:-64}
    SHIPPED=src/liftkit/blas/profiles/profile-537b8f85ccbed116.json
else
    DEVICE=gpu; CLASSES=""; SIZES=${SIZES:-1024,4096}
fi
start=$(date +%s.%N)
since() { python3 -c "print(round($(date +%s.%N) - $start, 1))"; }
left() { python3 -c "print(max(5, int($CAP - 8 - ($(date +%s.%N) - $start))))"; }
{
if [ -z "$DRY" ]; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
fi
echo "host cores: $(nproc); $(date -u); cap ${CAP} s; device $DEVICE"
git_head=$(cat .git-head 2>/dev/null || true); [ -n "$git_head" ] && echo "sources: $git_head"

# 1. tuning from nothing: fresh profile directory and kernel cache, a line per trial
export LIFTKIT_CACHE_DIR=$W/kernels LIFTKIT_BLAS_PROFILES=$W/prof
T_TUNE=${T_TUNE:-$((CAP - 75))}  # (225 s under the default cap; compare.py gets the rest)
echo "== tune (limit ${T_TUNE} s) at $(since) s"
t0=$(date +%s.%N)
timeout "$T_TUNE" python3 -m liftkit blas tune --device $DEVICE --ops mm \
    --dtypes float32,float64 --layouts NN $CLASSES --fresh --no-progress > "$OUT/tune.log" 2>&1
rc=$?
wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
echo "tune: rc $rc$([ $rc = 124 ] && echo ' (stopped at its limit: the classes done are saved)')"
echo "S/D GEMM NN tuned from nothing: wall $wall s"
grep -E "^tuning|measurements|failed|error|Error" "$OUT/tune.log" | cut -c1-200 | tail -20
PROF=$(ls "$W"/prof/profile-*.json 2>/dev/null | head -1)
if [ -z "$PROF" ]; then
    echo "no profile written: the tune log's end:"; tail -20 "$OUT/tune.log"
else
    cp "$PROF" "$OUT/profile-tuned.json"
    python3 $HERE/count.py "$OUT/profile-tuned.json" | tee "$OUT/count.txt"
    python3 $HERE/phases.py "$OUT/tune.log" | tee -a "$OUT/count.txt"
    echo "cubins in the fresh kernel cache: $(find "$W/kernels" -type f | wc -l)"
    python3 -m liftkit blas profile show "$OUT/profile-tuned.json" 2>&1 | head -30 | cut -c1-160

    # 2. the tuned entries against cuBLAS; the tuned vs the shipped choices per call
    T_CMP=$(left)
    echo "== compare (limit ${T_CMP} s) at $(since) s"
    DRYPATH=$([ -n "$DRY" ] && echo "$PWD/$HERE/dry:")
    PYTHONPATH="$DRYPATH$PYTHONPATH" timeout "$T_CMP" python3 $HERE/compare.py --device $DEVICE \
        --tuned "$OUT/profile-tuned.json" --shipped "$SHIPPED" --sizes "$SIZES" --out "$OUT/compare.json" > "$OUT/compare.log" 2>&1
    echo "compare: rc $?"; cut -c1-220 "$OUT/compare.log"
fi
echo "== end at $(since) s; $(date -u)"
} 2>&1 | tee "$OUT/log"
# summary: the lines a report needs
grep -E "^NVIDIA|^host|^sources|tune: rc|tuned from nothing|measurements =|measurements in|  failed:|trials in the log|compare: rc|tuned/shipped|== end" \
    "$OUT/log" | cut -c1-240 > "$OUT/summary.txt"
true
