"""GEMV on a CUDA GPU beside cuBLAS (CuPy), session 23: every variant checked, then timed per
call and by kernel, at 4096² and 8192², float32/float64, N/T; the host path per call with the
CUDA queue's ctypes driver calls (`DirectCalls`) on and off in alternating rounds; what one
planned call's pieces cost on this host.

    python results/issue15/gemv23/gemv23.py --out DIR      # on the GPU machine

Per variant: the session's call plans are cleared first (a plan holds its kind's kernel: without
clearing, every variant after the first of a kind re-timed the first one, as in session 22's
run_final and run_final2 — their GEMV T variants share one rel_error to the last digit), y is
poisoned with NaN, the result checked against a float64 product, then
- call: `repeat` calls back to back between CUDA events on CuPy's stream (each side's host path
  included), median of 5 batches;
- kernel: the same calls queued behind a long CuPy product on the stream they run on, so the
  events time the kernels alone (liftkit: its stream; cuBLAS: CuPy's), min of 3;
- host: Python µs per call (perf_counter over the issuing loop while the stream is busy).
Bytes counted: A, x and y once each. The floor: the device copy of 8192² float64 in the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from blas_cuda import _kernel_and_host, _profile_calls, _time  # noqa: E402

VARIANTS = {
    ("float32", "T"): ["column-groups(lanes=4,g=64,w=8)", "column-groups(lanes=2,g=128,w=8)",
                       "column-groups(lanes=4,g=128,w=8)", "column-groups(lanes=8,g=128,w=4)",
                       "column-groups(lanes=8,g=64,w=4)", "column-groups(lanes=2,g=128,w=4)",
                       "column-groups(lanes=4,g=64,w=4)", "column-groups(lanes=4,g=128,w=4)",
                       "column-groups(lanes=2,g=64,w=8)", "column-groups(lanes=4,g=32,w=8)"],
    ("float64", "T"): ["column-groups(lanes=4,g=64,w=4)", "column-groups(lanes=2,g=128,w=4)",
                       "column-groups(lanes=4,g=128,w=4)", "column-groups(lanes=2,g=64,w=8)",
                       "column-groups(lanes=8,g=64,w=2)", "column-groups(lanes=4,g=32,w=4)",
                       "column-groups(lanes=8,g=128,w=2)"],
    ("float32", "N"): ["group-rows(L=64,w=4)", "group-rows(L=32,w=4)", "group-rows(L=128,w=4)",
                       "row-groups(lanes=32,g=8,w=4)", "row-groups(lanes=32,g=4,w=4)",
                       "row-groups(lanes=32,g=16,w=4)", "row-groups(lanes=16,g=16,w=4)"],
    ("float64", "N"): ["group-rows(L=64,w=4)", "group-rows(L=32,w=4)", "group-rows(L=128,w=4)",
                       "group-rows(L=64,w=2)", "row-groups(lanes=32,g=8,w=2)",
                       "row-groups(lanes=32,g=8,w=4)", "row-groups(lanes=32,g=4,w=4)",
                       "row-groups(lanes=16,g=16,w=4)"],
}

# run 2: GEMV T in two passes (column-groups-split(lanes, g, w, r)), more float64 N shapes
VARIANTS2 = {
    ("float32", "T"): ["column-groups(lanes=4,g=64,w=8)", "column-groups(lanes=2,g=128,w=8)"] + [
        f"column-groups-split(lanes={a},g={b},w={c},r={d})" for a, b, c, d in (
            (4, 64, 8, 2), (4, 64, 8, 4), (4, 32, 8, 4), (4, 32, 8, 2), (4, 64, 4, 2),
            (4, 64, 4, 4), (2, 64, 8, 4), (2, 128, 8, 2), (4, 128, 8, 2), (4, 16, 8, 8),
            (8, 64, 4, 2), (4, 32, 4, 8))],
    ("float64", "T"): ["column-groups(lanes=4,g=64,w=4)", "column-groups(lanes=2,g=128,w=4)"] + [
        f"column-groups-split(lanes={a},g={b},w={c},r={d})" for a, b, c, d in (
            (4, 64, 4, 2), (4, 64, 4, 4), (4, 32, 4, 4), (4, 32, 4, 2), (2, 64, 8, 2),
            (2, 128, 4, 2), (4, 16, 4, 8), (2, 64, 4, 4))],
    ("float32", "N"): ["group-rows(L=64,w=4)", "group-rows(L=256,w=4)", "group-rows(L=128,w=2)"],
    ("float64", "N"): ["group-rows(L=64,w=2)", "group-rows(L=32,w=2)", "group-rows(L=128,w=2)",
                       "group-rows(L=256,w=2)", "group-rows(L=64,w=1)", "group-rows(L=128,w=1)",
                       "group-rows(L=256,w=1)", "row-groups(lanes=32,g=4,w=2)",
                       "row-groups(lanes=32,g=16,w=2)"],
}

# run 3: the two-pass form with more, smaller work-groups (run 2's best had g = 16, r = 8)
VARIANTS3 = {
    ("float32", "T"): ["column-groups-split(lanes=4,g=16,w=8,r=8)"] + [
        f"column-groups-split(lanes={a},g={b},w={c},r={d})" for a, b, c, d in (
            (4, 16, 8, 16), (4, 8, 8, 16), (4, 32, 8, 8), (4, 16, 8, 4), (8, 16, 4, 8),
            (4, 16, 4, 16), (2, 32, 8, 8), (4, 8, 8, 8), (2, 16, 8, 16), (8, 8, 4, 16))],
    ("float64", "T"): ["column-groups(lanes=4,g=64,w=4)", "column-groups-split(lanes=4,g=16,w=4,r=8)"] + [
        f"column-groups-split(lanes={a},g={b},w={c},r={d})" for a, b, c, d in (
            (4, 16, 4, 16), (4, 8, 4, 16), (4, 32, 4, 8), (2, 32, 8, 8), (4, 8, 4, 8),
            (2, 16, 8, 16), (8, 16, 2, 8))],
    ("float32", "N"): ["group-rows(L=256,w=4)", "group-rows(L=128,w=4)"],
    ("float64", "N"): ["group-rows(L=128,w=2)", "group-rows(L=256,w=2)", "group-rows(L=512,w=2)",
                       "group-rows(L=512,w=1)"],
}

# run 4: complex GEMV on the work-group rules (one element per step) beside cuBLAS's cgemv/zgemv
_CN = ["group-rows(L=64,w=1)", "group-rows(L=128,w=1)", "row-groups(lanes=32,g=8,w=1)",
       "row-groups(lanes=16,g=16,w=1)"]
_CT = ["column-groups(lanes=16,g=32,w=1)", "column-groups(lanes=8,g=64,w=1)",
       "column-groups-split(lanes=8,g=16,w=1,r=8)", "column-groups-split(lanes=8,g=32,w=1,r=4)",
       "column-groups-split(lanes=16,g=16,w=1,r=8)"]
VARIANTS4 = {(dt, lay): (_CN if lay == "N" else _CT) for dt in ("complex64", "complex128")
             for lay in "NT"}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--layouts", default="N,T")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3, help="direct on/off rounds per kind")
    p.add_argument("--max-variants", type=int, default=99)
    p.add_argument("--out", default=".")
    p.add_argument("--set", type=int, default=1, help="the variants of run 1, 2 or 3")
    p.add_argument("--no-host", action="store_true", help="no host pieces or cProfile")
    args = p.parse_args(argv)
    out_dir = Path(args.out)
    lists = {1: VARIANTS, 2: VARIANTS2, 3: VARIANTS3, 4: VARIANTS4}[args.set]
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    s = Session("gpu", warn=False)
    # run 1 (commit a2ebe8c) timed the CUDA queue's ctypes driver calls (`use_direct_calls`)
    # against cuda.bindings/cuda.core here; they gained nothing per call and were removed
    use = getattr(s.q, "use_direct_calls", None)
    if use is not None and os.environ.get("DIRECT", "1") == "1":
        use(True)
    direct = getattr(s.q, "direct", None)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}; direct driver calls: "
          f"{'yes' if direct is not None else 'NO (libcuda not opened)'}", flush=True)
    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(23)

    def rand(shape: Any, dt: Any) -> Any:
        r = cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1
        if np.dtype(dt).kind == "c":
            r = r + 1j * (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1)
        return r.astype(dt)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        if "ref_call_us" in row:
            print(f"{row['dtype']:8s} {row['layout']} {row['size']:5d} {row['variant']:36s} "
                  f"call {row['call_us']:7.1f} us ({row['ref_call_us'] / row['call_us']:.3f}x) "
                  f"kernel {row['kernel_us']:7.1f} us ({row['ref_kernel_us'] / row['kernel_us']:.3f}x) "
                  f"host {row['host_us']:5.1f} us  {row['gbs_kernel']:6.0f} GB/s", flush=True)
        else:
            print(json.dumps(row), flush=True)

    # the floor: the device copy (bytes read + written)
    src = rand((8192, 8192), np.float64)
    dst = cp.empty_like(src)
    t_copy = _time(cp, lambda: cp.copyto(dst, src), 10)
    emit({"what": "copy", "size": 8192, "GB/s": 2 * src.nbytes / t_copy / 1e9})
    del src, dst

    chosen: dict[str, Any] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]

    def ref_kernel(fn: Callable[[], Any], repeat: int) -> float:
        """cuBLAS calls queued on CuPy's stream behind a long product: kernels alone."""
        best = float("inf")
        stream = cp.cuda.get_current_stream()
        for _ in range(3):
            cp.cuda.Device().synchronize()
            cp.matmul(busy, busy)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            for _ in range(repeat):
                fn()
            end.record(stream)
            end.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, end) * 1e-3 / repeat)
        return best

    summary: list[dict[str, Any]] = []
    for dt_name in args.dtypes.split(","):
        dt = np.dtype(dt_name)
        for n in (int(v) for v in args.sizes.split(",")):
            A, x = rand((n, n), dt), rand((n,), dt)
            y = cp.full((n,), np.nan, dt)
            nbytes = (n * n + 2 * n) * dt.itemsize
            tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-12
            wide = cp.complex128 if dt.kind == "c" else cp.float64
            for lay in args.layouts.split(","):
                trans = lay == "T"
                opA = A.T if trans else A
                want = opA.astype(wide) @ x.astype(wide)
                scale = float(cp.max(cp.abs(want)))
                ref = lambda: cp.matmul(opA, x, out=y)  # noqa: E731
                y.fill(np.nan)
                ref()
                ref_err = float(cp.max(cp.abs(y - want))) / scale
                t_ref = _time(cp, ref, args.repeat)
                t_ref_k = ref_kernel(ref, args.repeat)
                kind = Kind("gemv", dt_name, lay)
                s.calls.clear()
                profile_choice = default_choose(kind, {"M": n, "N": n})
                todo = [str(profile_choice)] + [v for v in lists[(dt_name, lay)]
                                                if v != str(profile_choice)][:args.max_variants]
                best: dict[str, Any] = {}
                for i, vtext in enumerate(todo):
                    v = lookup_variant(kind, vtext)
                    chosen["gemv"] = v
                    s.calls.clear()  # a plan keeps its kind's kernel: each variant its own
                    call = lambda: s.gemv(A, x, y, trans=trans)  # noqa: E731
                    try:
                        y.fill(np.nan)
                        call().result()
                        y.fill(np.nan)
                        call().result()  # the planned path
                    except Exception as err:  # noqa: BLE001 - report and go on
                        print(f"{dt_name} {lay} {n} {v}: {type(err).__name__}: "
                              f"{str(err).splitlines()[0][:160]}", flush=True)
                        continue
                    err = float(cp.max(cp.abs(y - want))) / scale
                    if not err < tol:  # NaN (an unwritten element) fails too
                        print(f"{dt_name} {lay} {n} {v}: WRONG (rel error {err:.1e})", flush=True)
                        continue
                    t_call = _time(cp, call, args.repeat)
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    row = {"dtype": dt_name, "layout": lay, "size": n, "variant": str(v),
                           "profile": i == 0, "call_us": t_call * 1e6, "kernel_us": t_k * 1e6,
                           "host_us": t_h * 1e6, "ref_call_us": t_ref * 1e6,
                           "ref_kernel_us": t_ref_k * 1e6, "rel_error": err,
                           "ref_rel_error": ref_err, "gbs_kernel": nbytes / t_k / 1e9,
                           "gbs_ref_kernel": nbytes / t_ref_k / 1e9, "repeat": args.repeat}
                    emit(row)
                    if not best or row["kernel_us"] < best["kernel_us"]:
                        best = row
                chosen.clear()
                s.calls.clear()
                # the profile's choice per call with the direct driver calls on and off,
                # alternating rounds (the host path is what differs)
                call = lambda: s.gemv(A, x, y, trans=trans)  # noqa: E731
                ab: dict[str, list[float]] = {"on_call": [], "off_call": [], "on_host": [],
                                              "off_host": [], "ref_call": []}
                for _ in range(args.rounds if direct is not None else 0):
                    for mode in ("on", "off"):
                        s.q.direct = direct if mode == "on" else None
                        s.calls.clear()
                        y.fill(np.nan)
                        call().result()
                        call().result()
                        e = float(cp.max(cp.abs(y - want))) / scale
                        assert e < tol, f"direct={mode}: rel error {e}"
                        ab[f"{mode}_call"].append(_time(cp, call, args.repeat) * 1e6)
                        ab[f"{mode}_host"].append(
                            _kernel_and_host(cp, s, call, args.repeat, busy)[1] * 1e6)
                    ab["ref_call"].append(_time(cp, ref, args.repeat) * 1e6)
                s.q.direct = direct
                med = {k: statistics.median(v) for k, v in ab.items() if v}
                if med:
                    emit({"what": "direct-ab", "dtype": dt_name, "layout": lay, "size": n,
                          "variant": str(profile_choice), **{k: v for k, v in ab.items()},
                          **{f"median_{k}": v for k, v in med.items()}})
                    print(f"   A/B {dt_name} {lay} {n} {profile_choice}: call on {med['on_call']:.1f}"
                          f" / off {med['off_call']:.1f} us (cuBLAS {med['ref_call']:.1f}); host on "
                          f"{med['on_host']:.1f} / off {med['off_host']:.1f} us", flush=True)
                summary.append({"dtype": dt_name, "layout": lay, "size": n, "best": best,
                                "ab": med})
                del want
            del A, x, y
            cp.get_default_memory_pool().free_all_blocks()

    # what a planned call's pieces cost on this host (µs each, median of 5 × 2000)
    try:
        if not args.no_host:
            pieces(cp, s, out_dir, emit)
    except Exception as err:  # noqa: BLE001 - the rows above stand
        print(f"host pieces: {type(err).__name__}: {err}", flush=True)
    if not args.no_host:
        with open(out_dir / "host_profile.txt", "w") as report:
            A, x, y = rand((4096, 4096), np.float32), rand((4096,), np.float32), cp.empty(4096, np.float32)
            for mode in ("on", "off"):
                s.q.direct = direct if mode == "on" else None
                s.calls.clear()
                s.gemv(A, x, y).result()
                _profile_calls(cp, lambda: s.gemv(A, x, y), f"gemv float32 N 4096, direct {mode}",
                               report, 22)
            s.q.direct = direct

    print("\nsummary (best kernel per kind; per call of the profile's choice):", flush=True)
    for r in summary:
        b = r["best"]
        if not b:
            continue
        line = (f"{r['dtype']:8s} {r['layout']} {r['size']:5d} best {b['variant']:36s} kernel "
                f"{b['ref_kernel_us'] / b['kernel_us']:.3f}x call {b['ref_call_us'] / b['call_us']:.3f}x")
        if r["ab"]:
            a = r["ab"]
            line += (f" | profile call on {a['ref_call'] / a['on_call']:.3f}x off "
                     f"{a['ref_call'] / a['off_call']:.3f}x host {a['on_host']:.0f}/{a['off_host']:.0f} us")
        print(line, flush=True)
    return 0


