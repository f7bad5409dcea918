"""One call each of cuBLAS's and liftkit.blas's DGEMM/ZGEMM at 1024 between cudaProfilerStart
and Stop, for Nsight Compute (`ncu --profile-from-start off`): cuBLAS DGEMM NN/TN/NT, liftkit
DGEMM NN (the shipped kernel, then the m16n8k16 read-ahead kernel VARIANT), cuBLAS ZGEMM NN,
liftkit ZGEMM NN/NT/TN (their packing kernels and the real kernel). Everything is built and run
once before the profiled region, so only these launches are in it.

    ncu --profile-from-start off --clock-control none --section ... python3 ncu_probe.py [VARIANT]
"""

from __future__ import annotations

import sys

import numpy as np

VARIANT = "mma(tm=128,tn=64,tk=16,warps=8,staged=4,lines=1,ik=16,ahead=2)"


def main(argv: list[str]) -> int:
    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    n = 1024
    s = Session("gpu", warn=False)
    k16 = lookup_variant(Kind("mm", "float64", "NN"), argv[0] if argv else VARIANT)
    default_choose = s.choose
    force = {"on": False}
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        k16 if force["on"] and (kind.dtype, kind.layout) == ("float64", "NN")
        else default_choose(kind, sizes))
    rng = np.random.default_rng(1)
    A, B = (cp.asarray(rng.standard_normal((n, n))) for _ in range(2))
    Z, W = (cp.asarray(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
            for _ in range(2))
    C, Cz = cp.empty((n, n)), cp.empty((n, n), cp.complex128)

    def calls() -> list[tuple[str, object]]:
        def k16_call() -> object:
            force["on"] = True
            s.forget_choices()
            f = s.gemm(A, B, C)
            force["on"] = False
            s.forget_choices()
            return f

        return [("cuBLAS DGEMM NN", lambda: cp.matmul(A, B, out=C)),
                ("cuBLAS DGEMM TN", lambda: cp.matmul(A.T, B, out=C)),
                ("cuBLAS DGEMM NT", lambda: cp.matmul(A, B.T, out=C)),
                ("liftkit DGEMM NN shipped", lambda: s.gemm(A, B, C)),
                (f"liftkit DGEMM NN {k16}", k16_call),
                ("cuBLAS ZGEMM NN", lambda: cp.matmul(Z, W, out=Cz)),
                ("liftkit ZGEMM NN", lambda: s.gemm(Z, W, Cz)),
                ("liftkit ZGEMM NT", lambda: s.gemm(Z, W, Cz, trans_b=True)),
                ("liftkit ZGEMM TN", lambda: s.gemm(Z, W, Cz, trans_a=True))]

    for _, fn in calls():  # build and warm everything first
        r = fn()
        if hasattr(r, "result"):
            r.result()
    cp.cuda.Device().synchronize()
    rt = cp.cuda.runtime
    start, stop = (getattr(rt, "profilerStart", None), getattr(rt, "profilerStop", None))
    if start is None:  # older CuPy
        start, stop = cp.cuda.profiler.start, cp.cuda.profiler.stop
    start()
    for what, fn in calls():
        print(f"probe: {what}", flush=True)
        r = fn()
        if hasattr(r, "result"):
            r.result()
        cp.cuda.Device().synchronize()
    stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
