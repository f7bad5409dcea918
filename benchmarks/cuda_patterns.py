"""The patterns beyond OpenCL on an NVIDIA GPU (issue 12 item 4), each beside the kernel it
replaces and the library a user would pick, all in one run. Prints a table; details go to
$OUT/cuda_patterns.json (or --json).

    python benchmarks/cuda_patterns.py warp [--n 67108864] [--repeat 50]
    python benchmarks/cuda_patterns.py mma [--size 4096] [--repeat 20]

warp: asum and dot as bundled (asum_gpu/dot_gpu: float4 loads, a tree of 8 levels through
local memory per work-group, two kernels) and as derived by `rewrite.rules.cuda.
warp_reductions` (the tree's first five levels become warp shuffles), on the CUDA backend,
against cuBLAS (cupy.cublas.asum/dot) and CuPy's copy bandwidth.

mma: C = A·B derived from the high-level product by the rule mm-tensor-cores (a replayable
derivation: `rewrite.rules.cuda.tensor_core_mm`), TF32 (the program rounds A and B with
toTF32) and FP64 (DMMA), several tilings, beside cuBLAS with TF32 allowed (PyTorch,
allow_tf32) and cuBLAS SGEMM without it, and cuBLAS DGEMM (CuPy float64). Checked against a
float64 product by ‖C − ref‖/‖ref‖: TF32 < 2e-3, FP64 < 1e-12.

The Hopper rows (`--tiles tf32z:128x256x32w8s3G`, a trailing G): one application of mm-wgmma
(`tensor_core_mm(kind, …, wgmma=True)`: warpgroup MMA, operands staged s deep by the pattern);
a trailing A: mm-wgmma-async instead (`copy="cp.async"`: the tiles copied raw by cp.async); P:
mm-wgmma-pair (`copy="pair"`: the same in 2-block clusters sharing B);
kind tf32 rounds as toTF32 (as cuBLAS's TF32 mode does, judging by its error), tf32z truncates
as truncTF32. Before the float64 check each is run on integer-valued inputs (exact) and on B = I
(C must be the rounded A bit for bit) and on A = I (the rounded B); a variant failing any is
reported WRONG, not timed.

async: the same as mma (its rows with staged > 1 are the cp.async pipelines).

Method: inputs live on the GPU (CuPy arrays, no transfers in the timings); every result is
checked against a float64 NumPy reference before it is timed; CUDA events, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

from liftkit.bench.timing import cupy_times, median


def _runner() -> Any:
    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices

    devices = list_devices()
    if not devices:
        sys.exit("no CUDA GPU")
    return CUDARunner(devices[0], ModuleCache(disk=False))


def _host(v: Any) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v)


def warp(n: int, repeat: int) -> list[dict[str, Any]]:
    import cupy as cp
    from cupy import cublas

    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.programs.gpu import reduction_gpu
    from liftkit.rewrite.rules.cuda import warp_reductions

    runner = _runner()
    rng = np.random.default_rng(12)
    host = [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2)]
    dev = [cp.asarray(h) for h in host]
    copy_dst = cp.empty_like(dev[0])
    copy_s = median(cupy_times(lambda: cp.copyto(copy_dst, dev[0]), repeat))
    copy_gbs = 2 * 4 * n / copy_s / 1e9
    rows = []
    for kind in ("asum", "dot"):
        k_in = 1 if kind == "asum" else 2
        ref = (np.abs(host[0].astype(np.float64)).sum() if kind == "asum"
               else host[0].astype(np.float64) @ host[1].astype(np.float64))
        nbytes = 4 * n * k_in
        base = reduction_gpu(kind)
        variants = [("tree (asum_gpu/dot_gpu)" if kind == "asum" else "tree (dot_gpu)", base),
                    ("warp shuffles (derived)", warp_reductions(base).final)]
        for label, prog in variants:
            compiled = compile_program(prog, CompileOptions(dialect="cuda"))
            out, info = runner.run_with_info(compiled, *dev[:k_in], timing=True, repeat=repeat)
            got = float(_host(out).reshape(-1)[0])
            err = abs(got - ref) / abs(ref)
            if not err < 1e-5:
                raise SystemExit(f"{kind} {label}: relative error {err:.2e} against float64 NumPy")
            rows.append({"program": kind, "version": label, "ms": info.total_seconds * 1e3,
                         "gbs": nbytes / info.total_seconds / 1e9, "rel_err": err,
                         "kernels": len(compiled.kernels)})
        lib = "cuBLAS (cupy.cublas)"
        fn = (lambda: cublas.asum(dev[0])) if kind == "asum" else (lambda: cublas.dot(dev[0], dev[1]))
        try:
            got = float(_host(fn()))
        except Exception as err:  # noqa: BLE001 - an older CuPy without the BLAS-1 wrappers
            print(f"cupy.cublas.{kind} failed ({type(err).__name__}: {err}); CuPy's reduction instead")
            lib = "CuPy reduction"
            fn = (lambda: cp.abs(dev[0]).sum()) if kind == "asum" else (lambda: cp.dot(dev[0], dev[1]))
            got = float(_host(fn()))
        err = abs(got - ref) / abs(ref)
        s = median(cupy_times(fn, repeat))
        rows.append({"program": kind, "version": lib, "ms": s * 1e3,
                     "gbs": nbytes / s / 1e9, "rel_err": err, "kernels": None})
    for r in rows:
        r["of_copy"] = r["gbs"] / copy_gbs
    rows.append({"program": "copy", "version": "cupy.copyto (read + write)", "ms": copy_s * 1e3,
                 "gbs": copy_gbs, "rel_err": 0.0, "of_copy": 1.0, "kernels": None})
    return rows


# (tm, tn, tk, warps, staged[, lines]): staged 0 reads the operands in place, 1 copies each tile
# into local memory, s > 1 pipelines the copies s deep with cp.async (toLocalAsync); lines: the
# tiles copied in 16-byte chunks over whole lines into rotated rows (v5; v3/v4: one element per
# copy into the fragment-blocked layout)
MMA_VARIANTS: dict[str, list[tuple[Any, ...]]] = {
    "tf32": [(128, 128, 8, 4, 4), (128, 128, 16, 4, 3), (128, 128, 8, 4, 4, True),
             (128, 128, 16, 4, 3, True), (128, 128, 16, 4, 4, True), (128, 128, 32, 4, 3, True),
             (128, 128, 16, 8, 3, True), (128, 64, 16, 4, 4, True), (128, 256, 32, 8, 3, "G")],
    # the warpgroup MMA (G): staged = its stages; tf32z truncates (truncTF32)
    "tf32z": [(128, 256, 32, 8, 4, "G"), (128, 256, 32, 8, 2, "G")],
    "f64": [(128, 64, 16, 4, 2), (128, 64, 16, 4, 2, True), (128, 64, 16, 4, 3, True),
            (128, 64, 16, 4, 4, True), (128, 64, 8, 4, 4, True), (128, 128, 16, 8, 3, True),
            (128, 128, 8, 8, 4, True), (64, 64, 16, 4, 4, True)],
}


def parse_tiles(text: str) -> dict[str, list[tuple[Any, ...]]]:
    """`f64:128x64x16w4s2,tf32:128x128x8w4s4L,tf32z:128x256x32w8s3G` → {kind: [(tm, tn, tk,
    warps, staged[, flag])]} (a trailing L: the tiles staged in whole lines; G: the warpgroup MMA,
    staged = its stages; A: the warpgroup MMA fed by cp.async, mm-wgmma-async; P: the same in
    2-block clusters sharing B, mm-wgmma-pair; kind tf32z only with G, A or P)."""
    import re

    out: dict[str, list[tuple[Any, ...]]] = {"tf32": [], "tf32z": [], "f64": []}
    for item in filter(None, text.split(",")):
        m = re.fullmatch(r"(tf32|tf32z|f64):(\d+)x(\d+)x(\d+)w(\d+)s(\d+)([LGAP]?)", item.strip())
        if m is None or (m.group(1) == "tf32z" and m.group(7) not in "GAP") or (m.group(1) == "f64" and m.group(7) in "GAP"):
            raise SystemExit(f"--tiles: {item!r} is not KIND:TMxTNxTKwWARPSsSTAGED[L|G|A|P] (e.g. "
                             "f64:128x64x16w4s2, tf32z:128x256x32w8s3G, tf32:256x128x32w8s4A)")
        flag = {"L": (True,), "G": ("G",), "A": ("G", "cp.async"), "P": ("G", "pair"), "": ()}[m.group(7)]
        out[m.group(1)].append(tuple(int(g) for g in m.groups()[1:6]) + flag)
    return out


def _exact_checks(runner: Any, compiled: Any, kind: str, rng: np.random.Generator) -> str:
    """'' when the kernel is exact on integer-valued inputs and gives the rounded A for B = I;
    else what went wrong (how many elements, the first, got and wanted)."""
    from liftkit.ir.patterns.cuda import round_tf32, trunc_tf32

    A = rng.integers(-8, 9, (512, 256)).astype(np.float32)
    B = rng.integers(-8, 9, (256, 512)).astype(np.float32)
    Z = rng.standard_normal((512, 256)).astype(np.float32)
    rounded = (trunc_tf32 if kind == "tf32z" else round_tf32)(Z)
    eye = np.eye(256, dtype=np.float32)
    for what, (x, y), want in (("integers", (A, B), A @ B), ("B = I", (Z, eye), rounded),
                               ("A = I", (eye, Z[:256].copy()), rounded[:256])):
        got = np.asarray(runner.run(compiled, x, y))
        bad = np.argwhere(got != want)
        if len(bad):
            i, j = bad[0]
            return (f"WRONG ({what}): {len(bad)} of {want.size} elements differ, first "
                    f"[{i},{j}] got {float(got[i, j])!r} want {float(want[i, j])!r}; rows {sorted({int(r) % 128 for r in bad[:, 0]})[:8]}, "
                    f"cols {sorted({int(c) % 256 for c in bad[:, 1]})[:8]} (mod the tile)")
    return ""


def mma(size: int, repeat: int, variants: dict[str, list[tuple[int, ...]]] | None = None) -> list[dict[str, Any]]:
    import cupy as cp
    import torch

    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.rules.cuda import tensor_core_mm

    runner = _runner()
    n = size
    flops = 2.0 * n ** 3
    rows = []
    rng = np.random.default_rng(3)
    for kind, dtype, tol in (("tf32", np.float32, 2e-3), ("f64", np.float64, 1e-12)):
        A = cp.asarray(rng.standard_normal((n, n)).astype(dtype))
        B = cp.asarray(rng.standard_normal((n, n)).astype(dtype))
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        ref_norm = float(cp.linalg.norm(ref))

        def check(C: Any, label: str) -> float:
            err = float(cp.linalg.norm(cp.asarray(C).astype(cp.float64) - ref)) / ref_norm
            if not err < tol:
                raise SystemExit(f"{kind} {label}: relative error {err:.2e} (tolerance {tol:.0e})")
            return err

        table = variants or MMA_VARIANTS
        todo = [(kind, v) for v in table.get(kind, [])]
        if kind == "tf32":  # the same float32 inputs for the truncating warpgroup products
            todo += [("tf32z", v) for v in table.get("tf32z", [])]
        for vkind, (tm, tn, tk, warps, staged, *flag) in todo:
            wg, lines = "G" in flag, True in flag
            copy = next((f for f in flag if f in ("cp.async", "pair")), "registers")
            if wg:
                label = (f"wgmma{'' if copy == 'registers' else ' ' + copy}{' Z' if vkind == 'tf32z' else ''} "
                         f"{tm}x{tn}x{tk} w{warps} s{staged}")
            else:
                label = f"{tm}x{tn}x{tk} w{warps} " + ("global", "local", "")[min(staged, 2)] + (
                    f"cp.async x{staged}" if staged > 1 else "") + (" lines" if lines else "")
            d = tensor_core_mm(vkind, tm, tn, tk, warps, staged, lines, wgmma=wg, copy=copy)
            compiled = compile_program(d.final, CompileOptions(dialect="cuda"))
            try:
                wrong = _exact_checks(runner, compiled, vkind, rng) if wg else ""
                if wrong:
                    rows.append({"kind": kind, "version": label, "ms": float("nan"), "tflops": 0.0,
                                 "rel_err": float("nan"), "error": wrong})
                    continue
                out, info = runner.run_with_info(compiled, A, B, timing=True, repeat=repeat)
            except Exception as err:  # noqa: BLE001 - one variant failing (resources) is a row
                rows.append({"kind": kind, "version": label, "ms": float("nan"), "tflops": 0.0,
                             "rel_err": float("nan"), "error": f"{type(err).__name__}: {err}"[:300]})
                continue
            try:
                err = check(out, label)
            except SystemExit as wrong:  # a wrong result is reported, never timed
                rows.append({"kind": kind, "version": label, "ms": float("nan"), "tflops": 0.0,
                             "rel_err": float("nan"), "error": f"WRONG: {wrong}"})
                continue
            rows.append({"kind": kind, "version": label, "ms": info.total_seconds * 1e3,
                         "tflops": flops / info.total_seconds / 1e12, "rel_err": err})
        if kind == "tf32":
            ta, tb = torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")
            for allow, label in ((True, "cuBLAS TF32 (torch, allow_tf32)"), (False, "cuBLAS SGEMM FP32 (torch)"),
                                 (True, "cuBLAS TF32 again (spread)")):
                torch.backends.cuda.matmul.allow_tf32 = allow
                tc = torch.empty_like(ta)
                err = check(torch.matmul(ta, tb), label)
                from liftkit.bench.timing import torch_times

                s = median(torch_times(lambda: torch.matmul(ta, tb, out=tc), repeat))
                rows.append({"kind": kind, "version": label, "ms": s * 1e3, "tflops": flops / s / 1e12,
                             "rel_err": err})
            torch.backends.cuda.matmul.allow_tf32 = False
        else:
            C = cp.empty_like(A)
            err = check(A @ B, "cuBLAS DGEMM")
            s = median(cupy_times(lambda: cp.matmul(A, B, out=C), repeat))
            rows.append({"kind": kind, "version": "cuBLAS DGEMM (cupy)", "ms": s * 1e3,
                         "tflops": flops / s / 1e12, "rel_err": err})
    for r in rows:
        lib = [x for x in rows if x["kind"] == r["kind"] and x["version"].startswith("cuBLAS")][0]
        r["of_cublas"] = lib["ms"] / r["ms"] if r["ms"] == r["ms"] else 0.0
    return rows


def _mma_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'kind':5} {'version':40} {'ms':>8} {'TFLOP/s':>8} {'x cuBLAS':>8} {'rel err':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['kind']:5} {r['version']:40} {r['ms']:8.3f} {r['tflops']:8.1f} "
                     f"{r['of_cublas']:8.2f} {r['rel_err']:9.1e}" + (f"  {r['error']}" if "error" in r else ""))
    return "\n".join(lines)


def _table(rows: list[dict[str, Any]]) -> str:
    head = f"{'program':8} {'version':30} {'ms':>9} {'GB/s':>8} {'x copy':>7} {'rel err':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['program']:8} {r['version']:30} {r['ms']:9.4f} {r['gbs']:8.0f} "
                     f"{r['of_copy']:7.2f} {r['rel_err']:9.1e}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["warp", "mma"])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--json", default=None)
    ap.add_argument("--tiles", default="", help="mma: only these tilings, e.g. f64:128x64x16w4s2,tf32:128x128x8w4s4")
    a = ap.parse_args(argv)
    a.json = a.json or os.path.join(os.environ.get("OUT", "."), f"cuda_patterns_{a.what}.json")
    import cupy as cp

    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    if a.what == "warp":
        rows = warp(a.n, a.repeat)
        print(f"device: {device}, n = {a.n}, medians of {a.repeat}")
        print(_table(rows))
    else:
        rows = mma(a.size, a.repeat, parse_tiles(a.tiles) if a.tiles else None)
        print(f"device: {device}, {a.size}³, medians of {a.repeat}")
        print(_mma_table(rows))
    with open(a.json, "w") as f:
        json.dump({"device": device, "what": a.what, "n": a.n, "size": a.size, "repeat": a.repeat,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
