"""liftkit.blas on a CUDA GPU beside cuBLAS (CuPy) in one run: GEMM per dtype × layout × size,
odd sizes, GEMV, and transpose against the copy bandwidth. Operands are CuPy arrays (no
transfers on either side); every result is checked against a float64/complex128 product on the
GPU before it is timed; outputs are poisoned with NaN first.

    python benchmarks/blas_cuda.py --sizes 1024,4096,8192 --out results/issue15/cuda/bench.json

Timing: CUDA events around `repeat` calls enqueued back to back (each side's own host overhead
included, as a user calling it sees), median of 5 batches after a warm-up (3 batches and fewer
calls where a call takes milliseconds), liftkit's and the reference's batches alternating. GEMM rows also give `kernel`: the same calls issued
while the stream is held by a long CuPy product, so the events time the device work alone
(kernels, packing and copies; no host gaps), `host_us` (Python per call), and for plans that
pack (padding, the `nn` and `real` plans) `packed`: the product of operands packed once
(the low-level API, seed 003 §8.3.3), i.e. the call less its packing. `--alt` re-times rows
with another derivation chosen for one kind (e.g. DGEMM TN on its own DMMA derivation, or the
real kernel under CGEMM), in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False)}


def _profile_calls(cp: Any, call: Callable[[], Any], what: str, report: Any, top: int) -> None:
    """200 calls back to back under cProfile (the host path's own functions by time), written
    to `report` under the time per call."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(200):
        f = call()
    prof.disable()
    t1 = time.perf_counter()
    f.result()
    report.write(f"== {what}: {(t1 - t0) / 200 * 1e6:.1f} us per call under cProfile\n")
    pstats.Stats(prof, stream=report).sort_stats("tottime").print_stats(top)


def _batch(cp: Any, fn: Callable[[], Any], repeat: int, stream: Any = None) -> float:
    """Seconds per call of one batch: `repeat` calls back to back between two CUDA events on
    `stream` (the stream the calls run on: liftkit's for liftkit, CuPy's for the reference), the
    end event recorded as soon as the last call is enqueued, as for the reference. A liftkit
    call whose future is not done when that event is (work left on another stream) is timed
    again with the host waiting for it before the end event."""
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    cp.cuda.Device().synchronize()
    start.record(stream)
    for _ in range(repeat):
        last = fn()
    end.record(stream)
    end.synchronize()
    if hasattr(last, "done") and not last.done():
        last.result()
        end.record(stream)
        end.synchronize()
    cp.cuda.Device().synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e-3 / repeat


def _time(cp: Any, fn: Callable[[], Any], repeat: int, batches: int = 5,
          stream: Any = None) -> float:
    """Median seconds per call over `batches` batches after a warm-up call."""
    fn()
    return statistics.median(_batch(cp, fn, repeat, stream) for _ in range(batches))


def _time_pair(cp: Any, ours: Callable[[], Any], ref: Callable[[], Any], repeat: int,
               batches: int = 5, stream: Any = None) -> tuple[float, float]:
    """Median seconds per call of `ours` (on `stream`, liftkit's) and of `ref` (on CuPy's
    stream), their batches alternating (ours, ref, ref, ours, ...) so that a clock that drifts
    over the row (power and heat at 8192) weighs on both sides alike instead of on whichever
    ran second."""
    ours(), ref()
    cp.cuda.Device().synchronize()
    t_ours, t_ref = [], []
    for i in range(batches):
        order = (((ours, t_ours, stream), (ref, t_ref, None)) if i % 2 == 0
                 else ((ref, t_ref, None), (ours, t_ours, stream)))
        for fn, times, on in order:
            times.append(_batch(cp, fn, repeat, on))
    return statistics.median(t_ours), statistics.median(t_ref)


def cupy_stream(cp: Any, stream: Any) -> Any:
    """liftkit's stream as a CuPy stream: through the CUDA stream protocol where CuPy has it
    (`Stream.from_external`, CuPy 14, which deprecates `ExternalStream`), else ExternalStream."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(stream)  # a cuda.core Stream has __cuda_stream__
    return cp.cuda.ExternalStream(int(stream.handle))  # CuPy < 14: not deprecated there


def _kernel_and_host(cp: Any, s: Any, fn: Callable[[], Any], repeat: int, busy: Any
                     ) -> tuple[float, float]:
    """(kernel seconds, host seconds) per call: the stream is held by a long product first."""
    ext = cupy_stream(cp, s.q.stream)
    kern, host = [], []
    for _ in range(3):
        cp.cuda.Device().synchronize()
        with ext:
            cp.matmul(busy, busy)
        first = s.q.marker()
        t0 = time.perf_counter()
        for _ in range(repeat):
            f = fn()
        host.append((time.perf_counter() - t0) / repeat)
        last = s.q.marker()  # a timing event after the calls (futures' events do not time)
        f.result()
        kern.append(s.q.seconds(first, last) / repeat)
    return min(kern), statistics.median(host)


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


def _rand_gpu(cp: Any, shape: tuple[int, ...], dt: np.dtype) -> Any:
    """Uniform in [-1, 1) (re and im), made on the GPU (8192² complex operands in milliseconds)."""
    x = cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1
    if dt.kind == "c":
        x = x + 1j * (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1)
    return x.astype(dt)


def _err(cp: Any, got: Any, want: Any) -> float:
    wide = cp.complex128 if want.dtype.kind == "c" else cp.float64
    return float(cp.max(cp.abs(got.astype(wide) - want)) / max(float(cp.max(cp.abs(want))), 1e-30))


def _host_profile(cp: Any, s: Any, path: str) -> None:
    """Where a planned call's host time goes: cProfile over 200 calls per case (the stream is
    not held: the calls run as a user makes them)."""
    import io

    report = io.StringIO()
    for lay, n in (("NN", 1024), ("NT", 1024), ("NN", 1000)):
        ta, tb = LAYOUTS[lay]
        A, B = _rand_gpu(cp, (n, n), np.dtype("float32")), _rand_gpu(cp, (n, n), np.dtype("float32"))
        C = cp.empty((n, n), cp.float32)
        call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
        call().result()
        _profile_calls(cp, call, f"gemm float32 {lay} {n}", report, 18)
    with open(path, "w") as f:
        f.write(report.getvalue())


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,4096")
    p.add_argument("--dtypes", default="float32,float64,complex64,complex128")
    p.add_argument("--layouts", default="NN,NT,TN")
    p.add_argument("--odd", default="1000x1000x1000,4097x4095x4095")
    p.add_argument("--big", default="",
                   help="square sizes timed last (after the odd sizes and --alt; every dtype "
                        "and layout)")
    p.add_argument("--alt", action="append", default=[],
                   help="DTYPE/LAYOUT@SIZES[:DTYPE/LAYOUT]=VARIANT: those GEMM rows again with "
                        "VARIANT chosen for mm of the second DTYPE/LAYOUT (default: the row's)")
    p.add_argument("--jsonl", default=None, help="append each GEMM row to this file as it ends")
    p.add_argument("--host-profile", default=None, metavar="FILE",
                   help="cProfile 200 calls of SGEMM NN/NT 1024 and the padded SGEMM 1000 "
                        "(their call plans) into FILE, after the GEMM rows")
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
    from liftkit.blas.codelets import Kind, lookup_variant

    s = Session("gpu")
    print(f"liftkit.blas on {s.device.label} ({s.backend} backend), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    lk_stream = cupy_stream(cp, s.q.stream)  # liftkit's calls' events are recorded there

    def row(op: str, dt: str, layout: str, size: str, lk: float, ref: float, unit: str,
            variant: str, err: float, ref_name: str = "cuBLAS", dev: float = 0.0
            ) -> dict[str, Any]:
        r = {"op": op, "dtype": dt, "layout": layout, "size": size, "liftkit": lk, ref_name: ref,
             "ratio": lk / ref, "unit": unit, "variant": variant, "rel_error": err,
             "liftkit_device": dev}
        rows.append(r)
        print(f"{op:9s} {dt:10s} {layout:3s} {size:16s} liftkit {lk:10.1f} (device {dev:10.1f}) "
              f"{ref_name} {ref:10.1f} {unit:7s} ratio {lk / ref:5.2f}x  err {err:.1e}  "
              f"[{variant}]", flush=True)
        return r

    square = [(n, n, n) for n in map(int, args.sizes.split(",")) if n]
    odd = [tuple(int(v) for v in t.split("x")) for t in args.odd.split(",") if t]
    big = [(n, n, n) for n in map(int, args.big.split(",")) if n] if args.big else []
    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: hides the host path
    jsonl = open(args.jsonl, "a") if args.jsonl else None
    choose = s.choose
    forced: dict[Kind, Any] = {}
    s.choose = lambda kind, sizes: forced.get(kind) or choose(kind, sizes)  # type: ignore

    def gemm_row(dt: np.dtype, lay: str, m: int, n: int, k: int, alt: str = "") -> None:
        ta, tb = LAYOUTS[lay]
        c = 4.0 if dt.kind == "c" else 1.0
        tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-11
        A = _rand_gpu(cp, (k, m) if ta else (m, k), dt)
        B = _rand_gpu(cp, (n, k) if tb else (k, n), dt)
        C = cp.full((m, n), np.nan, dt)
        wide = cp.complex128 if dt.kind == "c" else cp.float64
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        want = opA.astype(wide) @ opB.astype(wide)
        what = f"gemm {dt.name} {lay} {m}x{n}x{k}{' ' + alt if alt else ''}"
        try:
            s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
        except Exception as err:  # noqa: BLE001 - report and go on
            print(f"{what}: {type(err).__name__}: {err}", flush=True)
            return
        e = _err(cp, C, want)
        ref_out = opA @ opB
        e_ref = _err(cp, ref_out, want)
        del want, ref_out
        if e > max(tol * 10, 10 * e_ref):
            print(f"{what}: WRONG (rel error {e:.1e}, cuBLAS {e_ref:.1e})", flush=True)
            return
        flops = c * 2.0 * m * n * k
        call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
        t0 = time.perf_counter()
        call().result()
        est = time.perf_counter() - t0
        repeat = max(3, min(args.repeat, int(0.02 / max(est, 1e-6))))
        batches = 5 if est < 5e-3 else 3
        t_lk, t_ref = _time_pair(cp, call, lambda: cp.matmul(opA, opB, out=C), repeat, batches,
                                 lk_stream)
        t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
        t_p = 0.0
        if plan.embed is not None or plan.padded != plan.sizes:
            ws = s.scratch
            pa, pb = plan.pack("A", A, ws), plan.pack("B", B, ws)
            t_p = _time(cp, lambda: plan.run(pa, pb, C, workspace=ws), repeat, batches, lk_stream)
        size = f"{m}" if m == n == k else f"{m}x{n}x{k}"
        variant = f"{plan.layout}:{plan.variant}"
        if plan.embed is not None:
            variant += f" on {plan.embed.real.variant}"
        r = row("gemm", dt.name, lay, size, flops / t_lk / 1e9, flops / t_ref / 1e9, "GFLOP/s",
                variant + (f" [{alt}]" if alt else ""), e, dev=flops / t_k / 1e9)
        r.update(host_us=t_h * 1e6, packed=flops / t_p / 1e9 if t_p else None, alt=alt,
                 calls_per_batch=repeat)
        if t_p:
            print(f"    packed once: {flops / t_p / 1e9:10.1f} GFLOP/s ({t_p / t_lk:4.2f} of the "
                  f"call's time), host {t_h * 1e6:.1f} us per call", flush=True)
        if jsonl:
            jsonl.write(json.dumps(r) + "\n")
            jsonl.flush()

    def gemm_rows(shapes: list[tuple[int, ...]], lays: list[str]) -> None:
        for (m, n, k) in shapes:
            for dt_name in args.dtypes.split(","):
                for lay in lays:
                    gemm_row(np.dtype(dt_name), lay, m, n, k)
                    cp.get_default_memory_pool().free_all_blocks()

    layouts = args.layouts.split(",")
    gemm_rows(square, layouts)
    gemm_rows(odd, ["NN"])
    for spec in args.alt:  # DTYPE/LAYOUT@SIZES[:OP_DTYPE/LAYOUT]=VARIANT
        target, _, vtext = spec.partition("=")
        row_kind, _, kind_text = target.partition(":")
        dl, _, sizes = row_kind.partition("@")
        dt_name, lay = dl.split("/")
        kdt, klay = (kind_text or dl).split("/")
        kind = Kind("mm", kdt, klay)
        forced[kind] = lookup_variant(kind, vtext)
        s.forget_choices()
        for n in map(int, sizes.split(",")):
            gemm_row(np.dtype(dt_name), lay, n, n, n, alt=f"{kind}={forced[kind]}")
        forced.clear()
        s.forget_choices()
    gemm_rows(big, layouts)
    if args.host_profile:
        _host_profile(cp, s, args.host_profile)
    for dt_name in ("float32", "float64"):
        dt = np.dtype(dt_name)
        for n in [int(x) for x in args.gemv.split(",") if x]:
            for trans in (False, True):
                A = _rand(cp, rng, (n, n), dt)
                x = _rand(cp, rng, (n,), dt)
                y = cp.full((n,), np.nan, dt)
                opA = A.T if trans else A
                want = opA.astype(cp.float64) @ x.astype(cp.float64)
                s.gemv(A, x, y, trans=trans).result()
                e = _err(cp, y, want)
                nbytes = (n * n + 2 * n) * dt.itemsize
                t_lk, t_ref = _time_pair(cp, lambda: s.gemv(A, x, y, trans=trans),
                                         lambda: cp.matmul(opA, x, out=y), args.repeat,
                                         stream=lk_stream)
                t_dev = _device_time(s, lambda: s.gemv(A, x, y, trans=trans))
                v = s.choose(Kind("gemv", dt_name, "T" if trans else "N"), {"M": n, "N": n})
                row("gemv", dt_name, "T" if trans else "N", str(n), nbytes / t_lk / 1e9,
                    nbytes / t_ref / 1e9, "GB/s", str(v), e, dev=nbytes / t_dev / 1e9)
        for n in [int(x) for x in args.transpose.split(",") if x]:
            A = _rand(cp, rng, (n, n), dt)
            T = cp.full((n, n), np.nan, dt)
            s.transpose(A, T).result()
            e = 0.0 if bool(cp.array_equal(T, A.T)) else 1.0
            nbytes = 2.0 * n * n * dt.itemsize
            t_lk, t_copy = _time_pair(cp, lambda: s.transpose(A, T), lambda: cp.copyto(T, A),
                                      args.repeat, stream=lk_stream)
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
