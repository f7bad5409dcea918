"""SGEMM (FP32 FFMA, TF32 off) with the tile schedule of `mm-split-tail` (the last partial wave's
tiles split along K, or a resident-blocks bound) beside the plain derivation and cuBLAS (CuPy,
same process), at several shapes, in one run (issue 12, wave quantisation).

    python benchmarks/cuda_sgemm_tail.py --plan "4096x4096x4096=V,V,...;8192x8192x8192=V,..." \\
        [--top 2 --top-at 8192x8192x8192,8192x8192x1024] [--repeat 20] [--log OUT/sgemm.log]

A variant is `TMxTN:TK:RMxRN:S` (`rewrite.rules.cuda.sgemm_derivation`: mm-local-tiles then
tiles-async S deep, the shipped shape 128x64:32:8x8:2) or that with `:tP@SLOTS[bB]`
(`rewrite.rules.mm_schedule.sgemm_schedule_derivation`: then mm-split-tail(parts=P,
slots=SLOTS, bound=B)). `--top N` times the N fastest schedules of the first shape again at the
`--top-at` shapes (beside that shape's own list).

Method: every derivation is built first in worker processes (derivation, CUDA C, NVRTC for the
device's architecture, no GPU needed: NVRTC's registers, spills and static global memory are
rows of the table); then at each shape cuBLAS (CuPy `A @ B`, CUPY_TF32 unset) is timed, each
variant is checked on fresh random inputs in [-1, 1] against a float64 product (‖C − ref‖/‖ref‖
< 1e-5; a split variant twice, so its flags are seen to return to zero), then timed on other
inputs; cuBLAS again after the shape's variants, the faster of the two taken. CUDA events,
medians of --repeat after a warm-up. The table goes to stdout and --log.
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

TOL = 1e-5
VARIANT = re.compile(r"(\d+)x(\d+):(\d+):(\d+)x(\d+):(\d+)(?::t(\d+)@(\d+)(?:b(\d+))?)?")


def parse_variant(v: str) -> tuple[int, ...]:
    """(tm, tn, tk, rm, rn, stages, parts, slots, bound); parts 0: no schedule."""
    m = VARIANT.fullmatch(v)
    if m is None:
        sys.exit(f"cuda_sgemm_tail: bad variant {v!r} (TMxTN:TK:RMxRN:S[:tP@SLOTS[bB]])")
    return tuple(int(x) if x else 0 for x in m.groups())


def parse_shape(s: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", s)
    if m is None:
        sys.exit(f"cuda_sgemm_tail: bad shape {s!r} (MxNxK)")
    return tuple(int(x) for x in m.groups())  # type: ignore[return-value]


def derivation(v: str) -> Any:
    from liftkit.rewrite.rules.cuda import sgemm_derivation
    from liftkit.rewrite.rules.mm_schedule import sgemm_schedule_derivation

    tm, tn, tk, rm, rn, s, parts, slots, bound = parse_variant(v)
    if parts:
        return sgemm_schedule_derivation(tm, tn, tk, tm, tn, tk, rm, rn, s, parts, slots, bound)
    return sgemm_derivation(tm, tn, tk, tm, tn, tk, rm, rn, s)


def build(job: tuple[str, str]) -> dict[str, Any]:
    """In a worker: the derivation, its CUDA C and NVRTC's cubin with ptxas's report."""
    v, arch = job
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.ir.nodes import Lambda

    t0 = time.time()
    try:
        d = derivation(v)
        compiled = compile_program(d.final, CompileOptions(dialect="cuda"))
        k = compiled.kernels[0]
        out = compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name=f"{k.function}.cu")
        log = out.log or ""
        find = lambda pat: [int(x) for x in re.findall(pat, log)]  # noqa: E731
        prog = compiled.program  # the user functions do not pickle: only the parameters cross
        compiled = dataclasses.replace(compiled, program=Lambda(prog.params, prog.params[0]))
        return {"v": v, "compiled": compiled, "cubin": out.cubin, "regs": find(r"Used (\d+) registers"),
                "spill": find(r"(\d+) bytes spill stores"), "gmem": find(r"(\d+) bytes gmem"),
                "steps": [f"{st.choice.rule} {st.choice.params}" for st in d.steps],
                "build_s": time.time() - t0}
    except Exception as err:  # noqa: BLE001 - one variant failing is a row
        return {"v": v, "error": f"{type(err).__name__}: {err}"[:300]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", required=True, help="SHAPE=V,V,...;SHAPE=V,...")
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--top-at", default="")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--log", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    os.environ.pop("CUPY_TF32", None)
    plan = [(parse_shape(s), [v for v in vs.split(",") if v])
            for item in a.plan.split(";") if item for s, vs in [item.split("=")]]
    at = [parse_shape(s) for s in a.top_at.split(",") if s]
    for _, vs in plan:
        for v in vs:
            parse_variant(v)

    import cupy as cp

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.bench.timing import cupy_times, median

    devices = list_devices()
    if not devices:
        sys.exit("cuda_sgemm_tail: no CUDA GPU")
    device = devices[0]
    cache = ModuleCache(tempfile.mkdtemp(prefix="lk-tail-"))
    runner = CUDARunner(device, cache)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode()
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"device: {name}, {props['multiProcessorCount']} SMs, {props['clockRate'] / 1e6:.2f} GHz")
    arch = arch_for(device.compute_capability)
    jobs = list(dict.fromkeys(v for _, vs in plan for v in vs))
    t0 = time.time()
    built: dict[str, dict[str, Any]] = {}
    with cf.ProcessPoolExecutor(min(a.workers, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(build, [(v, arch) for v in jobs]):
            built[r["v"]] = r
            if "error" not in r:
                k = r["compiled"].kernels[0]
                cache.put(device, k.source, k.build_options, r["cubin"])
    say(f"built {len(jobs)} derivations in {time.time() - t0:.1f} s "
        f"({sum('error' in r for r in built.values())} failed)")
    for v in jobs:
        b = built[v]
        say(f"  {v:28} " + (f"regs {b['regs']} spill {b['spill']} gmem {b['gmem']}" if "error" not in b
                             else b["error"]))

    rng = np.random.default_rng(int(time.time()))
    rows: list[dict[str, Any]] = []

    def run_shape(shape: tuple[int, int, int], variants: list[str]) -> list[dict[str, Any]]:
        m, n, k = shape
        label, flops = f"{m}x{n}x{k}", 2.0 * m * n * k
        A = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
        B = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
        C = cp.empty((m, n), np.float32)

        def lib_ms() -> float:
            return median(cupy_times(lambda: cp.matmul(A, B, out=C), a.repeat)) * 1e3

        lib0 = lib_ms()
        part = []
        for v in variants:
            row: dict[str, Any] = {"shape": label, "version": v, "ms": float("nan"), "rel_err": float("nan")}
            b = built.get(v) or build((v, arch))
            row.update(regs=b.get("regs"), steps=b.get("steps"))
            if "error" in b:
                row["error"] = b["error"]
            else:
                try:
                    errs = []
                    for _ in range(2 if parse_variant(v)[6] > 1 else 1):
                        A2 = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
                        B2 = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
                        out = cp.asarray(runner.run(b["compiled"], A2, B2)).astype(cp.float64)
                        ref = A2.astype(cp.float64) @ B2.astype(cp.float64)
                        e = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
                        errs.append(e if e == e else float("inf"))
                    row["rel_err"] = max(errs)
                    if not row["rel_err"] < TOL:
                        row["error"] = f"WRONG: relative error {row['rel_err']:.2e}"
                    else:
                        _, info = runner.run_with_info(b["compiled"], A, B, timing=True, repeat=a.repeat)
                        row["ms"] = info.total_seconds * 1e3
                except Exception as e:  # noqa: BLE001 - one variant failing is a row
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
            part.append(row)
            say(f"  {label:16} {v:28} {row['ms']:8.3f} ms  err {row['rel_err']:.1e}"
                + (f"  {row['error']}" if "error" in row else ""))
        lib = min(lib0, lib_ms())
        rows.append({"shape": label, "version": "cuBLAS SGEMM (CuPy, TF32 off)", "ms": lib,
                     "rel_err": 0.0, "of_cublas": 1.0, "tflops": flops / lib * 1e-9})
        for r in part:
            r["tflops"] = flops / r["ms"] * 1e-9 if r["ms"] == r["ms"] else 0.0
            r["of_cublas"] = lib / r["ms"] if r["ms"] == r["ms"] else 0.0
        rows.extend(part)
        say(f"{label}: cuBLAS {lib:.3f} ms")
        return part

    first = run_shape(*plan[0])
    ok = sorted((r for r in first if "error" not in r and parse_variant(r["version"])[6]), key=lambda r: r["ms"])
    top = [r["version"] for r in ok[:a.top]]
    extra = {s: top for s in at}
    for shape, vs in plan[1:]:
        run_shape(shape, list(dict.fromkeys(vs + extra.pop(shape, []))))
    for shape, vs in extra.items():
        run_shape(shape, vs)

    head = f"{'shape':16} {'version':30} {'ms':>8} {'TFLOP/s':>8} {'x cuBLAS':>8} {'rel err':>8}  regs"
    say(f"\ndevice: {name}; medians of {a.repeat}, CUDA events; every variant checked against float64 first")
    say(head)
    say("-" * len(head))
    for r in rows:
        say(f"{r['shape']:16} {r['version'][:30]:30} {r['ms']:8.3f} {r['tflops']:8.1f} {r['of_cublas']:8.3f} "
            f"{r['rel_err']:8.1e}  {(r.get('regs') or [''])[0]}" + (f"  {r['error'][:70]}" if "error" in r else ""))
    if a.log:
        with open(a.log, "w") as f:
            f.write("\n".join(lines) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "fingerprint": device.fingerprint, "repeat": a.repeat, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
