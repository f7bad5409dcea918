#!/bin/bash
# Session 25, coordinator's first device command: tuning from nothing re-timed (tune25, 300 s cap),
# then helper H7's run 2 (complex GEMM at odd sizes, oddc25 --run2) and helper H8's run 2 (GEMV T
# cluster form, gemv25b --set 2), each into its own folder; everything comes back as one archive.
# From the repository root after `source .device-kit/setup.sh` and the z3 wheel:
#   OUT=DIR bash results/final25/runA.sh
export PYTHONUNBUFFERED=1
R=/tmp/final25A; rm -rf $R; mkdir -p $R/tune $R/oddc $R/gemv
start=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - start )) s" | tee -a $OUT/stamps.txt; }
git_head=$(cat .git-head 2>/dev/null); echo "sources ${git_head:-working tree}" > $OUT/stamps.txt
stamp "tune25"
OUT=$R/tune bash results/issue15/tune25/run.sh > $R/tune/stdout.log 2>&1
tail -30 $R/tune/summary.txt 2>/dev/null
stamp "oddc25 run 2"
OUT=$R/oddc T_ODD=120 ODD_ARGS=--run2 bash results/issue15/oddc25/run.sh > $R/oddc/run.log 2>&1
tail -25 $R/oddc/run.log
stamp "gemv25b run 2"
OUT=$R/gemv ARGS="--set 2" T_TEST=30 T_BENCH=95 bash results/issue15/gemv25b/run.sh > $R/gemv/run.log 2>&1
tail -25 $R/gemv/run.log | cut -c1-200
stamp end
tar czf $OUT/runA.tgz -C $R .
