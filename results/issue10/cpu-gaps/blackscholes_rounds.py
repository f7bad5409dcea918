"""BlackScholes on the CPU device: the bundled derivation (512 work-items of 2048 options each)
and blackscholes_low (one work-item per option), compiled as `liftkit bench` compiles them,
timed in interleaved rounds of 10 event-timed runs; the spread of all runs (min, 10th
percentile, median) shows which of the two suffers when other processes hold a core.

    python results/issue10/cpu-gaps/blackscholes_rounds.py [rounds]
"""
import sys

import numpy as np

from liftkit.backends.choose import make_runner
from liftkit.codegen import CompileOptions, compile_program
from liftkit.explore.bundled import find, low_level_program
from liftkit.programs import PROGRAMS


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    r = make_runner("opencl", "cpu")
    spec, low_spec = PROGRAMS["blackscholes"], PROGRAMS["blackscholes_low"]
    sizes = {"N": 1048576}
    d = find(spec.program, sizes, r.device).derivation
    derived = compile_program(low_level_program(d, spec.program), CompileOptions(dialect=r.dialect))
    hand = compile_program(low_spec.program, CompileOptions(dialect=r.dialect))
    inputs = spec.inputs(sizes, 0)
    times: dict[str, list[float]] = {"derived": [], "blackscholes_low": []}
    for _ in range(rounds):
        for name, c in (("derived", derived), ("blackscholes_low", hand)):
            info = r.run_with_info(c, *inputs, sizes=sizes, timing=True, repeat=10, name=name)[1]
            times[name] += [sum(x) * 1e3 for x in info.runs]
    print(f"{r.device.label}; bundled derivation {d.time * 1e3:.3f} ms in its search; "
          f"{rounds} rounds x 10 runs")
    for k, v in times.items():
        a = np.array(v)
        print(f"{k:17s} min {a.min():6.2f}  p10 {np.percentile(a, 10):6.2f}  "
              f"median {np.median(a):6.2f}  p90 {np.percentile(a, 90):6.2f} ms")


if __name__ == "__main__":
    main()
