"""Tuning a device (seed 003 §8.3.1): every codelet variant of every operation × dtype × layout,
at a representative size per size class, checked against NumPy and then timed; the measured
rates go into the device's profile.

The profile is saved after every (kind, size class), and variants already measured are skipped,
so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from liftkit.blas.codelets import OPS, Kind, Variant, padded_sizes, space_at
# (EDGE_OFF, edge_tasks, real_tasks: re-exported, the tuner's follow-ups as callers name them)
from liftkit.blas.followups import (BALANCED_TILES, EDGE_OFF, EDGE_TOP, FILL_CTILES,  # noqa: F401
                                    REAL_TOP, Task, edge_tasks, fill_sizes, followups,
                                    odd_sizes, real_tasks, split_sizes, split_tasks)
from liftkit.blas.gemm import REAL_OF
from liftkit.blas.kernels import Built
from liftkit.blas.peak import PeakSettings, measure_peaks
from liftkit.blas.prebuild import for_session
from liftkit.blas.profile import Entry, Profile, find_profile, size_class
from liftkit.blas.seed import SEED_TOP, seeded_space, seeded_variants
from liftkit.blas.session import Session

# complex kernels that conjugate (layout letters R, C) run the variants tuned for the same
# layout without conjugation (Session.choose): the derivations are the same
LAYOUTS = {"mm": ("NN", "NT", "TN"), "gemv": ("N", "T"), "axpby2d": ("N", "T")}
DTYPES = ("float32", "float64", "complex64", "complex128")
COMPLEX = ("complex64", "complex128")
# representative sizes per size class and device kind (n: square matrices n×n, vectors n)
SIZES = {
    "cpu": {"mm": {"small": 64, "medium": 256, "large": 1024, "huge": 3072, "giant": 8192},
            "2d": {"small": 96, "medium": 512, "large": 2048, "huge": 8192},
            "1d": {"small": 4096, "medium": 1 << 18, "large": 1 << 22, "huge": 1 << 26}},
    "gpu": {"mm": {"small": 128, "medium": 512, "large": 1024, "huge": 4096, "giant": 8192},
            "2d": {"small": 96, "medium": 1024, "large": 4096, "huge": 8192},
            "1d": {"small": 4096, "medium": 1 << 20, "large": 1 << 24, "huge": 1 << 26}},
}
CLASSES = ("small", "medium", "large", "huge", "giant")
# what `liftkit blas tune` measures unless told: huge and giant on GPUs only (on a CPU a huge
# GEMM takes seconds per run and chooses what large chooses); giant is a GEMM class only
DEFAULT_CLASSES = {"cpu": ("small", "medium", "large"), "gpu": CLASSES}


def classes_of(kind: Kind, classes: Sequence[str]) -> list[str]:
    """The size classes of `classes` that `kind` has (giant: GEMMs only)."""
    return [c for c in classes if c != "giant" or kind.op == "mm"]


def kinds(ops: Sequence[str] = OPS, dtypes: Sequence[str] = DTYPES,
          layouts: Optional[Sequence[str]] = None) -> list[Kind]:
    out = []
    for op in ops:
        for dt in dtypes:
            if op == "dotc" and dt not in COMPLEX:  # the same kernel as dot for reals
                continue
            for lay in LAYOUTS.get(op, ("-",)):
                if layouts is None or lay in layouts or lay == "-":
                    out.append(Kind(op, dt, lay))
    return out


def sizes_for(kind: Kind, cls: str, device_kind: str) -> dict[str, int]:
    table = SIZES[device_kind]
    if kind.op == "mm":
        n = table["mm"][cls]
        return {"M": n, "N": n, "K": n}
    if kind.op in ("gemv", "transpose", "axpby2d"):
        n = table["2d"][cls]
        return {"M": n, "N": n}
    return {"N": table["1d"][cls]}


def work(kind: Kind, sizes: dict[str, int]) -> tuple[float, str]:
    """(amount, unit) per run: floating-point operations, or bytes for the copies."""
    item = np.dtype(kind.dtype).itemsize
    # a complex multiply-add is 8 flops (4 multiplies, 4 adds), a real one 2
    c = 4.0 if kind.dtype in COMPLEX else 1.0
    if kind.op == "mm":
        return c * 2.0 * sizes["M"] * sizes["N"] * sizes["K"], "GFLOP/s"
    if kind.op == "gemv":
        return c * 2.0 * sizes["M"] * sizes["N"], "GFLOP/s"
    if kind.op == "transpose":
        return 2.0 * sizes["M"] * sizes["N"] * item, "GB/s"
    if kind.op == "axpby2d":
        return 3.0 * sizes["M"] * sizes["N"] * item, "GB/s"
    if kind.op in ("asum", "sumsq"):
        return (2.0 if kind.dtype in COMPLEX else 1.0) * 2.0 * sizes["N"], "GFLOP/s"
    return c * (1.0 if kind.op == "scal" else 2.0) * sizes["N"], "GFLOP/s"


# -- inputs and references ----------------------------------------------------------------------
def inputs_for(kind: Kind, sizes: dict[str, int], rng: np.random.Generator) -> list[Any]:
    """Inputs in the order of the kind's program parameters."""
    dt = np.dtype(kind.dtype)
    M, N, K = sizes.get("M", 1), sizes.get("N", 1), sizes.get("K", 1)

    def arr(*shape: int) -> np.ndarray:
        x = rng.uniform(-1, 1, shape)
        return (x + 1j * rng.uniform(-1, 1, shape) if dt.kind == "c" else x).astype(dt)

    a, b = (dt.type(1.5 - 0.5j), dt.type(-0.5 + 1j)) if dt.kind == "c" else \
        (dt.type(1.5), dt.type(-0.5))
    if kind.op == "mm":
        x = arr(M, K) if kind.layout[0] in "NR" else arr(K, M)
        y = arr(K, N) if kind.layout[1] in "NR" else arr(N, K)
        return [x, y]
    if kind.op == "gemv":
        t = kind.layout in "TC"
        return [arr(M, N), arr(M if t else N), arr(N if t else M), a, b]
    if kind.op == "transpose":
        return [arr(M, N)]
    if kind.op == "axpby2d":
        return [arr(N, M) if kind.layout == "T" else arr(M, N), arr(M, N), a, b]
    if kind.op == "scal":
        return [a, arr(N)]
    if kind.op == "axpy":
        return [a, arr(N), arr(N)]
    if kind.op in ("dot", "dotc"):
        return [arr(N), arr(N)]
    return [arr(N)]


