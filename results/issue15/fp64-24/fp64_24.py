"""DGEMM and ZGEMM at 1024 (NN, NT, TN) through liftkit.blas beside cuBLAS (CuPy) in one process,
every derivation variant checked against cuBLAS's product first, then timed per call in
alternating rounds (issue 15, session 24, helper H1).

    python3 results/issue15/fp64-24/fp64_24.py [--rounds 7] [--rows ...] [--dry]

Rows (`ROWS`): a GEMM (dtype, layout, n) and the kernel kind whose variant is forced:
DGEMM NN/TN/NT on their own DMMA derivations (`mm float64 NN|TN|NT`), DGEMM TN/NT also through
the `nn` plan (the transpose, then the NN kernel), ZGEMM through the `real` plan (its real
kernel, `mm float64 NN` at M×2N×2K, forced through `gemm.real_choice`). The first variant of
each row is what the shipped profile runs today. For each variant: the output poisoned with
NaN, one call, max |C - ref| / max |ref| < 1e-12 against cuBLAS's float64/complex128 product
of the same operands; then `rounds` alternating rounds of per-call timing, (cuBLAS, liftkit):
`repeat` calls back to back between CUDA events (each side's host path included), median of
the batches (benchmarks/blas_cuda.py `_time`); the median of the rounds' ratios and their
spread; the device work once (the calls queued behind a long CuPy product). Registers and
spill bytes per kernel from the device's NVRTC (ptxas -v). One JSON line per variant to
--jsonl, a table at the end.
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
L = "lines=1"


def _mma(tm: int, tn: int, tk: int, w: int, s: int, ik: int, ahead: int = 2, **extra: int) -> str:
    more = "".join(f",{k}={v}" for k, v in extra.items())
    return f"mma(tm={tm},tn={tn},tk={tk},warps={w},staged={s},{L},ik={ik},ahead={ahead}{more})"


# the m16n8k16 read-ahead loop (ik=16, new) beside the m16n8k8 one (ik=8) on the same tilings
K8_128 = _mma(128, 64, 16, 4, 4, 8)
K8_64 = _mma(64, 64, 16, 4, 4, 8)
K16 = [_mma(64, 64, 16, 4, 4, 16), _mma(64, 64, 16, 4, 3, 16), _mma(128, 64, 16, 8, 4, 16),
       _mma(128, 64, 16, 8, 3, 16), _mma(64, 128, 16, 8, 4, 16), _mma(64, 64, 32, 4, 3, 16)]
# 128×128 tiles on 8 warps (a third less L2 traffic per flop than 128×64): at 1024 split along K
# in 2 (mma-split-tail: 64 tiles → 128 half-depth blocks); ahead=2 spills there (NVRTC 13),
# ahead=1 does not
T128 = [_mma(128, 128, 16, 8, 4, 8, kparts=2, kslots=264), _mma(128, 128, 16, 8, 3, 8, kparts=2, kslots=264)]
W128 = [_mma(128, 128, 16, 8, 4, 8), _mma(128, 128, 16, 8, 3, 8), _mma(128, 128, 16, 8, 4, 8, ahead=1)]
DEEP = _mma(128, 64, 32, 8, 3, 16)  # cuBLAS's DGEMM shape (144 KB of stages: read-ahead loops)
DEEP8 = _mma(128, 64, 32, 8, 3, 8)  # the same on m16n8k8
# (name, dtype, layout, n, kernel layout forced, plan, variants: the shipped one first)
ROWS: list[tuple[str, str, str, int, str, str, list[str]]] = [
    ("DGEMM NN", "float64", "NN", 1024, "NN", "mma",
     [K8_128, *K16, _mma(128, 64, 32, 8, 2, 16), _mma(128, 64, 16, 8, 4, 8),
      _mma(64, 128, 16, 8, 4, 8), *T128]),
    ("DGEMM TN", "float64", "TN", 1024, "TN", "mma",
     [K8_64, *K16[:4], K8_128, _mma(128, 64, 16, 8, 4, 8)]),
    ("DGEMM NT", "float64", "NT", 1024, "NT", "mma", [K8_64, *K16[:4], K8_128]),
    ("DGEMM TN nn", "float64", "TN", 1024, "NN", "nn", [K8_128, K16[2]]),
    ("DGEMM NT nn", "float64", "NT", 1024, "NN", "nn", [K8_128, K16[2]]),
    ("ZGEMM NN", "complex128", "NN", 1024, "NN", "real",
     [K8_128, K16[2], K16[3], K16[4], K16[0], _mma(128, 64, 16, 4, 4, 8, group=2), *W128]),
    ("ZGEMM NT", "complex128", "NT", 1024, "NN", "real", [K8_128, K16[2], K16[4]]),
    ("ZGEMM TN", "complex128", "TN", 1024, "NN", "real", [K8_128, K16[2], K16[4]]),
    ("DGEMM NN", "float64", "NN", 4096, "NN", "mma",
     [_mma(128, 64, 16, 4, 4, 8, group=4), K16[2], K16[4], _mma(128, 64, 16, 8, 4, 16, group=4),
      W128[2], W128[1]]),
    # rows 9-13 (after run 2): cuBLAS's own shape at 1024 (ncu.txt of run 1: 128×64×32, 3 stages,
    # 8 warps of 32×32, DMMA m16n8k16), the rule's deep tilings, beside the shipped kernels
    ("DGEMM NN", "float64", "NN", 1024, "NN", "mma",
     [K8_128, DEEP, DEEP8, _mma(64, 128, 32, 8, 3, 16)]),
    ("DGEMM TN", "float64", "TN", 1024, "TN", "mma", [K8_64, DEEP, DEEP8]),
    ("DGEMM NT", "float64", "NT", 1024, "NT", "mma", [K8_64, DEEP, DEEP8]),
    ("ZGEMM NN", "complex128", "NN", 1024, "NN", "real",
     [_mma(128, 64, 16, 4, 4, 8, group=2), K8_128, DEEP, DEEP8, _mma(128, 64, 32, 8, 3, 16, group=2)]),
    ("DGEMM NN", "float64", "NN", 4096, "NN", "mma",
     [_mma(128, 64, 16, 4, 4, 8, group=4), _mma(128, 64, 32, 8, 3, 16, group=4),
      _mma(128, 64, 32, 8, 3, 8, group=4)]),
]


def _jobs() -> list[tuple[str, str]]:
    return list(dict.fromkeys((klay, v) for *_, klay, _plan, vs in ROWS for v in vs))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--rows", default="", help="comma-separated row numbers of ROWS (default all)")
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "fp64_24.jsonl"))
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every variant "
                   "here (no GPU), print registers and spills, and stop")
    a = p.parse_args(argv)
    rows = [ROWS[int(i)] for i in a.rows.split(",")] if a.rows else ROWS
    if a.dry:
        for (klay, text), (regs, spill) in _prebuild(_jobs(), "sm_90a", None).items():
            print(f"{klay} {text:80s} regs {regs} spill {spill}", flush=True)
        return 0

    import cupy as cp

    import importlib

    gemm_mod = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm: the function)
    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, Variant, lookup_variant

    device = list_devices()[0]
    t0 = time.time()
    attrs = _prebuild(_jobs(), arch_for(device.compute_capability), (ModuleCache(), device))
    print(f"built {len(attrs)} kernels in {time.time() - t0:.1f} s", flush=True)

    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label} ({s.backend}), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
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
        for text in variants:
            kind = Kind("mm", "float64", klay)
            v = lookup_variant(kind, text)
            forced.clear()
            forced["float64", klay] = v
            if plan == "nn":
                forced["float64", lay] = Variant.of("nn")
            s.forget_choices()
            C.fill(np.nan)
            try:
                s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                err = float(cp.max(cp.abs(C - ref))) / scale
                gp = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name} {n} {text}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            ran = gp.embed.real.variant if gp.embed is not None else gp.built.variant
            what = f"{gp.variant} on {ran}" if gp.embed is not None else str(ran)
            if ran != v:
                print(f"{name} {n} {text}: the plan ran {what} instead", flush=True)
                continue
            regs, spill = attrs.get((klay, text), (-1, -1))
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
                   "plan": plan, "variant": str(v), "ran": what, "err": err, "regs": regs,
                   "spill": spill, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "cublas_median_s": statistics.median(q[0] for q in pairs),
                   "call_median_s": statistics.median(q[1] for q in pairs), "kernel_s": t_k,
                   "host_us": t_h * 1e6, "repeat": repeat, "batches": batches,
                   "shipped": text == variants[0]}
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
    print(f"{'gemm':12} {'n':>5} {'x cuBLAS':>8} {'spread':>13} {'cuBLAS us':>9} {'liftkit us':>10} "
          f"{'device us':>9} {'dev x':>6} {'regs':>4} {'spill':>5}  derivation")
    for name, n, what, regs, spill, r in table:
        if r is None:
            print(f"{name:12} {n:>5} WRONG {what}")
            continue
        print(f"{name:12} {n:>5} {r['ratio_median']:8.3f} {r['ratio_min']:6.3f}-{r['ratio_max']:.3f} "
              f"{r['cublas_median_s'] * 1e6:9.1f} {r['call_median_s'] * 1e6:10.1f} "
              f"{r['kernel_s'] * 1e6:9.1f} {r['kernel_ratio']:6.3f} {regs:>4} {spill:>5}  {what}")
    return 0


def _build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker process: one variant's CUDA C, NVRTC's cubin and ptxas's report."""
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen import CompileOptions, compile_program

    lay, text, arch = job
    try:
        kind = Kind("mm", "float64", lay)
        (k,) = compile_program(derive(kind, lookup_variant(kind, text)).final,
                               CompileOptions(dialect="cuda")).kernels
        o = compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name="k.cu")
        regs = re.findall(r"Used (\d+) registers", o.log or "")
        spill = re.findall(r"(\d+) bytes spill stores", o.log or "")
        return {"job": (lay, text), "source": k.source, "options": list(k.build_options),
                "cubin": o.cubin, "regs": int(regs[0]) if regs else -1,
                "spill": int(spill[0]) if spill else -1}
    except Exception as err:  # noqa: BLE001 - reported, the session builds it again
        return {"job": (lay, text), "error": f"{type(err).__name__}: {err}"[:300]}


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
