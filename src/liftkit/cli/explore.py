"""`liftkit explore PROGRAM`: search for a fast derivation on a device (seed 002 §6) and keep the
result, plus the lookup `compile`/`run --tuned` use.

    liftkit explore asum --device gpu --size N=16777216 --budget 200 --plot asum.png

Writes the best derivation (JSON), its low-level program and its kernel source to --out
(default ./liftkit-explore/NAME/), records every candidate in the tuning database and prints a
summary. Also runnable on its own as `python -m liftkit.cli.explore ...`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence, TextIO

from liftkit.cli.common import check_common_values, check_writable
from liftkit.cli.resolve import CliError, Resolved, resolve
from liftkit.cli.sizes import check_size_names

DEFAULT_OUT = "liftkit-explore"
DEFAULT_TIMEOUT_S = 60.0  # liftkit.explore.worker's (not imported here: it loads pyopencl)


def configure_explore_parser(p: argparse.ArgumentParser) -> None:
    """Add the `explore` arguments to a (sub)parser."""
    from liftkit.cli.main import size_arg

    p.add_argument("program", metavar="PROGRAM",
                   help="a bundled program name (see `liftkit list`), module:attribute or "
                        "path/to/file.py:attribute naming a high-level Lambda or a ProgramSpec")
    p.add_argument("--backend", choices=("auto", "opencl", "cuda"), default="auto",
                   help="where candidates run: opencl, cuda, or auto (default): CUDA for "
                        "--device gpu where CUDA is available, else OpenCL")
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="device: gpu, cpu, or part of its platform/device name "
                        "(default: a GPU if present, else the CPU)")
    p.add_argument("--size", dest="sizes", metavar="NAME=INT", type=size_arg, nargs="+",
                   action="extend", default=[],
                   help="an input size to tune for, e.g. N=16777216 (default: the program's)")
    p.add_argument("--budget", type=int, default=200, help="candidates to evaluate (default 200)")
    p.add_argument("--seconds", type=float, default=None,
                   help="stop after this many seconds (default: no limit; 0 evaluates nothing)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="a candidate whose build and run take longer is stopped and recorded "
                        f"as failed (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--seed", type=int, default=0, help="seed of the random walks (default 0)")
    p.add_argument("--db", metavar="PATH", default=None,
                   help="tuning database (default $LIFTKIT_TUNING_DB or ~/.cache/liftkit/tuning.sqlite)")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="write the search-efficiency plot (needs matplotlib)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help=f"where to write the best derivation and kernel (default ./{DEFAULT_OUT}/NAME/)")
    p.add_argument("--rules", metavar="SET", default="default",
                   help="rule set: default, gpu or cpu (the rules plus the GPU / CPU macro "
                   "rules of liftkit.explore.macros), algorithmic, lowering, or module:ATTR / "
                   "file.py:ATTR")
    p.add_argument("--walks", type=int, default=3, help="random walks per choice (default 3)")
    p.add_argument("--choices", type=int, default=8,
                   help="choices tried per derivation step, sampled beyond that (default 8)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per candidate, median (default 5)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_explore(args: argparse.Namespace, out: TextIO) -> int:
    """Run the search and report; exit status 1 (as a CliError) when nothing valid was found."""
    from dataclasses import replace

    from contextlib import nullcontext

    from liftkit.backends.choose import make_runner, resolve_backend
    from liftkit.explore import (
        CandidateWorker,
        EvalSettings,
        Evaluator,
        SearchSettings,
        load_rule_space,
        make_problem,
        search,
    )

    for flag, value, low in (("--budget", args.budget, 1), ("--walks", args.walks, 1),
                             ("--choices", args.choices, 1), ("--repeat", args.repeat, 1)):
        if value < low:
            raise CliError(f"argument {flag}: must be at least {low}, got {value}")
    if args.seconds is not None and not args.seconds >= 0:
        raise CliError(f"argument --seconds: must be at least 0, got {args.seconds:g}")
    if not args.timeout > 0:
        raise CliError(f"argument --timeout: must be positive, got {args.timeout:g}")
    sizes = _sizes(args.sizes)
    res = resolve(args.program)
    check_size_names(res, sizes)
    problem = make_problem(res.spec if res.spec is not None else res.program, sizes, res.name)
    _check_sizes(res, problem.sizes)
    _check_inputs(res, problem, args.seed)
    space = load_rule_space(args.rules)
    backend = resolve_backend(args.backend, args.device)
    # everything written after the search is checked before it: minutes of search are not lost
    # to a typo in a path
    if args.plot:
        _check_plotting()
        check_writable(args.plot, "--plot", make_parents=True)
    out_dir = Path(args.out) if args.out else Path(DEFAULT_OUT) / _safe(res.name)
    check_writable(str(out_dir), "--out", directory=True)
    db = open_tuning_db(args.db, create=True)
    settings = SearchSettings(budget=args.budget, seconds=args.seconds, walks=args.walks,
                              max_choices=args.choices, seed=args.seed)
    progress = not args.quiet and sys.stderr.isatty()
    # OpenCL candidates are built and run in a worker process: a driver crash costs one
    # candidate; CUDA candidates (NVRTC, then the driver) run in this process
    worker = (nullcontext(make_runner("cuda", args.device)) if backend == "cuda"
              else CandidateWorker(args.device, timeout=args.timeout))
    with worker as runner, _db_errors(db):
        evaluator = Evaluator(problem, runner, replace(EvalSettings(), repeat=args.repeat,
                                                       seed=args.seed))
        result = search(problem, space, evaluator, settings, db, progress)

    counts = ", ".join(f"{n} {k}" for k, n in sorted(result.counts().items()))
    print(f"{problem.name} on {runner.device.label} at {_size_text(problem.sizes)}: "
          f"{len(result.records)} candidates ({counts or 'none'}) in {result.elapsed:.1f} s; "
          f"stopped: {result.stop_reason}", file=out)
    plot_path = None
    if args.plot:
        from liftkit.explore.plot import plot_search

        try:
            plot_path = plot_search(result.records, args.plot,
                                    f"{problem.name} on {runner.device.name} ({_size_text(problem.sizes)})")
        except RuntimeError as err:
            raise CliError(str(err)) from None
    if result.best is None:
        hint = f"; rule faults: {result.rule_faults[0]}" if result.rule_faults else ""
        raise CliError(f"{problem.name}: no valid candidate in {len(result.records)} evaluated "
                       f"(increase --budget, or check the rule set {space.name!r}){hint}")
    best = result.best
    first = next(r for r in result.records if r.ok)
    print(f"best: {best.time * 1e3:.4g} ms (candidate {best.seq + 1}, {len(best.derivation)} "  # type: ignore[operator]
          f"rewrite steps); first valid {first.time * 1e3:.4g} ms"  # type: ignore[operator]
          f" ({first.time / best.time:.2f}x the best)", file=out)  # type: ignore[operator]
    print(f"  {best.low_level}", file=out)
    written = write_result(out_dir, problem, result, runner.device, space.name)
    names = ", ".join(p.name for p in written)
    print(f"wrote {out_dir}/: {names}" + (f"; plot {plot_path}" if plot_path else ""), file=out)
    print(f"database: {db.path} (key {result.key[:12]}, search {result.search_id[:12]})", file=out)
    if result.rule_faults:
        print(f"note: {len(result.rule_faults)} rule fault(s), e.g. {result.rule_faults[0]}", file=out)
    return 0


def write_result(out_dir: Path, problem: Any, result: Any, device: Any, rules: str) -> list[Path]:
    """derivation.json (steps as Choices, replayable from the high-level program), program.lift
    (the low-level program, readable by `liftkit.ir.parser`) and kernel.cl (kernel.cu on CUDA)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    best = result.best
    doc = {
        "program": problem.name,
        "high_level": problem.text,
        "sizes": dict(problem.sizes),
        "device": device.fingerprint,
        "key": result.key,
        "rules": rules,
        "time_seconds": best.time,
        "steps": best.derivation_json(),
        "low_level": best.low_level,
        "params": dict(best.params),
    }
    kernel_file = "kernel.cu" if str(device.fingerprint).startswith("cuda|") else "kernel.cl"
    files = [out_dir / "derivation.json", out_dir / "program.lift", out_dir / kernel_file]
    files[0].write_text(json.dumps(doc, indent=2, default=str, ensure_ascii=False) + "\n")
    files[1].write_text(best.low_level + "\n")
    files[2].write_text(best.source)
    return files


