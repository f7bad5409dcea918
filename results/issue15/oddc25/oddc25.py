"""CGEMM and ZGEMM at odd sizes on the complex kernels, beside the `real` plan and cuBLAS (CuPy),
session 25 (helper H7).

    python results/issue15/oddc25/oddc25.py --build kernels.pkl     # no GPU: derive + NVRTC
    python results/issue15/oddc25/oddc25.py --out DIR [--kernels kernels.pkl] [--rounds 5]

Rows (NN): at C 1000³ and 1023×1025×999 the shipped plan (`real`: cembed of B, then the real
FFMA kernel), the guarded complex tiles `edge-ctiles-async` (no copies: 128×64 tiles, the same
split in 2 along K under the 2-blocks-per-SM cap, 64×64 and 64×32 tiles) and ctiles-async run
padded (pad2d/crop2d or the driver's 2-D copies, via "padded"); at Z 1000³ and 1023×1025×999
the shipped plan and zmma run padded (the shipped 1024 tiling, without its groups, 64×64 on 8
warps). A row's entry is put in the in-memory profile at its very sizes (what `ship.py` writes
for the winners), so the call runs as liftkit.blas would (`gemm.measured_here`; the plan's
kernel checked to be the row's). Every row is checked twice (C poisoned with NaN, the whole C
against cuBLAS's product of the same operands, max relative error ≤ 1e-4 complex64, 1e-10
complex128): after the first call (the general path) and after the timing (the call plan).
Timing: per call, `--rounds` alternating rounds (a batch of cuBLAS calls `cp.matmul(A, B,
out=R)`, a batch of liftkit calls; CUDA events around each batch), medians; complex rates
8 flops per multiply-add on both sides. `device`: the device µs of one whole call, calls
queued behind products (the host runs ahead).

`--build` derives and compiles every kernel the rows run (planned on the stubbed H100 session of
benchmarks/blas_host.py with the same entries) for sm_90a into a pickle of (source, options,
cubin) that the device run puts into the runner's module cache.
"""

from __future__ import annotations

import argparse
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
SIZES = {"1000": (1000, 1000, 1000), "odd": (1023, 1025, 999)}
CT = dict(tm=128, tn=64, tk=16, rm=8, rn=4, stages=2)
SLOTS = 264  # the H100's 132 SMs × 2 blocks (bound 2: 128 registers; checked on the device)
C_ROWS = [("real", None, ""),
          ("edge 128x64", ("edge-ctiles-async", CT), ""),
          ("edge 128x64 split2", ("edge-ctiles-async", {**CT, "split": 2, "slots": SLOTS,
                                                        "bound": 2}), ""),
          ("edge 64x64 s2", ("edge-ctiles-async", dict(tm=64, tn=64, tk=16, rm=4, rn=8,
                                                       stages=2)), ""),
          ("edge 64x64 s3", ("edge-ctiles-async", dict(tm=64, tn=64, tk=16, rm=4, rn=8,
                                                       stages=3)), ""),
          ("edge 64x32", ("edge-ctiles-async", dict(tm=64, tn=32, tk=16, rm=8, rn=4,
                                                    stages=2)), ""),
          ("padded 128x64", ("ctiles-async", CT), "padded"),
          ("padded 64x64", ("ctiles-async", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2)),
           "padded")]
ZT = dict(tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1)
Z_ROWS = [("real", None, ""),
          ("padded zmma 128x32 g2", ("zmma", {**ZT, "group": 2}), "padded"),
          ("padded zmma 128x32", ("zmma", ZT), "padded"),
          ("padded zmma 64x64 w8", ("zmma", dict(tm=64, tn=64, tk=8, warps=8, staged=4,
                                                 ahead=1)), "padded")]
ROWS = ([("complex64", size, *r) for size in SIZES for r in C_ROWS]
        + [("complex128", size, *r) for size in SIZES for r in Z_ROWS])
