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
from dataclasses import dataclass
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
    p.add_argument("--backend", choices=("auto", "opencl", "cuda", "any"), default="auto",
                   help="where candidates run: opencl, cuda, any (each candidate on both, for "
                        "a GPU that CUDA also drives, the faster recorded: the search chooses "
                        "the backend), or auto (default): CUDA for --device gpu where CUDA is "
                        "available, else OpenCL")
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
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the host stages (derive, generate, build, check; timing "
                        "stays one candidate at a time): default all cores; 0 runs the plain "
                        "search in this process")
    p.add_argument("--ray", metavar="auto|ADDRESS", default=None,
                   help="run the host stages as tasks of a Ray cluster and timing in an actor "
                        "holding the device (pip install 'liftkit[distributed]')")
    p.add_argument("--no-dedup", action="store_true",
                   help="time candidates whose kernels were timed already again")
    p.add_argument("--no-bound", action="store_true",
                   help="time every candidate, even one whose lower bound (bytes over the "
                        "measured bandwidth) cannot beat the best so far")
    p.add_argument("--tolerance", type=float, default=0.05,
                   help="a candidate is skipped when its lower bound is within this fraction "
                        "of the best so far (default 0.05)")
    p.add_argument("--seeds", type=int, default=1, metavar="K",
                   help="run K searches, seeds SEED..SEED+K-1, and keep the best (default 1)")
    p.add_argument("--tune-trials", type=int, default=0, metavar="T",
                   help="after the search, tune the best derivation's numeric parameters (split "
                        "factors, work-group sizes, vector widths) in T trials of Optuna's TPE, "
                        "and T random trials to compare (pip install 'liftkit[tune]')")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="write the search report: candidates per second by stage, time to 95%% "
                        "of the best, the search plot of every seed")


