"""The split GEMM plan (liftkit.blas.split) against the library's own plan and cuBLAS (CuPy) on
a CUDA GPU, session 24 (helper H6).

    python results/issue15/odd24b/odd24b.py [--dry] [--out DIR] [--rounds 5]

Rows (S and D): 1023×1025×999 as the library runs it today (`auto`: no split entry) and with a
split entry at those sizes injected into the in-memory profile (`split`: what a tuned profile
would choose); 1000³ `auto` (control: no split applies; last session's figures beside it);
the split's interior alone (1023×1024×1024, operands given padded) and its GEMV alone
(1023×1024), per call, to say where the split's time goes. Every GEMM row is checked before it
is timed: C poisoned with NaN, one call, the whole C against cuBLAS's product of the same
operands (max relative error ≤ 1e-4 float32, 1e-10 float64; NaN fails). Then per call in
alternating rounds: a batch of cuBLAS calls (`cp.matmul(A, B, out=R)`), a batch of liftkit
calls, `--rounds` times; medians of the rounds (CUDA events around each batch, the last call
waited for: each side's host path included).

The kernels are derived and NVRTC-compiled first in a pool of worker processes (the list comes
from planning every row on the stubbed H100 session of benchmarks/blas_host.py, which reads
the same shipped profile); `--dry` (no GPU) does only that, for sm_90a. Row `split-rows`
(added after run 1, where the profile's GEMV took 16-19 us): the split with its edge GEMV a
warp per row (`split(w=64, gemv=1)`).
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
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LETTER = {"float32": "S", "float64": "D"}
ODD = (1023, 1025, 999)
ROWS = [("1023x1025x999", "auto"), ("1023x1025x999", "split"),
        ("1023x1025x999", "split-rows"), ("1000x1000x1000", "auto"),
        ("1023x1024x1024", "interior"), ("1023x1024", "gemv")]


def _shape(size: str) -> tuple[int, ...]:
    return tuple(int(x) for x in size.split("x"))


def split_entry(dt: str, label: str) -> Any:
    """A split entry at 1023×1025×999: `split` the edge GEMV the profile's, `split-rows` a
    warp per row (`split.row_gemv`, variant gemv=1)."""
    from liftkit.blas.codelets import Kind, Variant
    from liftkit.blas.profile import Entry, size_class

    sizes = dict(zip("MNK", ODD))
    v = Variant.of("split", w=64, **({"gemv": 1} if label == "split-rows" else {}))
    return Entry(Kind("mm", dt, "NN"), size_class("mm", sizes), sizes, v, 1.0, 1.0, via="split")


def kernels_needed() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(op, dtype, layout, variant) of every kernel the rows run, from planning them on the
    stubbed H100 session (nothing compiled)."""
    spec = importlib.util.spec_from_file_location("blas_host", ROOT / "benchmarks/blas_host.py")
    host = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(host)  # type: ignore[union-attr]
    s = host.stub_session()
    for dt in LETTER:
        for size, label in ROWS:
            sh = _shape(size)
            if label == "gemv":
                s.kernel(_gemv_kind(dt), {"M": sh[0], "N": sh[1]})
                continue
            m, n, k = sh
            if label.startswith("split"):
                s.profile.add([split_entry(dt, label)])
                s.forget_choices()
            plan = s.plan_gemm((m, k), (k, n), dt)
            if plan.padded != plan.sizes:
                plan.crop_kernel()
                for r in "AB":
                    plan._pack_steps(r)
            if label.startswith("split"):
                s.profile.entries = [e for e in s.profile.entries if e.via != "split"]
                s.forget_choices()
    return [(k.op, k.dtype, k.layout, v.to_json()) for (k, v) in s.store._built]


def _gemv_kind(dt: str) -> Any:
    from liftkit.blas.codelets import Kind

    return Kind("gemv", dt, "N")


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


