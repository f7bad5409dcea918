"""DGEMM (NN, NT, TN) and ZGEMM (NN, the real plan) at 1024 through liftkit.blas beside cuBLAS
(CuPy) in one process: the shipped kernels as they were (accumulators stored one double at a
time) against the same with 16-byte accumulator stores, the k-permuted 16-byte fragment reads
(`pairs`), the 128×64 tiles split in 2 along K (two blocks of 4 warps per SM), 64×64 and 8-warp
tilings (issue 15, session 25, helper H1). The method is results/issue15/fp64-24/fp64_24.py's:

    python3 results/issue15/fp64-25/fp64_25.py [--rounds 7] [--rows 0,1,...] [--dry]

Each variant: built ahead by NVRTC in worker processes (registers and spill bytes from ptxas);
the output poisoned with NaN, one call, max |C - ref| / max |ref| < 1e-12 against cuBLAS's
float64/complex128 product of the same operands; then `rounds` alternating rounds (cuBLAS,
liftkit) of per-call timing: `repeat` calls back to back between CUDA events, each side's host
path included, the median of 5 batches (benchmarks/blas_cuda.py `_time`); the median of the
rounds' ratios and their spread; the device work once (the calls queued behind a long CuPy
product, fastest of 3). "profile": the variant the shipped profile chooses (nothing forced).
A variant written "scalar:…" is generated with the accumulators stored
one double at a time (codegen.cuda_mma.VECTOR_STORES off: the kernels shipped before this
session), in its own kernel store. One JSON line per variant to --jsonl, a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))

from blas_cuda import _kernel_and_host, _rand_gpu, _time  # noqa: E402

TOL = 1e-12
SCALAR = "scalar:"
PROFILE = "profile"  # the variant the shipped profile chooses, nothing forced


def _mma(tm: int, tn: int, tk: int, w: int, s: int, **extra: int) -> str:
    more = "".join(f",{k}={v}" for k, v in extra.items())
    return f"mma(tm={tm},tn={tn},tk={tk},warps={w},staged={s},lines=1,ik=8,ahead=2{more})"


K128 = _mma(128, 64, 16, 4, 4)  # the shipped DGEMM NN 1024 kernel
K64 = _mma(64, 64, 16, 4, 4)  # the shipped DGEMM NT/TN 1024 kernel
SPLIT = dict(kparts=2, kslots=264)  # 128 tiles → 256 half-depth blocks, 2 per SM (132 SMs)
P = dict(pairs=1)
ROWS: list[tuple[str, str, str, int, str, str, list[str]]] = [
    ("DGEMM NN", "float64", "NN", 1024, "NN", "mma",
     [SCALAR + K128, K128, _mma(128, 64, 16, 4, 4, **P), _mma(128, 64, 16, 4, 4, **SPLIT),
      _mma(128, 64, 16, 4, 4, **P, **SPLIT), _mma(128, 64, 16, 4, 3, **SPLIT), K64, _mma(64, 64, 16, 4, 4, **P),
      _mma(128, 64, 16, 8, 4), _mma(128, 64, 16, 8, 4, **P), _mma(64, 64, 16, 4, 3)]),
    ("DGEMM NT", "float64", "NT", 1024, "NT", "mma",
     [SCALAR + K64, K64, _mma(64, 64, 16, 4, 4, **P), K128, _mma(128, 64, 16, 4, 4, **P),
      _mma(128, 64, 16, 4, 4, **SPLIT), _mma(128, 64, 16, 4, 4, **P, **SPLIT),
      _mma(128, 64, 16, 8, 4, **P)]),
    ("DGEMM TN", "float64", "TN", 1024, "TN", "mma",
     [SCALAR + K64, K64, _mma(64, 64, 16, 4, 4, **P), _mma(128, 64, 16, 4, 4, **SPLIT),
      _mma(128, 64, 16, 4, 4, **P, **SPLIT), _mma(128, 64, 16, 8, 4, **P)]),
    ("ZGEMM NN", "complex128", "NN", 1024, "NN", "real",
     [SCALAR + _mma(128, 64, 16, 4, 4, group=2), _mma(128, 64, 16, 4, 4, group=2),
      _mma(128, 64, 16, 4, 4, group=2, **P)]),
    ("DGEMM NN", "float64", "NN", 4096, "NN", "mma",
     [SCALAR + _mma(128, 64, 16, 4, 4, group=4), _mma(128, 64, 16, 4, 4, group=4),
      _mma(128, 64, 16, 4, 4, group=4, **P)]),
    # rows 5-10 (run 2, after run 1's entries were shipped): each GEMM as the profile runs it
    # (PROFILE: nothing forced), then the choices around the new ones
    ("DGEMM NN", "float64", "NN", 1024, "NN", "mma",
     [PROFILE, K128, _mma(128, 64, 16, 4, 3, group=4), _mma(128, 64, 16, 8, 3, **P),
      _mma(64, 128, 16, 8, 4, **P), _mma(64, 64, 16, 4, 3, **P), _mma(128, 64, 16, 8, 4, group=4, **P),
      _mma(64, 64, 16, 4, 4, group=4, **P)]),
    ("DGEMM NT", "float64", "NT", 1024, "NT", "mma",
     [PROFILE, _mma(128, 64, 16, 8, 3, **P), _mma(64, 128, 16, 8, 4, **P), _mma(128, 64, 16, 8, 4)]),
    ("DGEMM TN", "float64", "TN", 1024, "TN", "mma",
     [PROFILE, _mma(64, 64, 16, 4, 3), _mma(128, 64, 16, 8, 4), _mma(128, 64, 16, 8, 3),
      _mma(64, 128, 16, 8, 4), _mma(64, 128, 16, 8, 4, **P), _mma(64, 64, 16, 4, 3, **P)]),
    ("DGEMM NN", "float64", "NN", 2048, "NN", "mma", [PROFILE, _mma(128, 64, 16, 4, 3, group=4)]),
    ("DGEMM NT", "float64", "NT", 2048, "NT", "mma", [PROFILE, K64]),
    ("DGEMM TN", "float64", "TN", 2048, "TN", "mma", [PROFILE, K64]),
]


def _jobs(rows: list[Any]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((klay, v) for *_, klay, _plan, vs in rows for v in vs if v != PROFILE))


def _set_stores(text: str) -> str:
    """The variant's text without its prefix; codegen's accumulator stores set for it."""
    from liftkit.codegen import cuda_mma

    cuda_mma.VECTOR_STORES = not text.startswith(SCALAR)
    return text.removeprefix(SCALAR)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--rows", default="", help="comma-separated row numbers of ROWS (default all)")
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "fp64_25.jsonl"))
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every variant "
                   "here (no GPU), print registers and spills, and stop")
    a = p.parse_args(argv)
    rows = [ROWS[int(i)] for i in a.rows.split(",")] if a.rows else ROWS
    if a.dry:
        for (klay, text), (regs, spill) in _prebuild(_jobs(rows), "sm_90a", None).items():
            print(f"{klay} {text:90s} regs {regs} spill {spill}", flush=True)
        return 0

    import importlib

    import cupy as cp

    gemm_mod = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm: the function)
    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, Variant, lookup_variant
    from liftkit.blas.kernels import KernelStore

    device = list_devices()[0]
    t0 = time.time()
    attrs = _prebuild(_jobs(rows), arch_for(device.compute_capability), (ModuleCache(), device))
    print(f"built {len(attrs)} kernels in {time.time() - t0:.1f} s", flush=True)

    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label} ({s.backend}), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    stores = {True: s.store, False: KernelStore(s.q, s.device)}  # vector / scalar stores
    forced: dict[tuple[str, str], Variant] = {}
    default_choose, default_real = s.choose, gemm_mod.real_choice
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        forced.get((kind.dtype, kind.layout)) or default_choose(kind, sizes))
    gemm_mod.real_choice = lambda session, kind, sizes, want: (
        forced.get(("float64", "NN")) if kind.dtype == "complex128" and ("float64", "NN") in forced
        else default_real(session, kind, sizes, want))
    out = open(a.jsonl, "a")
    table = []
    for name, dt_name, lay, n, klay, plan, variants in rows:
        dt = np.dtype(dt_name)
        ta, tb = lay[0] == "T", lay[1] == "T"
        flops = (8.0 if dt.kind == "c" else 2.0) * n ** 3
        unit_ms = flops / 50e12 * 1e3  # about a call at 50 TFLOP/s
        repeat = 20 if unit_ms < 1 else max(2, int(30 / unit_ms))
        batches = 5 if unit_ms < 5 else 3
        A, B = _rand_gpu(cp, (n, n), dt), _rand_gpu(cp, (n, n), dt)
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C, ref = cp.full((n, n), np.nan, dt), cp.empty((n, n), dt)
        cp.matmul(opA, opB, out=ref)
        scale = float(cp.max(cp.abs(ref)))
        for full in variants:
            text = _set_stores(full)
            s.store = stores[not full.startswith(SCALAR)]
            kind = Kind("mm", "float64", klay)
            v = None if full == PROFILE else lookup_variant(kind, text)
            forced.clear()
            if v is not None:
                forced["float64", klay] = v
            s.forget_choices()
            C.fill(np.nan)
            try:
                s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                err = float(cp.max(cp.abs(C - ref))) / scale
                gp = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name} {n} {full}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            ran = gp.embed.real.variant if gp.embed is not None else gp.built.variant
            what = (f"{gp.variant} on {ran}" if gp.embed is not None else str(ran))
            what = (SCALAR if full.startswith(SCALAR) else "PROFILE: " if v is None else "") + what
            if v is not None and ran != v:
                print(f"{name} {n} {full}: the plan ran {what} instead", flush=True)
                continue
            regs, spill = attrs.get((klay, full), (-1, -1))
            if not err < TOL:
                print(f"{name} {n} {what}: WRONG (max rel error {err:.1e})", flush=True)
                table.append((name, n, what, regs, spill, None))
                continue
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            blas = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            pairs = [(_time(cp, blas, repeat, batches), _time(cp, call, repeat, batches))
                     for _ in range(a.rounds)]
            t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
            ratios = sorted(r / lk for r, lk in pairs)
            row = {"gemm": name, "dtype": dt_name, "layout": lay, "size": n, "kernel_layout": klay,
                   "plan": plan, "variant": full, "ran": what, "err": err, "regs": regs,
                   "spill": spill, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "cublas_median_s": statistics.median(q[0] for q in pairs),
                   "call_median_s": statistics.median(q[1] for q in pairs), "kernel_s": t_k,
                   "host_us": t_h * 1e6, "repeat": repeat, "batches": batches,
                   "shipped": full == variants[0], "device": s.device.label}
            row["kernel_ratio"] = row["cublas_median_s"] / t_k
            out.write(json.dumps(row) + "\n")
            out.flush()
            table.append((name, n, what, regs, spill, row))
            print(f"  {name} {n} {what}: per call x{row['ratio_median']:.3f} "
                  f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f}), cuBLAS "
                  f"{row['cublas_median_s'] * 1e6:.1f} us, liftkit {row['call_median_s'] * 1e6:.1f} "
                  f"us, device work {t_k * 1e6:.1f} us x{row['kernel_ratio']:.3f}, host "
                  f"{t_h * 1e6:.1f} us, regs {regs} spill {spill} (err {err:.1e})", flush=True)
        del A, B, C, ref, opA, opB
        cp.get_default_memory_pool().free_all_blocks()
    out.close()
    print(f"\ndevice: {s.device.label}; {a.rounds} alternating rounds (cuBLAS, liftkit) of per-call "
          "timing: the median of the rounds' ratios (spread); device work: the calls queued behind "
          "a long product, fastest of 3, against cuBLAS's median per call")
    print(f"{'gemm':9} {'n':>5} {'x cuBLAS':>8} {'spread':>13} {'cuBLAS us':>9} {'liftkit us':>10} "
          f"{'device us':>9} {'dev x':>6} {'regs':>4} {'spill':>5}  derivation")
    for name, n, what, regs, spill, r in table:
        if r is None:
            print(f"{name:9} {n:>5} WRONG {what}")
            continue
        print(f"{name:9} {n:>5} {r['ratio_median']:8.3f} {r['ratio_min']:6.3f}-{r['ratio_max']:.3f} "
              f"{r['cublas_median_s'] * 1e6:9.1f} {r['call_median_s'] * 1e6:10.1f} "
              f"{r['kernel_s'] * 1e6:9.1f} {r['kernel_ratio']:6.3f} {regs:>4} {spill:>5}  {what}")
    return 0


def _build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker process: one variant's CUDA C, NVRTC's cubin and ptxas's report."""
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen import CompileOptions, compile_program

    lay, full, arch = job
    try:
        text = _set_stores(full)
        kind = Kind("mm", "float64", lay)
        (k,) = compile_program(derive(kind, lookup_variant(kind, text)).final,
                               CompileOptions(dialect="cuda")).kernels
        o = compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name="k.cu")
        regs = re.findall(r"Used (\d+) registers", o.log or "")
        spill = re.findall(r"(\d+) bytes spill stores", o.log or "")
        return {"job": (lay, full), "source": k.source, "options": list(k.build_options),
                "cubin": o.cubin, "regs": int(regs[0]) if regs else -1,
                "spill": int(spill[0]) if spill else -1}
    except Exception as err:  # noqa: BLE001 - reported, the session builds it again
        return {"job": (lay, full), "error": f"{type(err).__name__}: {err}"[:300]}


def _prebuild(jobs: list[tuple[str, str]], arch: str, cache: Any) -> dict[tuple[str, str], tuple[int, int]]:
    """Every variant built by NVRTC in spawned workers; with `cache` (ModuleCache, device) each
    cubin stored in the kernel cache on disk under the key the session's kernel store looks up.
    (registers, spill bytes) per (kernel layout, variant)."""
    import concurrent.futures as cf
    import multiprocessing

    out = {}
    with cf.ProcessPoolExecutor(min(len(jobs), max(1, (os.cpu_count() or 2) - 2)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(_build, [(lay, t, arch) for lay, t in jobs]):
            if "error" in r:
                print(f"prebuild {r['job']}: {r['error']}", flush=True)
                continue
            if cache is not None:
                cache[0].put(cache[1], r["source"], r["options"], r["cubin"])
            out[r["job"]] = (r["regs"], r["spill"])
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
