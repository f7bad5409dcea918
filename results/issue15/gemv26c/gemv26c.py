"""GEMV N/T float32/float64 at 4096² and 8192² on the H100 beside cuBLAS, with and without the
`streamed` load hint on A (h = 1: the codelets' derivation puts `streamed` in front of A, CUDA
reads it with `ld.global.cs`, evict first), session 26, helper H11.

    python results/issue15/gemv26c/gemv26c.py --out DIR     # on the GPU machine
    python results/issue15/gemv26c/gemv26c.py --check       # here: derive + NVRTC, registers

Per case: the H100 profile's choice (h = 0), the same with h = 1, and a few more forms. Per
variant: y poisoned with NaN, two calls at β = 0 (general path, call plan) and two at α = 1.5,
β = 0.5 (y read), all checked against a float64 product (rel. error < 1e-4 / 1e-12; NaN
fails); by kernel (blas_cuda._kernel_and_host: calls queued behind a long product, min of 3)
and per call (blas_cuda._time_pair: liftkit's batch between events on liftkit's stream, the
end event recorded right after the last call is enqueued, cuBLAS's on CuPy's stream, batches
alternating). Then `rounds` rounds, each timing every variant of the case by _time_pair
beside cuBLAS (3 batches); × = median over the rounds of cuBLAS / liftkit. Checked again
after the rounds. cuBLAS: `cupy.matmul(A, x)` (N) / `cupy.matmul(A.T, x)` (T) into y.
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

CASES = ("float32:T:4096", "float64:T:4096", "float32:N:4096", "float64:N:4096",
         "float32:T:8192", "float64:T:8192", "float32:N:8192", "float64:N:8192")
# more forms beside the profile's (each also with h = 1)
EXTRA: dict[str, list[str]] = {
    "float32:T:4096": ["column-groups-tree(lanes=16,g=32,w=2,u=16,k=1,p=1)"],
    "float32:N:8192": ["group-rows(L=128,w=4)"],
    "float64:N:8192": ["group-rows(L=128,w=2)"],
}
H100_PROFILE = "src/liftkit/blas/profiles/profile-397cb6df054d2a73.json"


def _with_h(v: Any, h: int = 1) -> Any:
    from liftkit.blas import Variant

    return Variant.of(v.codelet, **dict(v.params, h=h))


def variants(case: str, choose: Any) -> list[Any]:
    """The profile's choice first, then the others; each form without and with the hint."""
    from liftkit.blas import Variant
    from liftkit.blas.codelets import Kind, lookup_variant

    dt, lay, n = case.split(":")
    kind = Kind("gemv", dt, lay)
    base = [choose(kind, {"M": int(n), "N": int(n)})]
    base += [lookup_variant(kind, v) for v in EXTRA.get(case, [])]
    out: list[Any] = []
    for v in base:
        v0 = Variant.of(v.codelet, **{k: x for k, x in v.params if k != "h"})
        out += [v0, _with_h(v0)]
    return list(dict.fromkeys(out))


def _profile_choose() -> Any:
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import Profile

    prof = Profile.load(Path(H100_PROFILE))
    return lambda kind, sizes: prof.choose(kind, sizes, multiples)


