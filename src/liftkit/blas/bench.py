"""The liftkit.blas benchmark (seed 003 Fig. 8.2): rate vs size for each operation and dtype,
liftkit beside the library a user would pick in the same run (NumPy's BLAS on the CPU device,
cuBLAS through CuPy on a GPU), results checked before timing.

Operands live on the device (pyopencl arrays; CuPy arrays for cuBLAS), so both sides are timed
without transfers: `repeat` runs enqueued back to back and one wait, median over three such
batches after a warm-up. Outputs are poisoned (NaN) before the checked run.

    liftkit blas bench --device cpu --sizes 256,512,1024
    python benchmarks/blas_bench.py --device gpu
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

import numpy as np

OPS = ("gemm", "gemv", "transpose", "dot")
DEFAULT_SIZES = {"cpu": (128, 256, 512, 1024), "gpu": (256, 1024, 2048, 4096)}


@dataclass
class Row:
    op: str
    dtype: str
    n: int
    liftkit: float  # rate (GFLOP/s or GB/s)
    reference: Optional[float]
    reference_name: str
    unit: str
    variant: str
    error: float  # max relative difference to the reference result
    clblast: Optional[float] = None  # CLBlast's rate on the same queue (pyclblast), if run

    @property
    def ratio(self) -> Optional[float]:
        return self.liftkit / self.reference if self.reference else None


def configure_bench_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="gpu, cpu or part of a device name (default: a GPU if any)")
    p.add_argument("--backend", choices=("auto", "opencl", "cuda"), default="auto",
                   help="auto (default): CUDA for --device gpu where a CUDA GPU is present")
    p.add_argument("--sizes", metavar="N,N,...", default=None,
                   help="square sizes n (matrices n×n, vectors n²); default "
                        f"{','.join(map(str, DEFAULT_SIZES['cpu']))} on a CPU, "
                        f"{','.join(map(str, DEFAULT_SIZES['gpu']))} on a GPU")
    p.add_argument("--ops", metavar="A,B", default=",".join(OPS), help=f"of {','.join(OPS)}")
    p.add_argument("--dtypes", metavar="D,D", default="float32,float64",
                   help="of float32,float64,complex64,complex128 (complex rates count a "
                        "complex multiply-add as 8 flops)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs (median, default 5)")
    p.add_argument("--out", metavar="FILE.json", default=None, help="also write the rows as JSON")


def _median_time(run: Callable[[], Any], sync: Callable[[Any], Any], repeat: int,
                 batches: int = 3) -> float:
    """Seconds per run: `repeat` runs enqueued back to back, then one wait (the host's call
    overhead overlaps the device's work, as in a real pipeline); median over batches."""
    sync(run())  # warm-up (builds, caches)
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        last = None
        for _ in range(repeat):
            last = run()
        sync(last)
        times.append((time.perf_counter() - t0) / repeat)
    return statistics.median(times)


def _rel_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(want))), 1e-30)
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    return float(np.max(np.abs(np.asarray(got, wide) - want))) / scale


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def run_bench(device: Optional[str], sizes: Optional[list[int]], ops: list[str],
              dtypes: list[str], repeat: int = 5, log: Optional[Callable[[str], None]] = None,
              clblast: bool = False, session: Any = None, backend: str = "auto") -> list[Row]:
    """The rows, one per op × dtype × size; `clblast` adds CLBlast's rate where pyclblast is
    installed (checked against the same float64 result before it is timed)."""
    import warnings

    import pyopencl as cl

    with warnings.catch_warnings():  # pyopencl's own fill kernels: driver build logs
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return _run_bench(device, sizes, ops, dtypes, repeat, log, clblast, session, backend)


