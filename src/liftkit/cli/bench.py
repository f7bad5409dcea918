"""`liftkit bench`: the benchmark suite of the seeds (see docs/benchmarks.md).

    liftkit bench [--device gpu|cpu] [--backend opencl|cuda|both] [--programs a,b,...] [--size-set tiny|cpu|small|large]
                  [--repeat K] [--out DIR] [--ablation | --only-ablation] [--seed S] [--db PATH]
                  [--no-derived] [--no-references]
    liftkit bench --suite jit [--programs lud,srad,...] [--size-set ...] [--repeat K] [--out DIR] [--ablation]
    liftkit bench --suite blas [--device cpu] [--programs gemm,gemv,...] [--dtypes float32,...] [--size-set ...]

Each entry's hand-written low-level program is timed against the references, and beside it the
search's derivation of its high-level program (from --db, else the bundled derivations).
Prints the table (rich on a terminal, Markdown otherwise) and writes bench.md, bench.json,
speedup.png and roofline.png under --out (default bench-results/). Exit status 1 when a program
gives a wrong result, 0 otherwise (programs not bundled yet are no failure).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from liftkit.bench.harness import MIN_REPORT_REPEAT
from liftkit.bench.suite import SIZE_SETS, SUITE


# options that mean something to some suites only: (flag, attribute, those suites); the others
# refuse them rather than run without them (the backend, database and ablation options are
# checked by the jit and blas suites themselves)
# (--device and --seed default to None so that naming them can be told from not)
SUITE_ONLY_OPTIONS = (("--no-derived", "no_derived", ("lift",)),
                      ("--no-references", "no_references", ("lift",)),
                      ("--dtypes", "dtypes", ("blas",)),
                      ("--seed", "seed", ("lift", "jit")))


def configure_bench_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", choices=("lift", "jit", "blas"), default="lift",
                   help="lift (default): the seeds' Lift programs; jit: the @jit benchmarks of "
                        "seed 003 against NumPy and Numba on the CPU (jit.md, jit.json; "
                        "--ablation adds region specialisation and bounds-check elimination); "
                        "blas: liftkit.blas beside the vendor BLAS, rate-vs-size plots and the "
                        "percentage of peak (--programs gemm,gemv,transpose,dot; --dtypes)")
    p.add_argument("--dtypes", metavar="D,D", default=None,
                   help="--suite blas: of float32,float64,complex64,complex128 "
                        "(default float32,float64)")
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="device: gpu (default), cpu, or part of its platform/device name "
                        "(--suite jit runs on the CPU)")
    p.add_argument("--backend", choices=("opencl", "cuda", "both"), default="opencl",
                   help="opencl (default), cuda, or both: OpenCL's table with each program's "
                        "CUDA time beside it (one run, each result checked on both)")
    p.add_argument("--programs", metavar="A,B,...", default=None,
                   help=f"benchmarks to run (default: all {len(SUITE)}): {', '.join(SUITE)}")
    p.add_argument("--size-set", choices=SIZE_SETS, default=None,
                   help="input sizes: large/small (the papers' GPU sizes), cpu, tiny (tests); "
                        "default large on a GPU, cpu on the CPU")
    p.add_argument("--repeat", type=int, default=10,
                   help=f"timed runs per program and reference (median; at least "
                        f"{MIN_REPORT_REPEAT} for reports, default 10)")
    p.add_argument("--out", metavar="DIR", default="bench-results",
                   help="where bench.md, bench.json and the plots go (default bench-results)")
    p.add_argument("--ablation", action="store_true",
                   help="also the optimisation ablation of seed 000 Fig. 8 (the 12 CGO programs)")
    p.add_argument("--only-ablation", action="store_true",
                   help="the ablation without the main table (splits a long GPU run in two)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for generated inputs (default 0; --suite blas seeds by size)")
    p.add_argument("--db", metavar="PATH", default=None,
                   help="tuning database for the \"derived\" column (default: the bundled "
                        "derivations, which also fill in where the database has none)")
    p.add_argument("--no-derived", action="store_true",
                   help="--suite lift: leave out the \"derived\" column (each high-level "
                        "program's derivation)")
    p.add_argument("--no-references", action="store_true",
                   help="--suite lift: time no references (CuPy, cuBLAS, NumPy ...): only the "
                        "hand-written and "
                        "the derived programs, and the ceilings")
    p.add_argument("--allow-few-runs", action="store_true", help=argparse.SUPPRESS)


def programs_arg(text: str | None) -> list[str] | None:
    """`a,b` -> ["a", "b"]; unknown names raise a ValueError naming the known ones."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("argument --programs: give at least one name, e.g. --programs scal,asum")
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        raise ValueError(f"argument --programs: unknown benchmark(s) {', '.join(unknown)} "
                         f"(known: {', '.join(SUITE)})")
    return names


