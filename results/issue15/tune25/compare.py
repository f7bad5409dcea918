"""A profile tuned from nothing beside cuBLAS and the shipped profile (issue 15; session 24's
results/issue15/tune24/compare.py, session 25: `--device`, so that a dry run on the CPU device
with a NumPy stand-in for CuPy walks the same code; the GPU is the default).

1. Each class's best tuned entry (the tuner's own kernel timing at the class's size) beside
   cuBLAS (CuPy, TF32 off) timed now at the same size.
2. Per call at --sizes (SGEMM and DGEMM NN): liftkit.blas with the tuned profile, with the
   shipped one, and cuBLAS, every result checked against a float64 product first, timed in
   alternating rounds (CUDA events around back-to-back calls, `benchmarks/blas_cuda._time`).

    python results/issue15/tune25/compare.py --tuned T.json --shipped S.json --sizes 1024,4096
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from blas_cuda import _err, _rand_gpu, _time  # noqa: E402


def _repeat(cp: Any, fn: Any) -> tuple[int, int]:
    fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    fn()
    cp.cuda.Device().synchronize()
    est = time.perf_counter() - t0
    return max(3, min(50, int(0.02 / max(est, 1e-6)))), (5 if est < 5e-3 else 3)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tuned", required=True)
    p.add_argument("--shipped", required=True)
    p.add_argument("--sizes", default="1024,4096")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("--device", default="gpu", help="the sessions' device (gpu; cpu: dry run)")
    args = p.parse_args()

    import cupy as cp

    from liftkit.blas import Kind, Profile, Session
    from liftkit.blas.tune import CLASSES, SIZES

    tuned, shipped = Profile.load(args.tuned), Profile.load(args.shipped)
    out: dict[str, Any] = {"classes": [], "calls": []}
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; tuned: {args.tuned}")
    print("1. each class's best tuned entry (kernel alone, as the tuner timed it) vs cuBLAS now")
    for dt in ("float32", "float64"):
        kind = Kind("mm", dt, "NN")
        for cls in CLASSES:
            ranked = tuned.ranked(kind, cls)
            if not ranked:
                continue
            n = SIZES[tuned.device_type]["mm"][cls]
            A, B = _rand_gpu(cp, (n, n), np.dtype(dt)), _rand_gpu(cp, (n, n), np.dtype(dt))
            C = cp.empty((n, n), dt)
            call = lambda: cp.matmul(A, B, out=C)  # noqa: E731
            rep, bat = _repeat(cp, call)
            ref = 2.0 * n ** 3 / _time(cp, call, rep, bat) / 1e9
            best = ranked[0]
            row = {"kind": str(kind), "class": cls, "n": n, "variant": str(best.variant),
                   "tuned": best.rate, "cuBLAS": ref, "ratio": best.rate / ref,
                   "entries": len(ranked), "guarded": [str(e.variant) for e in
                                                      tuned.guarded(kind, cls)]}
            out["classes"].append(row)
            print(f"  {dt:8s} {cls:6s} {n:5d}  tuned {best.rate:9.1f}  cuBLAS {ref:9.1f} GFLOP/s  "
                  f"{best.rate / ref:5.2f}x  ({len(ranked)} variants) [{best.variant}]", flush=True)
            del A, B, C
            cp.get_default_memory_pool().free_all_blocks()

    print(f"2. per call, tuned vs shipped profile vs cuBLAS, {args.rounds} alternating rounds")
    sessions = {"tuned": Session(args.device, profile=tuned),
                "shipped": Session(args.device, profile=shipped)}
    for dt in ("float32", "float64"):
        for n in (int(x) for x in args.sizes.split(",") if x):
            d = np.dtype(dt)
            A, B = _rand_gpu(cp, (n, n), d), _rand_gpu(cp, (n, n), d)
            want = A.astype(cp.float64) @ B.astype(cp.float64)
            tol = 1e-4 if dt == "float32" else 1e-11
            C = cp.full((n, n), np.nan, d)
            calls, variants, errs = {}, {}, {}
            for name, s in sessions.items():
                C.fill(np.nan)
                s.gemm(A, B, C).result()
                errs[name] = _err(cp, C, want)
                variants[name] = str(s.plan_gemm(A.shape, B.shape, d).variant)
                calls[name] = (lambda s=s: s.gemm(A, B, C))
            cp.matmul(A, B, out=C)
            errs["cuBLAS"] = _err(cp, C, want)
            calls["cuBLAS"] = lambda: cp.matmul(A, B, out=C)
            del want
            bad = [k for k, e in errs.items() if e > max(10 * tol, 10 * errs["cuBLAS"])]
            if bad:
                print(f"  {dt} {n}: WRONG {bad} {errs}", flush=True)
                continue
            rep, bat = _repeat(cp, calls["cuBLAS"])
            times: dict[str, list[float]] = {k: [] for k in calls}
            for _ in range(args.rounds):
                for k, fn in calls.items():
                    times[k].append(_time(cp, fn, rep, bat))
            flops = 2.0 * n ** 3
            rate = {k: flops / statistics.median(v) / 1e9 for k, v in times.items()}
            row = {"dtype": dt, "n": n, "rates": rate, "variants": variants, "errors": errs,
                   "tuned/shipped": rate["tuned"] / rate["shipped"],
                   "tuned/cuBLAS": rate["tuned"] / rate["cuBLAS"],
                   "shipped/cuBLAS": rate["shipped"] / rate["cuBLAS"],
                   "rounds": {k: [flops / t / 1e9 for t in v] for k, v in times.items()}}
            out["calls"].append(row)
            print(f"  {dt:8s} {n:5d}  tuned {rate['tuned']:9.1f}  shipped {rate['shipped']:9.1f}  "
                  f"cuBLAS {rate['cuBLAS']:9.1f} GFLOP/s  tuned/shipped "
                  f"{row['tuned/shipped']:5.3f}  tuned/cuBLAS {row['tuned/cuBLAS']:5.3f}  "
                  f"shipped/cuBLAS {row['shipped/cuBLAS']:5.3f}", flush=True)
            print(f"      tuned [{variants['tuned']}]  shipped [{variants['shipped']}]  "
                  f"rounds {[[round(x) for x in v] for v in row['rounds'].values()]}", flush=True)
            del A, B, C
            cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
