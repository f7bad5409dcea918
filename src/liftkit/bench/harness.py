"""The benchmark harness: for each suite entry, pick the low-level program for the device, make
the spec's inputs, compile, CHECK the result (NumPy reference of the spec, or the interpreter
when small) before timing, time with OpenCL profiling events (median of ≥ 10 runs; pipelines sum
their kernels), run and check every reference, time those, and derive GB/s, GFLOP/s, fractions of
the ceilings measured in the same run, and speedups.

A wrong result is reported as "wrong" and never timed; a program that is not bundled yet is
reported as "not bundled".
"""

from __future__ import annotations

import datetime as _dt
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from liftkit.bench.ceilings import Ceilings, measure
from liftkit.bench.references import Reference, references_for, xp_references
from liftkit.bench.suite import Entry, select
from liftkit.bench.timing import TIMERS, free_device_memory, median, to_host, to_library

Log = Callable[[str], None]
INTERPRET_LIMIT = 1 << 14  # input elements up to which the interpreter may stand in as the check
MIN_REPORT_REPEAT = 10


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class BenchConfig:
    device: str = "gpu"  # gpu, cpu, or part of a platform/device name
    programs: Optional[list[str]] = None  # suite keys; None: all 18
    size_set: Optional[str] = None  # tiny/cpu/small/large; default large (GPU) or cpu (CPU)
    repeat: int = 10
    seed: int = 0
    ablation: bool = False
    db: Optional[str] = None  # tuning database for the derived column (else the bundled ones)
    derived: bool = True  # the "derived" column: each high-level program's derivation
    references: bool = True  # False: no references (the derived column against the hand-written)
    entries: Optional[Sequence[Entry]] = None  # replaces the suite (tests)
    registry: Any = None  # replaces the bundled registry (tests)
    main_table: bool = True  # False: only the ablation (with ablation=True)
    partial: Optional[Path] = None  # JSON of the entries so far, rewritten after each one
    backend: str = "opencl"  # opencl, cuda, or both (OpenCL's table plus CUDA's times beside it)


@dataclass
class RefResult:
    name: str
    library: str
    status: str  # ok, wrong, error
    seconds: Optional[float] = None
    runs: list[float] = field(default_factory=list)
    speedup: Optional[float] = None  # reference time / liftkit time (> 1: liftkit is faster)
    note: str = ""


@dataclass
class DerivedResult:
    """The search's best derivation of the entry's high-level program, checked, then timed
    beside the hand-written program."""

    status: str  # ok, wrong, none (nothing derived yet), compile failed, error
    source: str = ""  # the tuning database or the bundled derivation it came from
    device: str = ""  # the device the search ran on
    seconds: Optional[float] = None
    runs: list[float] = field(default_factory=list)
    hand_seconds: Optional[float] = None  # the hand-written program in the same rounds
    ratio: Optional[float] = None  # hand_seconds / seconds (> 1: the derived one is faster)
    check: str = ""
    max_abs_err: Optional[float] = None
    candidates: Optional[int] = None
    valid: Optional[int] = None
    search_seconds: Optional[float] = None
    seconds_to_best: Optional[float] = None
    steps: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class EntryResult:
    key: str
    title: str
    seed: str
    cgo: bool
    status: str  # ok, wrong, not bundled, no sizes, sizes, compile failed, error
    program: str = ""  # the hand-written low-level program run
    variant: str = ""  # hand-chosen or bundled
    sizes: dict[str, int] = field(default_factory=dict)
    check: str = ""  # how the result was checked
    max_abs_err: Optional[float] = None
    seconds: Optional[float] = None  # median over runs of the summed kernel times
    kernel_seconds: dict[str, float] = field(default_factory=dict)
    runs: list[float] = field(default_factory=list)
    bytes: Optional[float] = None
    flops: Optional[float] = None
    gbs: Optional[float] = None
    gflops: Optional[float] = None
    intensity: Optional[float] = None  # flops per byte
    frac_bandwidth: Optional[float] = None
    frac_peak: Optional[float] = None
    frac_roofline: Optional[float] = None
    bound: str = ""  # memory or compute (which roofline ceiling applies)
    references: list[RefResult] = field(default_factory=list)
    best_reference: Optional[str] = None
    speedup_best: Optional[float] = None
    note: str = ""
    # with --backend both: the same program on CUDA (status, seconds, kernel_seconds,
    # max_abs_err, check, note), checked the same way before it is timed
    cuda: dict[str, Any] = field(default_factory=dict)
    derived: Optional[DerivedResult] = None  # the high-level program's derivation


