"""Widening issue 15's thin odd-size margins on the H100 (session 26, helper H7): ZGEMM NN 1000³
(0.81x cuBLAS: zmma on pad2d/crop2d copies) on the complex DMMA tiles over padded views
(`edge-zmma`, no copies), and SGEMM NN 1023×1025×999 (0.805x: `edge-tiles-async` 256×32×16
16×4, A's rows swizzled, split in 3) beside its neighbours, each beside cuBLAS (CuPy).

    python results/issue15/odd26b/odd26b.py --build kernels.pkl.gz [--ptxas]   # no GPU
    python results/issue15/odd26b/odd26b.py --out DIR --kernels kernels.pkl.gz [--rounds 7]

Rows and method: odd25b.py's (`build`, `gpu`), per dtype: each row's variant put in the
in-memory H100 profile as an entry at its sizes (float32: a plain entry, the float32 guarded
entries at those sizes dropped first, as odd25b; complex128: via "here", which
`gemm.measured_here` ranks beside the shipped entry via "padded"), the plan checked to run it;
C NaN-poisoned and compared with cuBLAS's product after the first call and after the timing
(max relative error ≤ 1e-4 float32, 1e-12 complex128); per call, alternating rounds of a batch
of cuBLAS calls and a batch of liftkit calls, CUDA events around each, medians.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
_spec = importlib.util.spec_from_file_location("odd25b", HERE.parent / "odd25b" / "odd25b.py")
odd25b = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(odd25b)  # type: ignore[union-attr]

SIZES = {"odd": (1023, 1025, 999), "1000": (1000, 1000, 1000), "1024": (1024, 1024, 1024)}
H100 = "profile-397cb6df054d2a73.json"
FLOPS = {"float32": 2, "complex128": 8}
TOL = {"float32": 1e-4, "complex128": 1e-12}


def _s(rm: int = 16, rn: int = 4, rot: int = 2, tk: int = 16, stages: int = 2, split: int = 3,
       slots: int = 396, bound: int = 3, tm: int = 256, tn: int = 32) -> tuple:
    """edge-tiles-async, 4-byte copies, split along K (the shipped entry's form by default)."""
    return ("edge-tiles-async", dict(
        tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, elems=1, **({"rot": rot} if rot else {}),
        **({"split": split, "slots": slots} if split else {}), **({"bound": bound} if bound else {})))


def _z(tm: int, tn: int, tk: int, warps: int, staged: int, ahead: int = 1) -> tuple:
    return ("edge-zmma", dict(tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                              **({"ahead": 1} if ahead else {})))


Z, S = "complex128", "float32"
# ZGEMM 1000³: 128×32 tiles make 8 × 32 = 256 blocks, two resident per SM (253 registers × 128
# threads, 80 KB of stages): one wave of 264 slots, as at 1024³ where zmma runs 1.00x; 64×64 on 8
# warps 16 × 16 blocks, one per SM (167 registers × 256: two waves); 64×32 16 × 32, two per SM
ROWS = [(Z, "1000", "shipped: zmma 128x32x8 g2 padded", None),
        (Z, "1000", "edge-zmma 128x32x8 w4 s4 ahead", _z(128, 32, 8, 4, 4)),
        (Z, "1000", "edge-zmma 128x32x8 w4 s4", _z(128, 32, 8, 4, 4, 0)),
        (Z, "1000", "edge-zmma 64x64x8 w8 s4 ahead", _z(64, 64, 8, 8, 4)),
        (Z, "1000", "edge-zmma 64x32x8 w4 s4 ahead", _z(64, 32, 8, 4, 4)),
        (Z, "odd", "shipped: zmma 128x32x8 g2 padded", None),
        (Z, "odd", "edge-zmma 128x32x8 w4 s4 ahead", _z(128, 32, 8, 4, 4)),
        (Z, "1000", "shipped again", None),
        (Z, "1000", "edge-zmma 128x32x8 w4 s4 ahead (again)", _z(128, 32, 8, 4, 4)),
        (Z, "1024", "shipped: zmma 128x32x8 g2 (control)", None),
        (S, "odd", "shipped: 16x4 rot2 split3 b3", _s()),
        (S, "odd", "8x8 rot2 split3 b3", _s(rm=8, rn=8)),
        (S, "odd", "16x4 rot2 split2 264 b2", _s(split=2, slots=264, bound=2)),
        (S, "odd", "16x4 rot1 split3 b3", _s(rot=1)),
        (S, "odd", "shipped again", _s()),
        (S, "odd", "8x8 rot2 split3 b3 (again)", _s(rm=8, rn=8)),
        (S, "1000", "shipped (control)", None)]


def _entry(dt: str, size: str, spec: Optional[tuple[str, dict]]) -> Any:
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry, size_class

    if spec is None:
        return None
    sizes = dict(zip("MNK", SIZES[size]))
    via = "here" if dt == Z else ""
    return Entry(Kind("mm", dt, "NN"), size_class("mm", sizes), sizes,
                 Variant.of(spec[0], **spec[1]), 1.0, 1e9, via=via)


def _with(s: Any, shipped: list, dt: str, size: str, entry: Any) -> None:
    """The shipped entries (with a float32 row's entry: without the float32 guarded entries at
    its sizes), plus the row's."""
    at = dict(zip("MNK", SIZES[size]))
    s.profile.entries = [e for e in shipped if not (
        entry is not None and dt == S and e.kind.dtype == S and dict(e.sizes) == at
        and e.variant.codelet == "edge-tiles-async")]
    if entry is not None:
        s.profile.add([entry])
    s.forget_choices()


def build(path: Path, rows: list, ptxas: bool) -> int:
    """Every kernel of every row (planned on the stubbed H100 session), compiled for sm_90a."""
    from liftkit.backends.cuda import compile_cuda
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    s = odd25b._host().stub_session()
    shipped = list(s.profile.entries)
    for dt, size, label, spec in rows:
        entry = _entry(dt, size, spec)
        _with(s, shipped, dt, size, entry)
        m, n, k = SIZES[size]
        plan = s.plan_gemm((m, k), (k, n), dt)
        print(f"{dt} {size} {label}: {plan.built.variant}"
              f"{' padded' if plan.padded != plan.sizes else ''}", flush=True)
        if entry is not None and plan.built.variant != entry.variant:
            print("  FAILED: the entry did not choose its kernel")
            return 1
        if plan.padded != plan.sizes:
            plan.crop_kernel()
        for r in "AB":
            plan._pack_steps(r)
    out, t0, fails = [], time.time(), 0
    for kind, v in list(s.store._built):
        try:
            t1 = time.time()
            c = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda"))
            for kk in c.kernels:
                opts = list(kk.build_options)
                cub = compile_cuda(kk.source, "sm_90a", opts, name=f"{kk.function}.cu").cubin
                out.append((kk.source, opts, cub))
                if ptxas:
                    log = compile_cuda(kk.source, "sm_90a", opts + ["--ptxas-options=-v"],
                                       name=f"{kk.function}.cu").log
                    print("   ", " ".join(x.strip() for x in str(log).splitlines()
                                          if "registers" in x or "spill" in x)[:300])
            print(f"{kind} {v}: {len(c.kernels)} kernel(s) {time.time() - t1:.1f} s", flush=True)
        except Exception as err:  # noqa: BLE001 - reported
            fails += 1
            print(f"{kind} {v}: FAILED {type(err).__name__}: {str(err)[:300]}", flush=True)
    data = pickle.dumps(out)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    print(f"{len(out)} cubins in {time.time() - t0:.1f} s, {fails} failed -> {path}")
    return 1 if fails else 0


def gpu(out: Path, rounds: int, kernels: Optional[Path], rows: list) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.blas import Session

    s = Session("gpu", profile=str(ROOT / "src/liftkit/blas/profiles" / H100))
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / "odd26b.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    t0 = time.time()
    if kernels is not None and kernels.exists():
        data = kernels.read_bytes()
        for src, opts, cubin in pickle.loads(gzip.decompress(data) if kernels.suffix == ".gz"
                                             else data):
            runner.cache.put(runner.device, src, opts, cubin)
    say(f"card: {card}; profile {s.profile.fingerprint}; kernels loaded in "
        f"{time.time() - t0:.1f} s")
    shipped = list(s.profile.entries)
    results: list[dict[str, Any]] = []
    for dt, size, label, spec in rows:
        m, n, k = SIZES[size]
        entry = _entry(dt, size, spec)
        _with(s, shipped, dt, size, entry)
        A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
        B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
        R, Y = cp.empty((m, n), dt), cp.full((m, n), np.nan, dt)
        ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
        call = lambda: s.gemm(A, B, Y)  # noqa: E731

        def check() -> float:
            Y.fill(np.nan)
            call().result()
            cp.cuda.Device().synchronize()
            e = float(cp.max(cp.abs(Y - R))) / max(float(cp.max(cp.abs(R))), 1e-30)
            return e if bool(cp.all(cp.isfinite(Y))) else float("inf")

        t1 = time.time()
        try:
            plan = s.plan_gemm(A.shape, B.shape, dt)
            what = str(plan.built.variant) + (" padded" if plan.padded != plan.sizes else "")
            if entry is not None and plan.built.variant != entry.variant:
                raise RuntimeError(f"the entry did not choose its kernel: {what}")
            ref()
            cp.cuda.Device().synchronize()
            err_first = check()
            est = bc._time(cp, call, 2, 1)
            reps = max(3, min(40, int(4e-3 / max(est, 1e-6))))
            t_ref, t_lk = [], []
            for _ in range(rounds):
                t_ref.append(bc._time(cp, ref, reps, 1))
                t_lk.append(bc._time(cp, call, reps, 1))
            err_plan = check()
            dev = odd25b.device_us(s.q, call, call)
        except Exception as exc:  # noqa: BLE001 - one row
            say(f"{dt} {size} {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            continue
        tr, tl = statistics.median(t_ref), statistics.median(t_lk)
        ratios = [a / b for a, b in zip(t_ref, t_lk)]
        err = max(err_first, err_plan)
        r = {"size": "x".join(map(str, SIZES[size])), "dtype": dt, "label": label,
             "variant": entry.variant.to_json() if entry is not None else None,
             "plan": what, "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6, "ratio": tr / tl,
             "ratio_rounds": [min(ratios), max(ratios)], "device_us": dev,
             "rel_error_first": err_first, "rel_error_plan": err_plan, "ok": err <= TOL[dt],
             "reps": reps, "rounds": rounds, "card": card, "row_s": time.time() - t1}
        say(f"{dt[:5]} {r['size']:14s} {label:38s} {tr * 1e6:7.1f} {tl * 1e6:7.1f} us "
            f"{tr / tl:5.3f}x ({min(ratios):.3f}-{max(ratios):.3f}) dev {dev:6.1f}  err "
            f"{err_first:.1e}/{err_plan:.1e}{'' if r['ok'] else ' WRONG'} "
            f"{FLOPS[dt] * m * n * k / tl * 1e-12:5.1f} TFLOP/s {time.time() - t1:4.1f}s [{what}]")
        results.append(r)
        (out / "odd26b.json").write_text(json.dumps(results, indent=0))
        del A, B, R, Y
        cp.get_default_memory_pool().free_all_blocks()
    say(f"done in {time.time() - t0:.1f} s")
    return 0 if results and all(r["ok"] for r in results) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="")
    p.add_argument("--ptxas", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--kernels", default="")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", default="", help="comma-separated row labels")
    args = p.parse_args(argv)
    rows = [r for r in ROWS if not args.only or r[2] in args.only.split(",")]
    if args.build:
        return build(Path(args.build), rows, args.ptxas)
    return gpu(Path(args.out), args.rounds, Path(args.kernels) if args.kernels else None, rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
