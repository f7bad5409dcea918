"""`liftkit bench --suite jit`: the command's body (argument checks, run, reports), kept beside
the suite so that liftkit.cli.bench only dispatches to it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from liftkit.bench.jit_programs import NAMES


def cmd_bench_jit(args: argparse.Namespace, out: TextIO) -> int:
    """Exit status 1 when a benchmark gives a wrong result or fails, 0 otherwise."""
    from liftkit.bench.jit_report import print_table, write_all
    from liftkit.bench.jit_suite import SCALES, JitBenchConfig, run_jit_bench
    from liftkit.cli.common import check_report_options, refuse_options
    from liftkit.cli.main import UsageError

    refuse_options("jit", (("--backend", args.backend != "opencl"), ("--db", args.db is not None),
                           ("--only-ablation", args.only_ablation)),
                   " (the @jit benchmarks run on the CPU)")
    programs = None
    if args.programs is not None:
        programs = [t.strip() for t in args.programs.split(",") if t.strip()]
        unknown = [n for n in programs if n not in NAMES]
        if not programs or unknown:
            raise UsageError(f"argument --programs: unknown JIT benchmark(s) {', '.join(unknown)} "
                             f"(known: {', '.join(NAMES)})" if unknown else
                             "argument --programs: give at least one name, e.g. --programs lud,srad")
    check_report_options(args)
    out_dir = Path(args.out)
    size_set = args.size_set or "cpu"
    cfg = JitBenchConfig(programs=programs, size_set=size_set, repeat=args.repeat,
                         ablation=args.ablation, seed=args.seed,
                         log=lambda line: print(f"bench: {line}", file=sys.stderr, flush=True))
    assert size_set in SCALES
    result = run_jit_bench(cfg)
    parts = ["--suite jit"] + ([f"--programs {args.programs}"] if args.programs else []) + \
        [f"--size-set {size_set}", f"--repeat {args.repeat}", f"--out {args.out}"] + \
        (["--ablation"] if args.ablation else [])
    result.meta["command"] = "liftkit bench " + " ".join(parts)
    files = write_all(result, out_dir)
    print_table(result, out)
    print(f"\nwritten: {', '.join(str(f) for f in files)}", file=out)
    out.flush()
    return 1 if result.summary["wrong"] or result.summary["failed"] else 0