def cmd_explore(args: argparse.Namespace, out: TextIO) -> int:
    """Run the search and report; exit status 1 (as a CliError) when nothing valid was found."""
    from liftkit.explore import load_rule_space, make_problem

    for flag, value, low in (("--budget", args.budget, 1), ("--walks", args.walks, 1),
                             ("--choices", args.choices, 1), ("--repeat", args.repeat, 1),
                             ("--seeds", args.seeds, 1), ("--tune-trials", args.tune_trials, 0)):
        if value < low:
            raise CliError(f"argument {flag}: must be at least {low}, got {value}")
    if args.workers is not None and args.workers < 0:
        raise CliError(f"argument --workers: must be at least 0, got {args.workers}")
    if not 0 <= args.tolerance < 1:
        raise CliError(f"argument --tolerance: must be in [0, 1), got {args.tolerance:g}")
    if args.seconds is not None and not args.seconds >= 0:
        raise CliError(f"argument --seconds: must be at least 0, got {args.seconds:g}")
    if not args.timeout > 0:
        raise CliError(f"argument --timeout: must be positive, got {args.timeout:g}")
    if args.ray is not None:
        _no_ray_for_any(args)
        from liftkit.explore.distributed import require_ray

        require_ray()
    if args.tune_trials:
        from liftkit.explore.tune import require_optuna

        require_optuna()
    sizes = _sizes(args.sizes)
    res = resolve(args.program)
    check_size_names(res, sizes)
    problem = make_problem(res.spec if res.spec is not None else res.program, sizes, res.name)
    _check_sizes(res, problem.sizes)
    _check_inputs(res, problem, args.seed)
    space = load_rule_space(args.rules)
    # everything written after the search is checked before it: minutes of search are not lost
    # to a typo in a path
    if args.plot:
        _check_plotting()
        check_writable(args.plot, "--plot", make_parents=True)
    if args.report:
        check_writable(args.report, "--report", directory=True)
    out_dir = Path(args.out) if args.out else Path(DEFAULT_OUT) / _safe(res.name)
    check_writable(str(out_dir), "--out", directory=True)
    db = open_tuning_db(args.db, create=True)
    progress = not args.quiet and sys.stderr.isatty()
    seeds = [args.seed + k for k in range(args.seeds)]
    with _runner(args) as runner, _db_errors(db):
        results = [run_search(args, problem, space, runner, db, seed, progress) for seed in seeds]
        tuning = (tune_best(args, problem, space, runner, db, results)
                  if args.tune_trials and any(r.best for r in results) else [])

    result = min(results, key=lambda r: r.best.time if r.best else float("inf"))  # type: ignore[union-attr]
    for seed, r in zip(seeds, results):
        counts = ", ".join(f"{n} {k}" for k, n in sorted(r.counts().items()))
        rate = len(r.records) / r.elapsed if r.elapsed > 0 else 0.0
        print(f"{problem.name} on {_device_label(runner)} at {_size_text(problem.sizes)}"
              f"{f' (seed {seed})' if len(seeds) > 1 else ''}: {len(r.records)} candidates "
              f"({counts or 'none'}) in {r.elapsed:.1f} s, {rate:.2f}/s; stopped: {r.stop_reason}",
              file=out)
        if len(_fingerprints(runner)) > 1:
            won = {b: sum(1 for x in r.records if x.ok and x.backend == b) for b in _fingerprints(runner)}
            print("  valid candidates by the faster backend: "
                  + ", ".join(f"{b} {n}" for b, n in won.items()), file=out)
    for t in tuning:
        best = f"{t['best_ms']:.4g} ms" if t.get("best_ms") is not None else "nothing valid"
        print(f"tuned numeric parameters, {t['sampler']}: {t['trials']} trials, best {best}", file=out)
    plot_path = None
    if args.plot:
        from liftkit.explore.plot import plot_search

        try:
            plot_path = plot_search(result.records, args.plot,
                                    f"{problem.name} on {runner.device.name} ({_size_text(problem.sizes)})")
        except RuntimeError as err:
            raise CliError(str(err)) from None
    if args.report:
        from liftkit.explore.report import write_report

        files = write_report(results, seeds, Path(args.report),
                             f"{problem.name} on {runner.device.name} ({_size_text(problem.sizes)})",
                             _workers(args), {"tuning": tuning})
        print(f"report: {', '.join(str(f) for f in files)}", file=out)
    if result.best is None:
        hint = f"; rule faults: {result.rule_faults[0]}" if result.rule_faults else ""
        raise CliError(f"{problem.name}: no valid candidate in {len(result.records)} evaluated "
                       f"(increase --budget, or check the rule set {space.name!r}){hint}")
    best = result.best
    first = next(r for r in result.records if r.ok)
    print(f"best: {best.time * 1e3:.4g} ms on {best.backend} (candidate {best.seq + 1}, "  # type: ignore[operator]
          f"{len(best.derivation)} rewrite steps); first valid {first.time * 1e3:.4g} ms"  # type: ignore[operator]
          f" ({first.time / best.time:.2f}x the best)", file=out)  # type: ignore[operator]
    print(f"  {best.low_level}", file=out)
    written = write_result(out_dir, problem, result, runner.device, space.name,
                           _fingerprints(runner))
    names = ", ".join(p.name for p in written)
    print(f"wrote {out_dir}/: {names}" + (f"; plot {plot_path}" if plot_path else ""), file=out)
    print(f"database: {db.path} (key {result.key[:12]}, search {result.search_id[:12]})", file=out)
    if result.rule_faults:
        print(f"note: {len(result.rule_faults)} rule fault(s), e.g. {result.rule_faults[0]}", file=out)
    return 0


def _workers(args: argparse.Namespace) -> int:
    from liftkit.explore.pipeline import default_workers

    return default_workers() if args.workers is None else args.workers


