"""GEMV/transpose on the CPU device per call, call plans on vs off (the general path), alternating
rounds in one process; NumPy (default threads) beside: medians of per-round medians."""
import time, warnings, statistics, sys
import numpy as np
import pyopencl.array as cla
warnings.simplefilter("ignore")
from liftkit.blas import Session
from liftkit.blas.calls import CallPlans
s = Session("cpu", warn=False)
q = s.queue
plans = s.calls
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
for op, n, dt in [("gemv", 1024, np.float32), ("gemv", 2048, np.float32), ("gemv", 1024, np.float64), ("gemv", 2048, np.float64), ("transpose", 1024, np.float32)]:
    rng = np.random.default_rng(0)
    An = rng.uniform(-1, 1, (n, n)).astype(dt); xn = rng.uniform(-1, 1, n).astype(dt)
    A = cla.to_device(q, An); x = cla.to_device(q, xn)
    y = cla.empty(q, n, dt) if op == "gemv" else cla.empty(q, (n, n), dt)
    call = (lambda: s.gemv(A, x, y)) if op == "gemv" else (lambda: s.transpose(A, y))
    ref = (lambda: An @ xn) if op == "gemv" else (lambda: An.T.copy())
    res = {"plans": [], "general": [], "numpy": []}
    for mode in ("general", "plans"):
        s.calls = plans if mode == "plans" else None
        for _ in range(5): call().result()
        want = An.astype(np.float64) @ xn if op == "gemv" else An.T
        assert np.allclose(y.get(), want, rtol=1e-4, atol=1e-3), (op, mode)
    for r in range(rounds):
        for mode in ("general", "plans"):
            s.calls = plans if mode == "plans" else None
            t0 = time.perf_counter()
            for _ in range(20): f = call()
            f.result(); res[mode].append((time.perf_counter() - t0) / 20)
        t0 = time.perf_counter()
        for _ in range(20): ref()
        res["numpy"].append((time.perf_counter() - t0) / 20)
    s.calls = plans
    med = {k: statistics.median(v) * 1e6 for k, v in res.items()}
    print(f"{op:9s} {dt.__name__:7s} {n:5d}  general {med['general']:7.1f} us  plans {med['plans']:7.1f} us  "
          f"NumPy {med['numpy']:7.1f} us  plans/general {med['general']/med['plans']:.2f}x  vs NumPy {med['numpy']/med['plans']:.2f}x", flush=True)
