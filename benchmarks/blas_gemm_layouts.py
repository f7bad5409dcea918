"""liftkit.blas GEMM per op flag pair (NN, NT, TN and, for complex types, CN) beside the vendor
BLAS on the same product in the same run: NumPy's BLAS on the CPU device, cuBLAS through CuPy on
a GPU. Operands live on the device (pyopencl arrays), as in `liftkit blas bench`; each result is
checked before timing; medians of --repeat runs. Untuned default derivations unless the device
has a profile.

    python benchmarks/blas_gemm_layouts.py --device cpu --size 1024 --dtypes float64,complex64
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np

FLAGS = ((False, False), (False, True), (True, False), ("C", False))


def _median(f: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _op(x: Any, flag: Any) -> Any:
    return x if flag is False else x.T if flag is True else x.conj().T


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, gpu or part of a device name")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--dtypes", default="float32,float64,complex64,complex128")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()

    import pyopencl.array as cla

    from liftkit.backends.opencl.devices import select_device
    from liftkit.blas import Session

    dev = select_device(args.device)
    gpu = "gpu" in str(getattr(dev, "kind", args.device)).lower() or args.device == "gpu"
    s = Session(dev)
    xp: Any = np
    if gpu:
        import cupy as xp  # type: ignore[no-redef]
    n, g = args.size, np.random.default_rng(0)
    print(f"{'dtype':<11} {'op':<4} {'liftkit':>9} {'vendor':>9}  ratio  derivation")
    for dt in args.dtypes.split(","):
        cplx = dt.startswith("complex")
        A, B = (g.uniform(-1, 1, (n, n)) for _ in range(2))
        if cplx:
            A, B = A + 1j * g.uniform(-1, 1, (n, n)), B - 1j * g.uniform(-1, 1, (n, n))
        A, B = A.astype(dt), B.astype(dt)
        dA, dB, dC = cla.to_device(s.queue, A), cla.to_device(s.queue, B), cla.empty(s.queue, (n, n), dt)
        xA, xB = xp.asarray(A), xp.asarray(B)
        flops = (8 if cplx else 2) * n ** 3
        for ta, tb in FLAGS:
            if ta == "C" and not cplx:
                continue
            want = _op(A.astype(np.complex128 if cplx else np.float64), ta) @ _op(B, tb)
            s.gemm(dA, dB, dC, trans_a=ta, trans_b=tb).result()
            err = float(np.abs(dC.get() - want).max() / np.abs(want).max())
            if err > (1e-4 if dt in ("float32", "complex64") else 1e-10):
                raise SystemExit(f"{dt} {ta}{tb}: liftkit's product differs (relative {err:.1e})")
            t_lk = _median(lambda: s.gemm(dA, dB, dC, trans_a=ta, trans_b=tb).result(), args.repeat)

            def ref() -> None:
                _op(xA, ta) @ _op(xB, tb)
                if gpu:
                    xp.cuda.Device().synchronize()

            ref()
            t_ref = _median(ref, args.repeat)
            letters = "".join("N" if f is False else "T" if f is True else "C" for f in (ta, tb))
            kind_sizes = {"M": n, "N": n, "K": n}
            print(f"{dt:<11} {letters:<4} {flops / t_lk / 1e9:9.1f} {flops / t_ref / 1e9:9.1f} "
                  f"{t_ref / t_lk:6.2f}  {_variant(s, dt, letters, kind_sizes)}", flush=True)
    return 0


def _variant(s: Any, dt: str, letters: str, sizes: dict[str, int]) -> str:
    from liftkit.blas.codelets import Kind

    return str(s.choose(Kind("mm", dt, letters), sizes))


if __name__ == "__main__":
    raise SystemExit(main())
