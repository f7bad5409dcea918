"""SGEMM (FP32 FFMA, TF32 off) and DGEMM (FP64 DMMA) derived from the high-level matrix product
on the CUDA backend, against cuBLAS (CuPy, same process) at several shapes, in one run (issue 12,
issue 15's GEMM targets).

    python benchmarks/cuda_gemm.py --sgemm 4096x4096x4096=V,V,... --sgemm-top 2 \\
        --sgemm-at 8192x8192x8192,8192x8192x1024,1024x1024x8192 --sgemm-base V,V \\
        --dgemm 1024=D,D;4096=D,D;8192=D --repeat 20 --json OUT.json
    python benchmarks/cuda_gemm.py profile OUT.json [--into DIR] [--sizes 1024,4096]

An SGEMM variant `TMxTN:TK:RMxRN:S[:r]` is `rewrite.rules.cuda.sgemm_derivation` from the
bundled `mm` (mm-local-tiles, then tiles-async S deep; `:r` rotates A's rows in shared memory).
A DGEMM variant `TMxTNxTKwWsS[L]` is `tensor_core_mm("f64", …)` (one application of
mm-tensor-cores; L: tiles copied in whole lines; `:k8`: its ik=8, reduceMmaF64K8, DMMA m16n8k8
throughout instead of the largest shape m16n8k16 — in run 7 an experiment patching the code
generator, whose CUDA source the derivation now gives byte for byte). Rows carry NVRTC's
register count. `--sgemm-top N` times the N fastest of the
first SGEMM shape again at each `--sgemm-at` shape, beside `--sgemm-base`.

Method (docs/perf.md): every derivation is built first, all at once, in worker processes
(derivation, code generation and NVRTC need no GPU; the cubins go into this run's kernel cache),
so the GPU time goes to checks and timings. Each variant is then checked on fresh random inputs
(uniform in [-1, 1]) against a float64 product on the GPU, ‖C − ref‖/‖ref‖ below 1e-5 (FP32) or
1e-12 (FP64), before it is timed on other inputs; CUDA events, medians of --repeat after a
warm-up; cuBLAS (CuPy `A @ B`, CUPY_TF32 unset) timed before and after each shape's variants,
the ratio taken against the faster of the two. Table last; rows in --json.

`profile` puts a run's checked square NN rates (the size classes of --sizes) into the blas profile
of the run's device (shipped, or a copy in --into: `LIFTKIT_BLAS_PROFILES=DIR` makes liftkit.blas
use it), replacing that class's earlier entries, so liftkit.blas picks the fastest.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from typing import Any

import numpy as np

TOL = {"float32": 1e-5, "float64": 1e-12}


def parse_sgemm(v: str) -> tuple[int, int, int, int, int, int, int]:
    m = re.fullmatch(r"(\d+)x(\d+):(\d+):(\d+)x(\d+):(\d+)(:r)?", v)
    if m is None:
        raise ValueError(f"cuda_gemm: bad SGEMM variant {v!r} (TMxTN:TK:RMxRN:S[:r])")
    return tuple(int(x) for x in m.groups()[:6]) + (1 if m.group(7) else 0,)  # type: ignore[return-value]


def parse_dgemm(v: str) -> tuple[int, int, int, int, int, bool, int]:
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)w(\d+)s(\d+)(L?)(:k8)?", v)
    if m is None:
        raise ValueError(f"cuda_gemm: bad DGEMM variant {v!r} (TMxTNxTKwWsS[L][:k8])")
    tm, tn, tk, w, s = (int(x) for x in m.groups()[:5])
    return tm, tn, tk, w, s, bool(m.group(6)), 8 if m.group(7) else 0


def parse_shape(s: str) -> tuple[int, int, int]:
    if re.fullmatch(r"\d+", s):
        return int(s), int(s), int(s)
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", s)
    if m is None:
        sys.exit(f"cuda_gemm: bad shape {s!r} (MxNxK or N)")
    return tuple(int(x) for x in m.groups())  # type: ignore[return-value]


def derivation(dtype: str, v: str) -> Any:
    from liftkit.rewrite.rules.cuda import sgemm_derivation, tensor_core_mm

    if dtype == "float32":
        tm, tn, tk, rm, rn, s, rot = parse_sgemm(v)
        return sgemm_derivation(tm, tn, tk, tm, tn, tk, rm, rn, s, rot)
    tm, tn, tk, w, s, lines, ik = parse_dgemm(v)
    return tensor_core_mm("f64", tm, tn, tk, w, s, lines, ik=ik)


def build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker: the derivation, its CUDA C and NVRTC's cubins (no GPU needed)."""
    dtype, v, arch = job
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.ir.nodes import Lambda

    t0 = time.time()
    try:
        d = derivation(dtype, v)
        compiled = compile_program(d.final, CompileOptions(dialect="cuda"))
        outs = [compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"],
                             name=f"{k.function}.cu") for k in compiled.kernels]
        cubins = [o.cubin for o in outs]
        regs = [int(x) for o in outs for x in re.findall(r"Used (\d+) registers", o.log or "")]
        # what crosses back to the parent: the kernels, and of the program only its parameters
        # (the runner's launches read their names and types; the user functions do not pickle)
        prog = compiled.program
        compiled = dataclasses.replace(compiled, program=Lambda(prog.params, prog.params[0]))
        return {"dtype": dtype, "v": v, "compiled": compiled, "cubins": cubins, "regs": regs,
                "steps": [f"{st.choice.rule} {st.choice.params}" for st in d.steps],
                "build_s": time.time() - t0}
    except Exception as err:  # noqa: BLE001 - one variant failing is a row
        return {"dtype": dtype, "v": v, "error": f"{type(err).__name__}: {err}"[:300]}


