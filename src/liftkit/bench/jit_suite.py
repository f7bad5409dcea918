"""The JIT suite (`liftkit bench --suite jit`, seed 003 ch. 10): the eight thesis benchmarks
through liftkit's @jit (serial, and parallel on the worker pool) against CPython+NumPy and
Numba (`@njit`, and `parallel=True` where the benchmark has a parallel loop) in the same run.

Every variant is first checked at a small size against the plain Python function (CPython
running the loop source); a wrong one is reported and not timed. Timed runs of all variants of
a benchmark are interleaved (one call of each per round, so load drifting over the run hits
them alike) and reported as medians. "1st call" is a fresh function's first call at the timed
size (compilation included, disk cache off), as the thesis reports it; "compile" is that minus
the median steady-state call. The ablation times the serial code without region
specialisation and without bounds-check elimination, and counts the bounds checks removed.

Numba is a benchmark-only extra (``pip install 'liftkit[bench]'``), imported here when the
suite runs; without it its columns read "—"."""

from __future__ import annotations

import datetime as _dt
import importlib
import math
import os
import platform
import statistics
import sys
import time
import types
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from liftkit.bench.jit_programs import NAMES, PROGRAMS, JitProgram, inputs

SCALES = {"tiny": 0.04, "small": 0.5, "cpu": 1.0, "large": 2.0}
CHECK_SCALE = 0.05
NUMBA_MISSING = "Numba is not installed (pip install 'liftkit[bench]'): its columns read '—'"


@dataclass
class JitBenchConfig:
    programs: Optional[list[str]] = None  # default: all eight
    size_set: str = "cpu"                # a key of SCALES
    repeat: int = 10
    ablation: bool = False
    numba: bool = True                   # time Numba when it is installed
    seed: int = 0
    threads: Optional[int] = None        # parallel columns (default: the @jit runtime's, all cores)
    log: Callable[[str], None] = lambda s: None


@dataclass
class JitRow:
    """One benchmark's figures (seconds; None where not measured)."""
    name: str
    parallel: bool
    status: str = "ok"                   # ok, wrong (a variant's result differs), failed
    note: str = ""
    numpy: Optional[float] = None
    jit: Optional[float] = None
    jit_par: Optional[float] = None
    numba: Optional[float] = None
    numba_par: Optional[float] = None
    first: Optional[float] = None        # @jit first call (compile + run), serial
    compile: Optional[float] = None      # first - steady
    numba_first: Optional[float] = None
    numba_compile: Optional[float] = None
    nospec: Optional[float] = None       # serial without region specialisation
    nobce: Optional[float] = None        # serial without bounds-check elimination
    checks: Optional[tuple[int, int]] = None  # (removed, total) bounds checks
    runs: dict = field(default_factory=dict)  # variant -> every timed run

    def ratio(self, a: str, b: str) -> Optional[float]:
        x, y = getattr(self, a), getattr(self, b)
        return x / y if x and y else None


@dataclass
class JitBenchResult:
    rows: list[JitRow]
    meta: dict
    summary: dict

    def to_json(self) -> dict:
        return {"meta": self.meta, "summary": self.summary,
                "rows": [asdict(r) for r in self.rows]}


