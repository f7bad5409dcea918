"""The planned GEMV call with the kernel's work-group size forced (the plan's launch
configuration replaced; the derivation leaves it to the runtime: local size None), per call
(9 calls back to back, one wait) and the first kernel of each batch (it runs while the host
thread is still enqueuing), alternating over rounds. Results checked against float64.

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu23/local_sizes.py 1024 float32 200 [r=4]
"""
import dataclasses
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

from liftkit.blas import Kind, Session
from liftkit.blas.codelets import lookup_variant

n, dt, rounds = int(sys.argv[1]), np.dtype(sys.argv[2]), int(sys.argv[3])
variant = sys.argv[4] if len(sys.argv) > 4 else None
s = Session("cpu", warn=False)
if variant:
    var = lookup_variant(Kind("gemv", dt.name, "N"), variant)
    s.choose = lambda kind, sizes: var
rng = np.random.default_rng(n)
A = rng.uniform(-1, 1, (n, n)).astype(dt)
x = rng.uniform(-1, 1, n).astype(dt)
dA, dx = cla.to_device(s.queue, A), cla.to_device(s.queue, x)
dy = cla.empty(s.queue, (n,), dt)
want = A.astype(np.float64) @ x
s.gemv(dA, dx, dy).result()
key, (plan, out) = next((k, v) for k, v in s.calls._plans.items() if v)
ln = plan.launches[0]
glob = ln.config[0]
plans = {}
for loc in (None, 4, 8, 16, 32, 64, 128):
    if loc is not None and glob[0] % loc:
        continue
    l2 = dataclasses.replace(ln, config=(glob, None if loc is None else (loc,)))
    plans[loc] = (dataclasses.replace(plan, launches=(l2,)), out)
call, first = {k: [] for k in plans}, {k: [] for k in plans}
for loc, p in plans.items():
    s.calls._plans[key] = p
    dy.fill(np.nan)
    got = s.gemv(dA, dx, dy).result().get()
    assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-4, loc
for r in range(rounds):
    for loc, p in plans.items():
        s.calls._plans[key] = p
        s.gemv(dA, dx, dy).result()
        t0 = time.perf_counter()
        fs = [s.gemv(dA, dx, dy) for _ in range(9)]
        fs[-1].result()
        call[loc].append((time.perf_counter() - t0) / 9 * 1e6)
        e = fs[0].event.profile
        first[loc].append((e.end - e.start) * 1e-3)
print(f"{dt.name} {n} {variant or 'profile'}: global {glob[0]}")
for loc in plans:
    print(f"  local {str(loc):5s} call median {statistics.median(call[loc]):6.1f} µs  first kernel "
          f"median {statistics.median(first[loc]):6.1f} µs")
