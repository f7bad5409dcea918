#!/bin/bash
# Issue 10: "the README's explore command and every explore in docs run to completion" on the CPU
# device. Each documented `liftkit explore` as written, with --device gpu replaced by cpu (this
# machine has no GPU) and, where the command sets no limit, --seconds 60 added (the point is that
# it finishes cleanly, not how far it gets); databases and outputs in a scratch directory.
# Usage: bash results/issue10/explore-docs/run.sh > results/issue10/explore-docs/log 2>&1
W=${W:-/tmp/explore-docs}; rm -rf "$W"; mkdir -p "$W"; cd "$W" || exit 1
export LIFTKIT_TUNING_DB="$W/default.sqlite"
cp "$OLDPWD/results/issue5/cpu-tuning.sqlite" "$W/cpu-tuning.sqlite"
run() {  # where-documented, command...
    local where="$1"; shift
    local t0=$SECONDS
    echo "=== $where"; echo "\$ $*"
    "$@" > out.txt 2>&1; local rc=$?
    grep -E "candidates \(|^best|error|Error|Traceback|wrote|report" out.txt | head -8 | cut -c1-240
    echo "--> exit $rc, $((SECONDS - t0)) s"; echo
}
run "README.md:114" liftkit explore asum --device cpu --size N=65536 --budget 50 --plot asum.png
run "README.md:117" liftkit explore gemv --device cpu --rules gpu --size N=8192 M=16384 --seconds 60
run "README.md:118" liftkit explore mm --device cpu --rules gpu --workers 16 --report rep/ --seconds 60
run "docs/explore.md:43" liftkit explore mm --device cpu --backend any --seconds 60
run "docs/explore.md:87" liftkit explore gemv --device cpu --backend opencl --rules gpu --size N=4096 M=4096 --budget 200 --workers 16 --report rep/gemv --seconds 60
run "docs/explore.md:88" liftkit explore mm --device cpu --rules gpu --size M=1024 N=1024 K=1024 --seeds 3 --tune-trials 30 --report rep/mm --seconds 60
run "docs/explore.md:107" liftkit explore mm --device cpu --rules gpu --ray auto --report rep/mm-ray --seconds 60
run "docs/explore.md:108" liftkit explore asum --device cpu --ray local --seconds 60
run "docs/explore.md:182" liftkit explore gemv --device cpu --rules cpu --size N=512 M=512 --budget 24 --seeds 3 --workers 2 --tune-trials 12 --report rep/cpu-gemv
run "docs/perf.md:70" liftkit explore scal --device cpu --rules gpu --choices 12 --seconds 60
run "docs/benchmarks.md:252" liftkit explore mm --device cpu --rules gpu --size M=4096 N=4096 K=4096 --budget 40 --seconds 60
run "docs/benchmarks.md:406" liftkit explore gemv --device cpu --rules cpu --size N=2048 M=4096 --budget 25 --seconds 60
run "docs/benchmarks.md:422" liftkit explore gemv --device cpu --rules cpu --size N=2048 M=4096 --budget 25 --choices 12 --db cpu-tuning.sqlite