@dataclass
class BenchResult:
    meta: dict[str, Any]
    ceilings: Ceilings
    entries: list[EntryResult]
    ablation: Optional[list[dict[str, Any]]] = None
    summary: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"meta": self.meta, "ceilings": self.ceilings.to_json(),
                "entries": [asdict(e) for e in self.entries], "ablation": self.ablation,
                "summary": self.summary}


# ---------------------------------------------------------------------------------------------
# comparing results


def _normal(x: Any) -> Any:
    """Tuples and structured arrays both as tuples of plain arrays."""
    if isinstance(x, (tuple, list)):
        return tuple(_normal(v) for v in x)
    a = np.asarray(x)
    if a.dtype.names:
        return tuple(_normal(a[n]) for n in a.dtype.names)
    return a


def difference(got: Any, want: Any, rtol: float, atol: float) -> tuple[str, float]:
    """('' or what differs, largest absolute error)."""
    from liftkit.semantics.compare import difference as diff

    g, w = _normal(got), _normal(want)
    if isinstance(g, tuple) or isinstance(w, tuple):
        if not (isinstance(g, tuple) and isinstance(w, tuple)) or len(g) != len(w):
            return "the result has a different tuple structure", math.inf
        parts = [difference(a, b, rtol, atol) for a, b in zip(g, w)]
        bad = [f"component {k}: {d}" for k, (d, _) in enumerate(parts) if d]
        return (bad[0] if bad else ""), max((e for _, e in parts), default=0.0)
    if g.shape != w.shape and g.size == w.size:
        g = g.reshape(w.shape)
    d = diff(g, w, rtol, atol)
    if g.shape != w.shape:
        return d, math.inf
    with np.errstate(invalid="ignore"):
        e = np.abs(g.astype(np.float64) - w.astype(np.float64))
    err = float(np.nanmax(e)) if e.size else 0.0
    return d, err


def _elements(inputs: Sequence[Any]) -> int:
    return sum(int(np.size(x)) for x in inputs)


# ---------------------------------------------------------------------------------------------
# choosing the program


@dataclass
class Choice:
    name: str
    program: Any  # Lambda
    spec: Any  # the ProgramSpec whose inputs and reference apply
    variant: str


def choose(entry: Entry, device_kind: str, registry: Any) -> Optional[Choice]:
    """The first bundled hand-written low-level candidate for the device kind; None when
    nothing is bundled."""
    for name in entry.candidates(device_kind):
        if name in registry:
            spec = registry[name]
            variant = "hand-chosen" if spec.source == "hand-chosen" else "bundled"
            return Choice(name, spec.program, spec, variant)
    return None


def derivation_for(entry: Entry, registry: Any, device: Any, sizes: Mapping[str, int],
                   db: Optional[str]) -> Optional[tuple[Any, str]]:
    """(Derivation, where from) of the entry's high-level program at these sizes: from the
    tuning database `db` when it holds one, else the bundled derivations; None if neither."""
    from liftkit.explore.bundled import find, of_key
    from liftkit.explore.db import TuningDB
    from liftkit.explore.tuned import tuned_key

    if not entry.high or entry.high not in registry:
        return None
    spec = registry[entry.high]
    merged = dict(spec.sizes) | dict(sizes)
    if db:
        with TuningDB(Path(db).expanduser()) as tdb:
            kind = "gpu" if getattr(device, "is_gpu", False) else "cpu"
            d = of_key(tdb, tuned_key(spec.program, merged, device), kind, str(tdb.path))
        if d is not None:
            return d, f"tuning database {db}"
    hit = find(spec.program, merged, device)
    return (hit.derivation, hit.describe()) if hit is not None else None


