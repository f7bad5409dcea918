#!/bin/bash
# DGEMM/ZGEMM at 1024 (and DGEMM NN 4096) through liftkit.blas beside cuBLAS (issue 15, session 25,
# H1): the GPU tests of the k-permuted reads (pairs) and of the read-ahead loops, fp64_25.py
# (every variant checked against cuBLAS's product, then per call in alternating rounds), then
# Nsight Compute over one call of cuBLAS's and liftkit's DGEMM (ncu_probe.py). One device command
# from the repository root after `source .device-kit/setup.sh`, the commit's sources unpacked
# under .clean-h1 (carried):
#   mkdir -p .clean-h1 && git archive HEAD src benchmarks tests pyproject.toml \
#       results/issue15/fp64-25 | tar -x -C .clean-h1
# Writes $OUT/fp64_25.log, fp64_25.jsonl, test.log, ncu.txt, ncu_src.csv.
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-fp64-25
ROOT=$PWD
[ -d .clean-h1/src ] && { export PYTHONPATH="$PWD/.clean-h1/src:$PYTHONPATH"; ROOT=$PWD/.clean-h1; }
HERE=$ROOT/results/issue15/fp64-25
python3 -c "import liftkit; print('liftkit from', liftkit.__file__)" | tee -a $OUT/fp64_25.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/fp64_25.log
[ -n "$NO_TEST" ] || (cd $ROOT && timeout ${T_TEST:-60} python3 -m pytest -q -p no:randomly \
    -p no:cacheprovider -m gpu tests/codegen/test_cuda_mma_pairs.py tests/codegen/test_cuda_mma_ahead.py \
    2>&1 | tail -4 | tee $OUT/test.log)
timeout ${T_RUN:-200} python3 $HERE/fp64_25.py --jsonl $OUT/fp64_25.jsonl ${FP64_ARGS:-} 2>&1 \
    | tee -a $OUT/fp64_25.log
echo "fp64_25 rc $?" | tee -a $OUT/fp64_25.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
PROBE="NN:mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2) ${NCU_VARIANTS:-}"
if [ -z "$NO_NCU" ] && [ -n "$NCU" ]; then
    timeout ${T_NCU:-60} $NCU --profile-from-start off --clock-control none --section SpeedOfLight \
        --section Occupancy --section ComputeWorkloadAnalysis --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
        --print-details all -o /tmp/fp64_25 python3 $HERE/ncu_probe.py $PROBE > $OUT/ncu_run.txt 2>&1
    echo "ncu rc $? ($NCU)" | tee -a $OUT/fp64_25.log
    timeout 30 $NCU -i /tmp/fp64_25.ncu-rep --print-details all > $OUT/ncu.txt 2>&1
    timeout 30 $NCU -i /tmp/fp64_25.ncu-rep --page source --print-source sass --csv \
        > /tmp/ncu_src.csv 2>&1 && gzip -c /tmp/ncu_src.csv > $OUT/ncu_src.csv.gz
    echo "ncu import rc $?" | tee -a $OUT/fp64_25.log
fi