def pieces(cp: Any, s: Any, out_dir: Path, emit: Callable[[dict[str, Any]], None]) -> None:
    """Per-piece host costs of a planned GEMV call on this machine's host."""
    import ctypes

    from liftkit.blas.queues import _driver_module, _library_stream

    drv = _driver_module()
    q = s.q
    A, x = cp.ones((256, 256), cp.float32), cp.ones(256, cp.float32)
    y = cp.empty(256, cp.float32)
    s.calls.clear()
    s.gemv(A, x, y).result()
    s.gemv(A, x, y).result()
    ops = s.calls.operands
    sh = q.stream.handle
    ev = q._order_event
    evp = int(ev)
    shp = int(sh)
    d = getattr(q, "direct", None)
    k = 2000

    def t(fn: Callable[[], Any]) -> float:
        out = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            out.append((time.perf_counter() - t0) / k * 1e6)
            q.finish()
        return statistics.median(out)

    res: dict[str, float] = {
        "python loop (nothing)": t(lambda: None),
        "ops.key(cupy array)": t(lambda: ops.key(A)),
        "int(A.data.ptr)": t(lambda: int(A.data.ptr)),
        "cupy get_current_stream().ptr": t(lambda: cp.cuda.get_current_stream().ptr),
        "queues._library_stream(cupy array)": t(lambda: _library_stream(A)),
        "Future(...)": t(lambda: s.calls._future(q, [None], lambda: y, [A, x])),
        "cuEventRecord (cuda.bindings + check)": t(lambda: q._check(drv.cuEventRecord(ev, sh), "r")),
        "cuStreamWaitEvent (cuda.bindings + check)": t(
            lambda: q._check(drv.cuStreamWaitEvent(sh, ev, 0), "w")),
    }
    if d is not None:
        res["cuEventRecord (ctypes)"] = t(lambda: d.record(evp, shp))
        res["cuStreamWaitEvent (ctypes)"] = t(lambda: d.wait(shp, evp, 0))
    for mode in ("on", "off"):
        q.direct = d if mode == "on" else None
        s.calls.clear()
        s.gemv(A, x, y).result()
        res[f"planned gemv 256 call, direct {mode}"] = t(lambda: s.gemv(A, x, y))
        plan = next(v for v in s.calls._plans.values() if v)[0]
        if not plan.temps:
            values = [int(A.data.ptr), int(x.data.ptr), int(y.data.ptr), np.float32(1),
                      np.float32(0)] + ([s.zeros(plan.zeros)[0].ptr] if plan.zeros else []) \
                + list(plan.fixed)
            res[f"launch_all (1 kernel), direct {mode}"] = t(
                lambda: q.launch_all(plan.launches, values))
        res[f"call_event, direct {mode}"] = t(q.call_event)
    q.direct = d
    emit({"what": "host-pieces", "us": res, "ctypes": ctypes.__name__})
    for name, us in res.items():
        print(f"   {name:45s} {us:7.2f} us", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
