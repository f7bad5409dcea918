"""GEMV T 4096² on the H100 beside cuBLAS, session 26, helper H9: where the float32 kernel's
fixed cost goes, and column-groups-tree with y's block read into local memory beside the rows
(p = 1: before them, p = 2: after; p = 0, the shipped form, reads y after the tree, where
nothing hides a global read's latency).

    python results/issue15/gemv26b/gemv26b.py --out DIR     # on the GPU machine
    python results/issue15/gemv26b/gemv26b.py --check       # here: derive + NVRTC, registers

Per variant: y poisoned with NaN, calls at β = 0 and at β = 0.5 (y's copy must be read),
checked against a float64 product; then by kernel (blas_cuda._kernel_and_host: calls queued
behind a long product on liftkit's stream, min of 3) and per call (blas_cuda._time_pair, commit
d33f013: liftkit's batches timed by events on liftkit's stream, the end event recorded when the
last call is enqueued, as cuBLAS's on CuPy's; batches alternating with cuBLAS's). Then per case
`rounds` rounds of _time_pair for the profile's choice and the run's best. Diagnostics (CuPy
launches of the kernel alone, `raw`): the shipped kernel; the same source with β·y's read cut
(`noy`, a hand edit, wrong for β ≠ 0: a measure of the read's cost only, never shipped); the
shipped kernel with an event recorded after each launch (`raw+event`, as a liftkit call's future).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def _tree(lanes: int, g: int, w: int, u: int, k: int = 0, f: int = 2, p: int = 0) -> str:
    return (f"column-groups-tree(lanes={lanes},g={g},w={w},u={u}" + (",k=1" if k else "")
            + (f",f={f}" if f != 2 else "") + (f",p={p}" if p else "") + ")")


VARIANTS: dict[tuple[str, int], list[str]] = {
    ("float32", 4096): [_tree(8, 64, 4, 4, 1, 8, p) for p in (0, 1, 2)]
    + [_tree(8, 64, 4, 8, 1, 8, p) for p in (1, 2)] + [_tree(8, 64, 4, 4, 1, 4, p) for p in (1, 2)]
    + [_tree(16, 32, 2, 16, 1, 2, 1), _tree(8, 32, 4, 16, 0, 2, 1), _tree(4, 64, 8, 8, 0, 8, 1)],
    ("float64", 4096): [_tree(8, 64, 4, 2, 1, 8, p) for p in (0, 1, 2)]
    + [_tree(16, 32, 2, 8, 1, 2, p) for p in (1, 2)],
}


def _kernels(dt_name: str, vtext: str) -> Any:
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen.compiler import CompileOptions, compile_program

    kind = Kind("gemv", dt_name, "T")
    return compile_program(derive(kind, lookup_variant(kind, vtext)).final,
                           CompileOptions(dialect="cuda"))


def check(cases: list[tuple[str, int]]) -> int:
    from liftkit.backends.cuda.nvrtc import compile_cuda

    bad = 0
    for case in cases:
        for vtext in VARIANTS[case]:
            try:
                for k in _kernels(case[0], vtext).kernels:
                    out = compile_cuda(k.source, "sm_90a",
                                       list(k.build_options or []) + ["--ptxas-options=-v"])
                    info = " ".join(l.split(":", 1)[-1].strip() for l in (out.log or "").splitlines()
                                    if "Used" in l or "spill" in l)
                    print(f"{case} {vtext:60s} {k.ndrange.local_size} {info}", flush=True)
            except Exception as err:  # noqa: BLE001 - report and go on
                bad += 1
                print(f"{case} {vtext}: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
    return 1 if bad else 0


def _raw(cp: Any, dt_name: str, vtext: str, A: Any, x: Any, y: Any,
         edit: Callable[[str], str] = lambda s: s, event: bool = False) -> Callable[[], Any]:
    """The variant's one kernel launched through CuPy on CuPy's stream (α = 1, β = 0 over a
    zero y), its source passed through `edit`; `event`: an event recorded after each launch."""
    c = _kernels(dt_name, vtext)
    (k,) = c.kernels
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
    src = edit(k.source)
    fn = cp.RawKernel(src, k.function, options=tuple(k.build_options), backend="nvrtc")
    if not event:
        return lambda: fn(grid, block, tuple(args))
    ev = cp.cuda.Event(disable_timing=True)

    def go() -> None:
        fn(grid, block, tuple(args))
        ev.record()
    return go


def _no_y(src: str) -> str:
    out, n = re.subn(r"mult\(beta, y\[[^\]]*\]\)", "0", src)
    if n != 1:
        raise ValueError(f"noy: {n} reads of y")
    return out


_TREE_START = "    ((float4*)tmp)[8*l_id + l_id_2] = acc;\n"
_TREE_END = "    __syncthreads();\n  }\n}"


def _tree_part(src: str) -> tuple[int, int]:
    """Where the shipped float32 kernel's tree and finish lie (its partials' store to the end
    of the block loop): the hand edits below replace them."""
    a, b = src.index(_TREE_START), src.rindex(_TREE_END)
    return a, b


def _shfl(src: str) -> str:
    """The tree as warp shuffles (hand edit, a measure of what they could gain): the 4 row
    groups of a warp summed by shuffles (lanes xor 8, 16), 16 warps' sums through local memory
    (one barrier), warp 0 summing them (4 each, then shuffles), row 0 finishing."""
    a, b = _tree_part(src)
    new = """    #define LK_RED(v) for (int o = 8; o < 32; o <<= 1) { v.x += __shfl_xor_sync(0xffffffffu, v.x, o); \\
      v.y += __shfl_xor_sync(0xffffffffu, v.y, o); v.z += __shfl_xor_sync(0xffffffffu, v.z, o); \\
      v.w += __shfl_xor_sync(0xffffffffu, v.w, o); }
    LK_RED(acc)
    if ((l_id & 3) == 0) ((float4*)tmp)[8*(l_id >> 2) + l_id_2] = acc;
    __syncthreads();
    if (l_id < 4) {
      float4 s4 = ((float4*)tmp)[8*l_id + l_id_2];
      for (int i = 1; i < 4; i += 1) s4 = add4(s4, ((float4*)tmp)[8*(l_id + 4*i) + l_id_2]);
      LK_RED(s4)
      if (l_id == 0) {
        for (int i = 0; i < 4; i += 1)
          out[i + 4*l_id_2 + 32*wg_id] = add(mult(alpha, ((float*)&s4)[i]), mult(beta, y[i + 4*l_id_2 + 32*wg_id]));
      }
    }