def _run_bench(device: Optional[str], sizes: Optional[list[int]], ops: list[str],
               dtypes: list[str], repeat: int, log: Optional[Callable[[str], None]],
               clblast: bool, session: Any, backend: str) -> list[Row]:
    from liftkit.blas.session import Session
    from liftkit.blas.tune import DTYPES  # noqa: F401 - the dtype names the library knows

    session = session if session is not None else Session(device, warn=False, backend=backend)
    if log:
        log(f"note: liftkit.blas on {session.device.label} ({session.backend} backend)")
    to_dev, empty_nan = _device_arrays(session)
    clb = _clblast_module() if clblast else None
    if clblast and clb is None and log:
        log("note: pyclblast is not installed: no CLBlast column (pip install pyclblast)")
    gpu = session.device.is_gpu
    if session.profile is None and log:
        log(f"note: no tuned profile for {session.device.label}: default derivations (tune with "
            f"`liftkit blas tune --device {'gpu' if gpu else 'cpu'}`)")
    sizes = sizes or list(DEFAULT_SIZES["gpu" if gpu else "cpu"])
    xp, ref_name = _reference_library(gpu)
    rows = []
    for op in ops:
        for dt_name in dtypes:
            dt = np.dtype(dt_name)
            tol = 1e-3 if dt in (np.float32, np.complex64) else 1e-9
            flops = 4.0 if dt.kind == "c" else 1.0  # a complex multiply-add is 8 flops, not 2
            for n in sizes:
                rng = np.random.default_rng(n)
                A, B, x = (_random(rng, shape, dt) for shape in ((n, n), (n, n), (n,)))
                dA, dB, dx = (to_dev(v) for v in (A, B, x))
                item = dt.itemsize
                if op == "gemm":
                    dC = empty_nan((n, n), dt)
                    lk = lambda: session.gemm(dA, dB, dC)  # noqa: E731
                    want, amount, unit = _wide(A) @ B, flops * 2.0 * n ** 3, "GFLOP/s"
                    rf = (lambda a, b, v: a @ b), (A, B, x)
                elif op == "gemv":
                    dy = empty_nan((n,), dt)
                    lk = lambda: session.gemv(dA, dx, dy)  # noqa: E731
                    want, amount, unit = _wide(A) @ x, flops * 2.0 * n * n, "GFLOP/s"
                    rf = (lambda a, b, v: a @ v), (A, B, x)
                elif op == "transpose":
                    dT = empty_nan((n, n), dt)
                    lk = lambda: session.transpose(dA, dT)  # noqa: E731
                    want, amount, unit = _wide(A.T), 2.0 * n * n * item, "GB/s"
                    rf = (lambda a, b, v: a.T.copy()), (A, B, x)
                else:  # dot over n² elements
                    v1, v2 = A.reshape(-1), B.reshape(-1)
                    dv1, dv2 = to_dev(v1), to_dev(v2)
                    lk = lambda: session.dot(dv1, dv2)  # noqa: E731
                    want, amount, unit = np.array(_wide(v1) @ v2), flops * 2.0 * n * n, "GFLOP/s"
                    rf = (lambda a, b, v: a.reshape(-1) @ b.reshape(-1)), (A, B, x)
                got = lk().result()
                got_np = _to_numpy(got)
                err = _rel_error(got_np, want)
                if err > tol * max(1.0, np.sqrt(n)):
                    raise RuntimeError(f"blas bench: {op} {dt_name} n={n}: liftkit's result "
                                       f"differs from NumPy's (relative error {err:.2e})")
                t_lk = _median_time(lk, lambda f: f.result(), repeat)
                t_ref = _time_reference(xp, rf, gpu, repeat, tol, want)
                variant = _variant_used(session, op, dt_name, n)
                t_clb = _time_clblast(clb, session.queue, op, n, dt, (dA, dB, dx), want, tol,
                                      repeat) if clb is not None and session.backend == "opencl" \
                    else None
                row = Row(op, dt_name, n, amount / t_lk / 1e9,
                          amount / t_ref / 1e9 if t_ref else None, ref_name, unit, variant, err,
                          amount / t_clb / 1e9 if t_clb else None)
                rows.append(row)
                if log:
                    ratio = f"{row.ratio:.3f}x" if row.ratio else "-"
                    clb_text = f"  CLBlast {row.clblast:9.2f}" if row.clblast else ""
                    log(f"{op:9s} {dt_name:7s} n={n:5d}  liftkit {row.liftkit:9.2f} {unit}  "
                        f"{ref_name} {row.reference or 0:9.2f}{clb_text}  ratio {ratio}  "
                        f"[{variant}]")
    return rows


def _device_arrays(session: Any) -> tuple[Callable[[np.ndarray], Any], Callable[..., Any]]:
    """(upload, a NaN-filled empty array) on the session's device: pyopencl arrays on OpenCL,
    CuPy arrays on CUDA."""
    if session.backend == "cuda":
        import cupy

        def empty_cp(shape: tuple[int, ...], dt: np.dtype) -> Any:
            a = cupy.empty(shape, dt)
            a.fill(np.nan)
            return a

        return cupy.asarray, empty_cp
    import pyopencl.array as cla

    q = session.queue
    return (lambda v: cla.to_device(q, v)), (lambda shape, dt: cla.empty(q, shape, dt).fill(np.nan))


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "get"):  # pyopencl and CuPy arrays
        return np.asarray(x.get())
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return np.asarray(x)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    x = rng.uniform(-1, 1, shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dt)


def _reference_library(gpu: bool) -> tuple[Any, str]:
    if gpu:
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            return cupy, "cuBLAS (CuPy)"
        except Exception:  # noqa: BLE001 - no CuPy or no CUDA device: no reference
            return None, "none"
    return np, "NumPy BLAS"