# ---------------------------------------------------------------------------------------------
# one entry


@dataclass
class Prepared:
    """Everything needed to check and time one program of one entry."""

    entry: Entry
    choice: Choice
    sizes: dict[str, int]  # the program's own size variables
    inputs: list[Any]
    check_sizes: Optional[dict[str, int]]  # when the check runs at smaller sizes
    check_inputs: Optional[list[Any]]
    expected: Any  # the spec's reference at the check sizes
    rtol: float
    atol: float


def prepare(entry: Entry, choice: Choice, sizes: Mapping[str, int], seed: int) -> Prepared:
    """Inputs and the expected result (the spec's NumPy reference, or the interpreter when the
    reference fails and the inputs are small). Raises ValueError for missing sizes."""
    from liftkit.explore.problem import size_names

    needed = size_names(choice.program)
    missing = [n for n in needed if n not in sizes]
    if missing:
        raise ValueError(f"{choice.name} needs size(s) {', '.join(missing)}; the suite gives "
                         f"{', '.join(f'{k}={v}' for k, v in sizes.items())}")
    own = {k: int(sizes[k]) for k in needed}
    spec = choice.spec
    inputs = spec.inputs(dict(sizes), seed)
    check_sizes = None
    if entry.check_at and any(sizes.get(k, 0) > v for k, v in entry.check_at.items()):
        check_sizes = dict(sizes) | dict(entry.check_at)
    check_inputs = spec.inputs(check_sizes, seed) if check_sizes else None
    basis = check_inputs if check_inputs is not None else inputs
    try:
        expected = spec.reference(*basis)
    except Exception:
        if _elements(basis) > INTERPRET_LIMIT:
            raise
        from liftkit.semantics import interpret

        expected = interpret(choice.program, *basis)
    return Prepared(entry, choice, own, inputs,
                    {k: int(check_sizes[k]) for k in needed if k in check_sizes} if check_sizes else None,
                    check_inputs, expected, float(spec.rtol), float(spec.atol))


def check_compiled(runner: Any, compiled: Any, prep: Prepared) -> tuple[str, float, Any, str]:
    """Run once and compare: (difference or '', max abs error, the full-size result, how)."""
    result = runner.run(compiled, *prep.inputs, sizes=prep.sizes, name=prep.choice.name)
    if prep.check_inputs is not None:
        small = runner.run(compiled, *prep.check_inputs, sizes=prep.check_sizes,
                           name=prep.choice.name)
        d, err = difference(small, prep.expected, prep.rtol, prep.atol)
        how = f"NumPy reference at {_sizes_text(prep.check_sizes or {})}"
    else:
        d, err = difference(result, prep.expected, prep.rtol, prep.atol)
        how = "NumPy reference"
    return d, err, result, how


def time_compiled(runner: Any, compiled: Any, prep: Prepared, repeat: int) -> Any:
    """RunInfo of `repeat` event-timed runs after a warm-up."""
    return runner.run_with_info(compiled, *prep.inputs, sizes=prep.sizes, timing=True,
                                repeat=repeat, name=prep.choice.name)[1]


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def _reference(ref: Reference, prep: Prepared, lift_result: Any, repeat: int) -> RefResult:
    """Check a reference (against the spec's reference; at full size also against liftkit's
    checked result where the check ran at smaller sizes), then time it."""
    out = RefResult(ref.name, ref.library, "error")
    try:
        if prep.check_inputs is not None:
            got = to_host(ref.fn(*to_library(prep.check_inputs, ref.library)))
            d, _ = difference(got, prep.expected, prep.rtol, prep.atol)
            if not d and lift_result is not None:
                full = to_host(ref.fn(*to_library(prep.inputs, ref.library)))
                d, _ = difference(full, lift_result, prep.rtol * 10, prep.atol * 10)
                d = f"at full size, differs from liftkit's result: {d}" if d else ""
        else:
            got = to_host(ref.fn(*to_library(prep.inputs, ref.library)))
            d, _ = difference(got, prep.expected, prep.rtol, prep.atol)
        if d:
            out.status, out.note = "wrong", d
            return out
        args = to_library(prep.inputs, ref.library)
        out.runs = TIMERS[ref.library](lambda: ref.fn(*args), repeat)
        out.seconds, out.status = median(out.runs), "ok"
    except Exception as err:  # noqa: BLE001 - a failing reference is reported, the run goes on
        out.note = _one_line(err)
    return out


