"""GEMV N derivations on the CPU device side by side, the call plans cleared per variant (a
plan keeps its kind's kernel: forcing `s.choose` alone would time the first variant again).
Each variant checked against float64 first; then rounds, variants in turn: 9 calls back to
back and one wait (per-call µs) and the kernels' own durations (OpenCL profiling, median of
the 9). Medians and first quartiles over rounds (the
neighbours' load makes the times bimodal: one core or two).

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu23/variants.py 1024 float32 7 \
        "row-blocks(r=4,w=16);row-blocks(r=8,w=16)"
"""
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

from liftkit.blas import Kind, Session
from liftkit.blas.codelets import lookup_variant

n = int(sys.argv[1])
dt = np.dtype(sys.argv[2])
rounds = int(sys.argv[3])
names = [v for v in sys.argv[4].split(";") if v]
s = Session("cpu", warn=False)
q = s.queue
rng = np.random.default_rng(n)
A = rng.uniform(-1, 1, (n, n)).astype(dt)
x = rng.uniform(-1, 1, n).astype(dt)
dA, dx = cla.to_device(q, A), cla.to_device(q, x)
dy = cla.empty(q, (n,), dt)
want = A.astype(np.float64) @ x
tol = 1e-4 if dt == np.float32 else 1e-12


def use(name):
    var = lookup_variant(Kind("gemv", dt.name, "N"), name)
    s.choose = lambda kind, sizes, var=var: var
    s.calls.clear()
    dy.fill(np.nan)
    s.gemv(dA, dx, dy).result()  # general path, then the plan
    got = s.gemv(dA, dx, dy).result().get()
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    if not err < tol:
        raise SystemExit(f"{name}: rel. error {err:.2e}")


call, kern = {v: [] for v in names}, {v: [] for v in names}
for v in names:
    use(v)
for r in range(rounds):
    for v in names:
        use(v)
        t0 = time.perf_counter()
        fs = [s.gemv(dA, dx, dy) for _ in range(9)]
        fs[-1].result()
        call[v].append((time.perf_counter() - t0) / 9)
        kern[v].append(statistics.median((f.event.profile.end - f.event.profile.start) * 1e-9
                                         for f in fs))


def q(v, f):  # quantile f of a list
    return sorted(v)[int(f * (len(v) - 1))] * 1e6


for v in names:
    print(f"{dt.name} {n} {v:24s} call median {q(call[v], .5):6.1f} p25 {q(call[v], .25):6.1f} µs"
          f"  kernel median {q(kern[v], .5):6.1f} p25 {q(kern[v], .25):6.1f} min {q(kern[v], 0):6.1f}")