"""
    return src[:a] + new + src[b:]


def _no_tree(src: str) -> str:
    """No tree and no barrier (hand edit, WRONG results: a timing of the rows alone): the
    partials stored to local memory, row 0 writing its own partial as the result."""
    a, b = _tree_part(src)
    new = """    ((float4*)tmp)[8*l_id + l_id_2] = acc;
    if (l_id == 0) {
      for (int i = 0; i < 4; i += 1) out[i + 4*l_id_2 + 32*wg_id] = mult(alpha, ((float*)&acc)[i]);
    }
"""
    return src[:a] + new + src[b:]


def _load_hint(op: str) -> Callable[[str], str]:
    """A's loads through inline PTX `ld.global.<op>.v4.f32` (hand edit, a measure of what a
    cache hint could gain: `cs` streaming, evict first; `nc.L1::no_allocate`)."""
    def edit(src: str) -> str:
        helper = ("__device__ inline lk_vec<float, 4> lk_ld(const lk_vec<float, 4>* p) {\n"
                  "  lk_vec<float, 4> r;\n"
                  f'  asm("ld.global.{op}.v4.f32 {{%0, %1, %2, %3}}, [%4];" : "=f"(r.s[0]), '
                  '"=f"(r.s[1]), "=f"(r.s[2]), "=f"(r.s[3]) : "l"(p));\n  return r;\n}\n')
        out, n = re.subn(r"\(\(const float4\*\)A\)\[([^\]]*)\]", r"lk_ld(((const float4*)A) + (\1))", src)
        if n != 4:
            raise ValueError(f"{op}: {n} loads of A")
        k = out.index('extern "C" __global__')
        return out[:k] + helper + out[k:]
    return edit


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="float32:4096,float64:4096")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=".")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cases.split(",")]
    if args.check:
        return check(cases)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp
    from blas_cuda import _kernel_and_host, _time_pair, cupy_stream

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant
    from liftkit.blas.prebuild import for_session

    s = Session("gpu", warn=False)
    lk_stream = cupy_stream(cp, s.q.stream)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}", flush=True)
    chosen: dict[str, Any] = {}
    default_choose = s.choose
    todo: dict[tuple[str, int], list[str]] = {}
    jobs = []
    for dt_name, n in cases:
        kind = Kind("gemv", dt_name, "T")
        prof = str(default_choose(kind, {"M": n, "N": n}))
        mine = [str(lookup_variant(kind, v)) for v in VARIANTS[(dt_name, n)]]
        todo[(dt_name, n)] = [prof] + [v for v in mine if v != prof]
        jobs += [(kind, lookup_variant(kind, v)) for v in todo[(dt_name, n)]]
    t0 = time.perf_counter()
    pre = for_session(s, jobs)
    for kind, v in jobs:
        pre.ready(kind, v)
    print(f"compiled {len(jobs)} variants in {time.perf_counter() - t0:.1f} s", flush=True)
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]
    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(26)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                          if not isinstance(v, list)}), flush=True)

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
        for dt_name, n in cases:
            dt = np.dtype(dt_name)
            A = (cp.random.random_sample((n, n), dtype=cp.float64) * 2 - 1).astype(dt)
            x = (cp.random.random_sample((n,), dtype=cp.float64) * 2 - 1).astype(dt)
            y0 = (cp.random.random_sample((n,), dtype=cp.float64) * 2 - 1).astype(dt)
            y = cp.full((n,), np.nan, dt)
            tol = 1e-4 if dt == np.float32 else 1e-12
            want = A.T.astype(cp.float64) @ x.astype(cp.float64)
            want_b = 1.5 * want + 0.5 * y0.astype(cp.float64)
            scale = float(cp.max(cp.abs(want)))
            ref = lambda: cp.matmul(A.T, x, out=y)  # noqa: E731
            t_ref_k = ref_kernel(ref, args.repeat)
            kind = Kind("gemv", dt_name, "T")
            call = lambda: s.gemv(A, x, y, trans=True)  # noqa: E731
            res: dict[str, dict[str, Any]] = {}
            for i, vtext in enumerate(todo[(dt_name, n)]):
                v = lookup_variant(kind, vtext)
                chosen["gemv"] = v
                s.calls.clear()
                try:
                    errs = []
                    for _ in range(2):  # the general path, then the plan
                        y.fill(np.nan)
                        call().result()
                        errs.append(float(cp.max(cp.abs(y - want))) / scale)
                    for _ in range(2):  # β ≠ 0: y's block read
                        yb = y0.copy()
                        s.gemv(A, x, yb, alpha=1.5, beta=0.5, trans=True).result()
                        errs.append(float(cp.max(cp.abs(yb - want_b))) / scale)
                except Exception as err:  # noqa: BLE001
                    print(f"{dt_name} {n} {v}: {type(err).__name__}: {str(err)[:200]}", flush=True)
                    continue
                if not all(e < tol for e in errs):  # (NaN fails)
                    print(f"{dt_name} {n} {v}: WRONG {errs}", flush=True)
                    continue
                with pre.quiet:
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    t_call, t_ref = _time_pair(cp, call, ref, args.repeat, 5, lk_stream)
                y.fill(np.nan)
                call().result()
                e2 = float(cp.max(cp.abs(y - want))) / scale
                if not e2 < tol:
                    print(f"{dt_name} {n} {v}: WRONG after timing {e2}", flush=True)
                    continue
                row = {"dtype": dt_name, "size": n, "variant": str(v), "profile": i == 0,
                       "kernel_us": t_k * 1e6, "call_us": t_call * 1e6, "host_us": t_h * 1e6,
                       "ref_kernel_us": t_ref_k * 1e6, "ref_call_us": t_ref * 1e6,
                       "x_kernel": t_ref_k / t_k, "x_call": t_ref / t_call, "errors": errs}
                emit(row)
                res[str(v)] = row
            if not res:
                continue
            prof = todo[(dt_name, n)][0]
            best = min(res.values(), key=lambda r: r["kernel_us"])["variant"]
            best_call = min(res.values(), key=lambda r: r["call_us"] / r["ref_call_us"])["variant"]
            # diagnostics: the shipped kernel through CuPy alone, without y's read, with events
            diag: dict[str, float] = {}
            if dt_name == "float32" and n == 4096:
                shipped = _tree(8, 64, 4, 4, 1, 8)  # the hand edits' source (its names)
                for name, kw, vts in (
                        ("raw", {}, [prof, best]), ("raw+event", {"event": True}, [prof, best]),
                        ("noy", {"edit": _no_y}, [shipped]), ("shfl", {"edit": _shfl}, [shipped]),
                        ("shfl+noy", {"edit": lambda t: _no_y(_shfl(t))}, [shipped]),
                        ("notree", {"edit": _no_tree}, [shipped]),
                        ("ld.cs", {"edit": _load_hint("cs")}, [shipped]),
                        ("ld.nc.na", {"edit": _load_hint("nc.L1::no_allocate")}, [shipped])):
                    for vt in dict.fromkeys(vts):
                        try:
                            fn = _raw(cp, dt_name, vt, A, x, y, **kw)
                            y.fill(np.nan)
                            fn()
                            e = float(cp.max(cp.abs(y - want))) / scale
                            if not e < tol and name != "notree":  # (notree: wrong by design)
                                print(f"{name} {vt}: WRONG {e}", flush=True)
                                continue
                            tk = ref_kernel(fn, args.repeat)
                            tc, tr = _time_pair(cp, fn, ref, args.repeat, 5)
                        except Exception as err:  # noqa: BLE001 - a diagnostic only
                            print(f"{name} {vt}: {type(err).__name__}: {str(err)[:200]}", flush=True)
                            continue
                        emit({"what": name, "dtype": dt_name, "size": n, "variant": vt,
                              "kernel_us": tk * 1e6, "call_us": tc * 1e6,
                              "ref_kernel_us": t_ref_k * 1e6, "ref_call_us": tr * 1e6,
                              "x_kernel": t_ref_k / tk, "x_call": tr / tc})
                        diag[f"{name} {vt}"] = t_ref_k / tk
            # alternating rounds, per call: cuBLAS beside the profile's choice and the best
            named = list(dict.fromkeys([prof, best, best_call]))
            rounds: dict[str, list[float]] = {v: [] for v in named}
            refs: dict[str, list[float]] = {v: [] for v in named}
            for _ in range(args.rounds):
                for vt in named:
                    chosen["gemv"] = lookup_variant(kind, vt)
                    s.calls.clear()
                    y.fill(np.nan)
                    call().result()
                    call().result()
                    e = float(cp.max(cp.abs(y - want))) / scale
                    assert e < tol, f"{vt}: rel error {e}"
                    with pre.quiet:
                        tl, tr = _time_pair(cp, call, ref, args.repeat, 3, lk_stream)
                    rounds[vt].append(tl * 1e6)
                    refs[vt].append(tr * 1e6)
            chosen.clear()
            s.calls.clear()
            ratio = {vt: statistics.median(r / l for r, l in zip(refs[vt], rounds[vt])) for vt in named}
            emit({"what": "rounds", "dtype": dt_name, "size": n, "variants": named,
                  "lk_us": rounds, "ref_us": refs, "median_x": ratio})
            summary.append(f"{dt_name} {n}: best kernel {best} {res[best]['x_kernel']:.3f}x; "
                           f"profile {prof} {res[prof]['x_kernel']:.3f}x by kernel" if prof in res
                           else f"{dt_name} {n}: best kernel {best}")
            summary.append("   per call (rounds, median of cuBLAS/liftkit): "
                           + ", ".join(f"{vt} {ratio[vt]:.3f}x" for vt in named))
            if diag:
                summary.append("   diagnostics by kernel: "
                               + ", ".join(f"{k} {v:.3f}x" for k, v in diag.items()))
            del A, x, y, want, want_b, y0
            cp.get_default_memory_pool().free_all_blocks()
    print(f"\ndone in {time.perf_counter() - t0:.1f} s\nsummary:", flush=True)
    for line in summary:
        print(line, flush=True)
    with open(out_dir / "regs.jsonl", "w") as regs:
        for dt_name, n in cases:
            for vtext in todo[(dt_name, n)]:
                try:
                    k = _kernels(dt_name, vtext).kernels[0]
                    f = cp.RawKernel(k.source, k.function, options=tuple(k.build_options),
                                     backend="nvrtc")
                    regs.write(json.dumps({"dtype": dt_name, "variant": vtext, "regs": f.num_regs,
                                           "local_bytes": f.local_size_bytes}) + "\n")
                except Exception as err:  # noqa: BLE001
                    print(f"registers of {vtext}: {type(err).__name__}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
