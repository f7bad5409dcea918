"""SGEMM at 1023×1025×999 on narrow guarded tiles (one wave on the H100), beside the shipped plan
and cuBLAS (CuPy), session 25 (helper H10).

    python results/issue15/odd25b/odd25b.py --build kernels.pkl     # no GPU: derive + NVRTC
    python results/issue15/odd25b/odd25b.py --out DIR [--kernels kernels.pkl] [--rounds 5]

Why: the shipped plan runs 1023×1025×999 on `edge-tiles-async` 128×64×32 (elems, split in 4):
N = 1025 makes 17 columns of 64-wide tiles, 8 × 17 = 136 tiles for 132 multiprocessors, a
second wave (0.72x cuBLAS, results/issue15/odd25). 128×32 tiles make 8 × 33 = 264 (two per
multiprocessor), 256×32 tiles 4 × 33 = 132 (one each), 64×32 tiles 16 × 33 = 528 (four).
Rows (float32 NN): at 1023×1025×999 the shipped plan (`auto`) and `edge-tiles-async` entries at
those very sizes (what `ship.py` writes for the winner: `gemm.profiled_edge` runs the fastest
measured there): elems=1 (4-byte copies with their source sizes, no copies of the operands) on
128×32 (8×8 and 8×4 blocks, 16 and 32 deep, 2 and 3 stages), 256×32, 64×32 and 128×64 (no
split), and one float4 form without elems (its operands padded to whole vectors by pad2d, the
product cropped: `pieces` says what the copies cost and what the kernel alone takes); at 1000³
and 4097×4095² the shipped plan (controls: no entry changes there). Every row is checked twice
(C poisoned with NaN, the whole C against cuBLAS's product of the same operands, max relative
error ≤ 1e-4): after the first call (the general path) and after the timing (the call plan).
Timing: per call, `--rounds` alternating rounds (a batch of cuBLAS calls `cp.matmul(A, B,
out=R)`, a batch of liftkit calls; CUDA events around each batch), medians. `device`: device µs
of one whole call, calls queued behind products (the host runs ahead).

`--build` derives and compiles every kernel the rows run (planned on the stubbed H100 session of
benchmarks/blas_host.py with the same entries) for sm_90a into a pickle of (source, options,
cubin; gzipped where the name ends in .gz) that the device run puts into the runner's
module cache; `--ptxas` prints each kernel's registers and spills (ptxas -v through NVRTC).
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
from typing import Any, Callable, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SIZES = {"odd": (1023, 1025, 999), "1000": (1000, 1000, 1000), "4097": (4097, 4095, 4095)}
DT = "float32"
H100 = "profile-397cb6df054d2a73.json"


def _e(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int = 2, elems: int = 1) -> tuple:
    return ("edge-tiles-async", dict(tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                                     **({"elems": 1} if elems else {})))


ROWS = [("odd", "auto", None),
        ("odd", "edge 128x32x32 8x8", _e(128, 32, 32, 8, 8)),
        ("odd", "edge 128x32x16 8x8", _e(128, 32, 16, 8, 8)),
        ("odd", "edge 128x32x16 8x8 s3", _e(128, 32, 16, 8, 8, 3)),
        ("odd", "edge 128x32x16 8x4", _e(128, 32, 16, 8, 4)),
        ("odd", "edge 128x32x32 8x4", _e(128, 32, 32, 8, 4)),
        ("odd", "edge 256x32x16 8x8", _e(256, 32, 16, 8, 8)),
        ("odd", "edge 256x32x32 8x8", _e(256, 32, 32, 8, 8)),
        ("odd", "edge 64x32x16 8x4", _e(64, 32, 16, 8, 4)),
        ("odd", "edge 128x64x32 8x8", _e(128, 64, 32, 8, 8)),
        ("odd", "float4 128x32x32 8x8 padded", _e(128, 32, 32, 8, 8, elems=0)),
        ("1000", "auto", None),
        ("4097", "auto", None)]


def _s(spec: tuple, split: int, slots: int, bound: int = 0) -> tuple:
    """spec split along K (mm-split-tail: the tiles of the last partial wave of `slots`, here
    every tile where the grid has fewer)."""
    return (spec[0], {**spec[1], "split": split, "slots": slots,
                      **({"bound": bound} if bound else {})})


# run 2 (`--run2`): the grids split along K so that every multiprocessor gets the same work in
# more resident blocks — 256×32 tiles (132 = one per SM) in 2, 3 or 4 parts (2, 3, 4 blocks per
# SM), 128×32 (264) in 2 (4 per SM); 128×64 (136 tiles: no split balances them) in 2, 5, 6 and
# 16 deep; 64×64 (272) in 3
N256, N128 = _e(256, 32, 16, 8, 8), _e(128, 32, 16, 8, 8)
ROWS2 = [("odd", "auto", None),
         ("odd", "256x32x16 split2 396", _s(N256, 2, 396)),
         ("odd", "256x32x16 split3 396 b3", _s(N256, 3, 396, 3)),
         ("odd", "256x32x16 split4 528 b4", _s(N256, 4, 528, 4)),
         ("odd", "256x32x32 split3 396 b3", _s(_e(256, 32, 32, 8, 8), 3, 396, 3)),
         ("odd", "128x32x16 split2 528 b4", _s(N128, 2, 528, 4)),
         ("odd", "128x32x16 8x4 split2 528 b4", _s(_e(128, 32, 16, 8, 4), 2, 528, 4)),
         ("odd", "128x64x32 split2 396", _s(_e(128, 64, 32, 8, 8), 2, 396)),
         ("odd", "128x64x32 split5 396 b3", _s(_e(128, 64, 32, 8, 8), 5, 396, 3)),
         ("odd", "128x64x32 split6 396", _s(_e(128, 64, 32, 8, 8), 6, 396)),
         ("odd", "128x64x16 split4 396 b3", _s(_e(128, 64, 16, 8, 8), 4, 396, 3)),
         ("odd", "64x64x16 split3 924", _s(_e(64, 64, 16, 8, 8), 3, 924))]


# run 3 (`--run3`, prepared for the coordinator): the shipped entry beside 256×32 tiles with 16×4
# blocks (a warp of 8 × 4 work-items reads 4 rows of A, as 128×64's: 2-way bank conflicts where
# 8×8 blocks' 4 × 8 warps have 4-way), three stages, and 128×64 in 6 parts again; `auto` is the
# plan without entries at 1023×1025×999 (`_with` drops them: 128×64 split 4, the old plan)
W164 = _e(256, 32, 16, 16, 4)
ROWS3 = [("odd", "auto (no entry)", None),
         ("odd", "shipped 256x32x16 split3 b3", _s(N256, 3, 396, 3)),
         ("odd", "256x32x16 16x4 split3 b3", _s(W164, 3, 396, 3)),
         ("odd", "256x32x16 16x4 split2", _s(W164, 2, 396)),
         ("odd", "256x32x16 8x8 s3 split3 b3", _s(_e(256, 32, 16, 8, 8, 3), 3, 396, 3)),
         ("odd", "256x32x16 16x4 s3 split3 b3", _s(_e(256, 32, 16, 16, 4, 3), 3, 396, 3)),
         ("odd", "128x64x32 split6 396", _s(_e(128, 64, 32, 8, 8), 6, 396)),
         ("1000", "auto", None),
         ("4097", "auto", None)]


def _entry(size: str, spec: Optional[tuple[str, dict]]) -> Any:
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry, size_class

    if spec is None:
        return None
    sizes = dict(zip("MNK", SIZES[size]))
    return Entry(Kind("mm", DT, "NN"), size_class("mm", sizes), sizes,
                 Variant.of(spec[0], **spec[1]), 1.0, 1e9)


def _with(s: Any, shipped: list, entry: Any) -> None:
    """The shipped entries (without guarded float32 entries at the odd size), plus the row's."""
    odd = dict(zip("MNK", SIZES["odd"]))
    s.profile.entries = [e for e in shipped if not (
        e.kind.dtype == DT and dict(e.sizes) == odd and e.variant.codelet == "edge-tiles-async")]
    if entry is not None:
        s.profile.add([entry])
    s.forget_choices()


