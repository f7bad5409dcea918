"""GEMV T on a CUDA GPU beside cuBLAS (CuPy), session 25 (helper H4): the one-kernel form whose
column blocks' row chunks meet through a counter per block (codelet column-groups-last, pattern
lastWrg) beside the shipped choices (tree, two-pass split, column-groups), at 4096² and 8192²
float32/float64 and 4096² complex64/complex128; then per call in alternating rounds: cuBLAS,
the run's best lastWrg kernel, the run's best kernel, the shipped profile's choice.

    python results/issue15/gemv25/gemv25.py --out DIR      # on the GPU machine

Method of gemv24.py: the run's kernels compiled ahead (blas.prebuild, NVRTC threads); per
variant the call plans cleared, y poisoned with NaN, two calls (general path, call plan), the
result checked against a float64 product (rel. error < 1e-4 single, < 1e-12 double; NaN fails),
then
- kernel: `repeat` calls queued behind a long CuPy product on the stream they run on (liftkit:
  its stream; cuBLAS: CuPy's), events around them: the kernels alone; min of 3;
- call: `repeat` calls back to back between CUDA events on CuPy's stream (host path
  included), median of 5 batches;
- host: Python µs per call while the stream is busy.
Every per-call round checks the result again (the counters must be zero after each launch).
Bytes: A, x and y once each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from blas_cuda import _kernel_and_host, _time  # noqa: E402


def _last(lanes: int, g: int, w: int, r: int) -> str:
    return f"column-groups-last(lanes={lanes},g={g},w={w},r={r})"


def _tree(lanes: int, g: int, w: int) -> str:
    return f"column-groups-tree(lanes={lanes},g={g},w={w})"


def _split(lanes: int, g: int, w: int, r: int) -> str:
    return f"column-groups-split(lanes={lanes},g={g},w={w},r={r})"


def _cg(lanes: int, g: int, w: int) -> str:
    return f"column-groups(lanes={lanes},g={g},w={w})"


L32 = [(8, 32, 4, 8), (8, 32, 4, 4), (8, 32, 4, 16), (16, 16, 4, 8), (16, 16, 4, 16),
       (32, 8, 4, 16), (32, 8, 4, 8), (4, 16, 8, 8), (4, 16, 8, 16), (4, 32, 8, 4), (4, 32, 8, 8),
       (2, 128, 8, 2), (2, 64, 8, 4), (2, 32, 8, 8), (8, 16, 4, 16), (4, 64, 8, 2), (8, 64, 4, 4)]
L64 = [(4, 16, 4, 8), (4, 32, 4, 8), (8, 32, 2, 8), (8, 16, 2, 8), (4, 64, 4, 4), (4, 32, 4, 16),
       (2, 128, 4, 2), (16, 16, 2, 8), (16, 16, 4, 8), (8, 32, 4, 8), (8, 32, 4, 4), (2, 64, 8, 4),
       (4, 16, 8, 8), (4, 64, 4, 2), (8, 16, 4, 16)]
VARIANTS = {
    ("float32", 4096): [_tree(2, 128, 8), _split(8, 32, 4, 8)] + [_last(*p) for p in L32],
    ("float32", 8192): [_split(32, 8, 4, 16)] + [_last(*p) for p in
                                                 [(32, 8, 4, 16), (8, 32, 4, 8), (16, 16, 4, 8),
                                                  (32, 8, 4, 8), (4, 16, 8, 8), (8, 32, 4, 16),
                                                  (16, 16, 4, 16), (4, 32, 8, 8), (8, 64, 4, 4)]],
    ("float64", 4096): [_tree(2, 128, 8), _tree(4, 128, 4)] + [_last(*p) for p in L64],
    ("float64", 8192): [_cg(4, 64, 4)] + [_last(*p) for p in
                                          [(4, 16, 4, 8), (4, 32, 4, 8), (8, 32, 2, 8),
                                           (16, 16, 4, 8), (8, 32, 4, 8), (4, 64, 4, 4),
                                           (8, 16, 2, 8), (4, 32, 4, 4)]],
    ("complex64", 4096): [_last(*p) for p in [(8, 32, 1, 8), (16, 16, 1, 8), (8, 16, 1, 16),
                                              (32, 8, 1, 16), (16, 32, 1, 4), (8, 64, 1, 4)]],
    ("complex128", 4096): [_last(*p) for p in [(8, 32, 1, 8), (8, 16, 1, 8), (16, 16, 1, 8),
                                               (8, 64, 1, 4), (8, 32, 1, 4)]],
}


# run 2 (CUDA's fence acq_rel instead of __threadfence's sc): wider blocks and up to 32 row
# chunks around run 1's best (float32 4096² (16,16,4,16) 0.938x, float64 (16,16,4,8) 0.980x)
VARIANTS2 = {
    ("float32", 4096): [_tree(2, 128, 8)] + [_last(*p) for p in
                                             [(16, 16, 4, 16), (16, 16, 4, 32), (32, 8, 4, 32),
                                              (16, 8, 4, 32), (32, 8, 4, 16), (16, 16, 4, 8),
                                              (8, 16, 8, 16), (16, 16, 8, 16), (32, 16, 4, 16),
                                              (32, 16, 4, 8), (16, 32, 4, 16), (16, 8, 4, 16),
                                              (8, 16, 4, 32), (32, 4, 4, 32), (8, 32, 4, 16),
                                              (32, 8, 2, 16), (32, 16, 2, 8), (8, 32, 4, 4)]],
    ("float64", 4096): [_tree(2, 128, 8)] + [_last(*p) for p in
                                             [(16, 16, 4, 8), (16, 16, 2, 8), (16, 16, 4, 16),
                                              (16, 8, 4, 16), (32, 8, 2, 16), (32, 8, 4, 8),
                                              (16, 32, 2, 8), (8, 32, 4, 4), (16, 16, 4, 4),
                                              (32, 8, 2, 8), (8, 16, 4, 8), (16, 8, 2, 16),
                                              (16, 16, 2, 16), (4, 16, 4, 8), (16, 32, 4, 4)]],
    ("float32", 8192): [_split(32, 8, 4, 16)] + [_last(*p) for p in
                                                 [(32, 8, 4, 16), (16, 16, 4, 8), (16, 16, 4, 16),
                                                  (32, 8, 4, 32), (16, 16, 4, 32), (32, 16, 4, 16),
                                                  (32, 8, 4, 8)]],
    ("float64", 8192): [_cg(4, 64, 4)] + [_last(*p) for p in
                                          [(8, 32, 4, 8), (16, 16, 4, 8), (16, 16, 4, 16),
                                           (32, 8, 2, 16), (16, 16, 2, 8), (8, 32, 4, 16),
                                           (16, 32, 4, 8)]],
}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="float32:4096,float64:4096,float32:8192,float64:8192,"
                                      "complex64:4096,complex128:4096")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5, help="alternating per-call rounds per case")
    p.add_argument("--out", default=".")
    p.add_argument("--set", type=int, default=1, help="the variants of run 1 or 2")
    args = p.parse_args(argv)
    lists = {1: VARIANTS, 2: VARIANTS2}[args.set]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant
    from liftkit.blas.prebuild import for_session

    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}", flush=True)
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cases.split(",")]
    cases = [c for c in cases if c in lists]
    chosen: dict[str, Any] = {}
    default_choose = s.choose
    todo: dict[tuple[str, int], list[str]] = {}
    jobs = []
    for dt_name, n in cases:
        kind = Kind("gemv", dt_name, "T")
        profile_choice = str(default_choose(kind, {"M": n, "N": n}))
        todo[(dt_name, n)] = [profile_choice] + [v for v in lists[(dt_name, n)]
                                                 if v != profile_choice]
        jobs += [(kind, lookup_variant(kind, v)) for v in todo[(dt_name, n)]]
    t0 = time.perf_counter()
    pre = for_session(s, jobs)
    print(f"compiling {len(jobs)} variants ahead", flush=True)
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]

    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(25)

    def rand(shape: Any, dt: Any) -> Any:
        re = cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1
        if np.dtype(dt).kind == "c":
            re = re + 1j * (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1)
        return re.astype(dt)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        if "ref_call_us" in row:
            print(f"{row['dtype']:10s} T {row['size']:5d} {row['variant']:46s} "
                  f"kernel {row['kernel_us']:7.1f} us ({row['ref_kernel_us'] / row['kernel_us']:.3f}x) "
                  f"call {row['call_us']:7.1f} us ({row['ref_call_us'] / row['call_us']:.3f}x) "
                  f"host {row['host_us']:5.1f} us {row['gbs_kernel']:5.0f} GB/s", flush=True)
        else:
            print(json.dumps(row), flush=True)

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
    with pre:
        for dt_name, n in cases:
            dt = np.dtype(dt_name)
            A, x = rand((n, n), dt), rand((n,), dt)
            y = cp.full((n,), np.nan, dt)
            nbytes = (n * n + 2 * n) * dt.itemsize
            tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-12
            opA = A.T
            wide = cp.complex128 if dt.kind == "c" else cp.float64
            want = opA.astype(wide) @ x.astype(wide)
            scale = float(cp.max(cp.abs(want)))
            ref = lambda: cp.matmul(opA, x, out=y)  # noqa: E731
            y.fill(np.nan)
            ref()
            ref_err = float(cp.max(cp.abs(y - want))) / scale
            t_ref = _time(cp, ref, args.repeat)
            t_ref_k = ref_kernel(ref, args.repeat)
            kind = Kind("gemv", dt_name, "T")
            call = lambda: s.gemv(A, x, y, trans=True)  # noqa: E731
            best: dict[str, Any] = {}
            best_last: dict[str, Any] = {}
            for i, vtext in enumerate(todo[(dt_name, n)]):
                v = lookup_variant(kind, vtext)
                pre.ready(kind, v)
                chosen["gemv"] = v
                s.calls.clear()  # a plan keeps its kind's kernel: each variant its own
                try:
                    y.fill(np.nan)
                    call().result()
                    y.fill(np.nan)
                    call().result()  # the planned path
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"{dt_name} T {n} {v}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160]}", flush=True)
                    continue
                err = float(cp.max(cp.abs(y - want))) / scale
                if not err < tol:  # NaN (an unwritten element) fails too
                    print(f"{dt_name} T {n} {v}: WRONG (rel error {err:.1e})", flush=True)
                    continue
                with pre.quiet:
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    t_call = _time(cp, call, args.repeat)
                y.fill(np.nan)
                call().result()  # after 300+ launches on the same counters: still right
                err2 = float(cp.max(cp.abs(y - want))) / scale
                if not err2 < tol:
                    print(f"{dt_name} T {n} {v}: WRONG after timing (rel error {err2:.1e})",
                          flush=True)
                    continue
                row = {"dtype": dt_name, "layout": "T", "size": n, "variant": str(v),
                       "profile": i == 0, "call_us": t_call * 1e6, "kernel_us": t_k * 1e6,
                       "host_us": t_h * 1e6, "ref_call_us": t_ref * 1e6,
                       "ref_kernel_us": t_ref_k * 1e6, "rel_error": err,
                       "ref_rel_error": ref_err, "gbs_kernel": nbytes / t_k / 1e9,
                       "gbs_ref_kernel": nbytes / t_ref_k / 1e9, "repeat": args.repeat}
                emit(row)
                if not best or row["kernel_us"] < best["kernel_us"]:
                    best = row
                if "last" in row["variant"] and (not best_last
                                                 or row["kernel_us"] < best_last["kernel_us"]):
                    best_last = row
            # per call in alternating rounds: cuBLAS, the best lastWrg, the best, the profile's
            named = [("last", best_last.get("variant")), ("best", best.get("variant")),
                     ("profile", todo[(dt_name, n)][0])]
            named = [(k, v) for k, v in named if v]
            rounds: dict[str, list[float]] = {"cublas": [], **{k: [] for k, _ in named}}
            for _ in range(args.rounds if best else 0):
                rounds["cublas"].append(_time(cp, ref, args.repeat) * 1e6)
                for name, vtext in named:
                    chosen["gemv"] = lookup_variant(kind, vtext)
                    s.calls.clear()
                    y.fill(np.nan)
                    call().result()
                    call().result()
                    e = float(cp.max(cp.abs(y - want))) / scale
                    assert e < tol, f"{vtext}: rel error {e}"
                    with pre.quiet:
                        rounds[name].append(_time(cp, call, args.repeat) * 1e6)
            chosen.clear()
            s.calls.clear()
            if best:
                med = {k: statistics.median(v) for k, v in rounds.items()}
                emit({"what": "rounds", "dtype": dt_name, "layout": "T", "size": n,
                      **{f"variant_{k}": v for k, v in named}, **rounds,
                      **{f"median_{k}": v for k, v in med.items()}})
                parts = [f"{k} {med['cublas'] / med[k]:.3f}x" for k, _ in named]
                summary.append(
                    f"{dt_name:10s} T {n:5d} best kernel {best['variant']} "
                    f"{best['ref_kernel_us'] / best['kernel_us']:.3f}x; best lastWrg "
                    f"{best_last.get('variant')} "
                    f"{(best_last['ref_kernel_us'] / best_last['kernel_us']) if best_last else 0:.3f}x | "
                    f"per call (rounds, cuBLAS {med['cublas']:.1f} us): " + ", ".join(parts)
                    + f" [profile {todo[(dt_name, n)][0]}]")
            del A, x, y, want
            cp.get_default_memory_pool().free_all_blocks()
    print(f"\n{len(jobs)} variants, {pre.compiled} compiled ahead, {time.perf_counter() - t0:.1f} s",
          flush=True)
    print("summary (kernel: cuBLAS kernel time / liftkit's; per call: cuBLAS call / liftkit's):",
          flush=True)
    for line in summary:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
