"""Odd-size GEMMs through liftkit.blas on a CUDA GPU, kernel by kernel, beside cuBLAS (CuPy).

    python results/issue15/odd23/odd.py [--dry] [--sizes 1000x1000x1000,...] [--out DIR]

For S/D/C/ZGEMM NN at each size: cuBLAS per call, the library as shipped (`auto`), then the
real kernel forced to each candidate variant (`gemm.mm_kernel` answering it): a guarded form
(`edge-*`, no copies) or a tiled variant on padded copies. Every candidate is first checked
against a float64/complex128 NumPy product of sampled rows (the last 40 included: the ragged
edge) over every column, the output poisoned with NaN first; then timed per call (calls back to
back between CUDA events, median of batches: each side's host path included), its device work
(the same calls queued behind a long product: kernels without host gaps) and its host time per
call. Complex GEMMs run the `real` plan: one real GEMM of M×2N×2K (the candidates are that
real kernel's) after the derived cembed of B.

Every kernel is derived and NVRTC-compiled in worker processes first (their cubins put into
the session's module cache), so the timing loop only loads them.

--dry (no GPU): derives and NVRTC-compiles every candidate for sm_90a and prints the list.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

SIZES = "1000x1000x1000,1023x1025x999,4097x4095x4095,1999x1999x1999"
DTYPES = ("float32", "float64", "complex64", "complex128")
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32",
        "complex128": "float64"}

# FFMA tilings (tm, tn, tk, rm, rn, stages): codelets.TILES_ASYNC_SPACE
S_TILES = ((128, 64, 32, 8, 8, 2), (64, 128, 16, 8, 8, 2), (64, 128, 32, 8, 8, 2),
           (64, 64, 16, 8, 8, 2), (64, 64, 32, 8, 8, 2), (64, 64, 16, 8, 8, 4),
           (64, 64, 32, 8, 8, 3))
# DMMA tilings (tm, tn, tk, warps, staged, lines, ik, ahead)
D_TILES = ((64, 64, 8, 4, 4, 1, 0, 0), (64, 64, 16, 4, 4, 1, 8, 2), (64, 64, 16, 2, 4, 1, 8, 2),
           (128, 64, 16, 4, 4, 1, 8, 2), (64, 128, 16, 4, 4, 1, 8, 2),
           (64, 64, 16, 4, 3, 1, 8, 0), (64, 64, 8, 2, 4, 1, 0, 0))


def _sizes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",") if s]  # type: ignore[misc]


def candidates(dt: str, m: int, n: int, k: int) -> list[Any]:
    """The real kernel's variants to time for this GEMM: guarded forms that fit the sizes
    (vector forms where 4 | N, K (float32) or 2 | N, K (DMMA lines), else element by element),
    and a few padded tiled variants."""
    from liftkit.blas.codelets import Variant

    rn, rk = (2 * n, 2 * k) if dt.startswith("complex") else (n, k)
    out = []
    if REAL[dt] == "float32":
        vec = rn % 4 == 0 and rk % 4 == 0
        tiles = S_TILES if not dt.startswith("complex") else S_TILES[:5]
        if max(m, n, k) > 3000:
            tiles = tiles[:3]
        for tm, tn, tk, r1, r2, st in tiles:
            base = dict(tm=tm, tn=tn, tk=tk, rm=r1, rn=r2, stages=st)
            out.append(Variant.of("edge-tiles-async", **base, **({} if vec else {"elems": 1})))
        if vec:
            out.append(Variant.of("edge-tiles-async", elems=1, **dict(
                tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)))
        out.append(Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2))
    else:
        lines = rn % 2 == 0 and rk % 2 == 0
        tiles = D_TILES if max(m, n, k) < 3000 else D_TILES[:4]
        for tm, tn, tk, w, st, ln, ik, ah in tiles:
            kw: dict[str, Any] = dict(tm=tm, tn=tn, tk=tk, warps=w, staged=st)
            if lines and ln:
                kw["lines"] = 1
                if ik:
                    kw["ik"] = ik
                    if ah:
                        kw["ahead"] = ah
            elif ik:
                continue
            out.append(Variant.of("edge-mma", **kw))
        if max(m, rn, rk) > 2048:  # the huge class's padded winner (what ran before)
            out.append(Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1,
                                  ik=8, ahead=2))
        else:
            out.append(Variant.of("mma", tm=64, tn=64, tk=8, warps=4, staged=4, lines=1))
    return list(dict.fromkeys(out))


def candidates2(dt: str, m: int, n: int, k: int) -> list[Any]:
    """Run 2: the guarded FFMA forms with the tail split along K (mm-split-tail kept by the
    guarded forms), beside repeats of run 1's best; DGEMM/ZGEMM as shipped only."""
    from liftkit.blas.codelets import Variant

    if REAL[dt] != "float32":
        return []
    rn, rk = (2 * n, 2 * k) if dt.startswith("complex") else (n, k)
    e = {} if rn % 4 == 0 and rk % 4 == 0 else {"elems": 1}
    t64 = dict(tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    t128 = dict(tm=128, tn=64, tk=32, rm=8, rn=8, stages=2)
    big = dict(split=4, slots=396, bound=3)
    out = [Variant.of("edge-tiles-async", **t128, **big, **e)]
    if max(m, rn, rk) < 3000:
        out += [Variant.of("edge-tiles-async", **t64, split=2, slots=924, **e)]
    if max(m, rn, rk) < 1500:
        out += [Variant.of("edge-tiles-async", **t64, split=4, slots=264, **e),
                Variant.of("edge-tiles-async", **{**t64, "stages": 4}, **e)]
    if 1500 <= max(m, rn, rk) < 3000:
        out += [Variant.of("edge-tiles-async", **t128, split=5, slots=396, bound=3, **e),
                Variant.of("edge-tiles-async", **{**t128, "tm": 64, "tn": 128}, **e)]
    return out


# run 2: the guarded forms measured in run 1 entered in the profile (H100, large class), so
# that `auto` runs them (gemm.profiled_edge); rates from run 1's calls (GFLOP/s)
ENTRIES = (("float32", dict(tm=64, tn=64, tk=16, rm=8, rn=8, stages=4), 30488, (1000,) * 3),
           ("float32", dict(tm=64, tn=128, tk=16, rm=8, rn=8, stages=2), 29630, (1000,) * 3),
           ("float64", dict(tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2),
            34542, (1000,) * 3),
           ("float64", dict(tm=64, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2),
            34130, (1000,) * 3),
           ("float64", dict(tm=64, tn=64, tk=8, warps=2, staged=4), 33580, (1999,) * 3),
           ("float64", dict(tm=64, tn=64, tk=8, warps=4, staged=4), 20700, (1023, 1025, 999)))


def add_entries(profile: Any) -> None:
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry

    profile.add([Entry(Kind("mm", dt, "NN"), "large", dict(zip("MNK", size)),
                       Variant.of("edge-tiles-async" if dt == "float32" else "edge-mma", **kw),
                       2 * size[0] * size[1] * size[2] / rate * 1e-9, rate)
                 for dt, kw, rate, size in ENTRIES])


def _build(job: tuple[str, Any, str]) -> dict[str, Any]:
    """In a worker: derivation, CUDA C, cubins (no GPU needed)."""
    real, v, arch = job
    from liftkit.backends.cuda import compile_cuda
    from liftkit.blas.codelets import Kind, derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    t0 = time.time()
    try:
        c = compile_program(derive(Kind("mm", real, "NN"), v).final, CompileOptions(dialect="cuda"))
        outs = [(k.source, list(k.build_options),
                 compile_cuda(k.source, arch, list(k.build_options), name=f"{k.function}.cu").cubin)
                for k in c.kernels]
        return {"real": real, "v": v, "kernels": outs, "s": time.time() - t0}
    except Exception as err:  # noqa: BLE001 - one variant failing is a row
        return {"real": real, "v": v, "error": f"{type(err).__name__}: {err}"[:300]}


def build_all(sizes: list[tuple[int, int, int]], arch: str, workers: int, cands: Any = None
              ) -> list[dict[str, Any]]:
    jobs = list(dict.fromkeys((REAL[dt], v) for (m, n, k) in sizes for dt in DTYPES
                              for v in (cands or candidates)(dt, m, n, k)))
    if not jobs:
        return []
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx) as pool:
        return list(pool.map(_build, [(r, v, arch) for r, v in jobs]))


