"""SGEMM (FP32 FFMA, TF32 off on both sides) derived from the high-level `mm` program on the
CUDA backend, against cuBLAS (CuPy `A @ B`, CUPY_TF32 unset) in the same run (issue 12).

    python benchmarks/cuda_sgemm.py sweep [--shape 4096x4096x4096] [--variants V,...] [--repeat 20]
    python benchmarks/cuda_sgemm.py confirm --variant V [--shapes MxNxK,...] [--repeat 30]
    python benchmarks/cuda_sgemm.py export RESULT.json ... [--out DIR] [--shapes MxNxK,...]

`export` writes the fastest checked variant of each shape of each result (a JSON this script wrote on
the GPU) as a bundled derivation of `mm` at that shape (src/liftkit/derivations/, or --out),
which `liftkit run mm --tuned --backend cuda` replays on a device of that kind.

A variant is `TMxTN:TK:RMxRN:S`: the derivation `mm-local-tiles(tm, tn, tk, rm, rn, unroll=1,
w=4)` then, for S > 1, `tiles-async(stages=S)` (the A and B tile copies become cp.async S deep,
one barrier per tile); S = 1 is mm-local-tiles alone (the bundled derivation's kernel at
64x128:16:8x8:1). Each derivation is built from the high-level program by the rules
(`liftkit.rewrite.rules.cuda.sgemm_derivation`), printed as its replayable steps, compiled by
the code generator (CUDA dialect) and NVRTC. A suffix `:lb` (sweep only) is an experiment, not a
derivation: the generated source gets `__launch_bounds__(T, 512/T)` to see what a register cap of
128 would give.

Method: the floor first (2·M·N·K flops over cuBLAS's measured rate and over the FFMA peak of
the card's clock); every variant is checked on fresh random inputs against a float64 product
(‖C − ref‖/‖ref‖ < 1e-5; float32 arithmetic lands near 1e-7) before it is timed; CUDA events,
medians of --repeat after a warm-up; inputs on the GPU (CuPy), no transfers timed. Table last;
details in $OUT/cuda_sgemm_<what>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from typing import Any

import numpy as np

from liftkit.bench.timing import cupy_times, median

SWEEP = ("64x128:16:8x8:1", "64x128:16:8x8:2", "64x128:16:8x8:3", "128x128:16:8x8:1",
         "128x128:16:8x8:2", "128x128:8:8x8:2", "128x128:8:8x8:3", "128x128:8:8x8:4",
         "128x64:16:8x8:2", "128x64:16:8x8:3", "64x128:32:8x8:2", "64x64:16:8x8:2",
         "64x64:16:8x8:3", "64x128:8:8x8:3", "128x64:8:8x8:3", "64x128:8:8x8:4",
         "128x128:16:8x8:2:lb", "128x128:8:8x8:3:lb", "128x128:8:8x8:4:lb", "64x128:16:8x8:2:lb",
         "64x128:16:8x8:3:lb", "128x64:16:8x8:3:lb", "64x64:16:8x8:3:lb", "64x128:8:8x8:4:lb",
         "64x128:32:8x8:2:lb",
         # run 4: deep tiles in dynamic shared memory, 4×16 blocks
         "128x64:32:8x8:2", "128x64:32:8x8:3", "64x128:32:8x8:3", "128x128:32:8x8:2",
         "64x128:64:8x8:2", "64x128:32:4x16:2", "128x128:32:4x16:2:lb",
         # cuBLAS's shape: 16×8 (8×16) blocks, 256×128 tiles, K steps of 8, ×3 (255 registers)
         "256x128:8:16x8:3", "256x128:16:16x8:2", "128x256:16:8x16:2", "128x128:16:8x16:2",
         "128x128:32:8x16:2", "128x128:16:16x8:2")
TOL = 1e-5


def parse_variant(v: str) -> tuple[tuple[int, ...], bool]:
    """((tm, tn, tk, rm, rn, stages, rot), lb) of `TMxTN:TK:RMxRN:S[:r][:lb]` (`:r`: A's rows
    rotated in shared memory, mm-local-tiles' rot=1)."""
    m = re.fullmatch(r"(\d+)x(\d+):(\d+):(\d+)x(\d+):(\d+)(:r)?(:lb)?", v)
    if m is None:
        sys.exit(f"cuda_sgemm: bad variant {v!r} (TMxTN:TK:RMxRN:S[:r][:lb])")
    return tuple(int(x) for x in m.groups()[:6]) + (1 if m.group(7) else 0,), bool(m.group(8))


def parse_shape(s: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", s)
    if m is None:
        sys.exit(f"cuda_sgemm: bad shape {s!r} (MxNxK)")
    return tuple(int(x) for x in m.groups())  # type: ignore[return-value]


def launch_bounds(compiled: Any) -> Any:
    """The experiment `:lb`: __launch_bounds__(T, 512/T) on the kernel (a register cap of 128)."""
    k = compiled.kernels[0]
    threads = 1
    for d in k.ndrange.local_size or ():
        threads *= d
    src = k.source.replace('extern "C" __global__ void',
                           f'extern "C" __global__ void __launch_bounds__({threads}, '
                           f'{max(1, 512 // threads)})', 1)
    return dataclasses.replace(compiled, kernels=(dataclasses.replace(k, source=src),))


def export(paths: list[str], out: str | None, shapes: tuple[str, ...] = ()) -> None:
    """The fastest checked variant of each shape in each result file (only `shapes`, if given),
    as a bundled derivation of `mm`."""
    from pathlib import Path

    from liftkit.explore import bundled
    from liftkit.explore.problem import program_text
    from liftkit.ir.printer import show
    from liftkit.programs.apps import mm
    from liftkit.rewrite.rules.cuda import sgemm_derivation

    found = []
    for path, res, shape in [(p, r, s) for p in paths for r in [json.loads(Path(p).read_text())]
                             for s in dict.fromkeys(x["shape"] for x in r["rows"]
                                                   if x.get("dtype", "float32") == "float32")]:
        if shapes and shape not in shapes:
            continue
        ok = [r for r in res["rows"] if r["shape"] == shape and not r["version"].startswith("cuBLAS")
              and r.get("dtype", "float32") == "float32"
              and "error" not in r and not r["version"].endswith(":lb") and r["ms"] == r["ms"]]
        if not ok:
            sys.exit(f"cuda_sgemm export: {path} has no checked derived variant at {shape}")
        best = min(ok, key=lambda r: r["ms"])
        m, n, k = parse_shape(best["shape"])
        (tm, tn, tk, rm, rn, stages, rot), _ = parse_variant(best["version"])
        d = sgemm_derivation(m, n, k, tm, tn, tk, rm, rn, stages, rot)
        seq = next(i for i, r in enumerate(ok) if r is best) + 1
        lib = next(r for r in res["rows"] if r["shape"] == shape and r["version"].startswith("cuBLAS")
                   and r.get("dtype", "float32") == "float32")
        found.append(bundled.Derivation(
            "mm", program_text(mm()), {"M": m, "N": n, "K": k}, res["fingerprint"], "gpu",
            "liftkit.rewrite.rules.cuda:CUDA_SEARCH_RULES", best["ms"] / 1e3, len(ok), len(ok),
            0.0, 0.0, seq, tuple(st.choice for st in d.steps), show(d.final),
            f"benchmarks/cuda_sgemm.py sweep on {res['device']} ({Path(path).name}; cuBLAS "
            f"{lib['ms']:.4g} ms in the same run: {lib['ms'] / best['ms']:.3f}x)"))
        print(f"{best['shape']}: {best['version']} {best['ms']:.4g} ms")
    for p in bundled.write(found, Path(out) if out else None):
        print("wrote", p)


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["export"]:
        ex = argparse.ArgumentParser(prog="cuda_sgemm.py export")
        ex.add_argument("results", nargs="+")
        ex.add_argument("--out", default=None)
        ex.add_argument("--shapes", default="", help="only these shapes (MxNxK,...)")
        e = ex.parse_args(argv[1:])
        export(e.results, e.out, tuple(x for x in e.shapes.split(",") if x))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["sweep", "confirm"])
    ap.add_argument("--shape", default="4096x4096x4096")
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,8192x8192x1024,1024x1024x8192")
    ap.add_argument("--variants", default=",".join(SWEEP))
    ap.add_argument("--variant", default=None, help="confirm: one variant, or SHAPE=V;SHAPE=V")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    a.json = a.json or os.path.join(os.environ.get("OUT", "."), f"cuda_sgemm_{a.what}.json")
    os.environ.pop("CUPY_TF32", None)

    import cupy as cp

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.rules.cuda import sgemm_derivation

    devices = list_devices()
    if not devices:
        sys.exit("no CUDA GPU")
    runner = CUDARunner(devices[0], ModuleCache(disk=False))
    props = cp.cuda.runtime.getDeviceProperties(0)
    device = props["name"].decode()
    sms, clock_khz = props["multiProcessorCount"], props["clockRate"]
    peak = sms * 128 * 2 * clock_khz * 1e3  # FFMA lanes per SM × 2 flops × the boost clock
    if a.what == "sweep":
        plan = [(parse_shape(a.shape), v) for v in a.variants.split(",") if v]
    else:
        if a.variant and "=" in a.variant:
            plan = [(parse_shape(s), v) for s, v in (x.split("=") for x in a.variant.split(";"))]
        else:
            plan = [(parse_shape(s), a.variant or "128x128:8:8x8:3") for s in a.shapes.split(",")]
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(int(time.time()))
    shapes = list(dict.fromkeys(s for s, _ in plan))
    print(f"device: {device}, {sms} SMs, {clock_khz / 1e6:.2f} GHz: FFMA peak {peak / 1e12:.1f} TFLOP/s")
    for shape in shapes:
        m, n, k = shape
        flops = 2.0 * m * n * k
        A = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
        B = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        ref_norm = float(cp.linalg.norm(ref))

        def rel(C: Any) -> float:
            e = float(cp.linalg.norm(cp.asarray(C).astype(cp.float64) - ref)) / ref_norm
            return e if e == e else float("inf")

        C = cp.empty((m, n), cp.float32)
        err = rel(A @ B)
        t0 = time.time()
        s = median(cupy_times(lambda: cp.matmul(A, B, out=C), a.repeat))
        lib = {"shape": f"{m}x{n}x{k}", "version": "cuBLAS SGEMM (CuPy A @ B, TF32 off)", "ms": s * 1e3,
               "tflops": flops / s / 1e12, "rel_err": err, "t0": t0, "t1": time.time()}
        rows.append(lib)
        print(f"{m}x{n}x{k}: floor {flops / peak * 1e3:.3f} ms at the FFMA peak; "
              f"cuBLAS {s * 1e3:.3f} ms", flush=True)
        for _, v in [p for p in plan if p[0] == shape]:
            (tm, tn, tk, rm, rn, stages, rot), lb = parse_variant(v)
            row: dict[str, Any] = {"shape": f"{m}x{n}x{k}", "version": v, "ms": float("nan"),
                                   "tflops": 0.0, "rel_err": float("nan")}
            try:
                d = sgemm_derivation(m, n, k, tm, tn, tk, rm, rn, stages, rot)
                row["steps"] = [f"{st.choice.rule} {st.choice.params}" for st in d.steps]
                compiled = compile_program(d.final, CompileOptions(dialect="cuda"))
                if lb:
                    compiled = launch_bounds(compiled)
                # fresh inputs for the check: the same function on any input
                A2 = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
                B2 = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
                out, _ = runner.run_with_info(compiled, A2, B2)
                ref2 = A2.astype(cp.float64) @ B2.astype(cp.float64)
                e2 = (float(cp.linalg.norm(cp.asarray(out).astype(cp.float64) - ref2))
                      / float(cp.linalg.norm(ref2)))
                row["t0"] = time.time()  # the timed launches' wall-clock span (clock samples)
                out, info = runner.run_with_info(compiled, A, B, timing=True, repeat=a.repeat)
                row["t1"] = time.time()
                e1 = rel(out)
                row["rel_err"] = max(e1, e2 if e2 == e2 else float("inf"))
                if not row["rel_err"] < TOL:
                    row["error"] = f"WRONG: relative error {row['rel_err']:.2e}"
                else:
                    row["ms"] = info.total_seconds * 1e3
                    row["tflops"] = flops / info.total_seconds / 1e12
            except Exception as err:  # noqa: BLE001 - one variant failing is a row
                row["error"] = f"{type(err).__name__}: {err}"[:300]
            rows.append(row)
            ratio = lib["ms"] / row["ms"] if row["ms"] == row["ms"] else 0.0
            print(f"  {v:24} {row['ms']:8.3f} ms {row['tflops']:6.1f} TFLOP/s  x{ratio:.3f}"
                  + (f"  {row['error']}" if "error" in row else ""), flush=True)
    for r in rows:
        lib = next(x for x in rows if x["shape"] == r["shape"] and x["version"].startswith("cuBLAS"))
        r["of_cublas"] = lib["ms"] / r["ms"] if r["ms"] == r["ms"] else 0.0
    head = f"{'shape':16} {'version':38} {'ms':>8} {'TFLOP/s':>8} {'x cuBLAS':>8} {'rel err':>9}"
    print(f"\ndevice: {device}; medians of {a.repeat}, CUDA events")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['shape']:16} {r['version'][:38]:38} {r['ms']:8.3f} {r['tflops']:8.1f} "
              f"{r['of_cublas']:8.3f} "
              f"{r['rel_err']:9.1e}" + (f"  {r['error'][:80]}" if "error" in r else ""))
    with open(a.json, "w") as f:
        json.dump({"device": device, "fingerprint": runner.device.fingerprint, "what": a.what,
                   "repeat": a.repeat, "peak_tflops": peak / 1e12,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
