#!/bin/bash
# usage: bench_rate.sh TAG PROGRAM SECONDS SIZES... ; env OLD=1 uses HEAD's source
tag=$1; prog=$2; secs=$3; shift 3
. /work/main/.venv/bin/activate
if [ -n "$OLD" ]; then export PYTHONPATH=/tmp/h3b/old/src; fi
rm -f /tmp/h3b/$tag.sqlite*
/usr/bin/time -f "%e s wall %U s user %M KB" timeout $((secs+120)) python -m liftkit explore $prog --device cpu --rules ${RULES:-cpu} --size "$@" --seconds $secs --budget 400 --quiet --timeout 20 --choices 8 --db /tmp/h3b/$tag.sqlite --out /tmp/h3b/out-$tag > /tmp/h3b/$tag.log 2>&1
grep -E "candidates \(|^best|wall" /tmp/h3b/$tag.log
