"""DGEMM through DMMA: reduceMmaF64K8Ahead (mm-tensor-cores ik=8 ahead=1, fragments read one
k-step ahead, across the cp.async tile boundary too) beside the shipped ik=8 derivation and
cuBLAS DGEMM (CuPy) in one process (issue 12, DGEMM bullet).

    python3 results/issue12/dmma22/dmma.py [--variants V,V,...] [--sizes 4096,8192] [--repeat 15]

A variant `TMxTNxTKwWsS:k8|:k8a|:k8s` is `tensor_core_mm("f64", TM, TN, TK, W, S, lines=True,
ik=8, ahead=0|1|2)` (`:k8` the shipped 4096³ derivation's kind, reduceMmaF64K8; `:k8a`
reduceMmaF64K8Ahead; `:k8s` reduceMmaF64K8AheadSpread). Every derivation
is built first in worker processes (derivation, CUDA C, NVRTC with ptxas -v: registers and spill
bytes of this machine's NVRTC in every row). Each kernel is then checked on fresh inputs against
float64 NumPy: 1024×768×1536 (3 × 4 × 48-96 tiles, M, N, K all different) and 4096³ (one NumPy
product shared by all variants), ‖C − ref‖/‖ref‖ < 1e-12; at 8192³ against cuBLAS's float64
product of the timing inputs (a NumPy product of that size costs more than the run's budget).
Timing: CUDA events, medians of --repeat launches after a warm-up, in --rounds rounds of
cuBLAS, every variant, cuBLAS; each row takes its fastest round median, cuBLAS likewise.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from typing import Any

import numpy as np

DEFAULT = ("128x64x16w4s4:k8,128x64x16w4s4:k8a,128x64x16w4s4:k8s,128x64x16w4s3:k8a,"
           "128x64x16w4s2:k8a,128x64x16w4s2:k8s,128x64x32w4s2:k8a,64x64x16w4s4:k8a,"
           "64x64x16w2s3:k8,64x64x16w2s3:k8a")
TOL = 1e-12


def parse(v: str) -> tuple[int, int, int, int, int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)w(\d+)s(\d+):k8([as]?)", v)
    if m is None:
        sys.exit(f"dmma: bad variant {v!r} (TMxTNxTKwWsS:k8, :k8a or :k8s)")
    tm, tn, tk, w, s = (int(x) for x in m.groups()[:5])
    return tm, tn, tk, w, s, {"": 0, "a": 1, "s": 2}[m.group(6)]


def build(job: tuple[str, str]) -> dict[str, Any]:
    """In a worker: the derivation, its CUDA C, NVRTC's cubin and ptxas's report."""
    v, arch = job
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.ir.nodes import Lambda
    from liftkit.rewrite.rules.cuda import tensor_core_mm

    import dataclasses

    t0 = time.time()
    try:
        tm, tn, tk, w, s, ahead = parse(v)
        d = tensor_core_mm("f64", tm, tn, tk, w, s, lines=True, ik=8, ahead=ahead)
        compiled = compile_program(d.final, CompileOptions(dialect="cuda"))
        outs = [compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name=f"{k.function}.cu")
                for k in compiled.kernels]
        log = "\n".join(o.log or "" for o in outs)
        regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
        spills = [(int(a), int(b)) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
        prog = compiled.program
        compiled = dataclasses.replace(compiled, program=Lambda(prog.params, prog.params[0]))
        return {"v": v, "compiled": compiled, "cubins": [o.cubin for o in outs], "regs": regs,
                "spills": spills, "steps": [f"{st.choice.rule} {st.choice.params}" for st in d.steps],
                "build_s": time.time() - t0}
    except Exception as err:  # noqa: BLE001 - one variant failing is a row
        return {"v": v, "error": f"{type(err).__name__}: {err}"[:300]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=DEFAULT)
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "dmma.json"))
    a = ap.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        parse(v)

    import cupy as cp

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for, nvrtc_version
    from liftkit.bench.timing import cupy_times, median

    device = list_devices()[0]
    cache = ModuleCache(tempfile.mkdtemp(prefix="lk-dmma-"))
    runner = CUDARunner(device, cache)
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode()
    arch = arch_for(device.compute_capability)
    print(f"device: {name}, {props['multiProcessorCount']} SMs, {props['clockRate'] / 1e6:.2f} GHz; "
          f"NVRTC {'.'.join(map(str, nvrtc_version()))} {arch}", flush=True)

    t0 = time.time()
    built: dict[str, dict[str, Any]] = {}
    with cf.ProcessPoolExecutor(min(len(variants), max(1, (os.cpu_count() or 2) - 2)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(build, [(v, arch) for v in variants]):
            built[r["v"]] = r
            if "error" in r:
                continue
            for k, cubin in zip(r["compiled"].kernels, r["cubins"]):
                cache.put(device, k.source, k.build_options, cubin)
    print(f"built {len(variants)} derivations in {time.time() - t0:.1f} s", flush=True)
    for v in variants:
        b = built[v]
        print(f"  {v:22} " + (b["error"] if "error" in b else
                              f"regs {b['regs']} spill stores/loads {b['spills']}  {b['steps'][0]}"), flush=True)

    rng = np.random.default_rng(int(time.time()))
    bad: dict[str, str] = {}

    def check(v: str, shape: tuple[int, int, int], ref_of: Any) -> None:
        if v in bad or "error" in built[v]:
            bad.setdefault(v, built[v].get("error", ""))
            return
        m, n, k = shape
        A, B, ref = ref_of(m, n, k)
        try:
            out = cp.asarray(runner.run(built[v]["compiled"], A, B))
            err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
        except Exception as e:  # noqa: BLE001
            bad[v] = f"{type(e).__name__}: {e}"[:200]
            return
        print(f"  check {v:22} {m}x{n}x{k}: rel err {err:.1e}", flush=True)
        if not err < TOL:
            bad[v] = f"WRONG at {m}x{n}x{k}: relative error {err:.2e}"

    def numpy_ref(m: int, n: int, k: int) -> tuple[Any, Any, Any]:
        A, B = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        return cp.asarray(A), cp.asarray(B), cp.asarray(A @ B)  # the error on the GPU

    for shape in [(1024, 768, 1536)]:
        for v in variants:
            check(v, shape, numpy_ref)
    t1 = time.time()
    big = numpy_ref(4096, 4096, 4096)
    print(f"NumPy float64 4096³ reference: {time.time() - t1:.1f} s", flush=True)
    for v in variants:
        check(v, (4096, 4096, 4096), lambda m, n, k: big)

    rows: list[dict[str, Any]] = []
    for size in [int(x) for x in a.sizes.split(",") if x]:
        flops = 2.0 * size ** 3
        A = cp.asarray(rng.uniform(-1, 1, (size, size)))
        B = cp.asarray(rng.uniform(-1, 1, (size, size)))
        C = cp.empty((size, size))
        if size != 4096:  # the timing inputs, against cuBLAS's float64 product
            ref = A @ B
            for v in variants:
                check(v, (size, size, size), lambda m, n, k: (A, B, ref))
        times: dict[str, list[float]] = {"cuBLAS": []}
        for _ in range(a.rounds):
            times["cuBLAS"].append(median(cupy_times(lambda: cp.matmul(A, B, out=C), a.repeat)))
            for v in variants:
                if v in bad:
                    continue
                _, info = runner.run_with_info(built[v]["compiled"], A, B, timing=True, repeat=a.repeat)
                times.setdefault(v, []).append(info.total_seconds)
            times["cuBLAS"].append(median(cupy_times(lambda: cp.matmul(A, B, out=C), a.repeat)))
        lib = min(times["cuBLAS"])
        rows.append({"size": size, "version": "cuBLAS DGEMM (CuPy)", "ms": lib * 1e3,
                     "tflops": flops / lib / 1e12, "x": 1.0, "rounds_ms": [t * 1e3 for t in times["cuBLAS"]]})
        for v in variants:
            r: dict[str, Any] = {"size": size, "version": v, "regs": built[v].get("regs"),
                                 "spills": built[v].get("spills")}
            if v in bad:
                r["error"] = bad[v]
            else:
                t = min(times[v])
                r.update(ms=t * 1e3, tflops=flops / t / 1e12, x=lib / t, rounds_ms=[x * 1e3 for x in times[v]])
            rows.append(r)
            print(f"  {size} {v:22} " + (r["error"] if "error" in r else
                  f"{r['ms']:8.3f} ms {r['x']:6.3f}x cuBLAS ({lib * 1e3:.3f} ms)"), flush=True)

    print(f"\ndevice: {name}; NVRTC {'.'.join(map(str, nvrtc_version()))}; fastest of {a.rounds} "
          f"round medians of {a.repeat} CUDA-event launches; checked against float64 NumPy "
          f"(8192³: cuBLAS float64), tolerance {TOL:g}")
    head = f"{'size':>5} {'version':24} {'ms':>8} {'TFLOP/s':>8} {'x cuBLAS':>8}  regs  spill(st/ld)  rounds (ms)"
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['size']:5} {r['version']:24} {r['error']}")
            continue
        sp = r.get("spills") or []
        print(f"{r['size']:5} {r['version']:24} {r['ms']:8.3f} {r['tflops']:8.1f} {r['x']:8.3f}  "
              f"{(r.get('regs') or [''])[0]!s:>4}  {(str(sp[0][0]) + '/' + str(sp[0][1])) if sp else '':>12}  "
              + " ".join(f"{x:.3f}" for x in r["rounds_ms"]))
    with open(a.json, "w") as f:
        json.dump({"device": name, "fingerprint": device.fingerprint, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