def _one_line(err: BaseException) -> str:
    from liftkit.usercode import one_line

    return f"{type(err).__name__}: {one_line(err)}"


def _metrics(res: EntryResult, entry: Entry, ceil: Ceilings) -> None:
    if res.seconds is None or res.seconds <= 0:
        return
    try:
        res.bytes, res.flops = float(entry.bytes_moved(res.sizes)), float(entry.flops(res.sizes))
    except (KeyError, TypeError, ZeroDivisionError):
        return
    res.gbs = res.bytes / res.seconds / 1e9
    res.gflops = res.flops / res.seconds / 1e9
    res.intensity = res.flops / res.bytes if res.bytes else None
    bw, peak = ceil.bandwidth_gbs, ceil.peak_gflops
    if bw and not math.isnan(bw):
        res.frac_bandwidth = res.gbs / bw
    if peak and not math.isnan(peak):
        res.frac_peak = res.gflops / peak
    if res.intensity is not None and bw and peak and not math.isnan(bw) and not math.isnan(peak):
        roof = min(peak, bw * res.intensity)
        res.frac_roofline = res.gflops / roof
        res.bound = "memory" if bw * res.intensity < peak else "compute"


def bench_entry(entry: Entry, runner: Any, device_kind: str, size_set: str, cfg: BenchConfig,
                registry: Any, ceil: Ceilings, table: dict[str, Any], log: Log) -> EntryResult:
    """One benchmark on `runner`, checked, then timed against its references."""
    from liftkit.codegen import CompileOptions, compile_program

    res = EntryResult(entry.key, entry.title, entry.seed, entry.cgo, "error")
    sizes = entry.sizes_for(size_set)
    if sizes is None:
        res.status, res.note = "no sizes", f"no {size_set} sizes for this entry"
        return res
    res.sizes = dict(sizes)
    choice = choose(entry, device_kind, registry)
    if choice is None:
        res.status = "not bundled"
        res.note = f"none of {', '.join(entry.candidates(device_kind))} is bundled"
        return res
    res.program, res.variant = choice.name, choice.variant
    try:
        prep = prepare(entry, choice, sizes, cfg.seed)
    except ValueError as err:
        res.status, res.note = "sizes", _one_line(err)
        return res
    except Exception as err:  # noqa: BLE001
        res.note = f"preparing inputs: {_one_line(err)}"
        return res
    res.sizes = dict(sizes) | prep.sizes
    try:
        compiled = compile_program(choice.program, CompileOptions(dialect=runner.dialect))
    except Exception as err:  # noqa: BLE001
        res.status, res.note = "compile failed", _one_line(err)
        return res
    lift_result = None
    try:
        d, err, lift_result, how = check_compiled(runner, compiled, prep)
    except Exception as err_:  # noqa: BLE001 - launch problems, driver errors
        res.note = f"run: {_one_line(err_)}"
        d, how, err = "", "", None
    res.check, res.max_abs_err = how, err
    if d:
        res.status, res.note = "wrong", d
        lift_result = None
    table_names = [entry.reference, entry.high or "", *entry.low, choice.name]
    errors: list[str] = []
    refs = references_for(entry.reference, [n for n in table_names if n], device_kind, table,
                          errors) if cfg.references else []
    ref_results = [_reference(r, prep, lift_result, cfg.repeat) for r in refs]
    for r in ref_results:  # a reference that disagrees with liftkit at full size: liftkit suspect
        if lift_result is not None and prep.check_inputs is not None and r.status == "wrong" \
                and r.note.startswith("at full size"):
            res.note = f"differs from {r.name} at full size (both checked at smaller sizes)"
    if lift_result is not None and not res.note:
        info = time_compiled(runner, compiled, prep, cfg.repeat)
        res.status = "ok"
        res.seconds = float(info.total_seconds)
        res.kernel_seconds = {k: float(v) for k, v in info.kernel_seconds.items()}
        res.runs = [float(sum(r)) for r in info.runs]
        _metrics(res, entry, ceil)
    elif lift_result is not None:
        res.status = "wrong"
    res.references = ref_results
    if errors:
        res.note = "; ".join(filter(None, [res.note, *errors]))
    timed = [r for r in ref_results if r.status == "ok" and r.seconds]
    if res.seconds:
        for r in timed:
            r.speedup = r.seconds / res.seconds  # type: ignore[operator]
    if timed:
        best = min(timed, key=lambda r: r.seconds)  # type: ignore[arg-type,return-value]
        res.best_reference = best.name
        res.speedup_best = best.speedup
    if cfg.derived:
        hand = (compiled, prep) if res.status == "ok" else None
        res.derived = bench_derived(entry, runner, registry, sizes, cfg, hand)
    free_device_memory()
    return res


