"""GEMV on a CUDA GPU beside cuBLAS (CuPy), session 26, helper H3: GEMV T's tree form with
work-groups beyond the code generator's 256 work-items (k = 1: `wrgItems lanes·g`, CUDA
`__launch_bounds__(lanes·g, 1)`, cuBLAS's 512-thread blocks) and with each step's rows read a
step ahead (a = 1: a software-pipelined loop), and GEMV N's lane-row form with u private
accumulators (row-groups u), beside the profile's choices, at 4096² and 8192²; then per call
in alternating rounds: cuBLAS, the run's best kernel, the profile's choice.

    python results/issue15/gemv26/gemv26.py --out DIR          # on the GPU machine
    python results/issue15/gemv26/gemv26.py --check            # here: derive + NVRTC each
                                                               # variant, registers and spills

The method of gemv25/gemv25b/gemv25c (their harness, for both layouts): the run's kernels
compiled ahead (blas.prebuild, NVRTC threads); per variant the call plans cleared, y poisoned
with NaN, two calls (general path, call plan), the result checked against a float64 product
(rel. error < 1e-4 single, < 1e-12 double; NaN fails), then
- kernel: `repeat` calls queued behind a long CuPy product on the stream they run on (liftkit:
  its stream; cuBLAS: CuPy's), events around them: the kernels alone; min of 3;
- call: `repeat` calls back to back between CUDA events on CuPy's stream (host path
  included), median of 5 batches;
then the result checked again (every kernel compiled before the first timing). GEMV T: the best
and the profile's kernel also launched through CuPy alone ("raw": no liftkit host path, timed
as cuBLAS is). Per case, `rounds` alternating per-call rounds of cuBLAS, the run's best kernel
and the profile's choice (each checked). Bytes: A, x and y once each.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
_spec = importlib.util.spec_from_file_location(  # gemv25b's raw launch of a GEMV T kernel
    "gemv25b", Path(__file__).resolve().parents[1] / "gemv25b" / "gemv25b.py")
g25b = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]


def _tree(lanes: int, g: int, w: int, u: int = 1, k: int = 0, a: int = 0, f: int = 2) -> str:
    return (f"column-groups-tree(lanes={lanes},g={g},w={w}" + (f",u={u}" if u > 1 else "")
            + (",k=1" if k else "") + (",a=1" if a else "") + (f",f={f}" if f != 2 else "") + ")")


def _rows(lanes: int, g: int, w: int, u: int = 1) -> str:
    return f"row-groups(lanes={lanes},g={g},w={w}" + (f",u={u}" if u > 1 else "") + ")"


def _group_rows(L: int, w: int) -> str:
    return f"group-rows(L={L},w={w})"


# (lanes, g, w, u, k, a). float32 T 4096²: 32 columns a work-group (128 groups, one a
# multiprocessor, as cuBLAS) in 512 work-items (k = 1: ≤ 128 registers; NVRTC 13 here:
# (8,64,4,8) 96, (16,32,2,16) 98, (32,16,1,16) 71, (4,128,8,4) 96) or 1024 (16,64,2,8), rows a
# step ahead (a = 1: (8,32,4,8) 144 registers, (8,32,4,4) 86, (8,64,4,4,k) 127, (8,64,4,8,k)
# 128); 16 columns a group (256 groups) beside them
VARIANTS: dict[tuple[str, str, int], list[str]] = {
    ("float32", "T", 4096): [_tree(*p) for p in [
        (8, 64, 4, 8, 1), (8, 64, 4, 4, 1), (16, 32, 2, 16, 1), (16, 32, 2, 8, 1),
        (32, 16, 1, 16, 1), (4, 128, 8, 4, 1), (4, 128, 8, 2, 1), (16, 64, 2, 8, 1),
        (8, 64, 4, 4, 1, 1), (8, 64, 4, 8, 1, 1), (16, 32, 2, 8, 1, 1), (32, 16, 1, 16, 1, 1),
        (4, 128, 8, 2, 1, 1), (8, 32, 4, 8, 0, 1), (8, 32, 4, 4, 0, 1), (4, 64, 8, 4, 0, 1),
        (4, 64, 8, 2, 0, 1), (8, 64, 2, 8, 1), (4, 128, 4, 4, 1), (8, 32, 2, 8, 0, 1),
        (8, 32, 4, 16), (4, 64, 8, 8)]],
    ("float64", "T", 4096): [_tree(*p) for p in [
        (8, 64, 4, 4, 1), (8, 64, 4, 2, 1), (4, 128, 4, 4, 1), (4, 128, 4, 2, 1),
        (16, 32, 2, 8, 1), (16, 32, 2, 4, 1), (32, 16, 1, 16, 1), (8, 64, 2, 8, 1),
        (8, 64, 4, 2, 1, 1), (4, 128, 4, 2, 1, 1), (16, 32, 2, 4, 1, 1),
        (4, 64, 4, 4, 0, 1), (8, 32, 4, 4, 0, 1), (8, 32, 2, 8, 0, 1), (4, 64, 4, 2, 0, 1),
        (8, 32, 4, 8), (8, 32, 4, 4)]],
    ("float32", "T", 8192): [_tree(*p) for p in [
        (8, 64, 4, 8, 1), (16, 32, 2, 16, 1), (8, 64, 4, 4, 1, 1), (8, 32, 4, 8, 0, 1),
        (4, 64, 8, 4, 0, 1), (32, 16, 1, 16, 1), (4, 64, 8, 4), (8, 32, 4, 16)]],
    ("float64", "T", 8192): [_tree(*p) for p in [
        (8, 64, 4, 4, 1), (16, 32, 2, 8, 1), (8, 64, 4, 2, 1, 1), (4, 64, 4, 4, 0, 1),
        (8, 32, 4, 4, 0, 1), (4, 128, 4, 4, 1), (4, 64, 4, 4)]],
    # GEMV N at the read rate: one row per group of L (the profile's), lane rows with u
    # accumulators (row-groups u: u double2 / double4 loads in flight a work-item)
    ("float64", "N", 4096): [_group_rows(64, 2), _group_rows(256, 2), _group_rows(128, 4)]
    + [_rows(*p) for p in [(32, 8, 2), (32, 8, 2, 2), (32, 8, 2, 4), (32, 4, 2, 4), (32, 4, 2, 8),
                           (32, 8, 4, 2), (32, 4, 4, 4), (16, 16, 2, 4), (32, 8, 2, 8),
                           (32, 4, 4, 2)]],
    ("float64", "N", 8192): [_group_rows(256, 2), _group_rows(64, 2)]
    + [_rows(*p) for p in [(32, 8, 2, 4), (32, 4, 2, 8), (32, 8, 4, 2), (32, 4, 4, 4),
                           (32, 8, 2, 8)]],
}

# run 2: the tree's fan-in f (4 or 8 row groups a step: 2-3 barriers where pairs take 6 at
# g = 64) on run 1's fastest 512-work-item shapes, beside them
VARIANTS2: dict[tuple[str, str, int], list[str]] = {
    ("float32", "T", 4096): [_tree(*p) for p in [
        (8, 64, 4, 4, 1), (8, 64, 4, 4, 1, 0, 4), (8, 64, 4, 4, 1, 0, 8), (8, 64, 4, 8, 1, 0, 8),
        (8, 64, 4, 8, 1, 0, 4), (4, 64, 8, 8, 0, 0, 8), (4, 64, 8, 8, 0, 0, 4),
        (16, 16, 2, 16, 0, 0, 4), (8, 16, 4, 16, 0, 0, 4), (32, 16, 1, 16, 1, 0, 4),
        (8, 64, 4, 4, 1, 1, 8), (4, 64, 8, 4, 0, 0, 8)]],
    ("float64", "T", 4096): [_tree(*p) for p in [
        (16, 32, 2, 8, 1), (8, 64, 4, 2, 1, 0, 8), (8, 64, 4, 2, 1, 0, 4), (8, 64, 4, 4, 1, 0, 8),
        (32, 16, 1, 16, 1, 0, 4), (4, 64, 4, 4, 0, 0, 8), (8, 64, 4, 2, 1, 1, 8),
        (16, 16, 2, 8, 0, 0, 4)]],
    ("float64", "N", 4096): [_group_rows(256, 2)],
    ("float32", "T", 8192): [_tree(*p) for p in [(8, 64, 4, 4, 1, 0, 8), (4, 64, 8, 4, 0, 0, 8)]],
    ("float64", "T", 8192): [_tree(*p) for p in [(8, 64, 4, 4, 1, 0, 8), (4, 64, 4, 4, 0, 0, 8),
                                                 (8, 64, 4, 2, 1, 0, 8)]],
    ("float64", "N", 8192): [_group_rows(128, 2)],
}

CASES = "float32:T:4096,float64:T:4096,float64:N:4096,float32:T:8192,float64:T:8192,float64:N:8192"


def _time_nowait(cp: Any, fn: Any, repeat: int, batches: int = 5) -> tuple[float, bool]:
    """Median seconds per call over `batches` batches of `repeat` calls between two events on
    CuPy's stream, the end event recorded right after the last call is enqueued, as for
    cuBLAS (blas_cuda._time waits for a liftkit call's result on the host first, so its end
    event also times the host's wake-up and the record's submission, once per batch). The
    session's stream is blocking: the legacy default stream's end event waits for its work.
    Also whether every batch's last call had finished when its end event had (it must)."""
    import statistics as st

    fn()
    times, done = [], True
    for _ in range(batches):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Device().synchronize()
        stream = cp.cuda.get_current_stream()
        start.record(stream)
        for _ in range(repeat):
            last = fn()
        end.record(stream)
        end.synchronize()
        done = done and (last.done() if hasattr(last, "done") else True)
        if hasattr(last, "result"):
            last.result()
        cp.cuda.Device().synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3 / repeat)
    return st.median(times), done


