"""Odd-size GEMMs through liftkit.blas on a CUDA GPU beside cuBLAS (CuPy), session 24 (helper H3).

    python results/issue15/odd24/odd24.py [--dry] [--only S|D|C|Z,...] [--out DIR]

For each size and dtype: the library as committed (`auto`), then candidates: the real kernel
forced to a variant (`gemm.mm_kernel` answering it, so a tiled variant runs on padded copies
and a guarded vector form on operands padded to its vector width), with the padded copies as
derived kernels (pad2d/crop2d, what `gemm.copy_kernels` picks on CUDA at pitches off 16 bytes)
or as cuMemcpy2D (`copy2d`: the rule forced off). Every row is checked before it is timed: C
poisoned with NaN, one call, the whole C against cuBLAS's product of the same operands (max
relative error; NaN fails). Then per call in alternating rounds: a batch of cuBLAS calls
(`cp.matmul(A, B, out=R)`), a batch of liftkit calls, `--rounds` times; the medians of the
rounds (CUDA events around each batch, the last call waited for: each side's host path
included). Complex rates count 8 flops per multiply-add on both sides.

--dry (no GPU): derives and NVRTC-compiles every forced variant (sm_90a) and lists them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32",
        "complex128": "float64"}
LETTER = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
ODD = "1023x1025x999"


def _odd23() -> Any:
    """Last session's harness (its worker build: derivation, CUDA C, cubins)."""
    spec = importlib.util.spec_from_file_location("odd23", ROOT / "results/issue15/odd23/odd.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _build(job: tuple[str, Any, str]) -> dict[str, Any]:
    """In a worker (this module is the spawned process's main): odd23's build of one kernel."""
    return _odd23()._build(job)


def V(codelet: str, **kw: int) -> Any:
    from liftkit.blas.codelets import Variant

    return Variant.of(codelet, **kw)


T128 = dict(tm=128, tn=64, tk=32, rm=8, rn=8, stages=2)
T64 = dict(tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
SPLIT4 = dict(split=4, slots=396, bound=3)
SPLIT5 = dict(split=5, slots=396, bound=3)
D128 = dict(tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)
D64 = dict(tm=64, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)

# (size, dtype) -> [(label, forced real variant or None, copies: "kernels" | "copy2d")]
PLANS: dict[tuple[str, str], list[tuple[str, Optional[Any], str]]] = {
    (ODD, "float32"): [
        ("auto", None, "kernels"),
        ("vec128s4", V("edge-tiles-async", **T128, **SPLIT4), "kernels"),
        ("vec128s4 copy2d", V("edge-tiles-async", **T128, **SPLIT4), "copy2d"),
        ("vec128s5", V("edge-tiles-async", **T128, **SPLIT5), "kernels"),
        ("vec64s2", V("edge-tiles-async", **T64, split=2, slots=924), "kernels"),
        ("vec128s3", V("edge-tiles-async", **T128, split=3, slots=396, bound=3), "kernels"),
        ("vec128s6", V("edge-tiles-async", **T128, split=6, slots=396), "kernels"),
        ("vec128s4b4", V("edge-tiles-async", **T128, split=4, slots=528, bound=4), "kernels"),
        ("vec64st4", V("edge-tiles-async", **{**T64, "stages": 4}), "kernels"),
        ("vec64s3", V("edge-tiles-async", **T64, split=3, slots=924), "kernels"),
        ("vec64s4", V("edge-tiles-async", **T64, split=4, slots=924), "kernels"),
        ("elems128s6", V("edge-tiles-async", **T128, split=6, slots=396, elems=1), "kernels"),
        ("pad128s4", V("tiles-async", **T128, **SPLIT4), "kernels"),
        ("pad128s4 copy2d", V("tiles-async", **T128, **SPLIT4), "copy2d"),
        ("pad64s2", V("tiles-async", **T64, split=2, slots=924), "kernels"),
        ("pad64", V("tiles-async", **T64), "kernels"),
    ],
    (ODD, "float64"): [
        ("auto", None, "kernels"),
        ("vec128ik8", V("edge-mma", **D128), "kernels"),
        ("vec128ik8 copy2d", V("edge-mma", **D128), "copy2d"),
        ("vec64ik8", V("edge-mma", **D64), "kernels"),
        ("vec64lines", V("edge-mma", tm=64, tn=64, tk=8, warps=4, staged=4, lines=1), "kernels"),
        ("vec64x128ik8", V("edge-mma", **{**D64, "tn": 128}), "kernels"),
        ("vec64ik8w2", V("edge-mma", **{**D64, "warps": 2}), "kernels"),
        ("pad128ik8", V("mma", **D128), "kernels"),
        ("pad64ik8", V("mma", **D64), "kernels"),
    ],
    (ODD, "complex64"): [
        ("auto", None, "kernels"),
        ("auto copy2d", None, "copy2d"),
        ("vec128s4", V("edge-tiles-async", **T128, **SPLIT4), "kernels"),
        ("vec128s5", V("edge-tiles-async", **T128, **SPLIT5), "kernels"),
        ("vec64st4", V("edge-tiles-async", **{**T64, "stages": 4}), "kernels"),
        ("vec64x128", V("edge-tiles-async", **{**T64, "tm": 64, "tn": 128}), "kernels"),
        ("vec128s6", V("edge-tiles-async", **T128, split=6, slots=396), "kernels"),
        ("vec64s2", V("edge-tiles-async", **T64, split=2, slots=924), "kernels"),
        ("pad128s4", V("tiles-async", **T128, **SPLIT4), "kernels"),
        ("pad64", V("tiles-async", **T64), "kernels"),
        ("elems128s5", V("edge-tiles-async", **T128, **SPLIT5, elems=1), "kernels"),
    ],
    (ODD, "complex128"): [("auto", None, "kernels")],
    **{("1000x1000x1000", dt): [("auto", None, "kernels")]
       for dt in ("float32", "float64", "complex64", "complex128")},
    **{("4097x4095x4095", dt): [("auto", None, "kernels"), ("auto copy2d", None, "copy2d")]
       for dt in ("float32", "float64", "complex64")},
    ("4097x4095x4095", "complex128"): [("auto", None, "kernels")],
    ("1999x1999x1999", "complex64"): [("auto", None, "kernels"), ("auto copy2d", None, "copy2d")],
    # (run 2) the ragged tile column's share: N = 1024 (16 tile columns) with K = 999 / 1000
    **{(size, dt): [("auto", None, "kernels")] for size in ("1023x1024x999", "1023x1024x1000")
       for dt in ("float32", "float64")},
}


def _shape(size: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in size.split("x"))
    return m, n, k


def forced_kernels() -> list[tuple[str, Any]]:
    out = [(REAL[dt], v) for (size, dt), rows in PLANS.items() for _, v, _ in rows if v is not None]
    return list(dict.fromkeys(out))


def build_all(arch: str, workers: int) -> list[dict[str, Any]]:
    """Every forced kernel derived and compiled in worker processes."""
    import concurrent.futures as cf
    import multiprocessing

    jobs = [(r, v, arch) for r, v in forced_kernels()]
    with cf.ProcessPoolExecutor(min(workers, len(jobs)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_build, jobs))


def gpu(out: Path, rounds: int, only: set[str], workers: int, auto_only: bool = False) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
    s = Session("gpu")
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / f"odd24{'-auto' if auto_only else ''}.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    dev = runner.device
    t0 = time.time()
    built = [] if auto_only else build_all(arch_for(dev.compute_capability), workers)
    bad = {(b["real"], b["v"]): b["error"] for b in built if "error" in b}
    for b in built:
        for src, opts, cubin in b.get("kernels", ()):
            runner.cache.put(dev, src, opts, cubin)
    say(f"card: {card}; {len(built)} forced kernels derived and compiled in {time.time() - t0:.1f}"
        f" s ({len(bad)} failed: {bad})")

    keep_mm, keep_copies = g.mm_kernel, g.copy_kernels
    forced: dict[str, Any] = {}

    def mm_kernel(session: Any, kind: Any, sizes_: Any, variant: Any = None) -> Any:
        v = forced.get("v")
        if v is not None and kind.op == "mm" and kind.layout == "NN":
            return session.kernel(kind, sizes_, v)
        return keep_mm(session, kind, sizes_, variant)

    def copy_kernels(*a: Any) -> bool:
        return forced.get("copies") != "copy2d" and keep_copies(*a)

    g.mm_kernel, g.copy_kernels = mm_kernel, copy_kernels
    rows: list[dict[str, Any]] = []
    for (size, dt), plans in PLANS.items():
        if only and LETTER[dt] not in only:
            continue
        m, n, k = _shape(size)
        A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
        B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
        R = cp.empty((m, n), dt)
        C = cp.full((m, n), np.nan, dt)
        ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
        ref()
        cp.cuda.Device().synchronize()
        scale = float(cp.max(cp.abs(R)))
        flops = (8 if dt.startswith("complex") else 2) * m * n * k
        for label, v, copies in plans:
            if auto_only and label != "auto":
                continue
            if v is not None and (REAL[dt], v) in bad:
                say(f"{size} {dt} {label}: not built")
                continue
            forced.clear()
            forced.update(v=v, copies=copies)
            s.forget_choices()
            try:
                plan = s.plan_gemm(A.shape, B.shape, dt)
                what = (f"real() on {plan.embed.real.variant}" if plan.embed else
                        str(plan.built.variant))
                padded = plan.padded != plan.sizes
                C[...] = np.nan
                call = lambda: s.gemm(A, B, C)  # noqa: E731
                call().result()
                cp.cuda.Device().synchronize()
                err = float(cp.max(cp.abs(C - R))) / max(scale, 1e-30)
                err = err if bool(cp.all(cp.isfinite(C))) else float("inf")
                est = bc._time(cp, call, 2, 1)
                reps = max(3, min(60, int(3e-3 / max(est, 1e-6))))
                t_ref, t_lk = [], []
                for _ in range(rounds):
                    t_ref.append(bc._time(cp, ref, reps, 1))
                    t_lk.append(bc._time(cp, call, reps, 1))
            except Exception as exc:  # noqa: BLE001 - one row
                say(f"{size} {dt} {label}: FAILED {type(exc).__name__}: {str(exc)[:200]}")
                continue
            tr, tl = statistics.median(t_ref), statistics.median(t_lk)
            tol = 1e-4 if REAL[dt] == "float32" else 1e-10
            r = {"size": size, "dtype": dt, "label": label, "variant": what, "padded": padded,
                 "copies": copies if padded else "-", "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6,
                 "ratio": tr / tl, "rel_error": err, "ok": err <= tol, "reps": reps,
                 "rounds": rounds, "card": card,
                 "spread": (min(t_lk) * 1e6, max(t_lk) * 1e6, min(t_ref) * 1e6, max(t_ref) * 1e6)}
            rows.append(r)
            say(f"{size:15s} {LETTER[dt]} {label:17s} {tr * 1e6:9.1f} {tl * 1e6:9.1f} us "
                f"{tr / tl:5.2f}x  err {err:.1e}{'' if r['ok'] else ' WRONG'}  "
                f"{'padded/' + copies if padded else 'no copies'} [{what}]  "
                f"{flops / tl * 1e-12:5.1f} TFLOP/s")
        del A, B, R, C
        cp.get_default_memory_pool().free_all_blocks()
    g.mm_kernel, g.copy_kernels = keep_mm, keep_copies
    (out / f"odd24{'-auto' if auto_only else ''}.json").write_text(json.dumps(rows, indent=0))
    say("")
    say("| size | dtype | auto × cuBLAS | best × cuBLAS | best |")
    say("| --- | --- | --- | --- | --- |")
    for size in dict.fromkeys(r["size"] for r in rows):
        for dt in ("float32", "float64", "complex64", "complex128"):
            mine = [r for r in rows if r["size"] == size and r["dtype"] == dt and r["ok"]]
            if mine:
                b = max(mine, key=lambda r: r["ratio"])
                a = [r for r in mine if r["label"] == "auto"]
                say(f"| {size} | {LETTER[dt]} | {a[0]['ratio'] if a else float('nan'):.2f} | "
                    f"{b['ratio']:.2f} | {b['label']} [{b['variant']}] |")
    return 0 if all(r["ok"] for r in rows) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="dtype letters, e.g. S,D")
    p.add_argument("--auto-only", action="store_true", help="the library's own choice only")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = p.parse_args(argv)
    only = {x for x in args.only.split(",") if x}
    if args.dry:
        t0 = time.time()
        fails = 0
        for b in build_all("sm_90a", args.workers):
            real, v = b["real"], b["v"]
            fails += "error" in b
            print(f"{real:8s} {v}: " + (b["error"] if "error" in b else
                                        f"{len(b['kernels'])} kernel(s) {b['s']:.1f} s"))
        print(f"dry: {len(forced_kernels())} derived and compiled in {time.time() - t0:.1f} s, "
              f"{fails} failed")
        return 1 if fails else 0
    return gpu(Path(args.out), args.rounds, only, args.workers, args.auto_only)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