def _runner(args: argparse.Namespace) -> Any:
    """OpenCL candidates are built and run in a worker process (a driver crash costs one
    candidate); CUDA candidates (NVRTC, then the driver) run in this process; `any`: both, for
    a GPU CUDA drives too (else OpenCL, said once on stderr)."""
    from contextlib import nullcontext

    from liftkit.backends.choose import make_runner, resolve_backend
    from liftkit.explore import CandidateWorker

    if args.backend == "any":
        from liftkit.explore.backends import AnyBackendRunners, any_note

        both = AnyBackendRunners(args.device, args.timeout)
        if both.note:
            print(f"note: {any_note(both.note)}", file=sys.stderr)
        return both
    if resolve_backend(args.backend, args.device) == "cuda":
        return nullcontext(make_runner("cuda", args.device))
    return CandidateWorker(args.device, timeout=args.timeout)


def _evaluator(args: argparse.Namespace, problem: Any, runner: Any, seed: int) -> Any:
    from dataclasses import replace

    from liftkit.explore import EvalSettings, Evaluator

    settings = replace(EvalSettings(), repeat=args.repeat, seed=seed)
    if hasattr(runner, "evaluator"):  # --backend any
        return runner.evaluator(problem, settings)
    return Evaluator(problem, runner, settings)


def _fingerprints(runner: Any) -> dict[str, str]:
    """The device fingerprint of each backend the search times candidates on."""
    if hasattr(runner, "runners"):
        return {b: str(r.device.fingerprint) for b, r in runner.runners().items()}
    backend = "cuda" if getattr(runner, "dialect", "opencl") == "cuda" else "opencl"
    return {backend: str(runner.device.fingerprint)}


def _device_label(runner: Any) -> str:
    fps = _fingerprints(runner)
    return runner.device.label + (" (OpenCL and CUDA)" if len(fps) > 1 else "")


def _no_ray_for_any(args: argparse.Namespace) -> None:
    if args.backend == "any":
        raise CliError("--ray runs candidates on one backend of the cluster's timing actor; "
                       "--backend any needs both on this machine: drop --ray or name a backend")


def run_search(args: argparse.Namespace, problem: Any, space: Any, runner: Any, db: Any,
               seed: int, progress: bool, resume: Optional[str] = None) -> Any:
    """One search with the command's settings (the pipeline unless --workers 0 without --ray)."""
    from liftkit.explore import SearchSettings, search

    settings = SearchSettings(budget=args.budget, seconds=args.seconds, walks=args.walks,
                              max_choices=args.choices, seed=seed)
    evaluator = _evaluator(args, problem, runner, seed)
    pipeline = make_pipeline(args, problem, runner, db)
    result = search(problem, space, evaluator, settings, db, progress, pipeline, resume)
    result.seed = seed  # type: ignore[attr-defined]
    return result


def make_pipeline(args: argparse.Namespace, problem: Any, runner: Any, db: Any) -> Any:
    """The search's pipeline from --workers, --ray, --no-dedup, --no-bound, --tolerance."""
    from liftkit.explore.pipeline import Pipeline, PipelineSettings

    workers = _workers(args)
    if args.ray is None and workers == 0:
        return None
    bound = None if args.no_bound else device_bound(problem, runner, db, args.tolerance)
    factory = None
    if args.ray is not None:
        from liftkit.explore.distributed import RayEngine

        address = args.ray

        def factory(search: Any) -> Any:
            return RayEngine(search, address, args.device, args.backend, args.timeout,
                             args.workers or None)

    return Pipeline(PipelineSettings(workers=workers, dedup=not args.no_dedup, bound=bound), factory)


def device_bound(problem: Any, runner: Any, db: Any, tolerance: float) -> Any:
    """The lower-bound skip's ceilings: the device's copy bandwidth at the problem's input size
    (from the tuning database's device profile, measured once and stored there)."""
    from liftkit.explore.pipeline import Bound

    nbytes = 1 << max(20, min(30, int(sum(getattr(x, "nbytes", 0)
                                          for x in problem.inputs(problem.sizes, 0))).bit_length()))
    fingerprint = str(runner.device.fingerprint)
    gbs = db.bandwidth(fingerprint, nbytes)
    if gbs is None:
        measure = getattr(runner, "bandwidth_gbs", None)
        if measure is None:
            return None
        try:
            gbs = float(measure(nbytes))
        except Exception:  # noqa: BLE001 - no ceiling, no skipping
            return None
        if not gbs > 0:
            return None
        db.set_bandwidth(fingerprint, nbytes, gbs)
    return Bound(bandwidth_gbs=gbs, tolerance=tolerance)