# run 2 (`--run2`): the shipped CGEMM 1000³ entry and 128×32 / 128×64×32 guarded tiles (264
# tiles at 1023×1025: two per SM), zmma padded with its copies as kernels (pad2d/crop2d, the
# library now) and by the driver (`driver`: as in run 1), each padded row's pieces
SPLIT2 = ("edge-ctiles-async", {**CT, "split": 2, "slots": SLOTS, "bound": 2})
T32 = [("edge 128x32 8x4", ("edge-ctiles-async", dict(tm=128, tn=32, tk=16, rm=8, rn=4,
                                                       stages=2)), ""),
       ("edge 128x32 4x4", ("edge-ctiles-async", dict(tm=128, tn=32, tk=16, rm=4, rn=4,
                                                       stages=2)), "")]
ZG2 = ("zmma", {**ZT, "group": 2})
ROWS2 = ([("complex64", "1000", *r) for r in [
    ("real", None, ""), ("edge 128x64 split2", SPLIT2, ""), *T32,
    ("edge 128x64x32", ("edge-ctiles-async", {**CT, "tk": 32}), "")]]
    + [("complex64", "odd", *r) for r in [
        ("real", None, ""), ("edge 64x32", C_ROWS[5][1], ""), *T32,
        ("edge 128x32 8x4 s3", ("edge-ctiles-async", dict(tm=128, tn=32, tk=16, rm=8, rn=4,
                                                          stages=3)), "")]]
    + [("complex128", size, *r) for size in SIZES for r in [
        ("real", None, ""), ("padded zmma g2", ZG2, "padded"),
        ("padded zmma g2 driver", ZG2, "padded")]])


def _entry(dt: str, size: str, spec: Optional[tuple[str, dict]], via: str) -> Any:
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry, size_class

    if spec is None:
        return None
    sizes = dict(zip("MNK", SIZES[size]))
    return Entry(Kind("mm", dt, "NN"), size_class("mm", sizes), sizes,
                 Variant.of(spec[0], **spec[1]), 1.0, 1e9, via=via)


def _with(s: Any, shipped: list, entry: Any) -> None:
    """The shipped entries (without this script's kinds at these sizes), plus the row's."""
    sizes = [dict(zip("MNK", v)) for v in SIZES.values()]
    s.profile.entries = [e for e in shipped if not (
        e.kind.dtype.startswith("complex") and dict(e.sizes) in sizes
        and (e.via == "padded" or e.variant.codelet == "edge-ctiles-async"))]
    if entry is not None:
        s.profile.add([entry])
    s.forget_choices()


def _host() -> Any:
    spec = importlib.util.spec_from_file_location("blas_host", ROOT / "benchmarks/blas_host.py")
    host = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(host)  # type: ignore[union-attr]
    return host


def build(path: Path, rows: list) -> int:
    """Every kernel of every row (planned on the stubbed H100 session), compiled for sm_90a."""
    from liftkit.backends.cuda import compile_cuda
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    s = _host().stub_session()
    shipped = list(s.profile.entries)
    for dt, size, _, spec, via in rows:
        _with(s, shipped, _entry(dt, size, spec, via))
        m, n, k = SIZES[size]
        plan = s.plan_gemm((m, k), (k, n), dt)
        if plan.padded != plan.sizes:
            plan.crop_kernel()
        for r in "AB":
            plan._pack_steps(r)
    out, t0, fails = [], time.time(), 0
    for kind, v in list(s.store._built):
        try:
            c = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda"))
            for kk in c.kernels:
                cub = compile_cuda(kk.source, "sm_90a", list(kk.build_options),
                                   name=f"{kk.function}.cu").cubin
                out.append((kk.source, list(kk.build_options), cub))
            print(f"{kind} {v}: {len(c.kernels)} kernel(s)", flush=True)
        except Exception as err:  # noqa: BLE001 - reported
            fails += 1
            print(f"{kind} {v}: FAILED {type(err).__name__}: {str(err)[:300]}", flush=True)
    path.write_bytes(pickle.dumps(out))
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


