"""One side of a CPU-device round (issue 15's CPU targets): `numpy` (NumPy alone in its process,
its default threads: A @ B, A @ x, A.T.copy()) or `liftkit` (a Session on the CPU device with
the shipped CPU profile, operands and outputs resident as pyopencl arrays; run it with
OPENBLAS_NUM_THREADS=1 so that no spinning OpenBLAS thread shares the cores, session 22's
finding). Every result is checked first (GEMM/GEMV against a float64 product, transpose
exactly), then 0.1 s of calls warm up; per case `batches` batches of `calls` back to back and
one wait. Prints a JSON line per case: {op, dtype, n, side, err, us: [per-call µs per batch],
variant}.

    python results/issue15/cpu25/side.py numpy|liftkit OPS SIZES DTYPES [batches]
    (OPS: gemm,gemv,transpose; SIZES like gemm=1024;gemv=1024,2048;transpose=1024,2048)
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from typing import Any, Callable

import numpy as np

CALLS = {"gemm": 3, "gemv": 9, "transpose": 9}  # calls per batch (a GEMM 1024 takes ~10 ms)
TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-12}


def _sizes(spec: str) -> dict[str, list[int]]:
    out = {}
    for part in spec.split(";"):
        op, _, ns = part.partition("=")
        out[op] = [int(v) for v in ns.split(",") if v]
    return out


def _case(side: str, s: Any, op: str, dt: np.dtype, n: int
          ) -> tuple[Callable[[], Any], Callable[[Any], Any], Any, str]:
    """(call, wait-and-read, the exact or float64 answer, the derivation liftkit runs)."""
    rng = np.random.default_rng(n)
    A = rng.uniform(-1, 1, (n, n)).astype(dt)
    if op == "gemm":
        B = rng.uniform(-1, 1, (n, n)).astype(dt)
        want = A.astype(np.float64) @ B.astype(np.float64)
    elif op == "gemv":
        x = rng.uniform(-1, 1, n).astype(dt)
        want = A.astype(np.float64) @ x.astype(np.float64)
    else:
        want = A.T.copy()
    if side == "numpy":
        call = {"gemm": lambda: A @ B, "gemv": lambda: A @ x, "transpose": lambda: A.T.copy()}[op]
        return call, (lambda r: r), want, ""
    import pyopencl.array as cla

    from liftkit.blas import Kind

    q = s.queue
    dA = cla.to_device(q, A)
    if op == "gemm":
        dB, dC = cla.to_device(q, B), cla.empty(q, (n, n), dt).fill(np.nan)
        call = lambda: s.gemm(dA, dB, dC)  # noqa: E731
        variant = str(s.plan_gemm(A.shape, B.shape, dt).variant)
    elif op == "gemv":
        dx, dy = cla.to_device(q, x), cla.empty(q, (n,), dt).fill(np.nan)
        call = lambda: s.gemv(dA, dx, dy)  # noqa: E731
        variant = str(s.choose(Kind("gemv", dt.name, "N"), {"M": n, "N": n}))
    else:
        dT = cla.empty(q, (n, n), dt).fill(np.nan)
        call = lambda: s.transpose(dA, dT)  # noqa: E731
        variant = str(s.choose(Kind("transpose", dt.name), {"M": n, "N": n}))
    return call, (lambda f: f.result()), want, variant


def main(argv: list[str]) -> int:
    side, ops, sizes = argv[0], argv[1].split(","), _sizes(argv[2])
    dtypes = [np.dtype(d) for d in argv[3].split(",")]
    batches = int(argv[4]) if len(argv) > 4 else 15
    s = None
    # pyopencl's own fill kernel prints its build log otherwise (not liftkit's kernels)
    warnings.filterwarnings("ignore", message="Non-empty compiler output")
    if side == "liftkit":
        from liftkit.blas import Session

        s = Session("cpu", warn=False)
        from liftkit.blas.profile import SHIPPED, file_name

        fp = s.profile.fingerprint if s.profile is not None else None
        shipped = fp is not None and (SHIPPED / file_name(fp)).is_file()
        print(json.dumps({"side": side, "device": s.device.label, "profile": fp,
                          "shipped": shipped}), file=sys.stderr)
    for op in ops:
        for dt in dtypes:
            for n in sizes.get(op, []):
                call, get, want, variant = _case(side, s, op, dt, n)
                got = get(call())
                got = got.get() if hasattr(got, "get") else np.asarray(got)
                if op == "transpose":
                    err = float(not np.array_equal(got, want))
                else:
                    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                if not err <= (0.0 if op == "transpose" else TOL[dt]):
                    print(f"{side} {op} {dt} {n}: WRONG (rel. error {err:.2e})", file=sys.stderr)
                    return 1
                t_end = time.perf_counter() + 0.1  # warm: the runtime's threads, caches, clocks
                while time.perf_counter() < t_end:
                    get(call())
                k, us = CALLS[op], []
                for _ in range(batches):
                    t0 = time.perf_counter()
                    for _ in range(k):
                        r = call()
                    get(r)
                    us.append((time.perf_counter() - t0) / k * 1e6)
                print(json.dumps({"op": op, "dtype": dt.name, "n": n, "side": side, "err": err,
                                  "us": us, "variant": variant}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