def _read(x: np.ndarray, letter: str) -> np.ndarray:
    """An operand as a kernel of layout letter N, T, R (conjugated) or C reads it."""
    x = x.conj() if letter in "RC" else x
    return x.T if letter in "TC" else x


def reference(kind: Kind, xs: list[Any]) -> np.ndarray:
    wide = np.complex128 if kind.dtype in COMPLEX else np.float64
    f = [x.astype(wide) if isinstance(x, np.ndarray) else wide(x) for x in xs]
    op, lay = kind.op, kind.layout
    if op == "mm":
        return _read(f[0], lay[0]) @ _read(f[1], lay[1])
    if op == "gemv":
        return f[3] * (_read(f[0], lay) @ f[1]) + f[4] * f[2]
    if op == "transpose":
        return f[0].T
    if op == "axpby2d":
        return f[2] * (f[0].T if lay == "T" else f[0]) + f[3] * f[1]
    if op == "scal":
        return f[0] * f[1]
    if op == "axpy":
        return f[0] * f[1] + f[2]
    if op == "dot":
        return np.array([f[0] @ f[1]])
    if op == "dotc":
        return np.array([np.vdot(f[0], f[1])])
    if op == "asum":
        return np.array([np.abs(f[0].real).sum() + np.abs(f[0].imag).sum()])
    return np.array([(np.abs(f[0]) ** 2).sum()])


# -- measuring one variant ----------------------------------------------------------------------
class Inputs:
    """The random inputs of one kind at one size and their float64 reference, made once for all
    the variants a tuning run measures there (a 4096³ GEMM's reference costs more host time than
    timing a variant); an explicit cache holding the last (kind, sizes, seed) only."""

    def __init__(self) -> None:
        self._key: Any = None
        self._value: Optional[tuple[list[Any], np.ndarray]] = None

    def get(self, kind: Kind, sizes: dict[str, int], seed: int) -> tuple[list[Any], np.ndarray]:
        key = (kind, tuple(sorted(sizes.items())), seed)
        if key != self._key or self._value is None:
            self._value = None  # the old arrays go before the new ones are made
            xs = inputs_for(kind, sizes, np.random.default_rng(seed))
            self._key, self._value = key, (xs, reference(kind, xs))
        return self._value


@dataclass
class Trial:
    kind: Kind
    size_class: str
    variant: Variant
    sizes: dict[str, int] = field(default_factory=dict)
    seconds: float = float("inf")
    rate: float = 0.0
    unit: str = "GFLOP/s"
    error: str = ""
    wall: float = 0.0  # host seconds the trial took (derivation, build, check, timing)
    via: str = ""  # "real": `variant` is the real kernel of the complex `real` plan measured
    mode: str = ""  # the tuning run's `Task.mode` ("plan": timed padded as a call runs it)