def tune_best(args: argparse.Namespace, problem: Any, space: Any, runner: Any, db: Any,
              results: Sequence[Any]) -> list[dict[str, Any]]:
    """--tune-trials: TPE and random sampling over the best derivation's numeric parameters."""
    from liftkit.explore.tune import tune_numeric

    best = min((r for r in results if r.best), key=lambda r: r.best.time)
    evaluator = _evaluator(args, problem, runner, best.seed)
    return [tune_numeric(problem, space, evaluator, best.best, sampler, args.tune_trials,
                         seed=best.seed, db=db, key=best.key, search_id=best.search_id,
                         keys=best.keys)
            for sampler in ("tpe", "random")]


def configure_tune_suite_parser(p: argparse.ArgumentParser) -> None:
    """`liftkit tune-suite PROGRAMS... --devices ...`: the explore arguments for many programs."""
    configure_explore_parser(p)
    for action in p._actions:  # the one PROGRAM becomes PROGRAMS...
        if action.dest == "program":
            action.nargs = "+"
            action.metavar = "PROGRAMS"
    p.add_argument("--devices", nargs="+", metavar="SPEC", default=None,
                   help="devices to tune for (default: the default device)")


def cmd_tune_suite(args: argparse.Namespace, out: TextIO) -> int:
    """Tune every program for every device, one search each, recorded in one tuning
    database. A search already finished with the same settings is not run again; one that was
    interrupted is resumed: its finished candidates are taken from the database, the search
    goes on from there (the same seed draws the same candidates)."""
    from liftkit.explore import load_rule_space, make_problem

    if args.seeds != 1 or args.tune_trials or args.report or args.plot:
        raise CliError("tune-suite runs one search per program and device: --seeds, "
                       "--tune-trials, --report and --plot belong to `liftkit explore`")
    if args.ray is not None:
        _no_ray_for_any(args)
        from liftkit.explore.distributed import require_ray

        require_ray()
    space = load_rule_space(args.rules)
    db = open_tuning_db(args.db, create=True)
    sizes = _sizes(args.sizes)
    problems = []
    for name in args.program:
        res = resolve(name)
        mine = {k: v for k, v in sizes.items() if k in _names(res)}
        problem = make_problem(res.spec if res.spec is not None else res.program, mine, res.name)
        _check_sizes(res, problem.sizes)
        _check_inputs(res, problem, args.seed)
        problems.append(problem)
    progress = not args.quiet and sys.stderr.isatty()
    failed = 0
    for device in args.devices or [args.device]:
        dev_args = argparse.Namespace(**(vars(args) | {"device": device}))
        with _runner(dev_args) as runner, _db_errors(db):
            for problem in problems:
                key = problem.key(str(runner.device.fingerprint))
                sid, done = _previous(db, key, args, space.name)
                if done:
                    print(f"{problem.name} on {runner.device.label}: done before (search "
                          f"{sid[:12]})", file=out)
                    continue
                before = len(db.candidates(key, sid)) if sid else 0
                r = run_search(dev_args, problem, space, runner, db, args.seed, progress, sid)
                kept = f" (resumed: {before} candidates kept)" if sid else ""
                best = f"best {r.best.time * 1e3:.4g} ms" if r.best else "nothing valid"
                failed += r.best is None
                print(f"{problem.name} on {runner.device.label}: {len(r.records)} candidates in "
                      f"{r.elapsed:.1f} s{kept}, {best}; stopped: {r.stop_reason}", file=out)
    print(f"database: {db.path}", file=out)
    if failed:
        raise CliError(f"{failed} search(es) found no valid candidate")
    return 0


def _names(res: Resolved) -> set[str]:
    from liftkit.explore.problem import size_names

    return set(size_names(res.program))


