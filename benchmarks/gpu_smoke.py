"""Performance smoke test of the code generator on a GPU: hand-chosen low-level scal, asum, dot
(128M floats) and gemv (8192 × 16384) against cuBLAS (through CuPy) and the OpenCL copy
bandwidth, all measured in the same run. Prints a table; details go to $OUT/gpu_smoke.json.

    python benchmarks/gpu_smoke.py [--device gpu] [--n 134217728] [--repeat 20]

Method: every result is checked against a float64 NumPy reference before it is timed; device
times come from profiling events (OpenCL) or CUDA events (CuPy); medians are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from liftkit.backends.opencl import OpenCLRunner
from liftkit.bench.ceilings import opencl_copy_gbs
from liftkit.bench.timing import cupy_times
from liftkit.codegen import compile_program
from liftkit.programs import PROGRAMS


def cupy_time(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of fn between CUDA events."""
    return statistics.median(cupy_times(fn, repeat))


def cublas_cases(inputs: dict[str, list[Any]], repeat: int) -> dict[str, float]:
    """Median seconds of cuBLAS for each case (CuPy's cublas wrappers)."""
    import cupy as cp
    from cupy import cublas

    out: dict[str, float] = {}
    a, x = inputs["scal"]
    xd = cp.asarray(x)
    out["scal"] = cupy_time(lambda: cublas.scal(a, xd), repeat)
    xd = cp.asarray(inputs["asum"][0])
    out["asum"] = cupy_time(lambda: cublas.asum(xd), repeat)
    xd, yd = (cp.asarray(v) for v in inputs["dot"])
    out["dot"] = cupy_time(lambda: cublas.dot(xd, yd), repeat)
    A, xv, yv, alpha, beta = inputs["gemv"]
    Ad, xd, yd = cp.asarray(A), cp.asarray(xv), cp.asarray(yv)
    out["gemv"] = cupy_time(lambda: cublas.gemv("N", alpha, Ad, xd, beta, yd.copy()), repeat)
    n = x.nbytes
    src, dst = cp.empty(n // 4, cp.float32), cp.empty(n // 4, cp.float32)
    out["copy_gbs"] = 2 * n / cupy_time(lambda: cp.copyto(dst, src), repeat) / 1e9
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--n", type=int, default=1 << 27, help="vector length (floats)")
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-cublas", action="store_true")
    ap.add_argument("--no-sweep", dest="sweep", action="store_false",
                    help="skip the asum/dot variant sweep")
    ap.add_argument("--tuned", metavar="DB", help="time the best derivations `liftkit explore` "
                    "stored in this tuning database (from the high-level programs) instead of the "
                    "hand-chosen *_gpu programs")
    ap.add_argument("--cases", default="scal,asum,dot,gemv")
    args = ap.parse_args(argv)

    runner = OpenCLRunner(args.device)
    print(f"device: {runner.device.label}", flush=True)
    rng = np.random.default_rng(42)
    n = args.n
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    A = rng.uniform(-1, 1, (args.rows, args.cols)).astype(np.float32)
    xv = rng.uniform(-1, 1, args.cols).astype(np.float32)
    yv = rng.uniform(-1, 1, args.rows).astype(np.float32)
    inputs = {"scal": [np.float32(1.5), x], "asum": [x], "dot": [x, y],
              "gemv": [A, xv, yv, np.float32(1.5), np.float32(0.5)]}
    bytes_moved = {"scal": 8 * n, "asum": 4 * n, "dot": 8 * n,
                   "gemv": 4 * (args.rows * args.cols + args.cols + 2 * args.rows)}

    copy_gbs = opencl_copy_gbs(runner, 4 * n, args.repeat)
    print(f"OpenCL copy bandwidth: {copy_gbs:.0f} GB/s", flush=True)
    rows: list[dict[str, Any]] = []
    cases = [c for c in args.cases.split(",") if c]
    for case in cases:
        spec = PROGRAMS[f"{case}_gpu"]
        program = spec.program
        variant = "hand-chosen"
        if args.tuned:
            from liftkit.explore.db import TuningDB
            from liftkit.explore.tuned import best_for

            sizes = {"N": args.rows, "M": args.cols} if case == "gemv" else {"N": n}
            found = best_for(PROGRAMS[case].program, sizes, runner.device, TuningDB(args.tuned))
            if found is None:
                print(f"{case}: nothing tuned at {sizes} in {args.tuned}", flush=True)
                continue
            program, derivation = found
            variant = f"explored, {len(derivation)} rule steps"
        t0 = time.perf_counter()
        compiled = compile_program(program)
        compile_ms = (time.perf_counter() - t0) * 1e3
        out, info = runner.run_with_info(compiled, *inputs[case], timing=True, repeat=args.repeat,
                                         name=spec.name)
        ref = spec.reference(*inputs[case])
        ok = bool(np.allclose(out, ref, rtol=1e-3, atol=1e-2 if case != "scal" else 1e-5))
        secs = info.total_seconds
        rows.append({"program": case, "ok": ok, "seconds": secs, "kernels": info.kernel_seconds,
                     "source": variant,
                     "gbs": bytes_moved[case] / secs / 1e9, "compile_ms": compile_ms,
                     "launches": [(lc.kernel, lc.global_size, lc.local_size) for lc in info.launches]})
        print(f"{case}: {secs * 1e3:.3f} ms ({'ok' if ok else 'WRONG'})", flush=True)

    sweep: list[dict[str, Any]] = []
    if args.sweep and not args.tuned:
        from itertools import product

        from liftkit.programs import gpu

        print("\nvariants (per_thread float4s, unrolled, parallel final stage):", flush=True)
        for case, pt, unroll, par in product(("asum", "dot"), (8, 16, 32, 64), (True, False), (True, False)):
            prog = gpu.reduction_gpu(case, pt, unroll, par)
            try:
                out, info = runner.run_with_info(compile_program(prog), *inputs[case], timing=True,
                                                 repeat=args.repeat)
            except Exception as err:  # noqa: BLE001 - report the variant and go on
                print(f"  {case} pt={pt} unroll={unroll} parallel_final={par}: {err}")
                continue
            ok = bool(np.allclose(out, PROGRAMS[f"{case}_gpu"].reference(*inputs[case]), rtol=1e-3, atol=1e-2))
            sweep.append({"program": case, "per_thread": pt, "unroll": unroll, "parallel_final": par,
                          "ok": ok, "seconds": info.total_seconds, "kernels": info.kernel_seconds})
            print(f"  {case} pt={pt:2d} unroll={unroll!s:5} parallel_final={par!s:5}: "
                  f"{info.total_seconds * 1e3:.3f} ms {'' if ok else 'WRONG'}", flush=True)
        for r in rows:
            best = min((v for v in sweep if v["program"] == r["program"] and v["ok"]),
                       key=lambda v: v["seconds"], default=None)
            if best is not None and best["seconds"] < r["seconds"]:
                r.update(seconds=best["seconds"], kernels=best["kernels"],
                         gbs=bytes_moved[r["program"]] / best["seconds"] / 1e9,
                         variant=f"pt={best['per_thread']} unroll={best['unroll']} "
                                 f"parallel_final={best['parallel_final']}")

    cublas: dict[str, float] = {}
    if not args.no_cublas:
        try:
            cublas = cublas_cases(inputs, args.repeat)
        except Exception as err:  # noqa: BLE001 - CuPy missing or failing: report and go on
            print(f"cuBLAS comparison skipped: {type(err).__name__}: {err}", file=sys.stderr)

    print()
    print(f"| program | liftkit ms | liftkit GB/s | cuBLAS ms | cuBLAS GB/s | liftkit/cuBLAS speed | "
          f"of OpenCL copy ({copy_gbs:.0f} GB/s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        c = cublas.get(r["program"])
        cg = bytes_moved[r["program"]] / c / 1e9 if c else float("nan")
        ratio = c / r["seconds"] if c else float("nan")
        flag = ("" if r["ok"] else " (WRONG)") + f" [{r.get('variant', r['source'])}]"
        print(f"| {r['program']}{flag} | {r['seconds'] * 1e3:.3f} | {r['gbs']:.0f} | "
              f"{(c or float('nan')) * 1e3:.3f} | {cg:.0f} | {ratio:.2f}× | {r['gbs'] / copy_gbs:.2f} |")
    if "copy_gbs" in cublas:
        print(f"\nCuPy copy bandwidth: {cublas['copy_gbs']:.0f} GB/s")
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "gpu_smoke.json"), "w") as fh:
            json.dump({"device": runner.device.label, "copy_gbs": copy_gbs, "rows": rows, "sweep": sweep,
                       "cublas": cublas, "bytes": bytes_moved}, fh, indent=2, default=str)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
