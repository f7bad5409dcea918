"""Sweep the tile, block and work-group sizes of the two low-level matrix multiplications
(`mm_nvidia`: local-memory tiles + register blocks; `mm_amd`: register blocks, no local
memory) at one size, against cuBLAS SGEMM (CuPy `A @ B`, TF32 off) in the same run.

    python benchmarks/mm_sweep.py [--device gpu] [--n 4096] [--repeat 10] [--variants V,...]
                                  [--out DIR]

A variant is `nv:TMxTN:TK:RMxRN[:u][:p]` (u: the K steps of a tile unrolled too; p: the next
tile prefetched into registers, a software pipeline) or `amd:RMxRN:WXxWY`; the default list covers the plausible
shapes for a large NVIDIA GPU. Every variant is checked before it is timed (against cuBLAS's
result where CuPy exists, else NumPy float64) and timed with OpenCL profiling events (median of
--repeat runs after a warm-up). The table is printed last; `--out` also gets `mm_sweep.json`,
each variant's OpenCL source, and — on NVIDIA — the PTX the driver built for the fastest one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from liftkit.backends.opencl import OpenCLRunner
from liftkit.bench.timing import cupy_times
from liftkit.codegen import compile_program
from liftkit.programs.vendor import mm_amd, mm_nvidia

DEFAULT_VARIANTS = (
    "nv:64x64:16:8x8", "nv:64x64:32:8x8", "nv:64x64:8:8x8", "nv:64x128:16:8x8",
    "nv:64x128:32:8x8", "nv:128x64:16:8x8", "nv:128x64:32:8x8", "nv:128x64:16:8x4",
    "nv:128x128:16:8x8", "nv:128x128:32:8x8", "nv:64x64:16:4x8", "nv:32x64:16:4x8",
    "amd:8x8:16x16", "amd:8x8:8x16", "amd:4x8:16x16", "amd:8x4:16x16", "amd:4x4:16x16",
    "amd:4x4:8x8", "amd:4x8:8x8",
)


@dataclass
class Row:
    variant: str
    local_bytes: int = 0
    threads: int = 0
    seconds: Optional[float] = None
    status: str = ""
    max_err: float = 0.0
    source: str = field(default="", repr=False)

    def tflops(self, n: int) -> Optional[float]:
        return 2 * n ** 3 / self.seconds / 1e12 if self.seconds else None


def build(variant: str) -> tuple[Any, int, int]:
    """(program, local memory bytes, work-items per group) of a variant string."""
    kind, *parts = variant.split(":")
    flags = set()
    while parts and parts[-1] in ("u", "p"):
        flags.add(parts.pop())
    dims = [tuple(int(v) for v in p.split("x")) for p in parts]
    if kind == "nv" and len(dims) == 3:
        (tm, tn), (tk,), (rm, rn) = dims
        return (mm_nvidia(ts=(tm, tn), tk=tk, rb=(rm, rn), unroll="u" in flags,
                          prefetch="p" in flags),
                4 * (tm * tk + tk * tn) * (2 if "p" in flags else 1), (tm // rm) * (tn // rn))
    if kind == "amd" and len(dims) == 2:
        (rm, rn), (wx, wy) = dims
        return mm_amd(rb=(rm, rn), wg=(wx, wy)), 0, wx * wy
    raise SystemExit(f"mm_sweep: bad variant {variant!r} (nv:TMxTN:TK:RMxRN[:u][:p] or amd:RMxRN:WXxWY)")


def reference(A: np.ndarray, B: np.ndarray, repeat: int) -> tuple[np.ndarray, Optional[float]]:
    """cuBLAS's product and median time where CuPy works, else NumPy's product."""
    try:
        import cupy as cp

        Ad, Bd = cp.asarray(A), cp.asarray(B)
        t = statistics.median(cupy_times(lambda: Ad @ Bd, repeat))
        return cp.asnumpy(Ad @ Bd), t
    except Exception:  # no CuPy / no CUDA device: the CPU path
        return (A.astype(np.float64) @ B).astype(np.float32), None


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--n", type=int, default=4096, help="M = N = K")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--build-options", default="",
                    help="extra OpenCL build options, e.g. -cl-nv-maxrregcount=128; a variant "
                         "suffix @OPTS (spaces as commas) sets them for that variant alone")
    args = ap.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(7)
    A = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    B = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    want, cublas_s = reference(A, B, args.repeat)
    scale = float(np.abs(want).max())
    runner = OpenCLRunner(args.device)
    print(f"device: {runner.device.label}; M=N=K={n}", file=sys.stderr)
    sizes = {"M": n, "N": n, "K": n}
    rows: list[Row] = []
    for v in args.variants.split(","):
        row = Row(v)
        rows.append(row)
        name, _, opts = v.partition("@")
        opts = (opts.replace(",", " ") or args.build_options).split()
        try:
            prog, row.local_bytes, row.threads = build(name)
            compiled = compile_program(prog)
            if opts:
                compiled = replace(compiled, kernels=tuple(
                    replace(k, build_options=k.build_options + tuple(opts)) for k in compiled.kernels))
            row.source = compiled.source
            got, info = runner.run_with_info(compiled, A, B, sizes=sizes, timing=True,
                                             repeat=args.repeat, name=v)
        except Exception as err:  # a variant the device refuses: report and go on
            row.status = " ".join(str(err).split())[:120]
            continue
        row.max_err = float(np.abs(got - want).max()) / scale
        if row.max_err > 1e-5:
            row.status = f"WRONG (max error {row.max_err:.1e} of the largest value)"
            continue
        row.seconds, row.status = info.total_seconds, "ok"
        print(f"{v}: {row.seconds * 1e3:.3f} ms", file=sys.stderr)

    ok = sorted((r for r in rows if r.seconds), key=lambda r: r.seconds)
    lines = ["| variant | work-items | local KB | ms | TFLOP/s | of cuBLAS | status |",
             "|---|---|---|---|---|---|---|"]
    for r in ok + [r for r in rows if not r.seconds]:
        rel = f"{cublas_s / r.seconds:.2f}×" if (r.seconds and cublas_s) else "—"
        ms = f"{r.seconds * 1e3:.3f}" if r.seconds else "—"
        tf = f"{r.tflops(n):.1f}" if r.seconds else "—"
        lines.append(f"| {r.variant} | {r.threads} | {r.local_bytes / 1024:g} | {ms} | {tf} | {rel} | {r.status} |")
    if cublas_s:
        lines.append(f"\ncuBLAS SGEMM (CuPy): {cublas_s * 1e3:.3f} ms, {2 * n ** 3 / cublas_s / 1e12:.1f} TFLOP/s")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        (out / "mm_sweep_src").mkdir(parents=True, exist_ok=True)
        for r in rows:
            if r.source:
                (out / "mm_sweep_src" / (r.variant.replace(":", "_").replace("@", "_").replace(",", "_").replace("=", "") + ".cl")).write_text(r.source)
        (out / "mm_sweep.json").write_text(json.dumps({
            "device": runner.device.label, "n": n, "cublas_seconds": cublas_s,
            "rows": [{k: v for k, v in r.__dict__.items() if k != "source"} for r in rows]}, indent=1))
        if ok:
            import pyopencl as cl

            opts = ok[0].variant.partition("@")[2].replace(",", " ") or args.build_options
            prg = cl.Program(runner.context, ok[0].source).build(options=opts.split())
            binary = prg.get_info(cl.program_info.BINARIES)[0]
            if b".version" in binary[:4096]:  # NVIDIA returns PTX text
                ptx = binary.rstrip(b"\0").decode()
                (out / "mm_sweep_best.ptx").write_text(ptx)
                print(f"\nPTX of {ok[0].variant} (static counts): {ptx_mix(ptx)}")
    return 0


def ptx_mix(ptx: str) -> str:
    """Static counts of the PTX instructions that matter for a GEMM kernel."""
    import re
    from collections import Counter

    ops = Counter(m.group(1) for m in re.finditer(r"^\s+([a-z]+(?:\.[a-z0-9]+)*)", ptx, re.M))
    keys = ("fma.rn.f32", "ld.shared.v4.f32", "ld.shared.f32", "st.shared.v4.f32", "st.shared.f32",
            "ld.global.nc.v4.f32", "ld.global.nc.f32", "st.global.v4.f32", "st.global.f32",
            "bar.sync")
    return ", ".join(f"{k} {ops[k]}" for k in keys if ops[k])


if __name__ == "__main__":
    sys.exit(main())
