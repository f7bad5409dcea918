"""liftkit.blas on a CUDA GPU beside cuBLAS (CuPy) in one run: GEMM per dtype × layout × size,
odd sizes, GEMV, and transpose against the copy bandwidth. Operands are CuPy arrays (no
transfers on either side); every result is checked against a float64/complex128 product on the
GPU before it is timed; outputs are poisoned with NaN first.

    python benchmarks/blas_cuda.py --sizes 1024,4096 --out results/issue15/cuda/bench.json

Timing: CUDA events around `repeat` calls enqueued back to back (each side's own host overhead
included, as a user calling it sees), median of 5 batches after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any, Callable

import numpy as np

LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False)}


def _time(cp: Any, fn: Callable[[], Any], repeat: int, batches: int = 5) -> float:
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(batches):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Device().synchronize()
        start.record(cp.cuda.get_current_stream())
        for _ in range(repeat):
            last = fn()
        if hasattr(last, "result"):
            last.result()
        end.record(cp.cuda.get_current_stream())
        end.synchronize()
        cp.cuda.Device().synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3 / repeat)
    return statistics.median(times)


def _device_time(s: Any, fn: Callable[[], Any], reps: int = 5) -> float:
    """Seconds from an event recorded on the session's stream before a call to the call's own
    event (its kernels and copies, and any gaps while the host issues them)."""
    times = []
    for _ in range(reps):
        first = s.q.marker()
        f = fn()
        last = s.q.marker()  # a timing event after the call (a future's event does not time)
        f.result()
        times.append(s.q.seconds(first, last))
    return statistics.median(times)


def _rand(cp: Any, rng: Any, shape: tuple[int, ...], dt: np.dtype) -> Any:
    x = rng.uniform(-1, 1, shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return cp.asarray(x.astype(dt))


def _err(cp: Any, got: Any, want: Any) -> float:
    wide = cp.complex128 if want.dtype.kind == "c" else cp.float64
    return float(cp.max(cp.abs(got.astype(wide) - want)) / max(float(cp.max(cp.abs(want))), 1e-30))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,4096")
    p.add_argument("--dtypes", default="float32,float64,complex64,complex128")
    p.add_argument("--layouts", default="NN,NT,TN")
    p.add_argument("--odd", default="1000x1000x1000,4097x4095x4095")
    p.add_argument("--big", default="8192", help="square sizes for float32/float64 NN only")
    p.add_argument("--gemv", default="4096,8192,16384")
    p.add_argument("--transpose", default="4096,8192")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--out", default=None)
    p.add_argument("--markdown", metavar="FILE.json", default=None,
                   help="print the rows of an earlier --out file as a Markdown table and stop")
    args = p.parse_args(argv)
    if args.markdown:
        with open(args.markdown) as f:
            data = json.load(f)
        print(f"Card: {data['device']}\n")
        print("| op | dtype | layout | size | liftkit | liftkit device span | reference | ratio "
              "| unit | derivation |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in data["rows"]:
            ref = "copy" if "copy" in r else "cuBLAS"
            print(f"| {r['op']} | {r['dtype']} | {r['layout']} | {r['size']} | {r['liftkit']:,.0f} "
                  f"| {r.get('liftkit_device', 0):,.0f} | {r[ref]:,.0f} ({ref}) | "
                  f"{r['ratio']:.2f}x | {r['unit']} | {r['variant']} |")
        return 0

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind

    s = Session("gpu")
    print(f"liftkit.blas on {s.device.label} ({s.backend} backend), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []

    def row(op: str, dt: str, layout: str, size: str, lk: float, ref: float, unit: str,
            variant: str, err: float, ref_name: str = "cuBLAS", dev: float = 0.0) -> None:
        r = {"op": op, "dtype": dt, "layout": layout, "size": size, "liftkit": lk, ref_name: ref,
             "ratio": lk / ref, "unit": unit, "variant": variant, "rel_error": err,
             "liftkit_device": dev}
        rows.append(r)
        print(f"{op:9s} {dt:10s} {layout:3s} {size:16s} liftkit {lk:10.1f} (device {dev:10.1f}) "
              f"{ref_name} {ref:10.1f} {unit:7s} ratio {lk / ref:5.2f}x  err {err:.1e}  "
              f"[{variant}]", flush=True)

    square = [(n, n, n) for n in map(int, args.sizes.split(","))]
    odd = [tuple(int(v) for v in t.split("x")) for t in args.odd.split(",") if t]
    big = [(n, n, n) for n in map(int, args.big.split(",")) if n] if args.big else []
    for dt_name in args.dtypes.split(","):
        dt = np.dtype(dt_name)
        c = 4.0 if dt.kind == "c" else 1.0
        tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-11
        for lay in args.layouts.split(","):
            ta, tb = LAYOUTS[lay]
            shapes = square + (odd if lay == "NN" else []) + (
                big if lay == "NN" and dt.kind == "f" else [])
            for (m, n, k) in shapes:
                A = _rand(cp, rng, (k, m) if ta else (m, k), dt)
                B = _rand(cp, rng, (n, k) if tb else (k, n), dt)
                C = cp.full((m, n), np.nan, dt)
                wide = cp.complex128 if dt.kind == "c" else cp.float64
                opA, opB = (A.T if ta else A), (B.T if tb else B)
                want = opA.astype(wide) @ opB.astype(wide)
                try:
                    s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"gemm {dt_name} {lay} {m}x{n}x{k}: {type(err).__name__}: {err}",
                          flush=True)
                    continue
                e = _err(cp, C, want)
                ref_out = opA @ opB
                e_ref = _err(cp, ref_out, want)
                if e > max(tol * 10, 10 * e_ref):
                    print(f"gemm {dt_name} {lay} {m}x{n}x{k}: WRONG (rel error {e:.1e}, cuBLAS "
                          f"{e_ref:.1e})", flush=True)
                    continue
                flops = c * 2.0 * m * n * k
                t_lk = _time(cp, lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb), args.repeat)
                t_ref = _time(cp, lambda: cp.matmul(opA, opB, out=C), args.repeat)
                t_dev = _device_time(s, lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb))
                plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
                size = f"{m}" if m == n == k else f"{m}x{n}x{k}"
                row("gemm", dt_name, lay, size, flops / t_lk / 1e9, flops / t_ref / 1e9,
                    "GFLOP/s", f"{plan.layout}:{plan.variant}", e, dev=flops / t_dev / 1e9)
                del A, B, C, want, ref_out
                cp.get_default_memory_pool().free_all_blocks()
    for dt_name in ("float32", "float64"):
        dt = np.dtype(dt_name)
        for n in map(int, args.gemv.split(",")):
            for trans in (False, True):
                A = _rand(cp, rng, (n, n), dt)
                x = _rand(cp, rng, (n,), dt)
                y = cp.full((n,), np.nan, dt)
                opA = A.T if trans else A
                want = opA.astype(cp.float64) @ x.astype(cp.float64)
                s.gemv(A, x, y, trans=trans).result()
                e = _err(cp, y, want)
                nbytes = (n * n + 2 * n) * dt.itemsize
                t_lk = _time(cp, lambda: s.gemv(A, x, y, trans=trans), args.repeat)
                t_ref = _time(cp, lambda: cp.matmul(opA, x, out=y), args.repeat)
                t_dev = _device_time(s, lambda: s.gemv(A, x, y, trans=trans))
                v = s.choose(Kind("gemv", dt_name, "T" if trans else "N"), {"M": n, "N": n})
                row("gemv", dt_name, "T" if trans else "N", str(n), nbytes / t_lk / 1e9,
                    nbytes / t_ref / 1e9, "GB/s", str(v), e, dev=nbytes / t_dev / 1e9)
        for n in map(int, args.transpose.split(",")):
            A = _rand(cp, rng, (n, n), dt)
            T = cp.full((n, n), np.nan, dt)
            s.transpose(A, T).result()
            e = 0.0 if bool(cp.array_equal(T, A.T)) else 1.0
            nbytes = 2.0 * n * n * dt.itemsize
            t_lk = _time(cp, lambda: s.transpose(A, T), args.repeat)
            t_copy = _time(cp, lambda: cp.copyto(T, A), args.repeat)
            t_dev = _device_time(s, lambda: s.transpose(A, T))
            v = s.choose(Kind("transpose", dt_name), {"M": n, "N": n})
            row("transpose", dt_name, "-", str(n), nbytes / t_lk / 1e9, nbytes / t_copy / 1e9,
                "GB/s", str(v), e, ref_name="copy", dev=nbytes / t_dev / 1e9)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": s.device.describe(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
