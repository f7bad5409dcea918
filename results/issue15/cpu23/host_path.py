"""The host path of a planned GEMV call on the CPU device, isolated: enqueue N calls without
waiting (pyopencl operands, y given, as `liftkit blas bench` calls), per-call µs of Python;
beside it pyopencl's bare enqueue of the same kernel (the floor), and the kernel alone
(OpenCL profiling). Checked against float64 first.

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu23/host_path.py [n] [dtype] [rounds]
"""
import statistics
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from liftkit.blas import Session

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
dt = np.dtype(sys.argv[2] if len(sys.argv) > 2 else "float32")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
s = Session("cpu", warn=False)
q = s.queue
rng = np.random.default_rng(n)
A = rng.uniform(-1, 1, (n, n)).astype(dt)
x = rng.uniform(-1, 1, n).astype(dt)
dA, dx = cla.to_device(q, A), cla.to_device(q, x)
dy = cla.empty(q, (n,), dt).fill(np.nan)
got = s.gemv(dA, dx, dy).result().get()
got = s.gemv(dA, dx, dy).result().get()  # the planned path
want = A.astype(np.float64) @ x
err = np.max(np.abs(got - want)) / np.max(np.abs(want))
assert err < (1e-4 if dt == np.float32 else 1e-12), err
plan = next(v for v in s.calls._plans.values() if v)
ln = plan[0].launches[0]
N = 200


def host_calls():
    t0 = time.perf_counter()
    for _ in range(N):
        f = s.gemv(dA, dx, dy)
    t1 = time.perf_counter()
    f.result()
    return (t1 - t0) / N


def held_calls():
    """The queue held behind a user event: the calls' host time without kernels beside it."""
    gate = cl.UserEvent(s.context)
    cl.enqueue_marker(q, wait_for=[gate])
    t0 = time.perf_counter()
    for _ in range(N):
        f = s.gemv(dA, dx, dy)
    t1 = time.perf_counter()
    gate.set_status(cl.command_execution_status.COMPLETE)
    f.result()
    return (t1 - t0) / N


def bare():
    t0 = time.perf_counter()
    for _ in range(N):
        ev = cl.enqueue_nd_range_kernel(q, ln.handle, *ln.config)
    t1 = time.perf_counter()
    ev.wait()
    return (t1 - t0) / N


def per_call():
    t0 = time.perf_counter()
    for _ in range(9):
        f = s.gemv(dA, dx, dy)
    f.result()
    return (time.perf_counter() - t0) / 9


def kernel():
    ts = []
    for _ in range(9):
        f = s.gemv(dA, dx, dy)
        f.result()
        ev = f.event
        ts.append((ev.profile.end - ev.profile.start) * 1e-9)
    return statistics.median(ts)


res = {k: [] for k in ("held", "host", "bare", "call", "kernel")}
for _ in range(rounds):
    res["held"].append(held_calls())
    res["host"].append(host_calls())
    res["bare"].append(bare())
    res["call"].append(statistics.median(per_call() for _ in range(5)))
    res["kernel"].append(kernel())
print(f"{dt.name} {n}: err {err:.1e} " + "  ".join(
    f"{k} {statistics.median(v) * 1e6:.1f} µs" for k, v in res.items()), ln.name, ln.config)