DERIVED_ROUNDS = 3  # alternating timing rounds of the hand-written and the derived program


def bench_derived(entry: Entry, runner: Any, registry: Any, sizes: Mapping[str, int],
                  cfg: BenchConfig, hand: Optional[tuple[Any, Prepared]]) -> DerivedResult:
    """The derivation of the entry's high-level program, checked like the hand-written program
    (same inputs, same reference), then timed in rounds alternating with the hand-written
    program (`hand`: its compiled program and inputs, when it ran correctly), so that a load
    that comes and goes on the machine shifts both: the ratio is of the two medians."""
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.explore.bundled import low_level_program

    try:
        found = derivation_for(entry, registry, runner.device, sizes, cfg.db)
    except Exception as err:  # noqa: BLE001 - an unreadable database or file is reported
        return DerivedResult("error", note=f"looking up the derivation: {_one_line(err)}")
    if found is None:
        where = f"the tuning database {cfg.db} or " if cfg.db else ""
        return DerivedResult("none", note=f"no derivation of {entry.high} at these sizes in "
                                          f"{where}the bundled derivations")
    d, source = found
    out = DerivedResult("error", source, d.device_label, candidates=d.candidates, valid=d.valid,
                        search_seconds=d.search_seconds, seconds_to_best=d.seconds_to_best,
                        steps=[str(c) for c in d.steps])
    try:
        spec = registry[entry.high]
        low = low_level_program(d, spec.program)
        choice = Choice(f"{entry.high} (derived)", low, spec, source)
        prep = prepare(entry, choice, sizes, cfg.seed)
        compiled = compile_program(low, CompileOptions(dialect=runner.dialect))
    except Exception as err:  # noqa: BLE001
        out.status, out.note = "compile failed", _one_line(err)
        return out
    try:
        diff, err, _, how = check_compiled(runner, compiled, prep)
    except Exception as err_:  # noqa: BLE001 - launch problems, driver errors
        out.note = f"run: {_one_line(err_)}"
        return out
    out.check, out.max_abs_err = how, err
    if diff:
        out.status, out.note = "wrong", diff
        return out
    hand_runs: list[float] = []
    for _ in range(DERIVED_ROUNDS if hand is not None else 1):
        if hand is not None:
            info = time_compiled(runner, hand[0], hand[1], cfg.repeat)
            hand_runs += [float(sum(r)) for r in info.runs]
        info = time_compiled(runner, compiled, prep, cfg.repeat)
        out.runs += [float(sum(r)) for r in info.runs]
    out.status, out.seconds = "ok", median(out.runs)
    if hand_runs and out.seconds:
        out.hand_seconds = median(hand_runs)
        out.ratio = out.hand_seconds / out.seconds
    return out


