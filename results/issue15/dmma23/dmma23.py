"""DGEMM and ZGEMM NN through liftkit.blas on the FP64 tensor cores (DMMA), every variant beside
cuBLAS (CuPy) in one process (issue 15, session 23, helper H2).

    python3 results/issue15/dmma23/dmma23.py [--sizes 1024,4096,8192] [--dtypes float64,complex128]

For each dtype and size: cuBLAS (`cp.matmul(A, B, out=C)`) is timed, then each variant of the
size's class (LARGE for n <= 2048, HUGE above) is chosen for liftkit.blas's real NN kernel
(`mm float64 NN`: DGEMM's kernel, and ZGEMM's through the `real` plan, M×2N×2K), its result
checked against cuBLAS's float64/complex128 product of the same operands (max |C - ref| / max
|ref| < 1e-12; outputs poisoned with NaN first), then timed two ways as benchmarks/blas_cuda.py
does: `call` = `repeat` library calls back to back between CUDA events (the host path
included), median of the batches; `kernel` = the same calls issued while the stream is held
by a long CuPy product (the device work alone); then cuBLAS again (the row's reference is the
faster of the two cuBLAS timings, so drift counts against liftkit). Registers and local
(spill) bytes per thread of each kernel from the device's NVRTC (cuda.core's attributes).
Writes one JSON line per row to --jsonl and a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))

from blas_cuda import _kernel_and_host, _rand_gpu, _time  # noqa: E402

_K8S = "tm=128,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2"
_K8 = "tm=128,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8"
_K8S64 = "tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2"
# (layout, class) -> the variants of the real kernel tried (TN: DGEMM TN's own DMMA kernel; NT:
# the nn plan's NN kernel after the transpose; complex: the real plan's NN kernel)
VARIANTS = {
    ("NN", "huge"): [f"mma({_K8S})", f"mma({_K8S},group=4)", f"mma({_K8S},group=8)",
                     f"mma({_K8S},group=16)", f"mma({_K8})", f"mma({_K8},group=8)"],
    ("NN", "large"): ["mma(tm=64,tn=64,tk=8,warps=4,staged=4,lines=1)", f"mma({_K8S})",
                      f"mma({_K8S},group=8)", f"mma({_K8S64})",
                      "mma(tm=64,tn=64,tk=16,warps=4,staged=3,lines=1,ik=8,ahead=2)",
                      "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8)",
                      "mma(tm=128,tn=64,tk=16,warps=8,staged=4,lines=1,ik=8,ahead=2)",
                      "mma(tm=128,tn=64,tk=16,warps=8,staged=3,lines=1,ik=8,ahead=2)",
                      "mma(tm=64,tn=64,tk=16,warps=2,staged=3,lines=1,ik=8)"],
    ("TN", "huge"): ["mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=1)", f"mma({_K8})",
                     f"mma({_K8},group=8)", f"mma({_K8S})", f"mma({_K8S},group=8)"],
    ("TN", "large"): ["mma(tm=64,tn=64,tk=8,warps=4,staged=4,lines=1)", f"mma({_K8S64})",
                      f"mma({_K8S})", "mma(tm=128,tn=64,tk=16,warps=8,staged=4,lines=1,ik=8,ahead=2)"],
    ("NT", "huge"): [f"mma({_K8S})", f"mma({_K8S},group=8)"],
    # NT on its own DMMA derivation (B's rows copied along k; rows "float64/NTd")
    ("NTd", "huge"): [f"mma({_K8S},group=4)", f"mma({_K8S})", f"mma({_K8S},group=8)"],
    ("NTd", "large"): [f"mma({_K8S})", f"mma({_K8S64})",
                       "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8)"],
    ("NT", "large"): ["mma(tm=64,tn=64,tk=8,warps=4,staged=4,lines=1)", f"mma({_K8S64})"],
}
TOL = 1e-12


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1024,4096,8192")
    p.add_argument("--rows", default="float64/NN,complex128/NN,float64/TN,float64/NT",
                   help="DTYPE/LAYOUT,...: the GEMMs timed, in this order")
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "dmma23.jsonl"))
    p.add_argument("--set", action="append", default=[], metavar="LAYOUT/CLASS=V|V",
                   help="replace the variants of one (layout, class) of VARIANTS ('|'-separated)")
    p.add_argument("--verify", type=int, default=0, metavar="ROUNDS",
                   help="time what the session chooses (the shipped profile, nothing forced) "
                        "in ROUNDS alternating rounds of cuBLAS and liftkit, and stop")
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every variant here "
                   "(no GPU), print registers and spills, and stop")
    a = p.parse_args(argv)
    from liftkit.blas.codelets import Kind, lookup_variant

    for spec in a.set:
        key, _, texts = spec.partition("=")
        lay, cls = key.split("/")
        VARIANTS[lay, cls] = [t for t in texts.split("|") if t]
    if a.set:  # only the (layout, class) pairs named
        named = {tuple(x.partition("=")[0].split("/")) for x in a.set}
        for key in list(VARIANTS):
            if key not in named:
                del VARIANTS[key]

    if a.dry:
        return _dry()

    import cupy as cp

    from liftkit.blas import Session

    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label} ({s.backend}), profile: {'yes' if s.profile else 'none'}",
          flush=True)
    if a.verify:  # the chosen kernels built first in the pool (the packing kernels by the session)
        VARIANTS.clear()
        for spec in a.rows.split(","):
            dt_name, lay = spec.split("/")
            kind = Kind("mm", "float64", _klay(dt_name, lay))
            for n in (int(x) for x in a.sizes.split(",") if x):
                w = 2 if dt_name.startswith("complex") else 1
                v = str(s.choose(kind, {"M": n, "N": w * n, "K": w * n}))
                VARIANTS.setdefault(("NTd" if kind.layout == "NT" else kind.layout, "chosen"),
                                    []).append(v)
        _prebuild()
        return _verify(cp, s, a, busy)
    t0 = time.time()
    attrs = _prebuild()  # NVRTC in a pool of processes, cubins into the kernel cache on disk
    for (lay, text), (regs, spill) in attrs.items():  # then loaded (disk hits) by the session
        kind = Kind("mm", "float64", lay)
        try:
            k = s.store.get(kind, lookup_variant(kind, text)).kernels[0].attributes
            print(f"  built {lay} {text:78s} regs {regs} spill {spill} B (loaded: {int(k.num_regs)} "
                  f"regs, {int(getattr(k, 'local_size_bytes', -1))} B local)", flush=True)
        except Exception as err:  # noqa: BLE001 - a variant that does not build is a row
            print(f"build {lay} {text}: {type(err).__name__}: {err}"[:300], flush=True)
    print(f"built in {time.time() - t0:.1f} s", flush=True)

    forced: dict[tuple[str, str, str], Any] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        forced.get((kind.op, kind.dtype, kind.layout)) or default_choose(kind, sizes))
    out = open(a.jsonl, "a")
    rows: list[dict[str, Any]] = []
    for spec in a.rows.split(","):
        dt_name, lay = spec.split("/")
        dt = np.dtype(dt_name)
        ta, tb = lay[0] == "T", lay[1] == "T"
        kind = Kind("mm", "float64", _klay(dt_name, lay))
        for n in (int(x) for x in a.sizes.split(",") if x):
            cls = "large" if n <= 2048 else "huge"
            if not VARIANTS.get((lay, cls)):
                continue
            flops = (8.0 if dt.kind == "c" else 2.0) * n ** 3
            unit_ms = flops / 50e12 * 1e3  # about a call at 50 TFLOP/s
            repeat = 20 if unit_ms < 1 else max(2, int(30 / unit_ms))
            batches = 5 if unit_ms < 5 else 3
            A, B = _rand_gpu(cp, (n, n), dt), _rand_gpu(cp, (n, n), dt)
            opA, opB = (A.T if ta else A), (B.T if tb else B)
            C, ref = cp.full((n, n), np.nan, dt), cp.empty((n, n), dt)
            cp.matmul(opA, opB, out=ref)
            scale = float(cp.max(cp.abs(ref)))
            t_ref = [_time(cp, lambda: cp.matmul(opA, opB, out=C), repeat, batches)]
            got = []
            for text in VARIANTS.get((lay, cls), []):
                v = lookup_variant(kind, text)
                forced[("mm", "float64", kind.layout)] = v
                s.forget_choices()
                C.fill(np.nan)
                try:
                    s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                    err = float(cp.max(cp.abs(C - ref))) / scale
                    plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
                except Exception as e:  # noqa: BLE001 - report and go on
                    print(f"{spec} {n} {v}: {type(e).__name__}: {e}"[:300], flush=True)
                    continue
                ran = plan.embed.real.variant if plan.embed is not None else plan.built.variant
                if ran != v:
                    print(f"{spec} {n} {v}: the plan ran {ran} instead", flush=True)
                    continue
                if not err < TOL:
                    print(f"{spec} {n} {v}: WRONG (max rel error {err:.1e})", flush=True)
                    got.append({"variant": str(v), "wrong": err})
                    continue
                call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
                t_call = _time(cp, call, repeat, batches)
                t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
                regs, local = attrs.get((kind.layout, text), (-1, -1))
                got.append({"variant": str(v), "err": err, "call_s": t_call, "kernel_s": t_k,
                            "host_us": t_h * 1e6, "regs": regs, "local": local})
                print(f"  {spec} {n} {str(v):78s} call {t_call * 1e3:8.3f} ms kernel "
                      f"{t_k * 1e3:8.3f} ms (err {err:.1e})", flush=True)
            t_ref.append(_time(cp, lambda: cp.matmul(opA, opB, out=C), repeat, batches))
            best_ref = min(t_ref)
            print(f"  {spec} {n} cuBLAS {' / '.join(f'{t * 1e3:.3f}' for t in t_ref)} ms", flush=True)
            for g in got:
                r = {"dtype": dt_name, "layout": lay, "size": n, "class": cls, "cublas_s": best_ref,
                     "cublas_rounds_s": t_ref, "repeat": repeat, "batches": batches, **g}
                if "call_s" in g:
                    r.update({"call_tflops": flops / g["call_s"] / 1e12,
                              "kernel_tflops": flops / g["kernel_s"] / 1e12,
                              "cublas_tflops": flops / best_ref / 1e12,
                              "call_ratio": best_ref / g["call_s"], "kernel_ratio": best_ref / g["kernel_s"]})
                rows.append(r)
                out.write(json.dumps(r) + "\n")
                out.flush()
            del A, B, C, ref, opA, opB
            cp.get_default_memory_pool().free_all_blocks()
    out.close()
    print(f"\ndevice: {s.device.label}; per call = calls back to back (host path included), "
          "kernel = device work alone; reference cuBLAS (CuPy), the faster of its two timings")
    print(f"{'gemm':13} {'n':>5} {'variant':78} {'regs':>4} {'loc':>4} {'call ms':>9} {'x cuBLAS':>8} "
          f"{'kern ms':>9} {'x cuBLAS':>8} {'cuBLAS ms':>9}")
    for r in rows:
        what = f"{r['dtype']}/{r['layout']}"
        if "call_s" not in r:
            print(f"{what:13} {r['size']:>5} {r['variant']:78} WRONG {r.get('wrong')}")
            continue
        print(f"{what:13} {r['size']:>5} {r['variant']:78} {r['regs']:>4} {r['local']:>4} "
              f"{r['call_s'] * 1e3:9.3f} {r['call_ratio']:8.3f} {r['kernel_s'] * 1e3:9.3f} "
              f"{r['kernel_ratio']:8.3f} {r['cublas_s'] * 1e3:9.3f}")
    return 0


def _klay(dt_name: str, lay: str) -> str:
    """The layout of the real kernel a row runs: DGEMM TN its own, NTd (NT direct) its own NT
    derivation, NT through the nn plan and complex GEMMs through `real` the NN kernel."""
    if dt_name == "float64" and lay in ("TN", "NTd"):
        return lay[:2]
    return "NN"


def _verify(cp: Any, s: Any, a: Any, busy: Any) -> int:
    """The session's own choices (no variant forced) per GEMM, checked against cuBLAS's product
    first, then `a.verify` alternating rounds (cuBLAS, liftkit) of per-call timing; the ratio
    of each round's pair, their median and spread; liftkit's device work once at the end."""
    import statistics

    out = open(a.jsonl, "a")
    table = []
    for spec in a.rows.split(","):
        dt_name, lay = spec.split("/")
        dt = np.dtype(dt_name)
        ta, tb = lay[0] == "T", lay[1] == "T"
        for n in (int(x) for x in a.sizes.split(",") if x):
            flops = (8.0 if dt.kind == "c" else 2.0) * n ** 3
            unit_ms = flops / 50e12 * 1e3
            repeat = 20 if unit_ms < 1 else max(2, int(30 / unit_ms))
            batches = 5 if unit_ms < 5 else 3
            A, B = _rand_gpu(cp, (n, n), dt), _rand_gpu(cp, (n, n), dt)
            opA, opB = (A.T if ta else A), (B.T if tb else B)
            C, ref = cp.full((n, n), np.nan, dt), cp.empty((n, n), dt)
            cp.matmul(opA, opB, out=ref)
            s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
            err = float(cp.max(cp.abs(C - ref))) / float(cp.max(cp.abs(ref)))
            plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
            ran = plan.embed.real.variant if plan.embed is not None else plan.built.variant
            what = f"{plan.variant} on {ran}" if plan.embed is not None else str(ran)
            if not err < TOL:
                print(f"{spec} {n} {what}: WRONG (max rel error {err:.1e})", flush=True)
                table.append((spec, n, what, None))
                continue
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            blas = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            pairs = [(_time(cp, blas, repeat, batches), _time(cp, call, repeat, batches))
                     for _ in range(a.verify)]
            t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
            ratios = sorted(r / l for r, l in pairs)
            row = {"verify": True, "dtype": dt_name, "layout": lay, "size": n, "variant": what,
                   "err": err, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1], "kernel_s": t_k,
                   "host_us": t_h * 1e6, "cublas_median_s": statistics.median(p[0] for p in pairs),
                   "call_median_s": statistics.median(p[1] for p in pairs), "repeat": repeat,
                   "batches": batches}
            row["kernel_ratio"] = row["cublas_median_s"] / t_k
            out.write(json.dumps(row) + "\n")
            out.flush()
            table.append((spec, n, what, row))
            print(f"  {spec} {n} {what}: per call x{row['ratio_median']:.3f} "
                  f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f}), cuBLAS "
                  f"{row['cublas_median_s'] * 1e3:.3f} ms, liftkit {row['call_median_s'] * 1e3:.3f} "
                  f"ms, device work {t_k * 1e3:.3f} ms (err {err:.1e})", flush=True)
            del A, B, C, ref, opA, opB
            cp.get_default_memory_pool().free_all_blocks()
    out.close()
    print(f"\ndevice: {s.device.label}; {a.verify} alternating rounds (cuBLAS, liftkit) of per-call "
          "timing, the median of the rounds' ratios (spread); device work: calls queued behind a "
          "long product, fastest of 3")
    print(f"{'gemm':13} {'n':>5} {'x cuBLAS':>8} {'spread':>13} {'cuBLAS ms':>9} {'liftkit ms':>10} "
          f"{'device ms':>9}  derivation")
    for spec, n, what, r in table:
        if r is None:
            print(f"{spec:13} {n:>5} WRONG {what}")
            continue
        print(f"{spec:13} {n:>5} {r['ratio_median']:8.3f} {r['ratio_min']:6.3f}-{r['ratio_max']:.3f} "
              f"{r['cublas_median_s'] * 1e3:9.3f} {r['call_median_s'] * 1e3:10.3f} "
              f"{r['kernel_s'] * 1e3:9.3f}  {what}")
    return 0


def _build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker process: one variant's CUDA C, NVRTC's cubin and ptxas's report."""
    import re

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


