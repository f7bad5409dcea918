"""GEMV N (or T, --trans) derivations side by side on one device, per call (liftkit.blas with
the variant forced, operands on the device, y given), NumPy interleaved round by round (the
machine may be shared: medians over rounds; set OPENBLAS_NUM_THREADS=1 to compare with
single-thread NumPy). Results
checked against NumPy first.

    python benchmarks/blas_gemv_variants.py --sizes 1024,2048,4096 --dtypes float32,float64 \
        --variants "rows(w=16);row-blocks(r=4,w=16);group-rows(L=32,w=1)"
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np


def _batch(fn: Callable[[], Any], sync: Callable[[Any], Any], reps: int) -> float:
    """Seconds per call: `reps` calls back to back, then one wait."""
    sync(fn())
    t0 = time.perf_counter()
    last = None
    for _ in range(reps):
        last = fn()
    sync(last)
    return (time.perf_counter() - t0) / reps


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--sizes", default="1024,2048,4096")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--variants", default="rows(w=16);row-blocks(r=4,w=16);group-rows(L=32,w=1)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--trans", action="store_true", help="y = Aᵀx (GEMV T; NumPy: A.T @ x)")
    args = p.parse_args(argv)

    import pyopencl.array as cla

    from liftkit.blas import Kind, Session
    from liftkit.blas.codelets import lookup_variant

    s = Session(args.device, warn=False)
    variants = [v for v in args.variants.split(";") if v]
    lay = "T" if args.trans else "N"
    print(f"GEMV {lay} on {s.device.label}: ms per call, median over {args.rounds} rounds "
          f"(variant 'profile': the session's own choice)")
    for dt in args.dtypes.split(","):
        for n in map(int, args.sizes.split(",")):
            rng = np.random.default_rng(n)
            A = rng.uniform(-1, 1, (n, n)).astype(dt)
            x = rng.uniform(-1, 1, n).astype(dt)
            dA, dx = cla.to_device(s.queue, A), cla.to_device(s.queue, x)
            dy = cla.empty(s.queue, (n,), dt)
            op = A.T if args.trans else A
            want = op.astype(np.float64) @ x
            reps = max(3, min(50, int(2e7 // (n * n * A.itemsize))))
            times: dict[str, list[float]] = {v: [] for v in variants}
            ref: list[float] = []
            for r in range(args.rounds):
                ref.append(_batch(lambda: op @ x, lambda out: out, reps))
                for v in variants:
                    if v == "profile":
                        s.__dict__.pop("choose", None)  # the session's own choice
                    else:
                        var = lookup_variant(Kind("gemv", dt, lay), v)
                        s.choose = lambda kind, sizes, var=var: var  # type: ignore[method-assign]
                    if s.calls is not None:  # a call plan keeps its kind's kernel
                        s.calls.clear()
                    call = lambda: s.gemv(dA, dx, dy, trans=args.trans)  # noqa: E731
                    if r == 0:
                        got = call().result().get()
                        tol = 1e-3 if dt == "float32" else 1e-9
                        if not np.allclose(got, want, rtol=tol, atol=tol * np.sqrt(n)):
                            raise SystemExit(f"{v} {dt} n={n}: wrong result")
                    times[v].append(_batch(call, lambda f: f.result(), reps))
            t_np = statistics.median(ref)
            print(f"{dt} n={n}: NumPy {t_np * 1e3:.3f} ms")
            for v in variants:
                t = statistics.median(times[v])
                print(f"  {v:32s} {t * 1e3:8.3f} ms  {t_np / t:5.2f}x NumPy")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
