"""One side of a GEMV N round on the CPU: `numpy` (A @ x, NumPy's default threads, alone in
its process) or `liftkit` (session.gemv on pyopencl arrays, y given, the session's own
derivation; run it with OPENBLAS_NUM_THREADS=1 so no spinning OpenBLAS thread shares the
cores). Results checked against float64 first, then 0.1 s of calls to warm up. Per size and dtype: `batches` batches of 9
calls back to back and one wait; prints one JSON line {dtype, n, side, us: [per-call µs per
batch]}.

    python results/issue15/cpu23/side.py numpy|liftkit [sizes] [dtypes] [batches]
"""
import json
import sys
import time

import numpy as np

side = sys.argv[1]
sizes = [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "1024,2048").split(",")]
dtypes = (sys.argv[3] if len(sys.argv) > 3 else "float32,float64").split(",")
batches = int(sys.argv[4]) if len(sys.argv) > 4 else 25
if side == "liftkit":
    import pyopencl.array as cla

    from liftkit.blas import Session

    s = Session("cpu", warn=False)
for dt in map(np.dtype, dtypes):
    for n in sizes:
        rng = np.random.default_rng(n)
        A = rng.uniform(-1, 1, (n, n)).astype(dt)
        x = rng.uniform(-1, 1, n).astype(dt)
        want = A.astype(np.float64) @ x.astype(np.float64)
        if side == "numpy":
            call, get = (lambda: A @ x), (lambda r: r)
        else:
            dA, dx = cla.to_device(s.queue, A), cla.to_device(s.queue, x)
            dy = cla.empty(s.queue, (n,), dt).fill(np.nan)
            call, get = (lambda: s.gemv(dA, dx, dy)), (lambda f: f.result())
        got = get(call())
        got = got.get() if hasattr(got, "get") else got
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        if not err < (1e-4 if dt == np.float32 else 1e-12):
            raise SystemExit(f"{side} {dt} {n}: rel. error {err:.2e}")
        t_end = time.perf_counter() + 0.1  # warm: the runtime's threads, caches, clocks
        while time.perf_counter() < t_end:
            get(call())
        us = []
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(9):
                r = call()
            get(r)
            us.append((time.perf_counter() - t0) / 9 * 1e6)
        print(json.dumps({"dtype": dt.name, "n": n, "side": side, "err": err, "us": us}))