def build_all(arch: str, workers: int) -> list[dict[str, Any]]:
    import concurrent.futures as cf
    import multiprocessing

    with cf.ProcessPoolExecutor(max(1, workers),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        # (planned in a worker: the stubbed session patches the CUDA modules of its process)
        jobs = [(*j, arch) for j in pool.submit(kernels_needed).result()]
        return list(pool.map(_build, jobs))


def pieces(s: Any, plan: Any, A: Any, B: Any, reps: int = 10) -> dict[str, float]:
    """Each kernel of a split plan by device time (us per launch): `reps` launches between two
    markers, queued behind three interior products so that the host's launches run ahead of
    the GPU (the small kernels would otherwise be timed at the host's launch rate)."""
    q, e, at, nb = s.q, plan.edge, plan._at(), plan._bytes()
    ws = plan.workspace()
    a, b = plan.pack("A", A, ws), plan.pack("B", B, ws)
    dt = plan.dtype.type
    prod, col = ws.buffer("split-P", nb["split-P"]), ws.buffer("split-e", nb["split-e"])
    zeros, _ = s.zeros(e.mg * plan.dtype.itemsize)
    dest = q.alloc(plan.m * plan.n * plan.dtype.itemsize)
    steps = {
        "window2d B": lambda: e.window.launch(q, {0: b.source.buf}, {}, b.buf, at["window"]),
        "tailcols B": lambda: e.tail.launch(q, {0: b.source.buf}, {}, b.edge, at["tail"]),
        "interior": lambda: plan.built.launch(q, {0: a.buf, 1: b.buf}, {}, prod, at["mm"],
                                              (), ws),
        "GEMV": lambda: e.gemv.launch(q, {0: a.buf, 1: b.edge, 2: zeros}, {3: dt(1), 4: dt(0)},
                                      col, at["gemv"], (), ws),
        "hcat": lambda: e.hcat.launch(q, {0: prod, 1: col}, {}, dest, at["hcat"]),
        "all six": lambda: plan.launch(plan.pack("A", A, ws), plan.pack("B", B, ws), dest, [],
                                       ws),
    }
    if e.pad_x is not None:
        steps["pad2d A"] = lambda: e.pad_x.launch(q, {0: a.source.buf}, {}, a.buf, at["pad"])
    got: dict[str, float] = {}
    for name, fn in steps.items():
        for _ in range(3):
            steps["interior"]()
        m0 = q.marker()
        for _ in range(reps):
            fn()
        m1 = q.marker()
        q.finish()
        got[name] = q.seconds(m0, m1) / reps * 1e6
    return got


def gpu(out: Path, rounds: int, workers: int) -> int:
    import cupy as cp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blas_cuda as bc  # (the suite's CUDA-event batch timer)

    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session

    split = importlib.import_module("liftkit.blas.split")
    s = Session("gpu")
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    log = open(out / "odd24b.log", "w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    runner = s.q.runner
    dev = runner.device
    t0 = time.time()
    built = build_all(arch_for(dev.compute_capability), workers)
    bad = [b for b in built if "error" in b]
    for b in built:
        for src, opts, cubin in b.get("kernels", ()):
            runner.cache.put(dev, src, opts, cubin)
    say(f"card: {card}; {len(built)} kernels derived and compiled in {time.time() - t0:.1f} s "
        f"({len(bad)} failed: {[(b['job'], b['error']) for b in bad]})")
    rows: list[dict[str, Any]] = []
    for dt in LETTER:
        for size, label in ROWS:
            sh = _shape(size)
            if label == "gemv":
                m, n = sh
                A = bc._rand_gpu(cp, (m, n), np.dtype(dt))
                x = bc._rand_gpu(cp, (n,), np.dtype(dt))
                R, Y = cp.empty((m,), dt), cp.full((m,), np.nan, dt)
                ref = lambda: cp.matmul(A, x, out=R)  # noqa: E731
                call = lambda: s.gemv(A, x, Y)  # noqa: E731
                flops = 2 * m * n
            else:
                m, n, k = sh
                A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
                B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
                R, Y = cp.empty((m, n), dt), cp.full((m, n), np.nan, dt)
                ref = lambda: cp.matmul(A, B, out=R)  # noqa: E731
                call = lambda: s.gemm(A, B, Y)  # noqa: E731
                flops = 2 * m * n * k
            if label.startswith("split"):
                s.profile.add([split_entry(dt, label)])
            s.forget_choices()
            try:
                what = ""
                if label != "gemv":
                    plan = s.plan_gemm(A.shape, B.shape, dt)
                    what = str(plan.variant if isinstance(plan, split.SplitPlan)
                               else plan.built.variant)
                    if isinstance(plan, split.SplitPlan):
                        e = plan.edge
                        what += (f" interior {plan.built.variant} K'={e.ka}; GEMV "
                                 f"{e.gemv.variant}")
                    elif plan.padded != plan.sizes:
                        what += " padded"
                    if label.startswith("split") and not isinstance(plan, split.SplitPlan):
                        raise RuntimeError("the split entry did not choose the split plan")
                ref()
                cp.cuda.Device().synchronize()
                scale = float(cp.max(cp.abs(R)))
                call().result()
                cp.cuda.Device().synchronize()
                err = float(cp.max(cp.abs(Y - R))) / max(scale, 1e-30)
                err = err if bool(cp.all(cp.isfinite(Y))) else float("inf")
                est = bc._time(cp, call, 2, 1)
                reps = max(3, min(60, int(3e-3 / max(est, 1e-6))))
                t_ref, t_lk = [], []
                for _ in range(rounds):
                    t_ref.append(bc._time(cp, ref, reps, 1))
                    t_lk.append(bc._time(cp, call, reps, 1))
            except Exception as exc:  # noqa: BLE001 - one row
                say(f"{size} {dt} {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
                continue
            finally:
                s.profile.entries = [e for e in s.profile.entries if e.via != "split"]
            tr, tl = statistics.median(t_ref), statistics.median(t_lk)
            tol = 1e-4 if dt == "float32" else 1e-10
            r = {"size": size, "dtype": dt, "label": label, "variant": what,
                 "cublas_us": tr * 1e6, "liftkit_us": tl * 1e6, "ratio": tr / tl,
                 "rel_error": err, "ok": err <= tol, "reps": reps, "rounds": rounds,
                 "card": card, "liftkit_rounds_us": [t * 1e6 for t in t_lk],
                 "cublas_rounds_us": [t * 1e6 for t in t_ref]}
            if label.startswith("split"):
                try:
                    r["pieces_us"] = pieces(s, plan, A, B)
                    say("    split pieces (device us per launch): " + ", ".join(
                        f"{k} {v:.1f}" for k, v in r["pieces_us"].items()))
                except Exception as exc:  # noqa: BLE001 - a diagnostic only
                    say(f"    split pieces: FAILED {type(exc).__name__}: {str(exc)[:200]}")
            rows.append(r)
            say(f"{size:15s} {LETTER[dt]} {label:9s} {tr * 1e6:8.1f} {tl * 1e6:8.1f} us "
                f"{tr / tl:5.2f}x  err {err:.1e}{'' if r['ok'] else ' WRONG'}  "
                f"{flops / tl * 1e-12:5.1f} TFLOP/s  [{what}]")
            del A, R, Y
            cp.get_default_memory_pool().free_all_blocks()
    (out / "odd24b.json").write_text(json.dumps(rows, indent=0))
    say(f"done in {time.time() - t0:.1f} s")
    return 0 if rows and all(r["ok"] for r in rows) else 1


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = p.parse_args(argv)
    if args.dry:
        t0 = time.time()
        fails = 0
        for b in build_all("sm_90a", args.workers):
            fails += "error" in b
            print(f"{b['job']}: " + (b["error"] if "error" in b else
                                     f"{len(b['kernels'])} kernel(s) {b['s']:.1f} s"))
        print(f"dry: derived and compiled in {time.time() - t0:.1f} s, {fails} failed")
        return 1 if fails else 0
    return gpu(Path(args.out), args.rounds, args.workers)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
