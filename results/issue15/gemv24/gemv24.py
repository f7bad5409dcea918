"""GEMV on a CUDA GPU beside cuBLAS (CuPy), session 24 (helper H4): every variant checked, then
timed by kernel and per call, at 4096² and 8192², float32/float64, N/T, the new one-kernel T
form with a tree over its row groups (codelet column-groups-tree) beside the two-pass and
in-order forms; then per call in alternating rounds: cuBLAS, liftkit's best kernel of the run,
the shipped profile's choice.

    python results/issue15/gemv24/gemv24.py --out DIR      # on the GPU machine

Per variant (as gemv23.py): call plans cleared, y poisoned with NaN, the result checked
against a float64 product (rel. error < 1e-4 float32, < 1e-12 float64; NaN fails), then
- kernel: `repeat` calls queued behind a long CuPy product on the stream they run on (liftkit:
  its stream; cuBLAS: CuPy's), events around them: the kernels alone; min of 3;
- call: `repeat` calls back to back between CUDA events on CuPy's stream (host path
  included), median of 5 batches;
- host: Python µs per call while the stream is busy.
Bytes: A, x and y once each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from blas_cuda import _kernel_and_host, _time  # noqa: E402


def _tree(lanes: int, g: int, w: int) -> str:
    return f"column-groups-tree(lanes={lanes},g={g},w={w})"


def _split(lanes: int, g: int, w: int, r: int) -> str:
    return f"column-groups-split(lanes={lanes},g={g},w={w},r={r})"


def _cg(lanes: int, g: int, w: int) -> str:
    return f"column-groups(lanes={lanes},g={g},w={w})"


def _gr(L: int, w: int) -> str:
    return f"group-rows(L={L},w={w})"


VARIANTS = {
    ("float32", "T"): [_tree(2, 128, 8), _tree(2, 256, 8), _tree(4, 64, 8), _tree(4, 128, 8),
                       _tree(2, 128, 4), _tree(2, 256, 4), _tree(4, 128, 4), _tree(4, 256, 8),
                       _split(4, 16, 8, 16), _split(4, 16, 8, 8), _cg(2, 128, 8), _cg(4, 64, 8)],
    ("float64", "T"): [_tree(2, 128, 4), _tree(4, 64, 4), _tree(4, 128, 4), _tree(2, 256, 4),
                       _tree(2, 128, 8), _tree(4, 64, 8), _cg(4, 64, 4), _split(4, 16, 4, 8)],
    ("float32", "N"): [_gr(128, 4), _gr(256, 4)],
    ("float64", "N"): [_gr(128, 2), _gr(256, 2), _gr(512, 2)],
}


# run 2: wider row runs per work-group in the two-pass form (lanes·w·item = 128-512 bytes of a
# row: run 1's best shapes read 64-128), fewer row groups in the tree form
VARIANTS2 = {
    ("float32", "T"): [_tree(2, 128, 8), _tree(2, 64, 8), _tree(2, 32, 8), _split(8, 16, 4, 16),
                       _split(16, 16, 4, 8), _split(32, 8, 4, 16), _split(32, 4, 4, 16),
                       _split(8, 32, 4, 8), _split(4, 16, 8, 16), _split(4, 16, 8, 8)],
    ("float64", "T"): [_tree(2, 128, 8), _tree(2, 64, 8), _tree(2, 32, 8), _tree(4, 32, 4),
                       _tree(4, 128, 4), _split(16, 16, 2, 8), _split(8, 16, 4, 8),
                       _cg(4, 64, 4)],
    ("float32", "N"): [],
    ("float64", "N"): [],
}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--layouts", default="T,N")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3, help="alternating per-call rounds per kind")
    p.add_argument("--out", default=".")
    p.add_argument("--set", type=int, default=1, help="the variants of run 1 or 2")
    args = p.parse_args(argv)
    lists = {1: VARIANTS, 2: VARIANTS2}[args.set]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}; stream blocking: "
          f"{getattr(s.q, 'blocking', None)}; ctypes plan calls: "
          f"{getattr(s.q, 'direct', None) is not None}", flush=True)
    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(24)

    def rand(shape: Any, dt: Any) -> Any:
        return (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1).astype(dt)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        if "ref_call_us" in row:
            print(f"{row['dtype']:8s} {row['layout']} {row['size']:5d} {row['variant']:44s} "
                  f"kernel {row['kernel_us']:7.1f} us ({row['ref_kernel_us'] / row['kernel_us']:.3f}x) "
                  f"call {row['call_us']:7.1f} us ({row['ref_call_us'] / row['call_us']:.3f}x) "
                  f"host {row['host_us']:5.1f} us {row['gbs_kernel']:5.0f} GB/s", flush=True)
        else:
            print(json.dumps(row), flush=True)

    for n, dt in ((8192, np.float64), (4096, np.float32)):  # the floor: device copy
        src = rand((n, n), dt)
        dst = cp.empty_like(src)
        t_copy = _time(cp, lambda: cp.copyto(dst, src), 10)
        emit({"what": "copy", "size": n, "dtype": np.dtype(dt).name,
              "GB/s": 2 * src.nbytes / t_copy / 1e9})
        del src, dst

    chosen: dict[str, Any] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]

    def ref_kernel(fn: Callable[[], Any], repeat: int) -> float:
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

    summary: list[str] = []
    for dt_name in args.dtypes.split(","):
        dt = np.dtype(dt_name)
        for n in (int(v) for v in args.sizes.split(",")):
            A, x = rand((n, n), dt), rand((n,), dt)
            y = cp.full((n,), np.nan, dt)
            nbytes = (n * n + 2 * n) * dt.itemsize
            tol = 1e-4 if dt == np.float32 else 1e-12
            for lay in args.layouts.split(","):
                trans = lay == "T"
                opA = A.T if trans else A
                want = opA.astype(cp.float64) @ x.astype(cp.float64)
                scale = float(cp.max(cp.abs(want)))
                ref = lambda: cp.matmul(opA, x, out=y)  # noqa: E731
                y.fill(np.nan)
                ref()
                ref_err = float(cp.max(cp.abs(y - want))) / scale
                t_ref = _time(cp, ref, args.repeat)
                t_ref_k = ref_kernel(ref, args.repeat)
                kind = Kind("gemv", dt_name, lay)
                s.calls.clear()
                profile_choice = str(default_choose(kind, {"M": n, "N": n}))
                todo = [profile_choice] + [v for v in lists[(dt_name, lay)] if v != profile_choice]
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
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    t_call = _time(cp, call, args.repeat)
                    row = {"dtype": dt_name, "layout": lay, "size": n, "variant": str(v),
                           "profile": i == 0, "call_us": t_call * 1e6, "kernel_us": t_k * 1e6,
                           "host_us": t_h * 1e6, "ref_call_us": t_ref * 1e6,
                           "ref_kernel_us": t_ref_k * 1e6, "rel_error": err,
                           "ref_rel_error": ref_err, "gbs_kernel": nbytes / t_k / 1e9,
                           "gbs_ref_kernel": nbytes / t_ref_k / 1e9, "repeat": args.repeat}
                    emit(row)
                    if not best or row["kernel_us"] < best["kernel_us"]:
                        best = row
                # per call in alternating rounds: cuBLAS, the run's best kernel, the profile's
                rounds: dict[str, list[float]] = {"cublas": [], "best": [], "profile": []}
                for _ in range(args.rounds if best else 0):
                    rounds["cublas"].append(_time(cp, ref, args.repeat) * 1e6)
                    for name, vtext in (("best", best["variant"]), ("profile", profile_choice)):
                        chosen["gemv"] = lookup_variant(kind, vtext)
                        s.calls.clear()
                        y.fill(np.nan)
                        call().result()
                        call().result()
                        e = float(cp.max(cp.abs(y - want))) / scale
                        assert e < tol, f"{vtext}: rel error {e}"
                        rounds[name].append(_time(cp, call, args.repeat) * 1e6)
                chosen.clear()
                s.calls.clear()
                if best:
                    med = {k: statistics.median(v) for k, v in rounds.items()}
                    emit({"what": "rounds", "dtype": dt_name, "layout": lay, "size": n,
                          "best": best["variant"], "profile": profile_choice, **rounds,
                          **{f"median_{k}": v for k, v in med.items()}})
                    line = (f"{dt_name:8s} {lay} {n:5d} best kernel {best['variant']:44s} "
                            f"{best['ref_kernel_us'] / best['kernel_us']:.3f}x | per call (rounds): best "
                            f"{med['cublas'] / med['best']:.3f}x, profile's {profile_choice} "
                            f"{med['cublas'] / med['profile']:.3f}x (cuBLAS {med['cublas']:.1f} us)")
                    summary.append(line)
                del want
            del A, x, y
            cp.get_default_memory_pool().free_all_blocks()

    print("\nsummary (kernel: cuBLAS kernel time / liftkit's; per call: cuBLAS call / liftkit's):",
          flush=True)
    for line in summary:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