def measure(session: Session, kind: Kind, variant: Variant, sizes: dict[str, int],
            repeat: int = 5, max_seconds: float = 2.0, seed: int = 0,
            inputs: Optional[Inputs] = None, plan: bool = False,
            real: Optional[Variant] = None, race: Optional[float] = None,
            batch: float = 0.0) -> Trial:
    """Derive, build, check against NumPy, then time (median of `repeat` event-timed runs,
    fewer when a run is slow; `batch` > 0: runs shorter than that timed back to back,
    `_check_then_time`). Errors are recorded, not raised: a variant a device cannot run is
    simply not chosen. `inputs`: where the inputs and reference are kept between variants.
    `plan`: a GEMM kernel timed as a call runs it, with the padded copies of its operands and
    of the product where its tiles do not divide the sizes (the padded plan a guarded form
    competes with). `race`: the fastest seconds measured so far at these sizes: a kernel whose
    first two timed runs take RACE times that is timed no more (it cannot win). `real`: for codelet
    `real`, its real kernel (else the profile's choice);
    the trial then names that kernel (`via` "real")."""
    t = Trial(kind, size_class(kind.op, sizes), variant)
    inputs = inputs if inputs is not None else Inputs()
    if variant.codelet in ("real", "nn", "split") or plan:
        t = _measure_plan(session, t, sizes, repeat, max_seconds, seed, inputs, real, batch)
        if real is not None and variant.codelet == "real":
            t.variant, t.via = real, "real"
        return t
    try:
        built = session.store.get(kind, variant)
    except Exception as err:  # noqa: BLE001 - derivation or build failure
        t.error = f"build: {str(err).splitlines()[0][:200]}"
        return t
    p = padded_sizes(sizes, built.multiples)
    t.sizes = dict(sizes)
    xs, want = inputs.get(kind, p, seed)
    try:
        out, run = _launcher(session, built, xs, p)
        run()
        session.q.finish()
        dt = np.dtype(kind.dtype)
        if kind.op in ("asum", "sumsq"):  # reals, also for complex vectors
            dt = np.empty(0, dt).real.dtype
        got = np.empty(out[1], dt)
        session.q.read(got, out[0])
    except Exception as err:  # noqa: BLE001 - a launch the device refuses or a kernel fault
        t.error = f"launch: {str(err).splitlines()[0][:200]}"
        return t
    return _check_then_time(t, want, got, sizes, run, repeat, max_seconds, race, batch)


def _measure_plan(session: Session, t: Trial, sizes: dict[str, int], repeat: int,
                  max_seconds: float, seed: int, inputs: Inputs,
                  real: Optional[Variant] = None, batch: float = 0.0) -> Trial:
    """A GEMM plan (the complex-through-real and transposing codelets, or one kernel with its
    operands padded where its tiles do not divide the sizes): packing, product and the copy of
    a padded product timed together on device operands, checked against NumPy first."""
    from liftkit.blas.gemm import GemmPlan

    kind, q = t.kind, session.q
    t.sizes = dict(sizes)
    xs, want = inputs.get(kind, sizes, seed)
    dt = np.dtype(kind.dtype)
    M, N, item = sizes["M"], sizes["N"], dt.itemsize
    try:
        ops = [session.operand(x, name, "gemm", 2) for x, name in zip(xs, ("A", "B"))]
        lay = kind.layout
        if t.variant.codelet in ("real", "nn", "split"):  # (split: liftkit.blas.split)
            # padded where its kernels' tiles do not divide the sizes (the transpose before
            # complex TN's real product off 32), timed with its copies as a call runs it
            plan = session.plan_gemm(ops[0].shape, ops[1].shape, dt, trans_a=lay[0] == "T",
                                     trans_b=lay[1] == "T", variant=t.variant, real=real)
        else:  # one kernel, as gemm's general path runs it (layout letters N, T only)
            plan = GemmPlan(session, dt, M, N, sizes["K"], lay[0] == "T", lay[1] == "T",
                            ("C", "C", "C"), lay, "A", False, dict(sizes),
                            session.store.get(kind, t.variant))
        ws = session.workspace()
        out = q.alloc(M * N * item)
        p = plan.padded
        keep: list[Any] = []

        def run() -> _Span:
            marker = q.marker()
            a, b = plan.pack("A", ops[0], ws), plan.pack("B", ops[1], ws)
            waits = list(a.events) + list(b.events)
            if (p["M"], p["N"]) == (M, N):
                ev, temps = plan.launch(a, b, out, waits, ws)
            else:  # the padded product's top-left M×N block is the result
                prod = ws.buffer("product", p["M"] * p["N"] * item)
                ev, temps = plan.launch(a, b, prod, waits, ws)
                ev = plan.crop_product(out, prod, ev, temps)  # (as a call copies it out)
            keep[:] = [a, b, temps]
            return _Span(q, marker, ev if ev is not None else q.marker(), keep[:])

        run()
        q.finish()
        got = np.empty((sizes["M"], sizes["N"]), dt)
        q.read(got, out)
    except Exception as err:  # noqa: BLE001 - a plan the device cannot run
        t.error = f"launch: {str(err).splitlines()[0][:200]}"
        return t
    return _check_then_time(t, want, got, sizes, run, repeat, max_seconds, batch=batch)