def _prebuild() -> dict[tuple[str, str], tuple[int, int]]:
    """Every variant built by the device's NVRTC in spawned workers, each cubin stored in the
    kernel cache on disk under the key the session's kernel store looks up; (registers, spill
    bytes) per (layout, variant) from ptxas."""
    import concurrent.futures as cf
    import multiprocessing

    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for

    device = list_devices()[0]
    arch = arch_for(device.compute_capability)
    jobs = list(dict.fromkeys((_klay("float64", lay), t, arch)
                              for (lay, _), texts in VARIANTS.items() for t in texts))
    cache, out = ModuleCache(), {}
    with cf.ProcessPoolExecutor(min(len(jobs), max(1, (os.cpu_count() or 2) - 2)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(_build, jobs):
            if "error" in r:
                print(f"prebuild {r['job']}: {r['error']}", flush=True)
                continue
            cache.put(device, r["source"], r["options"], r["cubin"])
            out[r["job"]] = (r["regs"], r["spill"])
    return out


def _dry() -> int:
    """Each variant derived and compiled by this machine's NVRTC (ptxas -v)."""
    import re

    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import Kind, derive, lookup_variant, multiples
    from liftkit.codegen import CompileOptions, compile_program

    for (lay, _), texts in VARIANTS.items():
        kind = Kind("mm", "float64", _klay("float64", lay))
        for text in texts:
            v = lookup_variant(kind, text)
            (k,) = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda")).kernels
            log = compile_cuda(k.source, "sm_90a", [*k.build_options, "--ptxas-options=-v"],
                               name="k.cu").log or ""
            regs = re.findall(r"Used (\d+) registers", log)
            spill = re.findall(r"(\d+) bytes spill stores", log)
            print(f"{lay} {text:78s} multiples {multiples(kind, v)} regs {regs} spill {spill}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