def _time_reference(xp: Any, rf: Any, gpu: bool, repeat: int, tol: float,
                    want: np.ndarray) -> Optional[float]:
    if xp is None:
        return None
    fn, args = rf
    if xp is np:
        got = fn(*args)
        if _rel_error(np.asarray(got), want) > 1e-2:
            raise RuntimeError("blas bench: NumPy's result differs from the float64 check")
        return _median_time(lambda: fn(*args), lambda r: r, repeat)
    dargs = [xp.asarray(a) for a in args]
    got = xp.asnumpy(fn(*dargs))
    if _rel_error(got, want) > 1e-2:
        raise RuntimeError("blas bench: CuPy's result differs from the float64 check")
    return _median_time(lambda: fn(*dargs), lambda r: xp.cuda.get_current_stream().synchronize(),
                        repeat)


def _clblast_module() -> Any:
    try:
        import pyclblast

        return pyclblast
    except Exception:  # noqa: BLE001 - not installed or its library is missing: no column
        return None


def _time_clblast(clb: Any, q: Any, op: str, n: int, dt: np.dtype, operands: tuple[Any, ...],
                  want: np.ndarray, tol: float, repeat: int) -> Optional[float]:
    """Seconds per CLBlast call on the session's queue (the same device memory), or None for an
    operation CLBlast lacks here; a wrong result is an error, as for liftkit."""
    import pyopencl.array as cla

    dA, dB, dx = operands
    try:
        if op == "gemm":
            out = cla.empty(q, (n, n), dt).fill(0)
            call = lambda: clb.gemm(q, n, n, n, dA, dB, out, a_ld=n, b_ld=n, c_ld=n)  # noqa: E731
        elif op == "gemv":
            out = cla.empty(q, (n,), dt).fill(0)
            call = lambda: clb.gemv(q, n, n, dA, dx, out, a_ld=n)  # noqa: E731
        elif op == "dot":
            v1, v2 = dA.reshape(n * n), dB.reshape(n * n)
            out = cla.empty(q, (1, 1), dt).fill(0)  # pyclblast wants a matrix here
            call = lambda: clb.dot(q, n * n, v1, v2, out)  # noqa: E731
        else:  # CLBlast's out-of-place transpose (omatcopy) is not in pyclblast
            return None
        sync = lambda ev: ev.wait() if ev is not None else q.finish()  # noqa: E731
        sync(call())
        got = out.get().reshape(want.shape)
    except Exception:  # noqa: BLE001 - CLBlast cannot run this dtype/device: no number
        return None
    if _rel_error(got, want) > tol * max(1.0, np.sqrt(n)):
        raise RuntimeError(f"blas bench: {op} {dt.name} n={n}: CLBlast's result differs from "
                           f"NumPy's")
    return _median_time(call, sync, repeat)


def _variant_used(session: Any, op: str, dtype: str, n: int) -> str:
    from liftkit.blas.codelets import Kind

    kind = {"gemm": Kind("mm", dtype, "NN"), "gemv": Kind("gemv", dtype, "N"),
            "transpose": Kind("transpose", dtype), "dot": Kind("dot", dtype)}[op]
    sizes = {"M": n, "N": n, "K": n} if op == "gemm" else {"N": n * n} if op == "dot" else \
        {"M": n, "N": n}
    return str(session.choose(kind, sizes))


def print_table(rows: list[Row], out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="liftkit.blas rates (higher is better)")
    clb = any(r.clblast for r in rows)
    cols = ("op", "dtype", "n", "liftkit", "reference") + (("CLBlast",) if clb else ()) + (
        "ratio", "derivation")
    for col in cols:
        table.add_column(col, justify="left" if col in ("op", "dtype", "derivation") else "right")
    for r in rows:
        extra = (f"{r.clblast:.2f}" if r.clblast else "-",) if clb else ()
        table.add_row(r.op, r.dtype, str(r.n), f"{r.liftkit:.2f} {r.unit}",
                      f"{r.reference:.2f} ({r.reference_name})" if r.reference else "-", *extra,
                      f"{r.ratio:.3f}x" if r.ratio else "-", r.variant)
    Console(file=out, width=140).print(table)


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.resolve import CliError

    try:
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    except ValueError:
        raise CliError(f"--sizes: expected integers like 256,512, got {args.sizes!r}") from None
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise CliError(f"--ops: unknown {', '.join(bad)} (known: {', '.join(OPS)})")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    known = ("float32", "float64", "complex64", "complex128")
    bad = [d for d in dtypes if d not in known]
    if bad:
        raise CliError(f"--dtypes: unknown {', '.join(bad)} (known: {', '.join(known)})")
    import pyopencl as cl

    try:
        rows = run_bench(args.device, sizes, ops, dtypes, args.repeat,
                         log=lambda line: print(line, file=out, flush=True),
                         backend=getattr(args, "backend", "auto"))
    except cl.Error as err:  # a driver that cannot build or run: one line, its own words
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
        why = "; ".join(dict.fromkeys([lines[0].split(" - ")[0]] + [
            ln for ln in lines[1:] if "error" in ln.lower()][:2]))
        raise CliError(f"blas bench: the OpenCL device failed ({why})") from None
    print_table(rows, out)
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0