def _host() -> Any:
    spec = importlib.util.spec_from_file_location("blas_host", ROOT / "benchmarks/blas_host.py")
    host = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(host)  # type: ignore[union-attr]
    return host


def build(path: Path, rows: list, ptxas: bool) -> int:
    """Every kernel of every row (planned on the stubbed H100 session), compiled for sm_90a."""
    from liftkit.backends.cuda import compile_cuda
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    s = _host().stub_session()
    shipped = list(s.profile.entries)
    for size, label, spec in rows:
        _with(s, shipped, _entry(size, spec))
        m, n, k = SIZES[size]
        plan = s.plan_gemm((m, k), (k, n), DT)
        print(f"{size} {label}: {plan.built.variant}"
              f"{' padded' if plan.padded != plan.sizes else ''}", flush=True)
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


def device_us(q: Any, fn: Callable[[], Any], warm: Callable[[], Any], reps: int = 4,
              ahead: int = 4) -> float:
    for _ in range(ahead):
        warm()
    m0 = q.marker()
    for _ in range(reps):
        fn()
    m1 = q.marker()
    q.finish()
    return q.seconds(m0, m1) / reps * 1e6


def pieces(s: Any, plan: Any, A: Any, B: Any, call: Callable[[], Any]) -> dict[str, float]:
    """A padded plan's packing of A and of B, its product, its crop and one whole call, device
    µs per launch."""
    q, ws = s.q, plan.workspace()
    a, b = plan.pack("A", A, ws), plan.pack("B", B, ws)
    p, item = plan.padded, plan.dtype.itemsize
    prod = ws.buffer("product", p["M"] * p["N"] * item)
    dest = q.alloc(plan.m * plan.n * item)

    def product() -> Any:
        return plan.launch(a, b, prod, [], ws)

    steps = {"pack A": lambda: plan.pack("A", A, ws), "pack B": lambda: plan.pack("B", B, ws),
             "product": product, "crop": lambda: plan.crop_product(dest, prod, None, [])}
    got = {k: device_us(q, fn, product, reps=6) for k, fn in steps.items()}
    got["whole call"] = device_us(q, call, product)
    return got


