"""ZGEMM (complex128) NN, NT, TN through liftkit.blas beside cuBLAS (CuPy) in one process: the
shipped plan (`real`: cembed + the real DMMA kernel, TN's transpose) and the complex DMMA
kernels derived by mm-complex-tensor-cores (`zmma`, no packing kernel), every variant checked
against cuBLAS's product first (output poisoned with NaN, max |C - ref| / max |ref| < 1e-12),
then timed per call in alternating rounds (issue 15, session 25, helper H2; the method of
results/issue15/fp64-24/fp64_24.py). Also: zmma forced at sizes off its tiles (padded), checked.

    python3 results/issue15/zgemm25/zgemm25.py [--rounds 7] [--rows ...] [--run2] [--dry]

Rows: `ROWS` (run 1: 1024, 4096, 8192), `ROWS2` with --run2 (run 2: 1024 and 2048).
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
SHIPPED = "shipped"


def _z(tm: int, tn: int, tk: int, w: int, s: int, ahead: int = 1, group: int = 0) -> str:
    return (f"zmma(tm={tm},tn={tn},tk={tk},warps={w},staged={s}" + (",ahead=1" if ahead else "")
            + (f",group={group}" if group else "") + ")")


SPACE = [_z(128, 32, 8, 4, 4), _z(128, 32, 8, 4, 4, 0), _z(64, 64, 16, 8, 3), _z(64, 64, 32, 8, 3),
         _z(128, 32, 16, 8, 3), _z(64, 32, 16, 4, 3), _z(64, 64, 8, 8, 4), _z(64, 64, 16, 8, 4),
         _z(128, 64, 8, 8, 3, 0), _z(64, 64, 16, 8, 3, 0), _z(128, 32, 16, 8, 3, 0),
         _z(128, 32, 8, 4, 4, 1, 2), _z(128, 32, 8, 4, 4, 0, 2), _z(64, 64, 16, 8, 3, 1, 2),
         _z(128, 32, 16, 8, 3, 1, 2), _z(64, 64, 16, 8, 4, 1, 2)]
BIG = [_z(128, 32, 8, 4, 4, 1, 4), _z(128, 32, 8, 4, 4, 1, 8), _z(128, 32, 8, 4, 4, 1),
       _z(64, 64, 16, 8, 3, 1, 4), _z(128, 32, 16, 8, 3, 1, 4), _z(128, 32, 8, 4, 4, 0, 4)]
BEST = "best"  # at 8192: the zmma variant of the same layout fastest at 4096 in this run
# (name, layout, n, variants: the shipped plan first)
ROWS: list[tuple[str, str, int, list[str]]] = [
    ("ZGEMM NN", "NN", 1024, [SHIPPED, *SPACE]),
    ("ZGEMM NT", "NT", 1024, [SHIPPED, *SPACE]),
    ("ZGEMM TN", "TN", 1024, [SHIPPED, *SPACE]),
    ("ZGEMM NN", "NN", 4096, [SHIPPED, *BIG]),
    ("ZGEMM NT", "NT", 4096, [SHIPPED, *BIG]),
    ("ZGEMM TN", "TN", 4096, [SHIPPED, *BIG]),
    ("ZGEMM NN", "NN", 8192, [SHIPPED, BEST]),
    ("ZGEMM NT", "NT", 8192, [SHIPPED, BEST]),
    ("ZGEMM TN", "TN", 8192, [SHIPPED, BEST]),
]
# run 2 (after the 8-byte fragment reads): 1024 again, then 2048 (the rest of class large)
SET2 = [_z(128, 32, 8, 4, 4), _z(128, 32, 8, 4, 4, 1, 2), _z(128, 32, 8, 4, 4, 0),
        _z(128, 32, 8, 4, 4, 0, 2), _z(64, 64, 8, 8, 4), _z(64, 32, 16, 4, 3), _z(64, 64, 16, 8, 3)]
ROWS2: list[tuple[str, str, int, list[str]]] = [
    ("ZGEMM NN", "NN", 1024, [SHIPPED, *SET2]),
    ("ZGEMM TN", "TN", 1024, [SHIPPED, *SET2]),
    ("ZGEMM NT", "NT", 1024, [SHIPPED, *SET2]),
    ("ZGEMM NN", "NN", 2048, [SHIPPED, *SET2[:2]]),
    ("ZGEMM TN", "TN", 2048, [SHIPPED, *SET2[:2]]),
    ("ZGEMM NT", "NT", 2048, [SHIPPED, *SET2[:2]]),
]
# zmma forced at sizes off its tiles (padded copies): checked only
ODD = [((1000, 1000, 1000), "NN"), ((1023, 1025, 999), "TN"), ((777, 129, 65), "NT")]


def _jobs(rows: Any) -> list[tuple[str, str]]:
    return list(dict.fromkeys((lay, v) for _, lay, _n, vs in rows for v in vs
                              if v not in (SHIPPED, BEST)))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--rows", default="", help="comma-separated row numbers of ROWS (default all)")
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "zgemm25.jsonl"))
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every variant "
                   "here (no GPU), print registers and spills, and stop")
    p.add_argument("--run2", action="store_true", help="run 2's rows (ROWS2)")
    a = p.parse_args(argv)
    table_rows = ROWS2 if a.run2 else ROWS
    rows = [table_rows[int(i)] for i in a.rows.split(",")] if a.rows else table_rows
    jobs = _jobs(rows) + [(lay, SPACE[0]) for _, lay in ODD]
    if a.dry:
        for (lay, text), (regs, spill) in _prebuild(list(dict.fromkeys(jobs)), "sm_90a", None).items():
            print(f"{lay} {text:60s} regs {regs} spill {spill}", flush=True)
        return 0

    import cupy as cp

    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    device = list_devices()[0]
    t0 = time.time()
    attrs = _prebuild(list(dict.fromkeys(jobs)), arch_for(device.compute_capability),
                      (ModuleCache(), device))
    print(f"built {len(attrs)} kernels in {time.time() - t0:.1f} s", flush=True)

    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label} ({s.backend}), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    forced: dict[tuple[str, str], Any] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        forced.get((kind.dtype, kind.layout)) or default_choose(kind, sizes))

    for (m, n, k), lay in ODD:  # zmma at sizes off its tiles: padded, checked
        ta, tb = lay[0] == "T", lay[1] == "T"
        dt = np.dtype("complex128")
        A = _rand_gpu(cp, (k, m) if ta else (m, k), dt)
        B = _rand_gpu(cp, (n, k) if tb else (k, n), dt)
        ref = cp.matmul(A.T if ta else A, B.T if tb else B)
        C = cp.full((m, n), np.nan, dt)
        forced.clear()
        forced["complex128", lay] = lookup_variant(Kind("mm", "complex128", lay), SPACE[0])
        s.forget_choices()
        try:
            s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
            err = float(cp.max(cp.abs(C - ref))) / float(cp.max(cp.abs(ref)))
            print(f"odd {lay} {m}x{n}x{k} {SPACE[0]} (padded): max rel error {err:.1e} "
                  f"{'ok' if err < TOL else 'WRONG'}", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"odd {lay} {m}x{n}x{k}: {type(e).__name__}: {e}"[:400], flush=True)

    out = open(a.jsonl, "a")
    table = []
    for name, lay, n, variants in rows:
        dt = np.dtype("complex128")
        ta, tb = lay[0] == "T", lay[1] == "T"
        flops = 8.0 * n ** 3
        unit_ms = flops / 50e12 * 1e3  # about a call at 50 TFLOP/s
        repeat = 20 if unit_ms < 1 else max(2, int(30 / unit_ms))
        batches = 5 if unit_ms < 5 else 3
        rounds = a.rounds if n <= 1024 else max(3, a.rounds - 2)
        A, B = _rand_gpu(cp, (n, n), dt), _rand_gpu(cp, (n, n), dt)
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C, ref = cp.full((n, n), np.nan, dt), cp.empty((n, n), dt)
        cp.matmul(opA, opB, out=ref)
        scale = float(cp.max(cp.abs(ref)))
        kind = Kind("mm", "complex128", lay)
        if BEST in variants:
            done = [r for *_, r in table if r and r["layout"] == lay and r["size"] == 4096
                    and not r["shipped"]]
            best = max(done, key=lambda r: r["ratio_median"], default=None)
            variants = [v for v in variants if v != BEST] + ([best["variant"]] if best else [])
        for text in variants:
            forced.clear()
            if text != SHIPPED:
                forced["complex128", lay] = lookup_variant(kind, text)
            s.forget_choices()
            C.fill(np.nan)
            try:
                s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                err = float(cp.max(cp.abs(C - ref))) / scale
                gp = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name} {n} {text}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            what = (f"{gp.variant} on {gp.embed.real.variant}" if gp.embed is not None
                    else str(gp.built.variant))
            if text != SHIPPED and str(gp.built.variant) != str(forced["complex128", lay]):
                print(f"{name} {n} {text}: the plan ran {what} instead", flush=True)
                continue
            regs, spill = attrs.get((lay, text), (-1, -1))
            if not err < TOL:
                print(f"{name} {n} {what}: WRONG (max rel error {err:.1e})", flush=True)
                table.append((name, n, what, regs, spill, None))
                continue
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            blas = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            pairs = [(_time(cp, blas, repeat, batches), _time(cp, call, repeat, batches))
                     for _ in range(rounds)]
            t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
            ratios = sorted(r / lk for r, lk in pairs)
            row = {"gemm": name, "dtype": "complex128", "layout": lay, "size": n,
                   "variant": text, "ran": what, "err": err, "regs": regs,
                   "spill": spill, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "cublas_median_s": statistics.median(q[0] for q in pairs),
                   "call_median_s": statistics.median(q[1] for q in pairs), "kernel_s": t_k,
                   "host_us": t_h * 1e6, "repeat": repeat, "batches": batches,
                   "shipped": text == SHIPPED}
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
        kind = Kind("mm", "complex128", lay)
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
