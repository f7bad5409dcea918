"""Host-side compile time of the code generator (our Python only, not the OpenCL driver's
build) for every bundled OpenCL-level program: median of repeated compilations.

    python benchmarks/compile_times.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from liftkit.codegen import compile_program
from liftkit.programs import PROGRAMS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    medians = []
    print("| program | kernels | median ms per kernel | median ms per program |")
    print("|---|---|---|---|")
    for spec in PROGRAMS:
        if spec.level != "low":
            continue
        program = spec.program
        compile_program(program)  # warm caches of imports
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            c = compile_program(program)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        per_kernel = med / len(c.kernels)
        medians.append(per_kernel)
        print(f"| {spec.name} | {len(c.kernels)} | {per_kernel * 1e3:.2f} | {med * 1e3:.2f} |")
    print(f"\nmedian over programs of the per-kernel median: {statistics.median(medians) * 1e3:.2f} ms "
          f"(max {max(medians) * 1e3:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
