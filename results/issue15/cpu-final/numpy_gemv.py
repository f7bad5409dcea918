"""NumPy's A @ x alone in its own process (no OpenCL runtime threads beside OpenBLAS's):
per-call µs, median of batches, as `liftkit blas bench` times (calls back to back).

    python results/issue15/cpu-final/numpy_gemv.py OUT.json [sizes]
"""
import json
import statistics
import sys
import time

import numpy as np

rows = []
for n in map(int, (sys.argv[2] if len(sys.argv) > 2 else "1024,2048").split(",")):
    for dt in ("float32", "float64"):
        rng = np.random.default_rng(n)
        A = rng.uniform(-1, 1, (n, n)).astype(dt)
        x = rng.uniform(-1, 1, n).astype(dt)
        A @ x
        batches = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(9):
                A @ x
            batches.append((time.perf_counter() - t0) / 9)
        rows.append({"dtype": dt, "n": n, "seconds": statistics.median(batches)})
json.dump(rows, open(sys.argv[1], "w"), indent=1)