def gpu(out: Path, rounds: int, kernels: Optional[Path], only: str, rows: list) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.backends.cuda.occupancy import bounded_slots, sm_limits
    from liftkit.blas import Session
    from liftkit.blas.mm_codelets import tiles_async_footprint

    s = Session("gpu")
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / "oddc25.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    t0 = time.time()
    if kernels is not None and kernels.exists():
        for src, opts, cubin in pickle.loads(kernels.read_bytes()):
            runner.cache.put(runner.device, src, opts, cubin)
    slots = bounded_slots(sm_limits(0), *tiles_async_footprint(**CT, size=8), 2)
    say(f"card: {card}; kernels loaded in {time.time() - t0:.1f} s; 128x64 slots at bound 2: "
        f"{slots} (rows use {SLOTS})")
    shipped = list(s.profile.entries)
    results: list[dict[str, Any]] = []
    from liftkit.blas import gemm as _  # noqa: F401 - (the module, for the driver rows' patch)

    gm = sys.modules["liftkit.blas.gemm"]
    own = gm.GemmPlan._own_copies
    for dt, size, label, spec, via in rows:
        gm.GemmPlan._own_copies = property(lambda self: False) if "driver" in label else own
        if only and dt[:8] not in only:
            continue
        m, n, k = SIZES[size]
        entry = _entry(dt, size, spec, via)
        _with(s, shipped, entry)
        A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
        B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
        R, Y = cp.empty((m, n), dt), cp.full((m, n), np.nan, dt)
        ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
        call = lambda: s.gemm(A, B, Y)  # noqa: E731
        flops = 8 * m * n * k
        tol = 1e-4 if dt == "complex64" else 1e-10

        def check() -> float:
            Y.fill(np.nan)
            call().result()
            cp.cuda.Device().synchronize()
            e = float(cp.max(cp.abs(Y - R))) / max(float(cp.max(cp.abs(R))), 1e-30)
            return e if bool(cp.all(cp.isfinite(Y))) else float("inf")

        try:
            plan = s.plan_gemm(A.shape, B.shape, dt)
            what = (f"real() on {plan.embed.real.variant}" if plan.embed is not None
                    else str(plan.built.variant)) + (" padded" if plan.padded != plan.sizes else "")
            if entry is not None and (plan.embed is not None or plan.built.variant != entry.variant):
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
            say(f"{size} {dt} {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            continue
        tr, tl = statistics.median(t_ref), statistics.median(t_lk)
        ratios = [a / b for a, b in zip(t_ref, t_lk)]
        err = max(err_first, err_plan)
        r = {"size": "x".join(map(str, SIZES[size])), "dtype": dt, "label": label,
             "variant": entry.variant.to_json() if entry is not None else None, "via": via,
             "plan": what, "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6, "ratio": tr / tl,
             "ratio_rounds": [min(ratios), max(ratios)], "device_us": dev,
             "rel_error_first": err_first, "rel_error_plan": err_plan, "ok": err <= tol,
             "reps": reps, "rounds": rounds, "card": card}
        say(f"{r['size']:13s} {dt[:9]:9s} {label:22s} {tr * 1e6:7.1f} {tl * 1e6:7.1f} us "
            f"{tr / tl:5.3f}x ({min(ratios):.3f}-{max(ratios):.3f}) dev {dev:6.1f}  err "
            f"{err_first:.1e}/{err_plan:.1e}{'' if r['ok'] else ' WRONG'} "
            f"{flops / tl * 1e-12:5.1f} TFLOP/s [{what}]")
        if via == "padded":
            try:
                r["pieces_us"] = pieces(s, plan, A, B, call)
                say("    pieces (device us per launch): " + "; ".join(
                    f"{k} {v:.1f}" for k, v in r["pieces_us"].items()))
            except Exception as exc:  # noqa: BLE001 - a diagnostic only
                say(f"    pieces: FAILED {type(exc).__name__}: {str(exc)[:200]}")
        results.append(r)
        (out / "oddc25.json").write_text(json.dumps(results, indent=0))
        del A, B, R, Y
        cp.get_default_memory_pool().free_all_blocks()
    gm.GemmPlan._own_copies = own
    _with(s, shipped, None)
    say(f"done in {time.time() - t0:.1f} s")
    return 0 if results and all(r["ok"] for r in results) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="")
    p.add_argument("--out", default=".")
    p.add_argument("--kernels", default="")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="complex6 / complex1 (dtype prefixes)")
    p.add_argument("--run2", action="store_true", help="run 2's rows (ROWS2)")
    args = p.parse_args(argv)
    rows = ROWS2 if args.run2 else ROWS
    if args.build:
        return build(Path(args.build), rows)
    return gpu(Path(args.out), args.rounds, Path(args.kernels) if args.kernels else None,
               args.only, rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
