#!/bin/bash
# DGEMM/ZGEMM at 1024 through liftkit.blas beside cuBLAS (issue 15, session 24, H1): the GPU test
# of the m16n8k16 read-ahead loop, fp64_24.py (every variant checked against cuBLAS's product,
# then per call in alternating rounds), then Nsight Compute over one call of each side
# (ncu_probe.py). One device command, from the repository root after
# `source .device-kit/setup.sh`, the commit's sources unpacked under .clean-h1 (carried):
#   mkdir -p .clean-h1 && git archive HEAD src benchmarks tests pyproject.toml \
#       results/issue15/fp64-24 | tar -x -C .clean-h1
# Writes $OUT/fp64_24.log, fp64_24.jsonl, test.log, ncu.txt.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-fp64-24
ROOT=$PWD
[ -d .clean-h1/src ] && { export PYTHONPATH="$PWD/.clean-h1/src:$PYTHONPATH"; ROOT=$PWD/.clean-h1; }
HERE=$ROOT/results/issue15/fp64-24
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/fp64_24.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/fp64_24.log
[ -n "$NO_TEST" ] || (cd $ROOT && timeout ${T_TEST:-40} python3 -m pytest -q -p no:randomly \
    -p no:cacheprovider -m gpu tests/codegen/test_cuda_mma_k16.py 2>&1 | tail -4 | tee $OUT/test.log)
timeout ${T_RUN:-140} python3 $HERE/fp64_24.py --jsonl $OUT/fp64_24.jsonl ${FP64_ARGS:-} 2>&1 \
    | tee -a $OUT/fp64_24.log
echo "fp64_24 rc $?" | tee -a $OUT/fp64_24.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NO_NCU" ] || [ -z "$NCU" ] || timeout ${T_NCU:-50} $NCU --profile-from-start off \
    --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis python3 $HERE/ncu_probe.py > $OUT/ncu.txt 2>&1
echo "ncu rc $? ($NCU)" | tee -a $OUT/fp64_24.log