def _check(cp: Any, A: Any, B: Any, C: Any, dt: str) -> float:
    """Max relative error over sampled rows (first 8, last 40, 16 random) against a
    float64/complex128 NumPy product of those rows; NaN (an unwritten cell) fails."""
    m = A.shape[0]
    rows = sorted(set(range(min(8, m))) | set(range(max(0, m - 40), m))
                  | set(np.random.default_rng(int(time.time())).integers(0, m, 16).tolist()))
    wide = np.complex128 if dt.startswith("complex") else np.float64
    want = cp.asnumpy(A[rows]).astype(wide) @ cp.asnumpy(B).astype(wide)
    got = cp.asnumpy(C[rows]).astype(wide)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def gpu(sizes: list[tuple[int, int, int]], repeat: int, out: Path, workers: int, which: int
        ) -> int:
    import importlib

    import cupy as cp

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import blas_cuda as bc  # the suite's timing helpers (CUDA events, kernels behind a product)

    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
    s = Session("gpu")
    cands = {1: candidates, 2: candidates2}.get(which, lambda *a: [])
    if which == 2 and s.profile is not None:
        add_entries(s.profile)
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / f"odd{which if which > 1 else ''}.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    dev = runner.device
    t0 = time.time()
    built = build_all(sizes, arch_for(dev.compute_capability), workers, cands)
    bad = {(b["real"], b["v"]): b["error"] for b in built if "error" in b}
    for b in built:
        for src, opts, cubin in b.get("kernels", ()):
            runner.cache.put(dev, src, opts, cubin)
    say(f"card: {card}; {len(built)} kernels derived and compiled in {time.time() - t0:.1f} s "
        f"({len(bad)} failed: {bad})")
    busy = cp.ones((6144, 6144), cp.float32)
    rows: list[dict[str, Any]] = []
    keep = g.mm_kernel
    forced: dict[str, Any] = {}

    def mm_kernel(session: Any, kind: Any, sizes_: Any, variant: Any = None) -> Any:
        v = forced.get("v")
        if v is not None and kind.op == "mm" and kind.layout == "NN":
            return session.kernel(kind, sizes_, v)
        return keep(session, kind, sizes_, variant)

    g.mm_kernel = mm_kernel
    for m, n, k in sizes:
        for dt in DTYPES:
            A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
            B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
            C = cp.full((m, n), np.nan, dt)
            t_ref = bc._time(cp, lambda: cp.matmul(A, B, out=C), repeat)
            flops = (8 if dt.startswith("complex") else 2) * m * n * k
            say(f"{dt:10s} {m}x{n}x{k}: cuBLAS {t_ref * 1e6:9.1f} us "
                f"({flops / t_ref * 1e-12:5.1f} TFLOP/s)")
            for v in [None] + cands(dt, m, n, k):
                if v is not None and (REAL[dt], v) in bad:
                    continue
                forced["v"] = v
                s.forget_choices()
                try:
                    plan = s.plan_gemm(A.shape, B.shape, dt)
                    what = (f"real() on {plan.embed.real.variant}" if plan.embed else
                            str(plan.built.variant))
                    copies = plan.padded != plan.sizes
                    C[...] = np.nan
                    call = lambda: s.gemm(A, B, C)  # noqa: E731
                    call().result()
                    err = _check(cp, A, B, C, dt)
                    est = bc._time(cp, call, 2, 1)
                    reps = max(3, min(repeat, int(0.02 / max(est, 1e-6))))
                    t = bc._time(cp, call, reps, 5 if est < 5e-3 else 3)
                    t_k, t_h = bc._kernel_and_host(cp, s, call, reps, busy)
                except Exception as exc:  # noqa: BLE001 - logged, next candidate
                    say(f"  FAILED {v}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
                r = {"dtype": dt, "size": f"{m}x{n}x{k}", "mode": "auto" if v is None else
                     "forced", "variant": what, "copies": bool(copies), "call_us": t * 1e6,
                     "kernel_us": t_k * 1e6, "host_us": t_h * 1e6, "cublas_us": t_ref * 1e6,
                     "ratio": t_ref / t, "kernel_ratio": t_ref / t_k, "rel_error": err,
                     "ok": err <= tol, "card": card}
                rows.append(r)
                say(f"  {'auto ' if v is None else '     '}call {t * 1e6:8.1f} kernel "
                    f"{t_k * 1e6:8.1f} host {t_h * 1e6:6.1f} us  ratio {t_ref / t:5.2f}x "
                    f"(kernel {t_ref / t_k:5.2f}x)  err {err:.1e}{'' if err <= tol else ' WRONG'}"
                    f"  {'padded ' if copies else ''}[{what}]")
            forced.clear()
            del A, B, C
            cp.get_default_memory_pool().free_all_blocks()
    g.mm_kernel = keep
    (out / f"odd{which if which > 1 else ''}.json").write_text(json.dumps(rows, indent=0))
    say("best per dtype and size (call ratio; * = what the library runs as shipped):")
    for (m, n, k) in sizes:
        for dt in DTYPES:
            mine = [r for r in rows if r["dtype"] == dt and r["size"] == f"{m}x{n}x{k}" and r["ok"]]
            if mine:
                b = max(mine, key=lambda r: r["ratio"])
                a = [r for r in mine if r["mode"] == "auto"]
                say(f"{dt:10s} {m}x{n}x{k:<5d} best {b['ratio']:5.2f}x [{b['variant']}]  "
                    f"shipped* {a[0]['ratio'] if a else float('nan'):5.2f}x")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true", help="no GPU: derive and NVRTC-compile only")
    p.add_argument("--sizes", default=SIZES)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--out", default=".")
    p.add_argument("--plan", type=int, default=1, help="1: run 1's candidates; 2: run 2's "
                   "(guarded split tails; profile entries of run 1 added first); 3: the "
                   "library as shipped only")
    args = p.parse_args(argv)
    sizes = _sizes(args.sizes)
    if args.dry:
        t0 = time.time()
        built = build_all(sizes, "sm_90a", args.workers,
                          {1: candidates, 2: candidates2}.get(args.plan, lambda *a: []))
        for b in built:
            print(f"{b['real']:8s} {b['v']}: " + (b["error"] if "error" in b else
                                                  f"{len(b['kernels'])} kernel(s) {b['s']:.1f} s"))
        print(f"dry: {len(built)} derived and compiled in {time.time() - t0:.1f} s, "
              f"{sum('error' in b for b in built)} failed")
        return 0
    return gpu(sizes, args.repeat, Path(args.out), args.workers, args.plan)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
