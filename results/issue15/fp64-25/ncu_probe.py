"""One call each of cuBLAS's DGEMM NN at 1024 and of liftkit.blas's DGEMM at 1024 on given
variants, between cudaProfilerStart and Stop, for Nsight Compute (`ncu --profile-from-start off`).
Everything is built and run once before the profiled region, so only these launches are in it.

    ncu --profile-from-start off ... python3 ncu_probe.py LAYOUT:VARIANT ...
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    n = 1024
    s = Session("gpu", warn=False)
    forced: dict[str, object] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        forced.get(kind.layout) if kind.dtype == "float64" and kind.layout in forced
        else default_choose(kind, sizes))
    A, B = cp.random.standard_normal((n, n)), cp.random.standard_normal((n, n))
    C = cp.empty((n, n))

    def liftkit_call(layout: str, text: str):  # type: ignore[no-untyped-def]
        def call():  # type: ignore[no-untyped-def]
            forced.clear()
            forced[layout] = lookup_variant(Kind("mm", "float64", layout), text)
            s.forget_choices()
            return s.gemm(A, B, C, trans_a=layout[0] == "T", trans_b=layout[1] == "T")
        return call

    calls = [("cuBLAS DGEMM NN", lambda: cp.matmul(A, B, out=C))]
    calls += [(f"liftkit DGEMM {a}", liftkit_call(*a.split(":", 1))) for a in argv]
    for _, fn in calls:  # build and warm everything first
        r = fn()
        if hasattr(r, "result"):
            r.result()
    cp.cuda.Device().synchronize()
    rt = cp.cuda.runtime
    start, stop = (getattr(rt, "profilerStart", None), getattr(rt, "profilerStop", None))
    if start is None:  # older CuPy
        start, stop = cp.cuda.profiler.start, cp.cuda.profiler.stop
    start()
    for what, fn in calls:
        print(f"probe: {what}", flush=True)
        r = fn()
        if hasattr(r, "result"):
            r.result()
        cp.cuda.Device().synchronize()
    stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