# ---------------------------------------------------------------------------------------------
# the whole run


def on_second_backend(runner: Any, entry: Entry, res: EntryResult, device_kind: str,
                      cfg: BenchConfig, registry: Any) -> dict[str, Any]:
    """The program `res` ran, checked and then timed on another backend's runner, with the same
    inputs (same seed); every failure is recorded."""
    from liftkit.codegen import CompileOptions, compile_program

    out: dict[str, Any] = {"backend": runner.dialect, "device": runner.device.label}
    try:
        sizes = entry.sizes_for(cfg.size_set or "") or res.sizes
        choice = choose(entry, device_kind, registry)
        if choice is None or choice.name != res.program:
            out.update(status="error", note="the program run first could not be chosen again")
            return out
        prep = prepare(entry, choice, sizes, cfg.seed)
        compiled = compile_program(choice.program, CompileOptions(dialect=runner.dialect))
        d, err, _, how = check_compiled(runner, compiled, prep)
        out.update(check=how, max_abs_err=err)
        if d:
            out.update(status="wrong", note=d)
            return out
        info = time_compiled(runner, compiled, prep, cfg.repeat)
    except Exception as err_:  # noqa: BLE001 - a build or launch failure is a finding
        out.update(status="error", note=_one_line(err_))
        return out
    out.update(status="ok", seconds=float(info.total_seconds),
               kernel_seconds={k: float(v) for k, v in info.kernel_seconds.items()},
               runs=[float(sum(r)) for r in info.runs])
    free_device_memory()
    return out


def _git_commit() -> Optional[str]:
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "numpy": np.__version__}
    if "pyopencl" in sys.modules:
        out["pyopencl"] = sys.modules["pyopencl"].VERSION_TEXT
    if "liftkit.backends.cuda" in sys.modules:
        from liftkit.backends.cuda import nvrtc_version

        out["nvrtc"] = ".".join(map(str, nvrtc_version()))
    for mod in ("cupy", "torch", "cuda.core"):
        if mod in sys.modules:
            out[mod] = getattr(sys.modules[mod], "__version__", "?")
    return out


def default_size_set(device_kind: str) -> str:
    return "large" if device_kind == "gpu" else "cpu"


def summarize(entries: Sequence[EntryResult], ceil: Ceilings) -> dict[str, Any]:
    """The issue's targets: each CGO program ≥ 0.9× its best reference, their geomean ≥ 1.0×,
    SGEMM (mm_nvidia / mm_amd) ≥ 0.8× cuBLAS."""
    cgo = [e for e in entries if e.cgo and e.speedup_best]
    sp = [e.speedup_best for e in cgo if e.speedup_best]
    out: dict[str, Any] = {
        "cgo_measured": len(cgo),
        "cgo_geomean_speedup": float(np.exp(np.mean(np.log(sp)))) if sp else None,
        "cgo_below_0.9": [e.key for e in cgo if (e.speedup_best or 0) < 0.9],
        "not_bundled": [e.key for e in entries if e.status == "not bundled"],
        "wrong": [e.key for e in entries if e.status == "wrong"],
        "failed": [e.key for e in entries if e.status in ("error", "compile failed", "sizes")],
    }
    derived = [e for e in entries if e.derived is not None]
    ratios = [e.derived.ratio for e in derived if e.derived and e.derived.ratio]
    out["derived_ok"] = [e.key for e in derived if e.derived and e.derived.status == "ok"]
    out["derived_none"] = [e.key for e in derived if e.derived and e.derived.status == "none"]
    out["derived_wrong"] = [e.key for e in derived if e.derived and e.derived.status == "wrong"]
    out["derived_failed"] = [e.key for e in derived
                             if e.derived and e.derived.status in ("error", "compile failed")]
    out["derived_geomean_ratio"] = float(np.exp(np.mean(np.log(ratios)))) if ratios else None
    all_sp = [e.speedup_best for e in entries if e.speedup_best]
    out["geomean_speedup_all"] = float(np.exp(np.mean(np.log(all_sp)))) if all_sp else None
    for e in entries:
        if e.key.startswith("mm_") and e.gflops and ceil.sgemm_gflops:
            out[f"{e.key}_of_sgemm"] = e.gflops / ceil.sgemm_gflops
    return out