def gpu(out: Path, rounds: int, kernels: Optional[Path], rows: list) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.blas import Session

    # the shipped H100 profile whatever the card (an H200 has none: its figures then say what
    # the H100's entries do there, beside cuBLAS on the same card)
    s = Session("gpu", profile=str(ROOT / "src/liftkit/blas/profiles" / H100))
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / "odd25b.log", "w")

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
    for size, label, spec in rows:
        m, n, k = SIZES[size]
        entry = _entry(size, spec)
        _with(s, shipped, entry)
        A = bc._rand_gpu(cp, (m, k), np.dtype(DT))
        B = bc._rand_gpu(cp, (k, n), np.dtype(DT))
        R, Y = cp.empty((m, n), DT), cp.full((m, n), np.nan, DT)
        ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
        call = lambda: s.gemm(A, B, Y)  # noqa: E731
        flops = 2 * m * n * k
        tol = 1e-4

        def check() -> float:
            Y.fill(np.nan)
            call().result()
            cp.cuda.Device().synchronize()
            e = float(cp.max(cp.abs(Y - R))) / max(float(cp.max(cp.abs(R))), 1e-30)
            return e if bool(cp.all(cp.isfinite(Y))) else float("inf")

        t1 = time.time()
        try:
            plan = s.plan_gemm(A.shape, B.shape, DT)
            what = str(plan.built.variant) + (" padded" if plan.padded != plan.sizes else "")
            if entry is not None and plan.built.variant != entry.variant:
                raise RuntimeError(f"the entry did not choose its kernel: {what}")
            ref()
            cp.cuda.Device().synchronize()
            err_first = check()
            est = bc._time(cp, call, 2, 1)
            reps = max(3, min(40, int(3e-3 / max(est, 1e-6))))
            t_ref, t_lk = [], []
            for _ in range(rounds):
                t_ref.append(bc._time(cp, ref, reps, 1))
                t_lk.append(bc._time(cp, call, reps, 1))
            err_plan = check()
            dev = device_us(s.q, call, call)
        except Exception as exc:  # noqa: BLE001 - one row
            say(f"{size} {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            continue
        tr, tl = statistics.median(t_ref), statistics.median(t_lk)
        ratios = [a / b for a, b in zip(t_ref, t_lk)]
        err = max(err_first, err_plan)
        r = {"size": "x".join(map(str, SIZES[size])), "dtype": DT, "label": label,
             "variant": entry.variant.to_json() if entry is not None else None,
             "plan": what, "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6, "ratio": tr / tl,
             "ratio_rounds": [min(ratios), max(ratios)], "device_us": dev,
             "rel_error_first": err_first, "rel_error_plan": err_plan, "ok": err <= tol,
             "reps": reps, "rounds": rounds, "card": card, "row_s": time.time() - t1}
        say(f"{r['size']:14s} {label:28s} {tr * 1e6:7.1f} {tl * 1e6:7.1f} us "
            f"{tr / tl:5.3f}x ({min(ratios):.3f}-{max(ratios):.3f}) dev {dev:6.1f}  err "
            f"{err_first:.1e}/{err_plan:.1e}{'' if r['ok'] else ' WRONG'} "
            f"{flops / tl * 1e-12:5.1f} TFLOP/s {time.time() - t1:4.1f}s [{what}]")
        if plan.padded != plan.sizes:
            try:
                r["pieces_us"] = pieces(s, plan, A, B, call)
                say("    pieces (device us per launch): " + "; ".join(
                    f"{k} {v:.1f}" for k, v in r["pieces_us"].items()))
            except Exception as exc:  # noqa: BLE001 - a diagnostic only
                say(f"    pieces: FAILED {type(exc).__name__}: {str(exc)[:200]}")
        results.append(r)
        (out / "odd25b.json").write_text(json.dumps(results, indent=0))
        del A, B, R, Y
        cp.get_default_memory_pool().free_all_blocks()
    _with(s, shipped, None)
    say(f"done in {time.time() - t0:.1f} s")
    return 0 if results and all(r["ok"] for r in results) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="")
    p.add_argument("--ptxas", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--kernels", default="")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated row labels")
    p.add_argument("--run2", action="store_true", help="run 2's rows (ROWS2)")
    p.add_argument("--run3", action="store_true", help="run 3's rows (ROWS3)")
    args = p.parse_args(argv)
    rows = [r for r in (ROWS3 if args.run3 else ROWS2 if args.run2 else ROWS)
            if not args.only or r[1] in args.only.split(",")]
    if args.build:
        return build(Path(args.build), rows, args.ptxas)
    return gpu(Path(args.out), args.rounds, Path(args.kernels) if args.kernels else None, rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
