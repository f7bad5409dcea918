"""GEMV T on a CUDA GPU beside cuBLAS (CuPy), session 25, helper H8: the one-kernel lastWrg form
(codelet column-groups-last) built for every work-item slot of a multiprocessor (b > 0:
`__launch_bounds__(lanes·g, b)`, 32 registers at 256 work-items where the unbounded kernel took
34: 6 groups of 256 a multiprocessor, 792 slots for 1024 work-groups) beside the same shapes
unbounded, the shipped choices and the two-kernel split of the same work-groups, at 4096² and
8192² float32/float64; then per call in alternating rounds: cuBLAS, the run's best lastWrg
kernel, the run's best kernel, the shipped profile's choice.

    python results/issue15/gemv25b/gemv25b.py --out DIR      # on the GPU machine

The method and harness of gemv25.py (H4): the run's kernels compiled ahead (blas.prebuild,
NVRTC threads); per variant the call plans cleared, y poisoned with NaN, two calls (general
path, call plan), the result checked against a float64 product (rel. error < 1e-4 single,
< 1e-12 double; NaN fails), then
- kernel: `repeat` calls queued behind a long CuPy product on the stream they run on (liftkit:
  its stream; cuBLAS: CuPy's), events around them: the kernels alone; min of 3;
- call: `repeat` calls back to back between CUDA events on CuPy's stream (host path
  included), median of 5 batches;
- host: Python µs per call while the stream is busy.
Every per-call round checks the result again (the counters must be zero after each launch).
Each lastWrg kernel's registers per work-item (NVRTC through CuPy, this card) go to regs.jsonl.
Then the profile's and the run's best kernel launched through CuPy alone ("raw": the same
source, cuLaunchKernel on CuPy's stream, no liftkit host path; checked first), timed as cuBLAS
is, and the kernels cuBLAS runs for the product (PyTorch's profiler: cublas_*.json).
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


def _last(lanes: int, g: int, w: int, r: int, b: int = 0, c: int = 0) -> str:
    return (f"column-groups-last(lanes={lanes},g={g},w={w},r={r}" + (f",b={b}" if b else "")
            + (f",c={c}" if c else "") + ")")


def _split(lanes: int, g: int, w: int, r: int) -> str:
    return f"column-groups-split(lanes={lanes},g={g},w={w},r={r})"


def _cg(lanes: int, g: int, w: int) -> str:
    return f"column-groups(lanes={lanes},g={g},w={w})"


# (lanes, g, w, r, b): b = 2048 / (lanes·g), every slot of a multiprocessor; the shapes of
# gemv25's best with it, and without where that is the question (the split's same work-groups
# ran 28.9 us against lastWrg's 30.7 in gemv25 run 1: the protocol, or the 34 registers?)
VARIANTS = {
    ("float32", 4096): [_split(8, 32, 4, 8)] + [_last(*p) for p in
                                                [(16, 16, 4, 16, 8), (32, 8, 4, 16, 8),
                                                 (16, 8, 4, 16, 16), (16, 8, 4, 32, 16),
                                                 (8, 32, 4, 8, 0), (8, 32, 4, 8, 8),
                                                 (16, 16, 4, 8, 8), (8, 16, 4, 16, 16),
                                                 (8, 16, 4, 32, 16), (32, 4, 4, 32, 16),
                                                 (16, 16, 8, 16, 8), (32, 8, 2, 16, 8),
                                                 (32, 16, 4, 16, 4), (32, 8, 4, 16, 0),
                                                 (16, 16, 4, 32, 8), (8, 32, 4, 16, 8)]],
    ("float64", 4096): [_last(*p) for p in [(16, 16, 4, 8, 8), (16, 16, 4, 16, 8),
                                            (16, 16, 2, 8, 0), (16, 16, 2, 8, 8),
                                            (16, 16, 2, 16, 8), (32, 8, 2, 16, 8),
                                            (8, 32, 4, 8, 8), (16, 8, 4, 16, 16),
                                            (16, 8, 2, 16, 16), (8, 16, 4, 16, 16),
                                            (16, 8, 4, 32, 16)]],
    ("float32", 8192): [_last(*p) for p in [(16, 16, 4, 8, 8), (32, 8, 4, 16, 8),
                                            (16, 8, 4, 16, 16), (16, 16, 4, 16, 8),
                                            (8, 32, 4, 8, 8)]],
    ("float64", 8192): [_last(*p) for p in [(16, 16, 4, 8, 8), (8, 32, 4, 8, 8),
                                            (16, 16, 2, 8, 0), (16, 8, 4, 16, 16)]],
}


# run 2 (lastWrg b 1: a column block's r ≤ 8 chunks as one thread-block cluster, the partials
# met in distributed shared memory, no counter round trip): the cluster forms of run 1's best
# shapes (lanes, g, w, r, b, c), beside the profile's choice (run 1's best after its commit)
VARIANTS2 = {
    ("float32", 4096): [_last(*p) for p in [(16, 16, 4, 8, 0, 1), (16, 16, 4, 8, 8, 1),
                                            (8, 32, 4, 8, 0, 1), (8, 32, 4, 8, 8, 1),
                                            (16, 8, 4, 8, 0, 1), (16, 8, 4, 8, 16, 1),
                                            (8, 16, 4, 8, 0, 1), (8, 16, 4, 8, 16, 1),
                                            (32, 8, 4, 8, 0, 1), (16, 16, 2, 8, 0, 1),
                                            (32, 8, 2, 8, 0, 1), (16, 16, 4, 4, 0, 1),
                                            (16, 16, 4, 8, 0, 0)]],
    ("float64", 4096): [_last(*p) for p in [(8, 32, 4, 8, 8, 1), (16, 16, 4, 8, 0, 1),
                                            (16, 16, 4, 8, 8, 1), (16, 16, 2, 8, 0, 1),
                                            (8, 16, 4, 8, 0, 1), (16, 8, 4, 8, 16, 1),
                                            (16, 16, 4, 8, 0, 0)]],
    ("float32", 8192): [_last(*p) for p in [(16, 16, 4, 8, 0, 1), (16, 16, 4, 8, 8, 1),
                                            (8, 32, 4, 8, 8, 1)]],
    ("float64", 8192): [_last(*p) for p in [(8, 32, 4, 8, 8, 1), (16, 16, 4, 8, 0, 1)]],
}


def _raw_launch(cp: Any, dt_name: str, vtext: str, A: Any, x: Any, y: Any) -> Callable[[], Any]:
    """The variant's one CUDA kernel (y = Aᵀx: α = 1, β = 0 over a zero y) launched through
    CuPy (cuLaunchKernel on CuPy's stream, no liftkit host path, no events between launches):
    what the kernel alone costs back to back, beside the session's planned calls."""
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen.compiler import CompileOptions, compile_program

    kind = Kind("gemv", dt_name, "T")
    c = compile_program(derive(kind, lookup_variant(kind, vtext)).final, CompileOptions(dialect="cuda"))
    if len(c.kernels) != 1:
        raise ValueError(f"{len(c.kernels)} kernels")
    k = c.kernels[0]
    n = int(A.shape[0])
    env = {"M": n, "N": n}
    dt = np.dtype(dt_name)
    zeros = cp.zeros((n,), dt)
    bufs = {b.name: b for b in c.buffers}
    args: list[Any] = []
    for a in k.args:
        if a.kind == "size":
            args.append(np.int32(a.size.eval(env)))
        elif a.kind == "scalar":
            args.append(dt.type(1.0 if a.name == "alpha" else 0.0))
        else:
            b = bufs[a.buffer]
            named = {"input:A": A, "input:x": x, "input:y": zeros, "output": y}
            args.append(named.get(b.name) if b.name in named
                        else cp.zeros((int(b.nbytes.eval(env)),), cp.uint8))
    block = tuple(k.ndrange.local_size) + (1,) * (3 - len(k.ndrange.local_size))
    glob = [int(g.eval(env)) for g in k.ndrange.global_size]
    grid = tuple(gl // bl for gl, bl in zip(glob, block)) + (1,) * (3 - len(glob))
    fn = cp.RawKernel(k.source, k.function, options=tuple(k.build_options), backend="nvrtc")
    return lambda: fn(grid, block, tuple(args))


def _registers(cp: Any, dt_name: str, vtext: str) -> dict[str, Any]:
    """The variant's CUDA kernel built by NVRTC through CuPy on this card: registers per
    work-item, local (spill) bytes, the work-items a block may have."""
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen.compiler import CompileOptions, compile_program

    kind = Kind("gemv", dt_name, "T")
    k = compile_program(derive(kind, lookup_variant(kind, vtext)).final,
                        CompileOptions(dialect="cuda")).kernels[0]
    f = cp.RawKernel(k.source, k.function, options=tuple(k.build_options), backend="nvrtc")
    return {"dtype": dt_name, "variant": vtext, "regs": f.num_regs,
            "local_bytes": f.local_size_bytes, "max_threads": f.max_threads_per_block}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="float32:4096,float64:4096,float32:8192,float64:8192")
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
        mine = [str(lookup_variant(kind, v)) for v in lists[(dt_name, n)]]
        todo[(dt_name, n)] = [profile_choice] + [v for v in mine if v != profile_choice]
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
            # the profile's and the best kernel launched through CuPy alone (no liftkit host path)
            for vtext in dict.fromkeys([todo[(dt_name, n)][0], best.get("variant")]):
                if not vtext:
                    continue
                try:
                    raw = _raw_launch(cp, dt_name, vtext, A, x, y)
                    y.fill(np.nan)
                    raw()
                    e = float(cp.max(cp.abs(y - want))) / scale
                    if not e < tol:
                        print(f"{dt_name} T {n} raw {vtext}: WRONG (rel error {e:.1e})", flush=True)
                        continue
                    t_raw = ref_kernel(raw, args.repeat)
                    t_raw_call = _time(cp, raw, args.repeat)
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"{dt_name} T {n} raw {vtext}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160]}", flush=True)
                    continue
                emit({"what": "raw", "dtype": dt_name, "layout": "T", "size": n, "variant": vtext,
                      "raw_kernel_us": t_raw * 1e6, "raw_call_us": t_raw_call * 1e6,
                      "cublas_kernel_us": t_ref_k * 1e6, "x_kernel": t_ref_k / t_raw})
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
    with open(out_dir / "regs.jsonl", "w") as regs:  # last: the timings come first
        for dt_name, n in cases:
            if n != 4096:
                continue
            for vtext in todo[(dt_name, n)]:
                if "last" not in vtext:
                    continue
                try:
                    row = _registers(cp, dt_name, vtext)
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"registers of {vtext}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160]}", flush=True)
                    continue
                regs.write(json.dumps(row) + "\n")
                print(f"{dt_name:8s} {vtext:52s} {row['regs']:3d} registers, "
                      f"{row['local_bytes']} B local", flush=True)
    try:
        _cublas_kernels(out_dir)
    except Exception as err:  # noqa: BLE001 - a diagnostic only
        print(f"cuBLAS kernels: {type(err).__name__}: {str(err).splitlines()[0][:160]}", flush=True)
    return 0


def _cublas_kernels(out_dir: Path) -> None:
    """Which kernels cuBLAS runs for y = Aᵀx at 4096² (PyTorch's profiler, CUPTI: names, grids,
    blocks, registers, µs), as a Chrome trace in out_dir and one line per kernel."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for dt in (torch.float32, torch.float64):
        A = torch.rand((4096, 4096), dtype=dt, device="cuda")
        x = torch.rand((4096,), dtype=dt, device="cuda")
        for _ in range(3):
            torch.mv(A.t(), x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                torch.mv(A.t(), x)
            torch.cuda.synchronize()
        name = f"cublas_{str(dt).split('.')[-1]}.json"
        prof.export_chrome_trace(str(out_dir / name))
        events = json.load(open(out_dir / name))["traceEvents"]
        for e in events:
            if e.get("cat") == "kernel":
                a = e.get("args", {})
                print(f"cuBLAS {dt}: {e['name'][:90]} grid {a.get('grid')} block {a.get('block')} "
                      f"regs {a.get('registers per thread')} {e.get('dur')} us", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