def tuned_program(res: Resolved, sizes: Mapping[str, int], device_spec: Optional[str] = None,
                  db_path: Optional[str] = None, backend: str = "auto") -> tuple[Any, tuple[Any, ...]]:
    """For `compile`/`run --tuned`: (low-level program, derivation) of the best candidate stored
    for this program at these sizes (the spec's defaults filling in the rest) on the device
    (of the backend `liftkit explore` picks for the same --backend/--device); a CliError saying
    how to tune it when there is none."""
    from liftkit.backends.choose import resolve_backend
    from liftkit.explore import NotTunedError, require_tuned

    merged = dict(res.spec.sizes) if res.spec is not None else {}
    merged.update(sizes)
    if resolve_backend(backend if backend in ("opencl", "cuda") else "auto", device_spec) == "cuda":
        from liftkit.backends.cuda import select_device as select_cuda

        device: Any = select_cuda(device_spec)
    else:
        from liftkit.backends.opencl import select_device

        device = select_device(device_spec)
    db = open_tuning_db(db_path, create=False)
    try:
        with _db_errors(db):
            return require_tuned(res.name, res.program, merged, device, db)
    except NotTunedError as err:
        raise CliError(str(err)) from None


_TABLES = ("keys", "searches", "candidates")


def open_tuning_db(path: Optional[str], create: bool) -> Any:
    """The tuning database at `path` (default: liftkit explore's), checked before use: a file
    that is not SQLite, or SQLite with other tables of the same names, is one error line; a
    missing file is created only when `create` (a lookup for --tuned never creates one)."""
    import sqlite3

    from liftkit.explore import TuningDB
    from liftkit.explore.db import _SCHEMA

    db = TuningDB(path)
    where = db.path
    if not where.exists():
        if not create:
            raise CliError(f"no tuning database at {where}; `liftkit explore` writes one "
                           f"(--db names another)")
        check_writable(str(where), "--db", make_parents=True)
        return db
    if where.is_dir():
        raise CliError(f"tuning database {where}: is a directory")
    want_conn = sqlite3.connect(":memory:")
    want_conn.executescript(_SCHEMA)
    want = {t: {r[1] for r in want_conn.execute(f"PRAGMA table_info({t})")} for t in _TABLES}
    want_conn.close()
    try:
        conn = sqlite3.connect(where.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            have = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in _TABLES}
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise CliError(f"tuning database {where}: cannot be read as SQLite ({err})") from None
    for t in _TABLES:
        missing = want[t] - have[t]
        if have[t] and missing:
            raise CliError(f"tuning database {where}: not one liftkit explore wrote (table {t} "
                           f"lacks {', '.join(sorted(missing))})")
    if not create and not all(have[t] for t in _TABLES):
        raise CliError(f"tuning database {where}: holds no liftkit tuning results (no table "
                       f"{next(t for t in _TABLES if not have[t])}); `liftkit explore` writes them")
    return db