def variant_of(dtype: str, v: str) -> Any:
    """The liftkit.blas codelet variant of a derivation this script times (tiles-async, mma)."""
    from liftkit.blas.codelets import Variant

    if dtype == "float32":
        tm, tn, tk, rm, rn, s, rot = parse_sgemm(v)
        return Variant.of("tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=s,
                          **({"rot": 1} if rot else {}))
    tm, tn, tk, w, s, lines, ik = parse_dgemm(v)
    return Variant.of("mma", tm=tm, tn=tn, tk=tk, warps=w, staged=s, **({"lines": 1} if lines else {}),
                      **({"ik": ik} if ik else {}))


def profile(results: list[str], into: str | None, sizes: tuple[int, ...]) -> None:
    """The shipped blas profile of the results' device with its NN GEMM entries of each square
    size class measured here replaced by these kernel rates (every checked variant, so the
    profile ranks them), written into `into` (default: the shipped profile itself)."""
    from pathlib import Path

    from liftkit.blas.codelets import Kind
    from liftkit.blas.profile import (SHIPPED, Entry, Profile, file_name, find_profile_any_driver,
                                      size_class)

    rows = [(r, res["fingerprint"]) for p in results for res in [json.loads(Path(p).read_text())]
            for r in res["rows"]]
    prof = find_profile_any_driver(rows[0][1], [SHIPPED])
    if prof is None:  # a card liftkit was not tuned on: a profile of these entries alone
        prof = Profile(rows[0][1], f"CUDA / {json.loads(Path(results[0]).read_text())['device']}", "gpu")
    elif prof.fingerprint != rows[0][1]:  # tuned on another driver: these entries are this one's
        prof = Profile(rows[0][1], prof.label, prof.device_type, list(prof.entries), "",
                       dict(prof.notes), prof.peaks)
    new = []
    for r, _ in rows:
        m, n, k = parse_shape(r["shape"])
        if (r["version"].startswith("cuBLAS") or "error" in r or not r["ms"] == r["ms"]
                or not m == n == k or m not in sizes):
            continue
        sz = {"M": m, "N": n, "K": k}
        new.append(Entry(Kind("mm", r["dtype"], "NN"), size_class("mm", sz), sz,
                         variant_of(r["dtype"], r["version"]), r["ms"] * 1e-3, r["tflops"] * 1e3))
    new = list({(e.kind, e.size_class, e.variant): e for e in new}.values())  # a later run wins
    redone = {(e.kind, e.size_class) for e in new}
    dropped = [i for i, e in enumerate(prof.entries) if (e.kind, e.size_class) in redone]
    at = dropped[0] if dropped else len(prof.entries)  # where the replaced entries were
    kept = [e for e in prof.entries if (e.kind, e.size_class) not in redone]
    prof.entries = kept[:at] + new + kept[at:]
    names = ", ".join(str(Path(p).relative_to(Path.cwd())) if Path(p).is_absolute()
                      and Path(p).is_relative_to(Path.cwd()) else p for p in results)
    prof.notes["cuda_gemm"] = (f"mm NN {', '.join(sorted(f'{k.dtype} {c}' for k, c in redone))}: "
                               f"kernel rates (CUDA events, one launch each) of "
                               f"benchmarks/cuda_gemm.py ({names}), {len(new)} entries replacing "
                               f"{len(dropped)}")
    out = prof.save((Path(into) if into else SHIPPED) / file_name(prof.fingerprint))
    for kind, cls in sorted(redone, key=str):
        best = prof.ranked(kind, cls)[0]
        print(f"{kind} {cls}: {best.variant} {best.rate:.0f} GFLOP/s at {best.sizes}")
    print("wrote", out)


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["profile"]:
        pp = argparse.ArgumentParser(prog="cuda_gemm.py profile")
        pp.add_argument("results", nargs="+")
        pp.add_argument("--into", default=None, help="a profile directory (default: the shipped one)")
        pp.add_argument("--sizes", default="1024,4096", help="square sizes whose classes are replaced")
        e = pp.parse_args(argv[1:])
        profile(e.results, e.into, tuple(int(x) for x in e.sizes.split(",")))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sgemm", default="", help="SHAPE=V,V,...: the SGEMM sweep (one shape)")
    ap.add_argument("--sgemm-top", type=int, default=2)
    ap.add_argument("--sgemm-at", default="", help="shapes the top variants are timed at")
    ap.add_argument("--sgemm-base", default="", help="variants timed at every --sgemm-at shape")
    ap.add_argument("--sgemm-extra", default="", help="SHAPE=V,...;...: more SGEMM rows")
    ap.add_argument("--dgemm", default="", help="SIZE=V,V;SIZE=V,...: DGEMM rows")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    a.json = a.json or os.path.join(os.environ.get("OUT", "."), "cuda_gemm.json")
    os.environ.pop("CUPY_TF32", None)

    import cupy as cp

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.bench.timing import cupy_times, median

    devices = list_devices()
    if not devices:
        sys.exit("no CUDA GPU")
    device = devices[0]
    cache = ModuleCache(tempfile.mkdtemp(prefix="lk-gemm-"))
    runner = CUDARunner(device, cache)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode()
    print(f"device: {name}, {props['multiProcessorCount']} SMs, {props['clockRate'] / 1e6:.2f} GHz",
          flush=True)

    # the plan: (dtype, shape, variant), in order; the top-N stage is filled in after the sweep
    sweep_shape, sweep = None, []
    if a.sgemm:
        s, vs = a.sgemm.split("=")
        sweep_shape, sweep = parse_shape(s), [v for v in vs.split(",") if v]
    extra = [(parse_shape(s), v) for item in a.sgemm_extra.split(";") if item
             for s, vs in [item.split("=")] for v in vs.split(",") if v]
    base = [v for v in a.sgemm_base.split(",") if v]
    dplan = [(parse_shape(s), v) for item in a.dgemm.split(";") if item
             for s, vs in [item.split("=")] for v in vs.split(",") if v]
    jobs = list(dict.fromkeys([("float32", v) for v in sweep + base + [v for _, v in extra]]
                              + [("float64", v) for _, v in dplan]))
    for dt, v in jobs:
        try:
            (parse_sgemm if dt == "float32" else parse_dgemm)(v)
        except ValueError as err:
            sys.exit(str(err))
    arch = arch_for(device.compute_capability)
    t0 = time.time()
    built: dict[tuple[str, str], dict[str, Any]] = {}
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(min(a.workers, len(jobs) or 1), mp_context=ctx) as pool:
        for r in pool.map(build, [(dt, v, arch) for dt, v in jobs]):
            built[r["dtype"], r["v"]] = r
            if "error" not in r:
                for k, cubin in zip(r["compiled"].kernels, r["cubins"]):
                    cache.put(device, k.source, k.build_options, cubin)
    print(f"built {len(jobs)} derivations in {time.time() - t0:.1f} s "
          f"({sum('error' in r for r in built.values())} failed)", flush=True)

    rng = np.random.default_rng(int(time.time()))
    rows: list[dict[str, Any]] = []

    def run_shape(dtype: str, shape: tuple[int, int, int], variants: list[str]) -> None:
        m, n, k = shape
        dt = np.float32 if dtype == "float32" else np.float64
        flops = 2.0 * m * n * k
        label = f"{m}x{n}x{k}"
        A = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(dt))
        B = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(dt))
        C = cp.empty((m, n), dt)

        def lib_ms() -> float:
            return median(cupy_times(lambda: cp.matmul(A, B, out=C), a.repeat)) * 1e3

        lib0 = lib_ms()
        part = []
        for v in variants:
            row: dict[str, Any] = {"dtype": dtype, "shape": label, "version": v, "ms": float("nan"),
                                   "tflops": 0.0, "rel_err": float("nan")}
            b = built[dtype, v]
            row["steps"], row["regs"] = b.get("steps"), b.get("regs")
            if "error" in b:
                row["error"] = b["error"]
            else:
                try:
                    A2 = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(dt))
                    B2 = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(dt))
                    out = runner.run(b["compiled"], A2, B2)
                    ref = A2.astype(cp.float64) @ B2.astype(cp.float64)
                    err = float(cp.linalg.norm(cp.asarray(out).astype(cp.float64) - ref)
                                / cp.linalg.norm(ref))
                    row["rel_err"] = err if err == err else float("inf")
                    if not row["rel_err"] < TOL[dtype]:
                        row["error"] = f"WRONG: relative error {row['rel_err']:.2e}"
                    else:
                        _, info = runner.run_with_info(b["compiled"], A, B, timing=True,
                                                       repeat=a.repeat)
                        row["ms"] = info.total_seconds * 1e3
                        row["tflops"] = flops / info.total_seconds / 1e12
                except Exception as e:  # noqa: BLE001 - one variant failing is a row
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
            part.append(row)
            print(f"  {dtype} {label} {v:26} {row['ms']:8.3f} ms {row['tflops']:6.1f} TFLOP/s "
                  f"regs {row['regs']}"
                  + (f"  {row['error']}" if "error" in row else ""), flush=True)
        lib1 = lib_ms()
        lib = min(lib0, lib1)
        ref_name = "cuBLAS SGEMM (CuPy, TF32 off)" if dtype == "float32" else "cuBLAS DGEMM (CuPy)"
        rows.append({"dtype": dtype, "shape": label, "version": ref_name, "ms": lib,
                     "tflops": flops / lib * 1e-9, "rel_err": 0.0, "cublas_ms": [lib0, lib1]})
        for r in part:
            r["of_cublas"] = lib / r["ms"] if r["ms"] == r["ms"] else 0.0
        rows.extend(part)
        print(f"{dtype} {label}: cuBLAS {lib0:.3f} / {lib1:.3f} ms", flush=True)

    if sweep_shape is not None:
        run_shape("float32", sweep_shape, sweep)
        ok = sorted((r for r in rows if r["dtype"] == "float32" and "error" not in r
                     and not r["version"].startswith("cuBLAS") and r["ms"] == r["ms"]),
                    key=lambda r: r["ms"])
        top = [r["version"] for r in ok[:a.sgemm_top]]
        print("top:", ",".join(top), flush=True)
        for s in [x for x in a.sgemm_at.split(",") if x]:
            run_shape("float32", parse_shape(s), list(dict.fromkeys(base + top)))
    for shape in dict.fromkeys(s for s, _ in extra):
        run_shape("float32", shape, [v for s, v in extra if s == shape])
    for shape in dict.fromkeys(s for s, _ in dplan):
        run_shape("float64", shape, [v for s, v in dplan if s == shape])

    head = f"{'dtype':7} {'shape':16} {'version':30} {'ms':>8} {'TFLOP/s':>8} {'x cuBLAS':>8} {'rel err':>9}"
    print(f"\ndevice: {name}; medians of {a.repeat}, CUDA events")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['dtype']:7} {r['shape']:16} {r['version'][:30]:30} {r['ms']:8.3f} "
              f"{r['tflops']:8.1f} {r.get('of_cublas', 1.0):8.3f} {r['rel_err']:9.1e} "
              f"{(r.get('regs') or [''])[0]}"
              + (f"  {r['error'][:60]}" if "error" in r else ""))
    with open(a.json, "w") as f:
        json.dump({"device": name, "fingerprint": device.fingerprint, "repeat": a.repeat,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