def _write_partial(path: Path, ceil: Ceilings, results: Sequence[EntryResult]) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ceilings": ceil.to_json(), "entries": [asdict(r) for r in results]},
                               indent=1, default=str))


def run_bench(cfg: BenchConfig, log: Log = _stderr) -> BenchResult:
    """Run the suite (and the ablation when asked); returns every number."""
    from liftkit.backends.choose import make_runner
    from liftkit.programs import PROGRAMS

    if cfg.repeat < 1:
        raise ValueError("repeat must be at least 1")
    if cfg.backend not in ("opencl", "cuda", "both"):
        raise ValueError(f"backend must be opencl, cuda or both, got {cfg.backend!r}")
    registry = cfg.registry if cfg.registry is not None else PROGRAMS
    entries = list(cfg.entries) if cfg.entries is not None else select(cfg.programs)
    runner = make_runner("cuda" if cfg.backend == "cuda" else "opencl", cfg.device)
    if cfg.backend == "both":
        from liftkit.backends.cuda import select_device

        select_device(cfg.device)  # no CUDA GPU: say so before the OpenCL pass, not after it
    kind = "gpu" if runner.device.is_gpu else "cpu"
    size_set = cfg.size_set or default_size_set(kind)
    log(f"bench: {runner.device.label} ({kind}), size set {size_set}, {cfg.repeat} runs each")
    ceil = measure(runner, kind, size_set, cfg.repeat)
    log(f"bench: ceilings: copy {ceil.bandwidth_gbs:.1f} GB/s, SGEMM "
        f"{ceil.peak_gflops:.1f} GFLOP/s ({ceil.sgemm_library})")
    table = xp_references()
    results: list[EntryResult] = []
    for entry in entries if cfg.main_table else []:
        t0 = time.perf_counter()
        r = bench_entry(entry, runner, kind, size_set, cfg, registry, ceil, table, log)
        t = f"{r.seconds * 1e3:.3f} ms" if r.seconds else ""
        best = f", {r.speedup_best:.2f}× vs {r.best_reference}" if r.speedup_best else ""
        log(f"bench: {entry.key}: {r.status} {t}{best}{'  (' + r.note + ')' if r.note else ''}"
            f" [{time.perf_counter() - t0:.1f} s]")
        results.append(r)
        if cfg.partial is not None:
            _write_partial(cfg.partial, ceil, results)
    second = None
    if cfg.backend == "both":
        # a pass of its own: the report puts the CUDA figures in a table beside OpenCL's
        second = make_runner("cuda", cfg.device)
        log(f"bench: the same programs on {second.device.label}")
        for entry, r in zip(entries if cfg.main_table else [], results):
            if not r.program:
                continue
            r.cuda = on_second_backend(second, entry, r, kind, replace(cfg, size_set=size_set),
                                       registry)
            c = r.cuda
            log(f"bench: {entry.key} on CUDA: {c.get('status')}"
                + (f" {c['seconds'] * 1e3:.3f} ms" if c.get("seconds") else f" ({c.get('note', '')})"))
        if cfg.partial is not None:
            _write_partial(cfg.partial, ceil, results)
    meta = {"device": runner.device.label, "device_type": runner.device.type,
            "backend": cfg.backend,
            "second_device": second.device.label if second is not None else None,
            "driver": runner.device.driver_version, "device_kind": kind, "size_set": size_set,
            "repeat": cfg.repeat, "seed": cfg.seed, "commit": _git_commit(),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": _versions(),
            "command": "liftkit bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 else ""}
    ablation = None
    if cfg.ablation:
        from liftkit.bench.ablation import run_ablation

        ablation = run_ablation([e for e in entries if e.cgo], runner, kind, size_set, cfg,
                                registry, log)
    return BenchResult(meta, ceil, results, ablation, summarize(results, ceil))
