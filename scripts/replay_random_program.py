#!/usr/bin/env python
"""Replay one random program of tests/codegen/test_random_programs.py: print it, its OpenCL and
the outcome of running it against the interpreter.

    python scripts/replay_random_program.py SEED [--no-simplify-indices] [--no-eliminate-barriers]
        [--no-simplify-control-flow] [--no-unroll] [--allow FLAG ...] [--device SPEC] [--quiet]

--allow FLAG lets the generator produce a construct it avoids by default (a known compiler or
device bug: see liftkit.testing.random_programs.GeneratorFlags); --device picks the OpenCL device
(default cpu, i.e. PoCL; `oclgrind` for the simulator). Exit status 0 when the result matches.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace

from liftkit.backends.opencl import KernelCache, OpenCLRunner
from liftkit.codegen import CompileOptions
from liftkit.ir.printer import pretty
from liftkit.testing import SWITCHES, check_case, failure_report
from liftkit.testing.random_programs import DEFAULT_FLAGS, GeneratorFlags, generate


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=int)
    for s in SWITCHES:
        ap.add_argument(f"--no-{s.replace('_', '-')}", dest=s, action="store_false")
    names = [f.name for f in fields(GeneratorFlags)]
    ap.add_argument("--allow", action="append", default=[], choices=names, metavar="FLAG",
                    help=f"switch off an avoid_* flag: {', '.join(names)}")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quiet", action="store_true", help="print only the outcome")
    args = ap.parse_args(argv)

    flags = replace(DEFAULT_FLAGS, **{name: False for name in args.allow})
    options = CompileOptions(**{s: getattr(args, s) for s in SWITCHES})
    case = generate(args.seed, flags)
    outcome = check_case(case, OpenCLRunner(args.device, KernelCache(disk=False)), options)
    device = None if args.device == "cpu" else args.device
    if not outcome.ok:
        print(failure_report(case, outcome, options, device))
        return 1
    if not args.quiet:
        print(f"seed {case.seed}: {case.description}\nprogram:\n{pretty(case.program)}\n"
              f"kernel source:\n{outcome.source}")
    print(f"seed {case.seed}: ok ({outcome.kernels} kernel(s), {options.key()}, device {args.device})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
