"""Time mriq_low, the old bundled derivation (coordinates read in the loop) and the new one
(private-copy) on the CPU device, interleaved in rounds so the machine's load shifts all three;
each checked against the NumPy reference first. Medians of all rounds' event-timed runs.

    python results/issue10/mriq-private/compare.py [ROUNDS] [PROGRAM_KEY] [DB]

With DB '' only the hand-written program and the bundled derivation (kmeans, blackscholes).
"""

from __future__ import annotations

import statistics
import sys

from liftkit.backends.choose import make_runner
from liftkit.bench.harness import (Choice, check_compiled, derivation_for, prepare,
                                   time_compiled)
from liftkit.bench.suite import select
from liftkit.codegen import CompileOptions, compile_program
from liftkit.explore.bundled import low_level_program
from liftkit.programs import PROGRAMS

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
key = sys.argv[2] if len(sys.argv) > 2 else "mriq"
db = sys.argv[3] if len(sys.argv) > 3 else "results/issue10/mriq-private/tuning.sqlite"
entry = select([key])[0]
runner = make_runner("opencl", "cpu")
spec = PROGRAMS[entry.high]
sizes = entry.sizes_for("cpu")
progs = {}
hand = PROGRAMS[entry.candidates("cpu")[0]]
progs[f"{hand.name} (hand)"] = (hand.program, hand)
for label, where in (("derived (bundled)", None), ("derived (db)", db))[:2 if db else 1]:
    d, _ = derivation_for(entry, PROGRAMS, runner.device, sizes, where)
    progs[label] = (low_level_program(d, spec.program), spec)
times: dict[str, list[float]] = {k: [] for k in progs}
ready = {}
for label, (low, s) in progs.items():
    prep = prepare(entry, Choice(label, low, s, ""), sizes, 0)
    comp = compile_program(low, CompileOptions(dialect=runner.dialect))
    diff, *_ = check_compiled(runner, comp, prep)
    assert not diff, (label, diff)
    ready[label] = (comp, prep)
for _ in range(rounds):
    for label, (comp, prep) in ready.items():
        times[label] += [float(sum(r)) * 1e3 for r in time_compiled(runner, comp, prep, 10).runs]
base = statistics.median(times[next(iter(times))])
for label, ts in times.items():
    m = statistics.median(ts)
    print(f"{label:24s} median {m:7.3f} ms  (min {min(ts):.3f})  hand ÷ this {base / m:.2f}×")
