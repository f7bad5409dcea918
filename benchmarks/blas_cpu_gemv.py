"""Where GEMV's time goes on the CPU device: NumPy's BLAS beside liftkit.blas per call (operands
on the device, y given), the derived kernel alone (OpenCL profiling), and an empty kernel's
launch-and-wait (the floor any one-launch call pays). Results checked first.

    python benchmarks/blas_cpu_gemv.py --sizes 512,1024,2048,4096
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np


def _median(fn: Callable[[], Any], reps: int) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="512,1024,2048,4096")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args(argv)

    import pyopencl as cl
    import pyopencl.array as cla

    from liftkit.blas import Kind, Session

    s = Session("cpu", warn=False)
    q = s.queue
    empty = cl.Program(s.context, "kernel void nop(global float* x) { }").build().nop
    buf = cl.Buffer(s.context, cl.mem_flags.READ_WRITE, 4)
    empty.set_arg(0, buf)

    def launch_empty() -> None:
        cl.enqueue_nd_range_kernel(q, empty, (1,), None).wait()

    t_launch = _median(launch_empty, args.reps)
    dt = np.dtype(args.dtype)
    print(f"liftkit.blas on {s.device.label}; empty kernel launch + wait: {t_launch * 1e3:.3f} ms")
    print(f"{'n':>6} {'NumPy ms':>9} {'liftkit ms':>10} {'kernel ms':>9} {'host+launch ms':>14} "
          f"{'ratio':>6}  derivation")
    for n in map(int, args.sizes.split(",")):
        rng = np.random.default_rng(n)
        A = rng.uniform(-1, 1, (n, n)).astype(dt)
        x = rng.uniform(-1, 1, n).astype(dt)
        dA, dx = cla.to_device(q, A), cla.to_device(q, x)
        dy = cla.empty(q, (n,), dt)
        got = s.gemv(dA, dx, dy).result().get()
        want = A.astype(np.float64) @ x
        assert np.allclose(got, want, rtol=1e-3, atol=1e-3 * np.sqrt(n)), "wrong result"
        t_np = _median(lambda: A @ x, args.reps)
        t_lk = _median(lambda: s.gemv(dA, dx, dy).result(), args.reps)
        kernel = []
        for _ in range(args.reps):
            f = s.gemv(dA, dx, dy)
            f.result()
            ev = f.event
            kernel.append((ev.profile.end - ev.profile.start) * 1e-9)
        t_k = statistics.median(kernel)
        v = s.choose(Kind("gemv", dt.name, "N"), {"M": n, "N": n})
        print(f"{n:6d} {t_np * 1e3:9.3f} {t_lk * 1e3:10.3f} {t_k * 1e3:9.3f} "
              f"{(t_lk - t_k) * 1e3:14.3f} {t_np / t_lk:5.2f}x  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
