#!/bin/bash
# Issue 10 item 4 on the GPU, one device command: search the high-level programs that have no
# GPU derivation yet at the suite's large sizes (OpenCL, --rules gpu), then `liftkit bench` on
# all 18 with that database, so the derived and hand-written programs are checked and timed
# together (the others' derivations come from the bundled ones). Everything under $OUT:
#   log, tuning.sqlite, derive-logs.tgz, bench.md, bench.json (or partial.json).
#   run: source .device-kit/setup.sh is done here; carry .device-kit and .device-extra.
set -o pipefail
# DRY=1 DEVICE=cpu SIZE_SET=tiny OUT=/tmp/x: the same steps on this machine's CPU device first
# CHOICES (default 8): choices per search step (--choices); 14 lets every macro-rule group of
# atax/gesummv into the first step
if [ -z "$DRY" ]; then
    source .device-kit/setup.sh || exit 1
    pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
fi
DEVICE=${DEVICE:-gpu}; SIZE_SET=${SIZE_SET:-large}
SEARCH_TOTAL=${SEARCH_TOTAL:-235}
BENCH_LIMIT=${BENCH_LIMIT:-170}
rm -rf /tmp/derive-logs /tmp/bench  # a warm machine keeps /tmp between commands
T0=$SECONDS
timeout $((SEARCH_TOTAL + 30)) python3 benchmarks/derive_suite.py --device $DEVICE --size-set $SIZE_SET --rules gpu \
    --programs ${PROGRAMS:-md,nbody_nvidia,md_shoc,kmeans,nn,mriq,atax,gemv_clblast,gesummv} \
    --budget 400 --seconds 12 \
    --seconds-for ${SECONDS_FOR:-nbody=25,kmeans=20,mriq=20,atax=35,gemv=30,gesummv=35} \
    --grace 12 --total $SEARCH_TOTAL --timeout 20 --choices ${CHOICES:-8} \
    --db $OUT/tuning.sqlite --logs /tmp/derive-logs | grep -E '^\$|candidates \(|^best|^exit|stopped|error|not started'
echo "derive_suite: $((SECONDS - T0)) s"
tar czf $OUT/derive-logs.tgz -C /tmp derive-logs
T1=$SECONDS
timeout $BENCH_LIMIT python3 -m liftkit bench --device $DEVICE --size-set $SIZE_SET --no-references --db $OUT/tuning.sqlite \
    --out /tmp/bench ${BENCH_PROGRAMS:+--programs $BENCH_PROGRAMS} > /tmp/bench.out 2> /tmp/bench.err
echo "bench: exit $?, $((SECONDS - T1)) s"
grep -E '^bench:' /tmp/bench.err | tail -25
if [ -f /tmp/bench/bench.md ]; then cp /tmp/bench/bench.md /tmp/bench/bench.json $OUT/
else cp /tmp/bench/partial.json $OUT/ 2>/dev/null; tail -5 /tmp/bench.err; fi
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/tuning.sqlite
sed -n '/## Derived/,$p' /tmp/bench.out | grep -E '^\| |^Derived'