def _kernel_of(dt_name: str, lay: str, vtext: str) -> Any:
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen.compiler import CompileOptions, compile_program

    kind = Kind("gemv", dt_name, lay)
    return compile_program(derive(kind, lookup_variant(kind, vtext)).final,
                           CompileOptions(dialect="cuda")).kernels


def check(cases: list[tuple[str, str, int]], lists: dict[tuple[str, str, int], list[str]]) -> int:
    """Here (no GPU): every variant derives, compiles with NVRTC for sm_90a; its registers and
    spills as ptxas reports them."""
    from liftkit.backends.cuda.nvrtc import compile_cuda

    bad = 0
    for case in cases:
        for vtext in lists[case]:
            try:
                for k in _kernel_of(case[0], case[1], vtext):
                    out = compile_cuda(k.source, "sm_90a",
                                       list(k.build_options or []) + ["--ptxas-options=-v"])
                    info = " ".join(l.split(":", 1)[-1].strip() for l in (out.log or "").splitlines()
                                    if "Used" in l or "spill" in l)
                    print(f"{case} {vtext:56s} {k.ndrange.local_size} {info}", flush=True)
            except Exception as err:  # noqa: BLE001 - report and go on
                bad += 1
                print(f"{case} {vtext}: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default=CASES)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5, help="alternating per-call rounds per case")
    p.add_argument("--out", default=".")
    p.add_argument("--check", action="store_true", help="derive and compile only (no GPU)")
    p.add_argument("--set", type=int, default=1, help="the variants of run 1 or 2")
    args = p.parse_args(argv)
    lists = VARIANTS2 if args.set == 2 else VARIANTS
    cases = [(c.split(":")[0], c.split(":")[1], int(c.split(":")[2])) for c in args.cases.split(",")]
    cases = [c for c in cases if c in lists]
    if args.check:
        return check(cases, lists)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp
    from blas_cuda import _kernel_and_host, _time

    _spec.loader.exec_module(g25b)  # type: ignore[union-attr]

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant
    from liftkit.blas.prebuild import for_session

    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}", flush=True)
    chosen: dict[str, Any] = {}
    default_choose = s.choose
    todo: dict[tuple[str, str, int], list[str]] = {}
    jobs = []
    for dt_name, lay, n in cases:
        kind = Kind("gemv", dt_name, lay)
        profile_choice = str(default_choose(kind, {"M": n, "N": n}))
        mine = [str(lookup_variant(kind, v)) for v in lists[(dt_name, lay, n)]]
        todo[(dt_name, lay, n)] = [profile_choice] + [v for v in mine if v != profile_choice]
        jobs += [(kind, lookup_variant(kind, v)) for v in todo[(dt_name, lay, n)]]
    t0 = time.perf_counter()
    pre = for_session(s, jobs)
    print(f"compiling {len(jobs)} variants ahead", flush=True)
    for kind, v in jobs:  # all of them before any timing: no compile beside a timed host path
        pre.ready(kind, v)
    print(f"compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]

    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(26)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        if "ref_call_us" in row:
            print(f"{row['dtype']:8s} {row['layout']} {row['size']:5d} {row['variant']:52s} "
                  f"kernel {row['kernel_us']:7.2f} us ({row['ref_kernel_us'] / row['kernel_us']:.3f}x) "
                  f"call {row['call_us']:7.2f} us ({row['ref_call_us'] / row['call_us']:.3f}x) "
                  f"{row['gbs_kernel']:5.0f} GB/s", flush=True)
        else:
            print(json.dumps(row), flush=True)

    def ref_kernel(fn: Any, repeat: int) -> float:
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
        for dt_name, lay, n in cases:
            dt = np.dtype(dt_name)
            trans = lay == "T"
            A = (cp.random.random_sample((n, n), dtype=cp.float64) * 2 - 1).astype(dt)
            x = (cp.random.random_sample((n,), dtype=cp.float64) * 2 - 1).astype(dt)
            y = cp.full((n,), np.nan, dt)
            nbytes = (n * n + 2 * n) * dt.itemsize
            tol = 1e-4 if dt == np.float32 else 1e-12
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
            call = lambda: s.gemv(A, x, y, trans=trans)  # noqa: E731
            best: dict[str, Any] = {}
            for i, vtext in enumerate(todo[(dt_name, lay, n)]):
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
                    print(f"{dt_name} {lay} {n} {v}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160]}", flush=True)
                    continue
                err = float(cp.max(cp.abs(y - want))) / scale
                if not err < tol:  # NaN (an unwritten element) fails too
                    print(f"{dt_name} {lay} {n} {v}: WRONG (rel error {err:.1e})", flush=True)
                    continue
                with pre.quiet:
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    t_call = _time(cp, call, args.repeat)
                y.fill(np.nan)
                call().result()
                err2 = float(cp.max(cp.abs(y - want))) / scale
                if not err2 < tol:
                    print(f"{dt_name} {lay} {n} {v}: WRONG after timing (rel error {err2:.1e})",
                          flush=True)
                    continue
                row = {"dtype": dt_name, "layout": lay, "size": n, "variant": str(v),
                       "profile": i == 0, "call_us": t_call * 1e6, "kernel_us": t_k * 1e6,
                       "host_us": t_h * 1e6, "ref_call_us": t_ref * 1e6,
                       "ref_kernel_us": t_ref_k * 1e6, "rel_error": err,
                       "ref_rel_error": ref_err, "gbs_kernel": nbytes / t_k / 1e9,
                       "gbs_ref_kernel": nbytes / t_ref_k / 1e9, "repeat": args.repeat}
                emit(row)
                if not best or row["kernel_us"] < best["kernel_us"]:
                    best = row
            # T: the best and the profile's kernel launched through CuPy alone (cuLaunchKernel on
            # CuPy's stream, no liftkit host path): the kernel's own per-call time, as cuBLAS's
            for vtext in dict.fromkeys([todo[(dt_name, lay, n)][0], best.get("variant")]):
                if lay != "T" or not vtext:
                    continue
                try:
                    raw = g25b._raw_launch(cp, dt_name, vtext, A, x, y)
                    y.fill(np.nan)
                    raw()
                    e = float(cp.max(cp.abs(y - want))) / scale
                    if not e < tol:
                        print(f"{dt_name} T {n} raw {vtext}: WRONG (rel error {e:.1e})", flush=True)
                        continue
                    t_raw, t_raw_call = ref_kernel(raw, args.repeat), _time(cp, raw, args.repeat)
                except Exception as err:  # noqa: BLE001 - a diagnostic only
                    print(f"{dt_name} T {n} raw {vtext}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160]}", flush=True)
                    continue
                emit({"what": "raw", "dtype": dt_name, "layout": "T", "size": n, "variant": vtext,
                      "raw_kernel_us": t_raw * 1e6, "raw_call_us": t_raw_call * 1e6,
                      "cublas_kernel_us": t_ref_k * 1e6, "cublas_call_us": t_ref * 1e6})
            # per call in alternating rounds: cuBLAS, the run's best kernel, the profile's
            named = [("best", best.get("variant")), ("profile", todo[(dt_name, lay, n)][0])]
            named = [(k, v) for k, v in named if v]
            rounds: dict[str, list[float]] = {"cublas": [], **{k: [] for k, _ in named}}
            if args.set == 2:  # the end event recorded at once, as for cuBLAS; 100 calls
                rounds.update({f"{k}_{m}": [] for k, _ in named for m in ("nowait", "r100")})
                rounds["cublas_r100"] = []
            done_all = True
            for _ in range(args.rounds if best else 0):
                rounds["cublas"].append(_time(cp, ref, args.repeat) * 1e6)
                if args.set == 2:
                    rounds["cublas_r100"].append(_time(cp, ref, 100) * 1e6)
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
                        if args.set == 2:
                            t_nw, done = _time_nowait(cp, call, args.repeat)
                            done_all = done_all and done
                            rounds[f"{name}_nowait"].append(t_nw * 1e6)
                            rounds[f"{name}_r100"].append(_time(cp, call, 100) * 1e6)
            chosen.clear()
            s.calls.clear()
            if best:
                med = {k: statistics.median(v) for k, v in rounds.items()}
                emit({"what": "rounds", "dtype": dt_name, "layout": lay, "size": n,
                      **{f"variant_{k}": v for k, v in named}, **rounds,
                      **{f"median_{k}": v for k, v in med.items()}, "nowait_done": done_all})
                parts = [f"{k} {med['cublas'] / med[k]:.3f}x" for k, _ in named]
                if args.set == 2:
                    parts += [f"{k} nowait {med['cublas'] / med[k + '_nowait']:.3f}x, 100 calls "
                              f"{med['cublas_r100'] / med[k + '_r100']:.3f}x" for k, _ in named]
                    parts.append("(the last call done at the end event)" if done_all
                                 else "(NOT done at the end event: nowait invalid)")
                summary.append(
                    f"{dt_name:8s} {lay} {n:5d} best kernel {best['variant']} "
                    f"{best['ref_kernel_us'] / best['kernel_us']:.3f}x ({best['kernel_us']:.2f} us, "
                    f"cuBLAS {best['ref_kernel_us']:.2f}) | per call (rounds, cuBLAS "
                    f"{med['cublas']:.2f} us): " + ", ".join(parts)
                    + f" [profile {todo[(dt_name, lay, n)][0]}]")
            del A, x, y, want
            cp.get_default_memory_pool().free_all_blocks()
    print(f"\n{len(jobs)} variants, {pre.compiled} compiled ahead, {time.perf_counter() - t0:.1f} s",
          flush=True)
    print("summary (kernel: cuBLAS kernel time / liftkit's; per call: cuBLAS call / liftkit's):",
          flush=True)
    for line in summary:
        print(line, flush=True)
    with open(out_dir / "regs.jsonl", "w") as regs:  # last: the timings come first
        for dt_name, lay, n in cases:
            if n != 4096:
                continue
            for vtext in todo[(dt_name, lay, n)]:
                try:
                    k = _kernel_of(dt_name, lay, vtext)[0]
                    f = cp.RawKernel(k.source, k.function, options=tuple(k.build_options),
                                     backend="nvrtc")
                    row = {"dtype": dt_name, "layout": lay, "variant": vtext, "regs": f.num_regs,
                           "local_bytes": f.local_size_bytes,
                           "max_threads": f.max_threads_per_block}
                except Exception as err:  # noqa: BLE001 - a diagnostic only
                    print(f"registers of {vtext}: {type(err).__name__}", flush=True)
                    continue
                regs.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