def check(cases: list[str]) -> int:
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import Kind, derive
    from liftkit.codegen.compiler import CompileOptions, compile_program

    bad = 0
    choose = _profile_choose()
    for case in cases:
        dt, lay, _ = case.split(":")
        for v in variants(case, choose):
            try:
                c = compile_program(derive(Kind("gemv", dt, lay), v).final,
                                    CompileOptions(dialect="cuda"))
                for k in c.kernels:
                    out = compile_cuda(k.source, "sm_90a",
                                       list(k.build_options or []) + ["--ptxas-options=-v"])
                    info = " ".join(l.split(":", 1)[-1].strip() for l in (out.log or "").splitlines()
                                    if "Used" in l or "spill" in l)
                    print(f"{case} {str(v):60s} cs={k.source.count('ld.global.cs')} {info}", flush=True)
            except Exception as err:  # noqa: BLE001 - report and go on
                bad += 1
                print(f"{case} {v}: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=".")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    cases = args.cases.split(",")
    if args.check:
        return check(cases)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import cupy as cp
    from blas_cuda import _kernel_and_host, _time_pair, cupy_stream

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind
    from liftkit.blas.prebuild import for_session

    s = Session("gpu", warn=False)
    lk_stream = cupy_stream(cp, s.q.stream)
    print(f"liftkit.blas on {s.device.label}; CuPy {cp.__version__}", flush=True)
    chosen: dict[str, Any] = {}
    default_choose = s.choose
    todo = {case: variants(case, default_choose) for case in cases}
    jobs = [(Kind("gemv", *case.split(":")[:2]), v) for case in cases for v in todo[case]]
    t0 = time.perf_counter()
    pre = for_session(s, jobs)
    for kind, v in jobs:
        pre.ready(kind, v)
    print(f"compiled {len(jobs)} variants in {time.perf_counter() - t0:.1f} s", flush=True)
    s.choose = lambda kind, sizes: chosen.get(kind.op) or default_choose(kind, sizes)  # type: ignore[method-assign]
    busy = cp.ones((6144, 6144), cp.float32)
    rows = open(out_dir / "gemv.jsonl", "w")
    cp.random.seed(263)

    def emit(row: dict[str, Any]) -> None:
        rows.write(json.dumps(row) + "\n")
        rows.flush()
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                          if not isinstance(v, (list, dict))}), flush=True)

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
        for case in cases:
            dt_name, lay, n_text = case.split(":")
            n, trans = int(n_text), lay == "T"
            dt = np.dtype(dt_name)
            A = (cp.random.random_sample((n, n), dtype=cp.float64) * 2 - 1).astype(dt)
            x = (cp.random.random_sample((n,), dtype=cp.float64) * 2 - 1).astype(dt)
            y0 = (cp.random.random_sample((n,), dtype=cp.float64) * 2 - 1).astype(dt)
            y = cp.full((n,), np.nan, dt)
            tol = 1e-4 if dt == np.float32 else 1e-12
            a64 = A.astype(cp.float64)
            want = (a64.T if trans else a64) @ x.astype(cp.float64)
            del a64
            want_b = 1.5 * want + 0.5 * y0.astype(cp.float64)
            scale = float(cp.max(cp.abs(want)))
            op = A.T if trans else A
            ref = lambda: cp.matmul(op, x, out=y)  # noqa: E731
            y.fill(np.nan)
            ref()
            e_ref = float(cp.max(cp.abs(y - want))) / scale
            t_ref_k = ref_kernel(ref, args.repeat)
            call = lambda: s.gemv(A, x, y, trans=trans)  # noqa: E731

            def right(v: Any) -> list[float]:
                chosen["gemv"] = v
                s.calls.clear()
                errs = []
                for _ in range(2):  # the general path, then the plan
                    y.fill(np.nan)
                    call().result()
                    errs.append(float(cp.max(cp.abs(y - want))) / scale)
                for _ in range(2):  # β ≠ 0: y read
                    yb = y0.copy()
                    s.gemv(A, x, yb, alpha=1.5, beta=0.5, trans=trans).result()
                    errs.append(float(cp.max(cp.abs(yb - want_b))) / scale)
                return errs

            res: dict[str, dict[str, Any]] = {}
            for i, v in enumerate(todo[case]):
                try:
                    errs = right(v)
                except Exception as err:  # noqa: BLE001
                    print(f"{case} {v}: {type(err).__name__}: {str(err)[:200]}", flush=True)
                    continue
                if not all(e < tol for e in errs):  # (NaN fails)
                    print(f"{case} {v}: WRONG {errs}", flush=True)
                    continue
                with pre.quiet:
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    t_call, t_ref = _time_pair(cp, call, ref, args.repeat, 5, lk_stream)
                row = {"dtype": dt_name, "layout": lay, "size": n, "variant": str(v),
                       "profile": i == 0, "kernel_us": t_k * 1e6, "call_us": t_call * 1e6,
                       "host_us": t_h * 1e6, "ref_kernel_us": t_ref_k * 1e6,
                       "ref_call_us": t_ref * 1e6, "x_kernel": t_ref_k / t_k,
                       "x_call": t_ref / t_call, "errors": errs, "ref_rel_error": e_ref,
                       "repeat": args.repeat}
                emit(row)
                res[str(v)] = row
            if not res:
                continue
            named = list(res)
            rounds: dict[str, list[float]] = {v: [] for v in named}
            refs: dict[str, list[float]] = {v: [] for v in named}
            by_text = {str(v): v for v in todo[case]}
            for r in range(args.rounds):
                for vt in (named if r % 2 == 0 else named[::-1]):
                    chosen["gemv"] = by_text[vt]
                    s.calls.clear()
                    call().result()
                    with pre.quiet:
                        tl, tr = _time_pair(cp, call, ref, args.repeat, 3, lk_stream)
                    rounds[vt].append(tl * 1e6)
                    refs[vt].append(tr * 1e6)
            after = {vt: right(by_text[vt]) for vt in named}  # checked again after the timings
            wrong = [vt for vt, errs in after.items() if not all(e < tol for e in errs)]
            for vt in wrong:
                print(f"{case} {vt}: WRONG after timing {after[vt]}", flush=True)
            chosen.clear()
            s.calls.clear()
            ratio = {vt: statistics.median(r / l for r, l in zip(refs[vt], rounds[vt]))
                     for vt in named}
            emit({"what": "rounds", "dtype": dt_name, "layout": lay, "size": n,
                  "variants": named, "lk_us": rounds, "ref_us": refs, "median_x": ratio,
                  "wrong_after": wrong})
            summary.append(f"{case}: cuBLAS kernel {t_ref_k * 1e6:.2f} us")
            for vt in named:
                summary.append(f"   {vt:62s} kernel {res[vt]['kernel_us']:8.2f} us "
                               f"{res[vt]['x_kernel']:.3f}x  call (pair) {res[vt]['x_call']:.3f}x  "
                               f"rounds {ratio[vt]:.3f}x "
                               f"(min {min(r / l for r, l in zip(refs[vt], rounds[vt])):.3f})")
            del A, x, y, want, want_b, y0, op
            cp.get_default_memory_pool().free_all_blocks()
    print(f"\ndone in {time.perf_counter() - t0:.1f} s\nsummary:", flush=True)
    for line in summary:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
