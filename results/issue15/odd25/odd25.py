"""Odd-size GEMMs through liftkit.blas beside cuBLAS (CuPy) on a CUDA GPU, session 25 (helper
H5): the split plan with its copies in 16-byte vectors (`vec2d`), and where the odd rows spend
their time.

    python results/issue15/odd25/odd25.py [--dry] [--out DIR] [--rounds 5] [--only S,D]

Rows: S and D at 1023×1025×999 without a split entry (`plain`: the GEMM's own plan, S and D
their guarded kernels) and with one split entry in the in-memory profile in place of the
shipped ones (`split` — the shipped DGEMM entry, now on vector copies —, `split-rows` gemv=1:
what a tuned profile chooses through `Profile.at_sizes`); S/D/C/Z at 1000³, C/Z at 1023×1025×999 and
S/D/C/Z at 4097×4095² as the library runs them. Every row is checked twice (C poisoned with
NaN, the whole C against cuBLAS's product of the same operands, max relative error ≤ 1e-4
float32/complex64, 1e-10 float64/complex128): after the first call (the general path) and after
the timing (the repeated call's plan). Timing: per call, `--rounds` alternating rounds (a batch
of cuBLAS calls `cp.matmul(A, B, out=R)`, a batch of liftkit calls; CUDA events around each
batch, the last call waited for), medians. Complex rates count 8 flops per multiply-add on both
sides.

Pieces (device µs per launch, each measured as `reps` launches between two markers queued
behind products, so the host's launches run ahead of the GPU): for the split rows every kernel
(the copies in both forms, vec2d and glb; both GEMVs) and one whole call; for the other rows
(below 4097) the plan's packing steps, product and crop, and one whole call.

The kernels are derived and NVRTC-compiled first in a pool of worker processes (the list comes
from planning every row on the stubbed H100 session of benchmarks/blas_host.py, which reads the
same shipped profile); `--dry` (no GPU) does only that, for sm_90a.
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
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LETTER = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
ODD = (1023, 1025, 999)
# the split forms (run 1, at commit 8b7844d, also had "split-side": {"gemv": 1, "side": 1}, the
# edge on a second CUDA stream, since removed: it did not pay)
SPLITS = {"split": {}, "split-rows": {"gemv": 1}}
ROWS = ([(dt, "1023x1025x999", lab) for dt in ("float32", "float64")
         for lab in ("plain", *SPLITS)]
        + [(dt, "1000x1000x1000", "auto") for dt in LETTER]
        + [(dt, "1023x1025x999", "auto") for dt in ("complex64", "complex128")]
        + [(dt, "4097x4095x4095", "auto") for dt in LETTER])


def _shape(size: str) -> tuple[int, ...]:
    return tuple(int(x) for x in size.split("x"))


def split_entry(dt: str, label: str) -> Any:
    """A split entry at 1023×1025×999 for the row `label` (SPLITS)."""
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry, size_class

    sizes = dict(zip("MNK", ODD))
    v = Variant.of("split", w=64, **SPLITS[label])
    return Entry(Kind("mm", dt, "NN"), size_class("mm", sizes), sizes, v, 1.0, 1.0, via="split")


def _with_entry(s: Any, dt: str, label: str) -> None:
    """The session's profile without split entries of `dt`, plus the row's (`plain`: none)."""
    s.profile.entries = [e for e in s.profile.entries
                         if not (e.via == "split" and e.kind.dtype == dt)]
    if label in SPLITS:
        s.profile.add([split_entry(dt, label)])
    s.forget_choices()


def kernels_needed(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str, dict]]:
    """(op, dtype, layout, variant) of every kernel the rows and their pieces run, from planning
    them on the stubbed H100 session (nothing compiled)."""
    from liftkit.blas.codelets import Kind, Variant

    spec = importlib.util.spec_from_file_location("blas_host", ROOT / "benchmarks/blas_host.py")
    host = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(host)  # type: ignore[union-attr]
    s = host.stub_session()
    shipped = list(s.profile.entries)
    for dt, size, label in rows:
        m, n, k = _shape(size)
        if size == "1023x1025x999" and dt in ("float32", "float64"):
            _with_entry(s, dt, label)
        plan = s.plan_gemm((m, k), (k, n), dt)
        if hasattr(plan, "edge"):
            e, at = plan.edge, plan._at()
            for name, op in (("pad", "pad2d"), ("window", "window2d")):
                s.kernel(Kind(op, dt), at[name], Variant.of("glb"))
        else:
            if plan.padded != plan.sizes and plan.crop_kernel() is not None:
                s.kernel(plan.crop_kernel().kind, plan._crop_at, Variant.of("glb"))
            for r in "AB":
                for st in plan._pack_steps(r):
                    if st.built is not None:
                        s.kernel(st.built.kind, st.at or {}, Variant.of("glb"))
        s.profile.entries = list(shipped)
        s.forget_choices()
    return [(k.op, k.dtype, k.layout, v.to_json()) for (k, v) in s.store._built]


def _build(job: tuple[str, str, str, dict[str, Any], str]) -> dict[str, Any]:
    """In a worker: derivation, CUDA C, cubins (no GPU needed)."""
    op, dt, lay, vj, arch = job
    from liftkit.backends.cuda import compile_cuda
    from liftkit.blas.codelets import Kind, Variant, derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    t0 = time.time()
    try:
        c = compile_program(derive(Kind(op, dt, lay), Variant.from_json(vj)).final,
                            CompileOptions(dialect="cuda"))
        outs = [(k.source, list(k.build_options),
                 compile_cuda(k.source, arch, list(k.build_options), name=f"{k.function}.cu").cubin)
                for k in c.kernels]
        return {"job": job[:4], "kernels": outs, "s": time.time() - t0}
    except Exception as err:  # noqa: BLE001 - one kernel failing is reported
        return {"job": job[:4], "error": f"{type(err).__name__}: {err}"[:300]}


def build_all(rows: list[tuple[str, str, str]], arch: str, workers: int) -> list[dict[str, Any]]:
    import concurrent.futures as cf
    import multiprocessing

    with cf.ProcessPoolExecutor(max(1, workers),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        # (planned in a worker: the stubbed session patches the CUDA modules of its process)
        jobs = [(*j, arch) for j in pool.submit(kernels_needed, rows).result()]
        return list(pool.map(_build, jobs))


def device_us(q: Any, fn: Callable[[], Any], warm: Callable[[], Any], reps: int = 10,
              ahead: int = 4) -> float:
    """Device µs per `fn()`: `reps` of them between two markers, queued behind `ahead` runs of
    `warm` (a product: the host's launches then run ahead of the GPU)."""
    for _ in range(ahead):
        warm()
    m0 = q.marker()
    for _ in range(reps):
        fn()
    m1 = q.marker()
    q.finish()
    return q.seconds(m0, m1) / reps * 1e6


def split_pieces(s: Any, plan: Any, A: Any, B: Any, call: Callable[[], Any]) -> dict[str, float]:
    """Each kernel of a split plan (the copies as vec2d, the library's choice, and as glb; the
    profile's GEMV and the warp-per-row one) and one whole call, device µs."""
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.split import row_gemv

    q, e, at, nb = s.q, plan.edge, plan._at(), plan._bytes()
    dt_name = str(plan.dtype)
    ws = plan.workspace()
    a, b = plan.pack("A", A, ws), plan.pack("B", B, ws)
    dt = plan.dtype.type
    prod, col = ws.buffer("split-P", nb["split-P"]), ws.buffer("split-e", nb["split-e"])
    zeros, _ = s.zeros(e.mg * plan.dtype.itemsize)
    dest = q.alloc(plan.m * plan.n * plan.dtype.itemsize)

    def interior() -> Any:
        return plan.built.launch(q, {0: a.buf, 1: b.buf}, {}, prod, at["mm"], (), ws)

    def copy(op: str, name: str, src: Any, dst: Any, glb: bool) -> Callable[[], Any]:
        k = s.kernel(Kind(op, dt_name), at[name], Variant.of("glb")) if glb else \
            getattr(e, {"pad": "pad_x"}.get(name, name))
        return lambda: k.launch(q, {0: src}, {}, dst, at[name])

    gemvs = {"GEMV " + str(e.gemv.variant): e.gemv}
    other = s.kernel(Kind("gemv", dt_name, "N"), at["gemv"],
                     None if e.gemv_rows else row_gemv(dt_name))
    gemvs["GEMV " + str(other.variant)] = other
    steps: dict[str, Callable[[], Any]] = {}
    for glb in (False, True):
        tag = "glb" if glb else "vec"
        if e.pad_x is not None:
            steps[f"pad2d A {tag} [{(e.pad_x.variant if not glb else 'glb')}]"] = copy(
                "pad2d", "pad", a.source.buf, a.buf, glb)
        steps[f"window2d B {tag}"] = copy("window2d", "window", b.source.buf, b.buf, glb)
    steps[f"tailcols B [{e.tail.variant}]"] = copy("tailcols", "tail", b.source.buf, b.edge,
                                                   False)
    steps["interior"] = interior
    for name, g in gemvs.items():
        steps[name] = (lambda g=g: g.launch(q, {0: a.buf, 1: b.edge, 2: zeros},
                                            {3: dt(1), 4: dt(0)}, col, at["gemv"], (), ws))
    steps["hcat"] = lambda: e.hcat.launch(q, {0: prod, 1: col}, {}, dest, at["hcat"])
    got = {name: device_us(q, fn, interior) for name, fn in steps.items()}
    got["whole call"] = device_us(q, call, interior, reps=4, ahead=6)
    return got


def plan_pieces(s: Any, plan: Any, A: Any, B: Any, call: Callable[[], Any]) -> dict[str, float]:
    """A GEMM plan's packing of A and B (its pad2d / cprep / cembed / transpose steps), the
    product on the packed operands, the crop of a padded product, and one whole call, device
    µs."""
    from liftkit.blas.codelets import Variant

    q = s.q
    ws = plan.workspace()
    a, b = plan.pack("A", A, ws), plan.pack("B", B, ws)
    first, second = (a, b) if plan.first == "A" else (b, a)
    p, item = plan.padded, plan.dtype.itemsize
    prod = ws.buffer("product", p["M"] * p["N"] * item * 2)
    dest = q.alloc(plan.m * plan.n * item)

    def product() -> Any:
        return plan.launch(first, second, prod, [], ws)

    steps: dict[str, Callable[[], Any]] = {}
    for r in "AB":
        pack = plan._pack_steps(r)
        names = [st.name + (f" [{st.built.variant}]" if st.built is not None else "")
                 for st in pack]
        if names:
            steps[f"pack {r}: " + ", ".join(names)] = lambda r=r: plan.pack(r, A if r == "A" else B,
                                                                         ws)
        first_step = pack[0] if pack else None  # (it reads the operand as given)
        if first_step is not None and first_step.built is not None \
                and first_step.built.variant.codelet != "glb":
            x = s.operand(A if r == "A" else B, r, "gemm", 2, plan.dtype).buf
            dst = ws.buffer(f"pieces-{r}", first_step.nbytes)
            ins = {0: x, 1: plan.embed.unit} if first_step.unit else {0: x}
            for form, k in ((str(first_step.built.variant), first_step.built),
                            ("glb", s.kernel(first_step.built.kind, first_step.at or {},
                                             Variant.of("glb")))):
                steps[f"  {first_step.name} alone [{form}]"] = (
                    lambda k=k, ins=ins, dst=dst, at=first_step.at or {}:
                    k.launch(q, ins, {}, dst, at))
    steps["product"] = product
    if (p["M"], p["N"]) != (plan.sizes["M"], plan.sizes["N"]):
        ck = plan.crop_kernel()
        steps[f"crop [{ck.variant if ck is not None else 'copy2d'}]"] = \
            lambda: plan.crop_product(dest, prod, None, [])
        if ck is not None and ck.variant.codelet != "glb":
            glb = s.kernel(ck.kind, plan._crop_at, Variant.of("glb"))
            steps["crop [glb]"] = lambda: glb.launch(q, {0: prod}, {}, dest, plan._crop_at)
    got = {name: device_us(q, fn, product, reps=6) for name, fn in steps.items()}
    got["whole call"] = device_us(q, call, product, reps=4, ahead=6)
    return got


def gpu(out: Path, rounds: int, workers: int, rows: list[tuple[str, str, str]]) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session

    split = importlib.import_module("liftkit.blas.split")
    s = Session("gpu")
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / "odd25.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    dev = runner.device
    t0 = time.time()
    built = build_all(rows, arch_for(dev.compute_capability), workers)
    bad = [b for b in built if "error" in b]
    for b in built:
        for src, opts, cubin in b.get("kernels", ()):
            runner.cache.put(dev, src, opts, cubin)
    say(f"card: {card}; {len(built)} kernels derived and compiled in {time.time() - t0:.1f} s "
        f"({len(bad)} failed: {[(b['job'], b['error']) for b in bad]})")
    shipped = list(s.profile.entries)
    results: list[dict[str, Any]] = []
    for dt, size, label in rows:
        m, n, k = _shape(size)
        big = m > 2000
        A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
        B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
        R, Y = cp.empty((m, n), dt), cp.full((m, n), np.nan, dt)
        ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
        call = lambda: s.gemm(A, B, Y)  # noqa: E731
        flops = (8 if dt.startswith("complex") else 2) * m * n * k
        tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
        if size == "1023x1025x999" and dt in ("float32", "float64"):
            _with_entry(s, dt, label)

        def check() -> float:
            Y.fill(np.nan)
            call().result()
            cp.cuda.Device().synchronize()
            e = float(cp.max(cp.abs(Y - R))) / max(float(cp.max(cp.abs(R))), 1e-30)
            return e if bool(cp.all(cp.isfinite(Y))) else float("inf")

        try:
            plan = s.plan_gemm(A.shape, B.shape, dt)
            is_split = isinstance(plan, split.SplitPlan)
            if is_split:
                e = plan.edge
                what = (f"{plan.variant} interior {plan.built.variant} K'={e.ka}; GEMV "
                        f"{e.gemv.variant}; copies {e.window.variant}")
            else:
                what = str(plan.built.variant) + (" padded" if plan.padded != plan.sizes else "")
                if plan.embed is not None:
                    what = f"real() on {plan.embed.real.variant}" + (
                        " padded" if plan.padded != plan.sizes else "")
            if label in SPLITS and not is_split:
                raise RuntimeError("the split entry did not choose the split plan")
            ref()
            cp.cuda.Device().synchronize()
            err_first = check()
            est = bc._time(cp, call, 2, 1)
            reps = max(3, min(60, int(3e-3 / max(est, 1e-6))))
            t_ref, t_lk = [], []
            for _ in range(rounds):
                t_ref.append(bc._time(cp, ref, reps, 1))
                t_lk.append(bc._time(cp, call, reps, 1))
            err_plan = check()
        except Exception as exc:  # noqa: BLE001 - one row
            say(f"{size} {dt} {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            s.profile.entries = list(shipped)
            s.forget_choices()
            continue
        tr, tl = statistics.median(t_ref), statistics.median(t_lk)
        err = max(err_first, err_plan)
        r = {"size": size, "dtype": dt, "label": label, "variant": what,
             "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6, "ratio": tr / tl,
             "rel_error_first": err_first, "rel_error_plan": err_plan, "ok": err <= tol,
             "reps": reps, "rounds": rounds, "card": card,
             "liftkit_rounds_us": [t * 1e6 for t in t_lk],
             "cublas_rounds_us": [t * 1e6 for t in t_ref]}
        say(f"{size:15s} {LETTER[dt]} {label:10s} {tr * 1e6:8.1f} {tl * 1e6:8.1f} us "
            f"{tr / tl:5.2f}x  err {err_first:.1e}/{err_plan:.1e}{'' if r['ok'] else ' WRONG'}  "
            f"{flops / tl * 1e-12:5.1f} TFLOP/s  [{what}]")
        if not big:
            try:
                pieces = (split_pieces if is_split else plan_pieces)(s, plan, A, B, call)
                r["pieces_us"] = pieces
                say("    pieces (device us per launch): " + "; ".join(
                    f"{k} {v:.1f}" for k, v in pieces.items()))
            except Exception as exc:  # noqa: BLE001 - a diagnostic only
                say(f"    pieces: FAILED {type(exc).__name__}: {str(exc)[:200]}")
        results.append(r)
        s.profile.entries = list(shipped)
        s.forget_choices()
        (out / "odd25.json").write_text(json.dumps(results, indent=0))
        del A, B, R, Y
        cp.get_default_memory_pool().free_all_blocks()
    say(f"done in {time.time() - t0:.1f} s")
    return 0 if results and all(r["ok"] for r in results) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="letters, e.g. S,D")
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = p.parse_args(argv)
    want = set(filter(None, args.only.split(",")))
    rows = [r for r in ROWS if not want or LETTER[r[0]] in want]
    if args.dry:
        t0 = time.time()
        fails = 0
        for b in build_all(rows, "sm_90a", args.workers):
            fails += "error" in b
            print(f"{b['job']}: " + (b["error"] if "error" in b else
                                     f"{len(b['kernels'])} kernel(s) {b['s']:.1f} s"))
        print(f"dry: derived and compiled in {time.time() - t0:.1f} s, {fails} failed")
        return 1 if fails else 0
    return gpu(Path(args.out), args.rounds, args.workers, rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