def geomean(xs: list[float]) -> Optional[float]:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def copy_args(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def close(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(close, a, b))
    return np.shape(a) == np.shape(b) and bool(np.allclose(a, b, rtol=1e-8, atol=1e-8))


def load_numba() -> Any:
    """The numba module, or None when it is not installed (or cannot load here)."""
    try:
        return importlib.import_module("numba")
    except Exception:  # noqa: BLE001 - ImportError, or a numba/llvmlite mismatch
        return None


def numba_version(numba: Any, f: Callable, parallel: bool) -> Callable:
    """``f`` compiled by Numba, its ``prange`` rebound to ``numba.prange`` (a fresh
    dispatcher each call, so its first call compiles)."""
    g = types.FunctionType(f.__code__, {**f.__globals__, "prange": numba.prange}, f.__name__)
    return numba.njit(parallel=True)(g) if parallel else numba.njit(g)


def _first_call(make: Callable[[], Callable], args: tuple) -> float:
    fn = make()
    a = copy_args(args)
    t0 = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t0


def run_program(p: JitProgram, cfg: JitBenchConfig, numba: Any, threads: int,
                rng: np.random.Generator) -> JitRow:
    from liftkit.jit import jit

    row = JitRow(p.name, p.parallel)
    small = inputs(p.name, CHECK_SCALE, rng)
    args = inputs(p.name, SCALES[cfg.size_set], rng)
    want = p.source(*copy_args(small))  # CPython runs the loop source: the oracle
    variants: dict[str, Callable] = {"numpy": p.numpy,
                                     "jit": jit(p.source, cache=False, parallel=False)}
    if p.parallel:
        variants["jit_par"] = jit(p.source, cache=False, parallel=True, threads=threads)
    if numba is not None:
        try:
            variants["numba"] = numba_version(numba, p.source, False)
            if p.parallel:
                variants["numba_par"] = numba_version(numba, p.source, True)
        except Exception as e:  # noqa: BLE001
            row.note = f"Numba cannot compile it here ({type(e).__name__})"
    wrong = []
    for key, fn in list(variants.items()):
        try:
            ok = close(fn(*copy_args(small)), want)
        except Exception as e:  # noqa: BLE001
            if not key.startswith("numba"):
                raise
            row.note = f"Numba cannot run it here ({type(e).__name__}: {str(e).splitlines()[0]})"
            del variants[key]
            continue
        if not ok and key.startswith("numba"):  # Numba's problem: its columns stay empty
            row.note = f"Numba's {key} result differs from plain Python (not timed)"
            del variants[key]
        elif not ok:
            wrong.append(key)
    if wrong:
        row.status = "wrong"
        row.note = f"result differs from plain Python: {', '.join(wrong)}"
        return row
    row.first = _first_call(lambda: jit(p.source, cache=False, parallel=False), args)
    if "numba" in variants:
        row.numba_first = _first_call(lambda: numba_version(numba, p.source, False), args)
    if cfg.ablation:
        for key, sw in (("nospec", {"specialise": False}), ("nobce", {"bounds": False})):
            variants[key] = jit(p.source, cache=False, parallel=False, passes=sw)
    for fn in variants.values():  # warm-up (compiles at the timed size's specialisation)
        fn(*copy_args(args))
    runs: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(cfg.repeat):
        for key, fn in variants.items():
            a = copy_args(args)
            t0 = time.perf_counter()
            fn(*a)
            runs[key].append(time.perf_counter() - t0)
    row.runs = runs
    for key, ts in runs.items():
        setattr(row, key, statistics.median(ts))
    row.compile = max(row.first - row.jit, 0.0) if row.jit else None
    if row.numba_first is not None and row.numba:
        row.numba_compile = max(row.numba_first - row.numba, 0.0)
    rep = list(variants["jit"].specs.values())[-1].info["passes"]
    row.checks = (rep.checks_removed, rep.checks_total)
    return row


def summarise(rows: list[JitRow], threads: int) -> dict:
    ok = [r for r in rows if r.status == "ok"]
    par = [r for r in ok if r.parallel]
    vs_njit = {r.name: r.ratio("numba", "jit") for r in ok if r.numba}
    vs_par = {r.name: r.ratio("numba_par", "jit_par") for r in par if r.numba_par}
    par_x = {r.name: r.ratio("jit", "jit_par") for r in par}
    need = 1.8 if threads <= 2 else 8.0 if threads >= 16 else None
    s: dict[str, Any] = {
        "threads": threads,
        "geomean_vs_numba_njit": geomean(list(vs_njit.values())),
        "min_vs_numba_njit": min((v for v in vs_njit.values() if v), default=None),
        "geomean_vs_numba_parallel": geomean(list(vs_par.values())),
        "parallel_speedup": par_x,
        "parallel_speedup_target": need,
        "parallel_speedup_met": sorted(k for k, v in par_x.items() if need and v and v >= need),
        "first_call_not_over_numba": sorted(r.name for r in ok if r.first and r.numba_first
                                            and r.first <= r.numba_first),
        "wrong": [r.name for r in rows if r.status == "wrong"],
        "failed": [r.name for r in rows if r.status == "failed"],
    }
    if any(r.nospec for r in ok):
        s["geomean_region_specialisation"] = geomean([r.ratio("nospec", "jit") or 0 for r in ok])
        s["geomean_bounds_check_elimination"] = geomean([r.ratio("nobce", "jit") or 0 for r in ok])
    return s


def run_jit_bench(cfg: JitBenchConfig) -> JitBenchResult:
    """Run the suite: every selected benchmark checked, then timed with all its variants."""
    from liftkit.jit.dispatch import Runtime

    names = cfg.programs or list(NAMES)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise ValueError(f"unknown JIT benchmark(s) {', '.join(unknown)} (known: {', '.join(NAMES)})")
    if cfg.size_set not in SCALES:
        raise ValueError(f"unknown size set {cfg.size_set!r} (known: {', '.join(SCALES)})")
    numba = load_numba() if cfg.numba else None
    if cfg.numba and numba is None:
        cfg.log(NUMBA_MISSING)
    threads = cfg.threads or Runtime().threads
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    rng = np.random.default_rng(cfg.seed)
    rows = []
    for name in names:
        try:
            row = run_program(PROGRAMS[name], cfg, numba, threads, rng)
        except Exception as e:  # noqa: BLE001 - one benchmark failing is one row, not a crash
            row = JitRow(name, PROGRAMS[name].parallel, status="failed",
                         note=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        rows.append(row)
        cfg.log(f"{name}: {row.status}")
    meta = {
        "suite": "jit",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": _cpu_name(), "cores": os.cpu_count(), "threads": threads,
        "size_set": cfg.size_set, "scale": SCALES[cfg.size_set], "repeat": cfg.repeat,
        "numba": getattr(numba, "__version__", None),
        "numba_threading_layer": _numba_layer(numba),
        "versions": _versions(),
    }
    return JitBenchResult(rows, meta, summarise(rows, threads))


def _numba_layer(numba: Any) -> Optional[str]:
    try:
        return str(numba.threading_layer()) if numba is not None else None
    except Exception:  # noqa: BLE001 - no parallel function ran
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    import llvmlite

    out = {"python": sys.version.split()[0], "numpy": np.__version__,
           "llvmlite": llvmlite.__version__}
    if "scipy" in sys.modules:
        out["scipy"] = sys.modules["scipy"].__version__
    return out