# a kernel whose first two timed runs take RACE times the fastest so far at its sizes is timed
# twice: it cannot win, and five runs of a slow 8192³ variant (glb, scalar tiles) took 2 s each
# (two: one run delayed by the host is no verdict)
RACE = 3.0
# batch timing (`measure(batch=...)`, `liftkit blas tune --timing batch`): a run shorter than
# BATCH seconds is timed as that many seconds of runs enqueued back to back (at most BATCH_RUNS),
# as a stream of calls runs: one launch between two events also times the host's launch, 10-17
# us at SGEMM 1024³ on the H200, which ranked a tiling 8 % slower per call first
# (results/issue15/h200-26)
BATCH, BATCH_RUNS = 1e-3, 200


def class_timing(prof: Profile, kind: Kind, cls: str, batch: Optional[float],
                 device_kind: str) -> float:
    """The `batch` seconds a tuning run times a (kind, size class) with (`measure`): `batch`
    where given, else BATCH on GPUs (per call the H200 ran the tiling batch timing ranked first
    1.02x cuBLAS, the one launch timing ranked first 0.94x: results/issue15/h200-26), launch
    timing on CPUs (their launches are host work a call pays), and launch timing for a class
    the profile holds launch-timed entries of (`notes["batch_timing"]` lists the others), so
    that its new variants are ranked as its old ones were timed."""
    if batch is not None:
        return batch
    if device_kind != "gpu":
        return 0.0
    timed = prof.notes.get("batch_timing", {}).get("classes", [])
    return 0.0 if prof.measured(kind, cls) and f"{kind}|{cls}" not in timed else BATCH


def _check_then_time(t: Trial, want: np.ndarray, got: np.ndarray, sizes: dict[str, int],
                     run: Callable[[], Any], repeat: int, max_seconds: float,
                     race: Optional[float] = None, batch: float = 0.0) -> Trial:
    """Compare with NumPy (tolerance by precision, growing with the summed length), then time
    the median of up to `repeat` runs within `max_seconds` (two where both take RACE times
    `race`); with `batch`, each timed run is n runs enqueued back to back, n such that a single
    run (timed once first) times n lasts `batch` seconds; the rate is the real (unpadded)
    problem's."""
    kind = t.kind
    k = sizes.get("K", sizes.get("N", 1))
    tol = (1e-3, 1e-4 * k) if kind.dtype in ("float32", "complex64") else (1e-9, 1e-11 * k)
    if not close_enough(got.reshape(want.shape), want, rtol=tol[0], atol=tol[1]):
        t.error = "wrong result"
        return t
    times = []
    n = 1
    if batch > 0:
        probe = run()
        probe.wait()
        n = max(1, min(BATCH_RUNS, math.ceil(batch / max(probe.seconds, 1e-9))))
    start = time.perf_counter()
    for _ in range(repeat):
        spans = [run() for _ in range(n)]  # (held: their temporaries live until the wait)
        spans[-1].wait()
        times.append(spans[0].seconds if n == 1
                     else spans[0].q.seconds(spans[0].first, spans[-1].last) / n)
        if time.perf_counter() - start > max_seconds or (
                race and len(times) >= 2 and min(times) > RACE * race):
            break
    t.seconds = statistics.median(times)
    amount, t.unit = work(kind, sizes)
    t.rate = amount / t.seconds / 1e9
    return t


CHECK_CHUNK = 1 << 18  # elements compared at a time (a few MB: the temporaries stay in cache)


