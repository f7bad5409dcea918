"""mriq_low vs the same kernel with add2(acc, qTerm(..)) (the high-level program's user functions)."""
import statistics
from liftkit.dsl import *  # noqa
from liftkit.programs.parboil import qterm, F2_ZERO, X, K
from liftkit.programs import PROGRAMS
from liftkit.backends.choose import make_runner
from liftkit.bench.harness import Choice, check_compiled, prepare, time_compiled
from liftkit.bench.suite import select
from liftkit.codegen import CompileOptions, compile_program


def v(copy_out):
    def body(sx, sy, sz, kvals):
        r = reduceSeq(lambda acc, k: add2(acc, qterm(sx, sy, sz, k)), F2_ZERO) << kvals
        return (toGlobal(mapSeq(id2)) << r) if copy_out else r
    return fun([float32[X], float32[X], float32[X], float4[K]], lambda x, y, z, kvals:
               join << mapGlb(0)(lambda p: let(toPrivate(id) << p[0], toPrivate(id) << p[1],
                                               toPrivate(id) << p[2],
                                               lambda sx, sy, sz: body(sx, sy, sz, kvals)))
               << zip(x, y, z))


entry = select(["mriq"])[0]
runner = make_runner("opencl", "cpu")
sizes = entry.sizes_for("cpu")
spec = PROGRAMS["mriq"]
progs = {"mriq_low (computeQ)": PROGRAMS["mriq_low"].program, "add2∘qTerm + id2 copy": v(True),
         "add2∘qTerm (= new derived)": v(False)}
ready, times = {}, {}
for label, low in progs.items():
    prep = prepare(entry, Choice(label, low, spec, ""), sizes, 0)
    comp = compile_program(low, CompileOptions(dialect=runner.dialect))
    assert not check_compiled(runner, comp, prep)[0]
    ready[label], times[label] = (comp, prep), []
for _ in range(30):
    for label, (comp, prep) in ready.items():
        times[label] += [float(sum(r)) * 1e3 for r in time_compiled(runner, comp, prep, 10).runs]
base = statistics.median(times["mriq_low (computeQ)"])
for label, ts in times.items():
    print(f"{label:28s} median {statistics.median(ts):7.3f} ms  hand ÷ this {base / statistics.median(ts):.2f}×")