@contextmanager
def _db_errors(db: Any) -> Iterator[None]:
    """SQLite failures while reading or writing the tuning database, as one line naming it."""
    import sqlite3

    try:
        yield
    except sqlite3.DatabaseError as err:
        raise CliError(f"tuning database {db.path}: {err}") from None


def _check_sizes(res: Resolved, sizes: Mapping[str, int]) -> None:
    """The checks `run` makes before generating inputs (divisibility facts of the types, the
    inputs and result fitting in memory), so that a search does not start on sizes no
    candidate can run at."""
    from liftkit.cli.sizes import check_memory, check_size_facts, size_facts
    from liftkit.ir.typecheck import check_program

    out_type = check_program(res.program)
    rule = getattr(res.spec, "size_rule", "") if res.spec is not None else ""
    check_size_facts(size_facts(res.program, out_type), sizes, res.name, rule)
    check_memory(res.program, out_type, sizes, [p.name for p in res.program.params], res.name)


def _check_inputs(res: Resolved, problem: Any, seed: int) -> None:
    """The inputs every candidate will get, made once and checked against the parameters: a
    broken input maker is one error now, not a search in which every candidate fails."""
    from liftkit.cli.resolve import one_line
    from liftkit.semantics import bind_sizes

    try:
        inputs = problem.inputs(problem.sizes, seed)
    except MemoryError:
        raise CliError(f"{res.name}: not enough memory to generate inputs at "
                       f"{_size_text(problem.sizes)}; use smaller --size values") from None
    except Exception as err:  # noqa: BLE001 - a spec's input maker is user code
        raise CliError(f"{res.name}: its input maker failed at {_size_text(problem.sizes)} "
                       f"({type(err).__name__}: {one_line(err)})") from err
    from liftkit.semantics import EvaluationError
    from liftkit.semantics.values import to_value

    try:
        bind_sizes(res.program, inputs, problem.sizes)
        for p, x in zip(res.program.params, inputs):
            to_value(x, p.type, p.name)  # type: ignore[arg-type]
    except (EvaluationError, ValueError) as err:
        raise CliError(f"{res.name}: its generated inputs do not fit the program: "
                       f"{one_line(err)}") from None


def _check_plotting() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install 'matplotlib>=3.7')") from None


def _sizes(pairs: Sequence[tuple[str, int]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for name, n in pairs:
        if name in sizes and sizes[name] != n:
            raise CliError(f"argument --size: {name} is given twice ({sizes[name]} and {n})")
        sizes[name] = n
    return sizes


def _size_text(sizes: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "no sizes"


def _safe(name: str) -> str:
    """A directory name from a program reference such as path/to/file.py:prog."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name.rpartition(":")[2] or name).strip("._") or "program"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m liftkit.cli.explore ...`: the command on its own, errors as one line."""
    from liftkit.cli.main import _Parser, _message, _report, _user_errors, UsageError

    parser = _Parser(prog="liftkit explore", description="search for a fast derivation")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    configure_explore_parser(parser)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        _report(str(e), sys.stderr)
        return 2
    try:
        check_common_values(args)
        return cmd_explore(args, sys.stdout)
    except UsageError as e:
        _report(str(e), sys.stderr)
        return 2
    except _user_errors() as e:
        if args.debug:
            raise
        sys.stdout.flush()
        _report(_message(e), sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