def _previous(db: Any, key: str, args: argparse.Namespace, rules: str) -> tuple[Optional[str], bool]:
    """The last search of `key` with these settings: (its id, whether it finished)."""
    want = {"seed": args.seed, "budget": args.budget, "walks": args.walks,
            "max_choices": args.choices, "rules": rules, "seconds": args.seconds}
    for info in reversed(db.searches(key)):
        if all(info.settings.get(k) == v for k, v in want.items()):
            return info.search_id, db.is_finished(info.search_id)
    return None, False


def write_result(out_dir: Path, problem: Any, result: Any, device: Any, rules: str,
                 fingerprints: Optional[Mapping[str, str]] = None) -> list[Path]:
    """derivation.json (steps as Choices, replayable from the high-level program), program.lift
    (the low-level program, readable by `liftkit.ir.parser`) and kernel.cl (kernel.cu on CUDA:
    the backend the best was timed on)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    best = result.best
    fingerprint = (fingerprints or {}).get(best.backend, device.fingerprint)
    doc = {
        "program": problem.name,
        "high_level": problem.text,
        "sizes": dict(problem.sizes),
        "device": fingerprint,
        "backend": best.backend,
        "key": result.key,
        "rules": rules,
        "time_seconds": best.time,
        "steps": best.derivation_json(),
        "low_level": best.low_level,
        "params": dict(best.params),
    }
    kernel_file = "kernel.cu" if best.backend == "cuda" else "kernel.cl"
    files = [out_dir / "derivation.json", out_dir / "program.lift", out_dir / kernel_file]
    files[0].write_text(json.dumps(doc, indent=2, default=str, ensure_ascii=False) + "\n")
    files[1].write_text(best.low_level + "\n")
    files[2].write_text(best.source)
    return files


def tuned_program(res: Resolved, sizes: Mapping[str, int], device_spec: Optional[str] = None,
                  db_path: Optional[str] = None, backend: str = "auto") -> tuple[Any, tuple[Any, ...]]:
    """(low-level program, derivation) of `tuned_choice`."""
    found = tuned_choice(res, sizes, device_spec, db_path, backend)
    return found.program, found.derivation


@dataclass(frozen=True)
class TunedChoice:
    """What `--tuned` runs: the derived program, its derivation, and the backend it won on."""

    program: Any
    derivation: tuple[Any, ...]
    backend: str


def tuned_choice(res: Resolved, sizes: Mapping[str, int], device_spec: Optional[str] = None,
                 db_path: Optional[str] = None, backend: str = "auto") -> TunedChoice:
    """For `compile`/`run --tuned`: the best candidate stored for this program at these sizes
    (the spec's defaults filling in the rest) on the device — for `auto` and `any` on either
    backend of a GPU CUDA drives too, whichever was faster — else the bundled derivation
    (liftkit.explore.bundled), saying on stderr which was used and on which backend; a CliError
    saying how to tune it when there is none."""
    from liftkit.explore import NotTunedError
    from liftkit.explore.bundled import find, low_level_program, not_bundled_note
    from liftkit.explore.db import default_db_path
    from liftkit.explore.problem import size_names
    from liftkit.explore.tuned import tuned_key

    merged = dict(res.spec.sizes) if res.spec is not None else {}
    merged.update(sizes)
    devices = lookup_devices(backend, device_spec)
    used = " ".join(f"--size {k}={v}" for k, v in sorted(merged.items()) if k in size_names(res.program))
    missing = [n for n in size_names(res.program) if n not in merged]
    if missing:
        raise CliError(f"{res.name}: give the size(s) {', '.join(missing)} to look up a tuned "
                       f"version (results are stored per input size)")
    label = " and ".join(d.label for d in devices.values())
    problem = f"nothing is tuned for {res.name} at {used or 'these sizes'} on {label}"
    hint = f"run `liftkit explore {res.name} {used} --device ...` first"
    if db_path is None and not default_db_path().exists():  # no database yet: the bundled ones
        where = f"no tuning database at {default_db_path()}"
    else:
        db = open_tuning_db(db_path, create=False)
        with _db_errors(db):
            best = {b: rec for b, dev in devices.items()
                    if (rec := db.best_measured(tuned_key(res.program, merged, dev), b)) is not None}
        if best:
            b = min(best, key=lambda k: best[k].time)  # type: ignore[arg-type, return-value]
            others = "; ".join(f"{k} {best[k].time * 1e3:.4g} ms" for k in best if k != b)  # type: ignore[operator]
            won = best[b].params.get("won_elsewhere")
            if won:  # timed on b beside the other backend, which was faster for it
                others = "; ".join(x for x in (f"{won['backend']} ran it in {won['time'] * 1e3:.4g} "
                                               "ms in the same search", others) if x)
            print(f"{res.name}: tuned derivation from the tuning database {db.path}, on {b} "
                  f"({best[b].time * 1e3:.4g} ms{'; ' + others if others else ''})",  # type: ignore[operator]
                  file=sys.stderr)
            from liftkit.explore.tuned import program_of

            try:
                return TunedChoice(program_of(best[b], res.program), best[b].derivation, b)
            except NotTunedError as err:
                raise CliError(f"{res.name}: {err}") from None
        where = f"database {db.path}"
    hits = {b: hit for b, dev in devices.items() if (hit := find(res.program, merged, dev)) is not None}
    if not hits:
        raise CliError(f"{problem} ({where}; {not_bundled_note(res.name)}); {hint}")
    # a derivation found on this very device first, then the fastest
    b = min(hits, key=lambda k: (not hits[k].same_device, hits[k].derivation.time))
    hit = hits[b]
    found_on = "cuda" if hit.derivation.device.startswith("cuda|") else "opencl"
    if found_on in devices:
        b = found_on
    print(f"{res.name}: {hit.describe()}, on {b}; the tuning database has none", file=sys.stderr)
    try:
        return TunedChoice(low_level_program(hit.derivation, res.program), hit.derivation.steps, b)
    except NotTunedError as err:
        raise CliError(f"{res.name}: {hit.describe()}: {err}") from None


def lookup_devices(backend: str, device_spec: Optional[str]) -> dict[str, Any]:
    """The device of each backend a `--tuned` lookup considers: the one named, or for `auto`
    and `any` the OpenCL device and, where CUDA drives the same GPU, its CUDA device (`any`
    without one says once that it means OpenCL)."""
    from liftkit.backends.choose import resolve_backend

    if backend in ("auto", "any"):
        from liftkit.backends.opencl import OpenCLError, select_device

        try:
            ocl = select_device(device_spec)
        except OpenCLError:  # a CUDA-only spec (cuda:1): that backend's device alone
            if backend == "any":
                raise
        else:
            from liftkit.backends.cuda import list_devices
            from liftkit.explore.backends import any_note, cuda_twin

            twin, why = cuda_twin(ocl, list_devices())
            if twin is None and backend == "any":
                print(f"note: {any_note(why)}", file=sys.stderr)
            return {"opencl": ocl} | ({"cuda": twin} if twin is not None else {})
    if resolve_backend(backend if backend in ("opencl", "cuda") else "auto", device_spec) == "cuda":
        from liftkit.backends.cuda import select_device as select_cuda

        return {"cuda": select_cuda(device_spec)}
    from liftkit.backends.opencl import select_device

    return {"opencl": select_device(device_spec)}


_TABLES = ("keys", "searches", "candidates")


def open_tuning_db(path: Optional[str], create: bool) -> Any:
    """The tuning database at `path` (default: liftkit explore's), checked before use: a file
    that is not SQLite, or SQLite with other tables of the same names, is one error line; a
    missing file is created only when `create` (a lookup for --tuned never creates one)."""
    import sqlite3

    from liftkit.explore import TuningDB
    from liftkit.explore.db import _SCHEMA, MIGRATED, read_only_connection

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
        conn = read_only_connection(where)
        try:
            have = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in _TABLES}
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise CliError(f"tuning database {where}: cannot be read as SQLite ({err})") from None
    for t in _TABLES:
        missing = want[t] - have[t] - MIGRATED.get(t, set())  # added when first written to
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