def close_enough(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    """`np.allclose(got, want, rtol, atol)` (|got − want| ≤ atol + rtol·|want| everywhere, NaN
    never close) for finite references, in chunks that stay in cache and on several threads
    for large results: a 8192² check takes about a tenth of np.allclose's time, which was
    most of a giant GEMM variant's trial."""
    g, w = got.reshape(-1), want.reshape(-1)

    def part(i: int) -> bool:
        gc, wc = g[i:i + CHECK_CHUNK], w[i:i + CHECK_CHUNK]
        bound = np.abs(wc)
        bound *= rtol
        bound += atol
        return bool(np.less_equal(np.abs(gc - wc), bound).all())

    starts = range(0, g.size, CHECK_CHUNK)
    if len(starts) < 16:
        return all(part(i) for i in starts)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:  # NumPy drops the GIL
        return all(pool.map(part, starts))


def _launcher(session: Session, built: Built, xs: list[Any], sizes: dict[str, int]
              ) -> tuple[tuple[Any, tuple[int, ...]], Callable[[], Any]]:
    """Upload the inputs once; return (output buffer and shape, a function launching once and
    returning the span covering the whole pipeline)."""
    q = session.q
    arrays, scalars = {}, {}
    for i, x in enumerate(xs):
        if isinstance(x, np.ndarray):
            x = np.ascontiguousarray(x)
            arrays[i] = q.alloc(x.nbytes)
            q.upload(arrays[i], x)
        else:
            scalars[i] = x
    rt = built.compiled.result_type
    from liftkit.backends.hostdata import host_buffer

    host = host_buffer(rt, sizes)
    out = q.alloc(max(1, host.nbytes))
    q.finish()
    keep: list[Any] = []

    def run() -> Any:
        marker = q.marker()
        ev, temps = built.launch(q, arrays, scalars, out, sizes, [marker])
        keep[:] = temps
        return _Span(q, marker, ev if ev is not None else q.marker(), temps)

    return (out, host.shape), run


class _Span:
    """From the first to the last event of a pipeline (several kernels); `temps`: what the
    pipeline's kernels use, kept alive with the span."""

    def __init__(self, q: Any, first: Any, last: Any, temps: Any = None) -> None:
        self.q, self.first, self.last, self.temps = q, first, last, temps

    def wait(self) -> None:
        self.q.wait([self.last])

    @property
    def seconds(self) -> float:
        return self.q.seconds(self.first, self.last)


def trial_line(trial: Trial, elapsed: float) -> str:
    """One line per trial for logs (a tuning run without its progress bar): when it ended, what
    it measured and how long it took."""
    got = trial.error or f"{trial.rate:.1f} {trial.unit}"
    what = {"plan": " padded", "real": " (the real plan's kernel)"}.get(trial.mode, "")
    if trial.mode or trial.variant.codelet.startswith("edge-"):  # off the class's size
        what += " at " + "×".join(str(v) for v in trial.sizes.values())
    return (f"{elapsed:8.1f} s  {trial.kind} {trial.size_class} {trial.variant}{what}: {got} "
            f"({trial.wall:.1f} s)")


def measure_queues(session: Session, quick: bool = False) -> dict[str, Any]:
    """The queue micro-benchmark of seed 003 §7.4.1: `liftkit.runtime`'s calibration (small
    independent kernels on 1 and N queues, checked), which also writes the device's runtime
    profile; what it found goes into the BLAS profile's notes. A failure is noted, not raised."""
    from liftkit.runtime.profile import calibrate

    spec = session.device_kind if session.backend == "opencl" else "gpu"
    try:
        kw: dict[str, Any] = {"kernels": 16, "work": 500, "repeats": 2} if quick else {}
        data = calibrate(session.backend, spec, **kw)
    except Exception as err:  # noqa: BLE001 - a runtime that cannot open the device
        return {"error": str(err).splitlines()[0][:200]}
    return {"queues": data["queues"], "seconds": data["seconds"], "kernels": data["kernels"],
            "work": data["work"]}


def peak_target(session: Session) -> Optional[tuple[Any, Any, Any]]:
    """(context, queue, cl_device) the peak micro-benchmarks run on: the session's own OpenCL
    device, or for a CUDA session the same GPU through OpenCL (peaks are the hardware's; the
    micro-benchmarks are OpenCL C). None where no OpenCL device is that GPU."""
    if session.backend == "opencl":
        return session.context, session.queue, session.device.cl_device
    try:
        import pyopencl as cl

        from liftkit.backends.opencl.devices import list_devices
    except ImportError:
        return None
    name = session.device.name.lower()
    for d in list_devices():
        if d.is_gpu and d.cl_device.name.strip().lower() == name:
            ctx = cl.Context([d.cl_device])
            queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
            return ctx, queue, d.cl_device
    return None


# -- the tuning run -------------------------------------------------------------------------------
# seconds between saves of the profile inside a (kind, class)'s variants (always after one):
# what an interrupted run measures again (a CPU's large GEMM class takes minutes)
CHECKPOINT = 10.0


def device_limits(session: Session, progress: bool = False) -> Any:
    """The CUDA session's multiprocessor limits (`occupancy.sm_limits`), None (the split-tail
    variants not tried, said once) where the driver does not report them."""
    from liftkit.backends.cuda.occupancy import sm_limits

    try:
        return sm_limits(session.device.ordinal)
    except Exception as err:  # noqa: BLE001 - an older driver without an attribute
        if progress:
            print(f"no multiprocessor limits for {session.device.label} "
                  f"({str(err).splitlines()[0][:120]}): split-tail variants not tried", flush=True)
        return None


def built_slots(session: Session, kind: Kind, variants: Sequence[Variant], limits: Any,
                ready: Callable[[Kind, Variant], None] = lambda k, v: None) -> list[Variant]:
    """`variants` with each split tail's `slots` from its built kernel: multiprocessors ×
    the blocks its registers and shared memory (as the driver reports them after NVRTC) leave
    resident, where that differs from the launch bound's count (a kernel under its register
    cap holds more); one build per tiling, the bound's slots kept where the backend does not
    say; `ready(kind, variant)` before a build (`prebuild.Prebuild.ready`)."""
    from liftkit.backends.cuda.occupancy import resident_blocks
    from liftkit.blas.codelets import tiles_async_footprint

    found: dict[Any, Optional[int]] = {}
    out: list[Variant] = []
    for v in variants:
        kw = v.kw
        if kw.get("split") and limits is not None:
            tiling = tuple(p for p in v.params if p[0] not in ("split", "slots"))
            if tiling not in found:
                try:
                    ready(kind, v)
                    attrs = session.store.get(kind, v).kernels[0].attributes
                    regs, shared = int(attrs.num_regs), int(attrs.shared_size_bytes)
                except Exception:  # noqa: BLE001 - a build failure is the trial's to report
                    found[tiling] = None
                else:
                    threads, _ = tiles_async_footprint(*(kw[p] for p in (
                        "tm", "tn", "tk", "rm", "rn", "stages")))
                    blocks = resident_blocks(limits, threads, regs, shared)
                    found[tiling] = limits.multiprocessors * blocks if blocks else None
            slots = found[tiling]
            if slots is not None and slots != kw["slots"]:
                v = Variant.of(v.codelet, **{**kw, "slots": slots})
        if v not in out:
            out.append(v)
    return out


def planned_measurements(kinds_: Iterable[Kind], classes: Sequence[str], device_kind: str,
                         backend: str, limits: Any = None, edges: bool = True,
                         skip: Callable[[Kind, str], bool] = lambda k, c: False
                         ) -> tuple[int, int]:
    """(variants, follow-ups at most) a tuning run from nothing measures for these kinds and
    classes: every variant of the space, and at most 1 + 2·EDGE_TOP guarded trials per GEMM
    class whose variants have guarded forms (not where `skip`: measured before), 2·REAL_TOP
    real kernels per complex NN class, the split plan beside the GEMM's own plan per real NN
    class and complex64's guarded tiles beside its real plan (`split_tasks`)."""
    from liftkit.blas.codelets import edge_forms

    n = more = 0
    for kind in dict.fromkeys(kinds_):
        for cls in classes_of(kind, classes):
            vs = space_at(kind, device_kind, backend, sizes_for(kind, cls, device_kind), limits)
            n += len(vs)
            if edges and kind.op == "mm" and not skip(kind, cls) \
                    and any(edge_forms(v) for v in vs):
                more += 1 + 2 * EDGE_TOP
            if edges and kind.op == "mm" and split_sizes(kind, cls, device_kind) is not None:
                more += 3 + 2 * len(BALANCED_TILES)  # split plans, own plan, balanced tiles
            elif edges and kind.op == "mm" and fill_sizes(kind, cls, device_kind) is not None:
                more += 1 + len(FILL_CTILES)  # the real plan, the complex tiles
            if kind.op == "mm" and kind.dtype in REAL_OF and kind.layout == "NN" and \
                    Variant.of("real") in vs:
                more += 2 * REAL_TOP
    return n, more


def tune(session: Session, kinds_: Iterable[Kind], classes: Optional[Sequence[str]] = None,
         profile: Optional[Profile] = None, save: Optional[Callable[[Profile], Any]] = None,
         progress: bool = True, max_variants: Optional[int] = None,
         on_trial: Optional[Callable[[Trial], None]] = None,
         peaks: Optional[PeakSettings] = PeakSettings(), rounds: int = 1,
         limits: Any = None, edges: Optional[bool] = None,
         workers: Optional[int] = None, seed: Optional[Profile] = None,
         seed_top: int = SEED_TOP, batch: Optional[float] = None) -> Profile:
    """Measure the device's peak rates (unless the profile has them or `peaks` is None), then
    every variant of every kind at each size class; resume from `profile` (the device's saved
    profile by default); `save(profile)` after the peaks and after each (kind, class).
    `rounds` > 1 times a (kind, class)'s variants that many times in turn and keeps each one's
    best: on a device other work shares (a loaded CPU), every variant then meets the same
    moments of load, not only the one timed while it lasted. `limits`: the CUDA device's
    multiprocessor limits (`occupancy.SMLimits`; read from the device by default), which size
    the split-tail variants (`codelets.split_tail_space`). After a GEMM class's variants:
    `edges` (default: on GPUs) its guarded forms at an odd size against its choice padded
    (`edge_tasks`: the faster ones become guarded entries), and for complex NN the `real`
    plan on the real dtype's best kernels (`real_tasks`: entries with `via` "real").
    On CUDA, `workers` processes compile the kernels ahead (`prebuild`; default: the cores but
    two, at most 8; 0: none). `seed`: another device's profile whose `seed_top` fastest class
    variants are what a (kind, class) it measured explores here (`liftkit.blas.seed`).
    `batch`: runs shorter than that many seconds are timed back to back (`measure`; 0: one
    launch per timed run; default: `class_timing`, back to back on GPUs)."""
    dev = session.device
    if limits is None and session.backend == "cuda":
        limits = device_limits(session, progress)
    classes = classes or DEFAULT_CLASSES[session.device_kind]
    edges = session.device_kind == "gpu" if edges is None else edges
    prof = profile or find_profile(dev.fingerprint) or Profile(dev.fingerprint, dev.label,
                                                               session.device_kind)
    say = progress or on_trial is not None  # a bar, or a log of trials: the phases too
    target = peak_target(session) if peaks is not None and prof.peaks is None else None
    if target is not None:
        if say:
            print(f"measuring the peak rates of {dev.label} (add, mul, mad, fma; copy)",
                  flush=True)
        t0 = time.perf_counter()
        prof.peaks = measure_peaks(*target, settings=peaks)
        if say:
            print(f"  peak rates: {time.perf_counter() - t0:.1f} s", flush=True)
        if save is not None:
            save(prof)
    elif peaks is not None and prof.peaks is None and say:
        print(f"no OpenCL device is {dev.label}: peak rates not measured", flush=True)
    if peaks is not None and "queues" not in prof.notes:
        if say:
            print(f"measuring queues on {dev.label} (independent small kernels on 1, 2, 4 "
                  f"queues; liftkit.runtime's calibration)", flush=True)
        t0 = time.perf_counter()
        prof.notes["queues"] = measure_queues(session, quick=peaks.min_seconds < 0.01)
        if say:
            print(f"  queues: {time.perf_counter() - t0:.1f} s", flush=True)
        if save is not None:
            save(prof)
    session.profile = prof  # plans of several kernels (codelets real, nn) use what is tuned so far
    prof.notes.setdefault("failed", [])
    failed = set(prof.notes["failed"])
    spaces = [(kind, cls, seeded_space(seed, kind, cls, space_at(
        kind, session.device_kind, session.backend, sizes_for(kind, cls, session.device_kind),
        limits), seed_top)) for kind in kinds_ for cls in classes_of(kind, classes)]
    if seed is not None:  # which classes the seed narrowed (the rest: explored in full)
        note = prof.notes.setdefault("seeded", {}).setdefault(
            seed.fingerprint, {"label": seed.label, "classes": []})
        note["top"] = seed_top
        note["classes"] = sorted(set(note["classes"]) | {
            f"{k}|{c}" for k, c, _ in spaces if seeded_variants(seed, k, c, seed_top)})
    spaces = [(kind, cls, vs[:max_variants]) for kind, cls, vs in spaces]
    # compiled ahead in the order they are measured (`liftkit.blas.prebuild`, CUDA)
    ahead = [(kind, v) for kind, cls, vs in spaces for v in vs
             if v not in prof.measured(kind, cls) and f"{kind}|{cls}|{v}" not in failed]
    ahead.sort(key=lambda kv: not kv[1].kw.get("split"))  # built first, by built_slots
    with for_session(session, ahead, workers) as pre:
        plan = []
        for kind, cls, variants in spaces:
            variants = built_slots(session, kind, variants, limits, pre.ready)
            done = prof.measured(kind, cls)
            todo = [v for v in variants if v not in done and f"{kind}|{cls}|{v}" not in failed]
            plan.append((kind, cls, todo))
        total = sum(len(t) for _, _, t in plan) * max(1, rounds)
        timing = {(k, c): class_timing(prof, k, c, batch, session.device_kind)
                  for k, c, _ in plan}  # (before this run's entries: a class as it was timed)
        timed = {f"{k}|{c}" for k, c, t in plan if t and timing[k, c] > 0}
        if timed:  # the classes timed back to back (the others: one launch per run)
            note = prof.notes.setdefault("batch_timing", {
                "seconds": max(timing.values()), "classes": []})
            note["classes"] = sorted(set(note["classes"]) | timed)
        if progress:
            _, more = planned_measurements(
                [k for k, _, _ in plan], classes, session.device_kind, session.backend, limits,
                edges, skip=lambda k, c: f"{k}|{c}" in prof.notes.get("edges", {}))
            print(f"tuning {dev.label}: {total} measurements, then at most "
                  f"{more * max(1, rounds)} of guarded forms and complex plans' real kernels",
                  flush=True)
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), disable=not progress, transient=False) as bar:
            task = bar.add_task(f"tuning {dev.label}", total=total)
            inputs = Inputs()

            saved = [time.perf_counter()]

            def run(kind: Kind, cls: str, tasks: list[Task], keep: bool = False
                    ) -> dict[str, Trial]:
                """Measure `tasks` (`rounds` times each, the best kept); `keep`: each variant's
                entry goes into the profile in the last round, saved every CHECKPOINT seconds,
                so an interrupted class resumes after its last saved variant."""
                best: dict[str, Trial] = {}
                spread = timing[kind, cls]  # (batch seconds)
                for r in range(max(1, rounds)):
                    for tk in tasks:
                        key = f"{kind}|{cls}|{tk.key}"
                        if key in failed:
                            bar.advance(task)
                            continue
                        bar.update(task, description=f"{kind} {cls} {tk.key}")
                        t0 = time.perf_counter()
                        if tk.mode not in ("real", "split"):
                            pre.ready(kind, tk.variant)
                        fastest = min((b.seconds for b in best.values()  # to race against
                                       if not b.mode and b.sizes == tk.sizes), default=None)
                        with pre.quiet:  # no code generation on other threads meanwhile
                            if tk.mode == "real":
                                trial = measure(session, kind, Variant.of("real"), tk.sizes,
                                                inputs=inputs, real=tk.variant, batch=spread)
                            elif tk.mode in ("plan", "split-base", "here"):
                                trial = measure(session, kind, tk.variant, tk.sizes,
                                                inputs=inputs, plan=True, batch=spread)
                            else:
                                trial = measure(session, kind, tk.variant, tk.sizes,
                                                inputs=inputs, race=fastest, batch=spread)
                        trial.wall, trial.mode = time.perf_counter() - t0, tk.mode
                        if on_trial is not None:
                            on_trial(trial)
                        if trial.error:
                            failed.add(key)
                        elif tk.key not in best or trial.seconds < best[tk.key].seconds:
                            best[tk.key] = trial
                        bar.advance(task)
                        if keep and r == max(1, rounds) - 1 and tk.key in best \
                                and key not in failed:
                            t = best[tk.key]
                            prof.add([Entry(kind, cls, t.sizes, t.variant, t.seconds, t.rate,
                                            t.unit)])
                            if save is not None and time.perf_counter() - saved[0] > CHECKPOINT:
                                prof.notes["failed"] = sorted(failed)
                                save(prof)
                                saved[0] = time.perf_counter()
                return {k: t for k, t in best.items() if f"{kind}|{cls}|{k}" not in failed}

            for kind, cls, todo in plan:
                sizes = sizes_for(kind, cls, session.device_kind)
                best = run(kind, cls, [Task(v, sizes) for v in todo], keep=True)
                entries = [Entry(kind, cls, t.sizes, t.variant, t.seconds, t.rate, t.unit)
                           for t in best.values()]
                if todo:
                    prof.add(entries)
                    session.forget_choices()  # plans (real, nn) see the new rates
                    prof.notes["failed"] = sorted(failed)
                    if save is not None:
                        save(prof)
                        saved[0] = time.perf_counter()
                more, edge = followups(prof, kind, cls, session.device_kind, edges)
                splits = split_tasks(session, prof, kind, cls, limits) if edges else []
                more += splits
                if not more and not edge:
                    continue
                pre.add((kind, tk.variant) for tk in more if tk.mode not in ("real", "split"))
                bar.update(task, total=(bar.tasks[task].total or 0) + len(more) * max(1, rounds))
                got = run(kind, cls, more)
                new = [Entry(kind, cls, t.sizes, t.variant, t.seconds, t.rate, t.unit, t.via)
                       for k, t in got.items() if t.via]
                padded = next((got.get(tk.key) for tk in more if tk.mode == "plan"), None)
                guarded = [t for k, t in got.items() if not t.via and k in
                           {tk.key for tk in more if tk.mode == ""}]
                if edge:  # the guarded forms faster than the class's choice padded
                    won = [t for t in guarded if padded is None or t.seconds < padded.seconds]
                    new += [Entry(kind, cls, t.sizes, t.variant, t.seconds, t.rate, t.unit)
                            for t in won]
                    prof.notes.setdefault("edges", {})[f"{kind}|{cls}"] = {
                        "sizes": odd_sizes(kind, cls, session.device_kind),
                        "padded": None if padded is None else
                        {"variant": str(padded.variant), "rate": padded.rate},
                        "guarded": {str(t.variant): t.rate for t in guarded},
                        "entries": [str(t.variant) for t in won]}
                # the fastest of the split plans and the balanced tiles, where it beat the
                # GEMM's own plan, as one entry via its mode (another would never run at these
                # sizes, which it alone serves: gemm.measured_here runs the fastest there)
                if splits:
                    base = got.get(splits[0].key)
                    tried = {mode: [got[tk.key] for tk in splits[1:]
                                    if tk.mode == mode and tk.key in got]
                             for mode in ("split", "here")}
                    top = min(((t, m) for m, ts in tried.items() for t in ts),
                              key=lambda tm: tm[0].seconds, default=None)
                    if top is not None and (base is None or top[0].seconds < base.seconds):
                        t, mode = top
                        new.append(Entry(kind, cls, t.sizes, t.variant, t.seconds, t.rate,
                                         t.unit, mode))
                    else:
                        top = None
                    prof.notes.setdefault("splits", {})[f"{kind}|{cls}"] = {
                        "sizes": splits[0].sizes,
                        "plan": None if base is None else
                        {"variant": str(base.variant), "rate": base.rate},
                        **{mode: {str(t.variant): t.rate for t in trials}
                           for mode, trials in tried.items()},
                        "entry": None if top is None else str(top[0].variant),
                        "via": None if top is None else top[1]}
                prof.add(new)
                session.forget_choices()
                prof.notes["failed"] = sorted(failed)
                if save is not None:
                    save(prof)
        return prof