def cmd_bench(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.bench.harness import BenchConfig, run_bench
    from liftkit.bench.report import print_table, write_all
    from liftkit.cli.common import check_report_options, refuse_options
    from liftkit.cli.explore import open_tuning_db
    from liftkit.cli.main import UsageError

    suite = getattr(args, "suite", "lift")
    refuse_options(suite, [(flag, _given(getattr(args, attr, None)))
                           for flag, attr, suites in SUITE_ONLY_OPTIONS if suite not in suites])
    if suite == "jit":
        refuse_options(suite, [("--device", getattr(args, "device", None) not in (None, "cpu"))],
                       " (the @jit benchmarks run on the CPU)")
    args.device = getattr(args, "device", None) or "gpu"
    args.seed = 0 if getattr(args, "seed", None) is None else args.seed
    if suite == "jit":
        from liftkit.bench.jit_cli import cmd_bench_jit

        return cmd_bench_jit(args, out)
    if suite == "blas":
        from liftkit.blas.report import cmd_bench_blas

        return cmd_bench_blas(args, out)
    try:
        programs = programs_arg(args.programs)
    except ValueError as err:
        raise UsageError(str(err)) from None
    check_report_options(args)
    out_dir = Path(args.out)
    if args.db is not None:  # named: it must be a tuning database (the default may be absent)
        open_tuning_db(args.db, create=False)
    cfg = BenchConfig(device=args.device, programs=programs, size_set=args.size_set,
                      repeat=args.repeat, seed=args.seed,
                      ablation=args.ablation or args.only_ablation, db=args.db,
                      main_table=not args.only_ablation, partial=out_dir / "partial.json",
                      backend=args.backend, derived=not args.no_derived,
                      references=not args.no_references)
    result = run_bench(cfg)
    result.meta["command"] = "liftkit bench " + " ".join(_argv_text(args))
    files = write_all(result, out_dir)
    (out_dir / "partial.json").unlink(missing_ok=True)
    print_table(result, out)
    print(f"\nwritten: {', '.join(str(f) for f in files)}", file=out)
    out.flush()
    return 1 if result.summary.get("wrong") or result.summary.get("derived_wrong") else 0


def _given(value: object) -> bool:
    """Whether an option was named: its default is None (or False for a switch); 0 counts."""
    return value is not None and value is not False


def _argv_text(args: argparse.Namespace) -> list[str]:
    parts = [f"--device {args.device}"] + ([f"--backend {args.backend}"]
                                           if args.backend != "opencl" else [])
    if args.programs:
        parts.append(f"--programs {args.programs}")
    if args.size_set:
        parts.append(f"--size-set {args.size_set}")
    parts.append(f"--repeat {args.repeat}")
    parts.append(f"--out {args.out}")
    if args.ablation:
        parts.append("--ablation")
    if args.only_ablation:
        parts.append("--only-ablation")
    if args.db:
        parts.append(f"--db {args.db}")
    if args.no_derived:
        parts.append("--no-derived")
    if args.no_references:
        parts.append("--no-references")
    return parts


def main() -> int:  # pragma: no cover - `python -m liftkit.cli.bench`
    from liftkit.cli.main import main as liftkit_main

    return liftkit_main(["bench", *sys.argv[1:]])
