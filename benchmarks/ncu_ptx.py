"""Profile a generated OpenCL kernel with Nsight Compute, which does not see OpenCL launches:
NVIDIA's OpenCL driver compiles the kernel to PTX, CuPy loads that PTX as a CUDA module and
launches it with the same geometry and arguments, and `ncu` profiles that launch — the same
machine code the OpenCL run executes.

    python benchmarks/ncu_ptx.py mm_nvidia --size M=4096 N=4096 K=4096 --step prepare
    ncu --set full -k KERNEL python benchmarks/ncu_ptx.py mm_nvidia --step launch

(ncu hangs on a process that also holds an OpenCL context, hence two steps.) The launch step
checks the CUDA launch's result against the OpenCL run's and prints both kernel times (they
should agree), so the profile describes the kernel `liftkit bench` times. Single-kernel
programs only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from liftkit.bench.timing import cupy_times


# NVIDIA's OpenCL PTX reads the NDRange's group offsets and group counts from environment
# registers the OpenCL runtime fills; under CUDA the offsets are 0 and the counts are %nctaid
_ENVREGS = {0: "0", 1: "0", 2: "0", 6: "%nctaid.x", 7: "%nctaid.y", 8: "%nctaid.z"}


def cuda_ptx(ptx: str) -> str:
    """The OpenCL PTX with its environment registers replaced for a CUDA launch."""
    def sub(m: re.Match[str]) -> str:
        k = int(m.group(2))
        if k not in _ENVREGS:
            raise SystemExit(f"ncu_ptx: the PTX reads %envreg{k}, whose CUDA meaning is unknown")
        value = _ENVREGS[k]
        return f"mov.u32 {m.group(1)}, {value};"

    return re.sub(r"mov\.b32\s+(%r\d+),\s*%envreg(\d+);", sub, ptx)


def prepare(program: str, sizes: dict[str, int], repeat: int, work: Path) -> None:
    """OpenCL side: run and time the kernel, save its PTX, launch geometry, arguments, inputs
    and result under `work` (a CUDA-only process then launches it: ncu hangs on processes
    that also hold an OpenCL context)."""
    import pyopencl as cl

    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.backends.hostdata import pack_array, pack_scalar
    from liftkit.codegen import compile_program
    from liftkit.programs import PROGRAMS

    spec = PROGRAMS[program]
    sizes = dict(spec.sizes) | sizes
    compiled = compile_program(spec.program)
    if len(compiled.kernels) != 1:
        raise SystemExit(f"ncu_ptx: {program} has {len(compiled.kernels)} kernels; one expected")
    kernel = compiled.kernels[0]
    inputs = spec.inputs(sizes)
    runner = OpenCLRunner("gpu")
    want, info = runner.run_with_info(compiled, *inputs, sizes=sizes, timing=True, repeat=repeat)
    sizes, launch = info.sizes, info.launches[0]
    prog = cl.Program(runner.context, kernel.source).build(options=list(kernel.build_options))
    work.mkdir(parents=True, exist_ok=True)
    ptx = prog.get_info(cl.program_info.BINARIES)[0].rstrip(b"\0").decode()
    (work / "kernel.ptx").write_text(cuda_ptx(ptx))
    params = compiled.program.params
    arrays: dict[str, np.ndarray] = {"want": np.asarray(want)}
    args: list[dict[str, Any]] = []
    for a in kernel.args:
        if a.kind == "buffer":
            b = compiled.buffer(a.buffer)
            if b.role == "input":
                k = b.param_index
                arrays[a.name] = pack_array(inputs[k], params[k].type, params[k].name, sizes).view(np.uint8)
                args.append({"buffer": a.name})
            else:
                args.append({"zeros": int(b.nbytes.eval(sizes)), "result": b.name == compiled.result[0]})
        elif a.kind == "scalar":
            v = np.asarray(pack_scalar(inputs[a.param_index], params[a.param_index].type, a.name))
            args.append({"scalar": v.item(), "dtype": v.dtype.str})
        else:
            args.append({"scalar": int(a.size.eval(sizes)), "dtype": "<i4"})
    np.savez(work / "data.npz", **arrays)
    (work / "launch.json").write_text(json.dumps({
        "program": program, "kernel": kernel.name, "sizes": sizes, "args": args,
        "global": list(launch.global_size), "local": list(launch.local_size),
        "opencl_ms": info.total_seconds * 1e3, "atol": spec.atol, "rtol": spec.rtol}))
    print(f"{program} at {sizes}: OpenCL {info.total_seconds * 1e3:.3f} ms; PTX in {work}")


def launch(work: Path, repeat: int) -> int:
    """CUDA side: load the PTX, launch it as OpenCL did, check and time it."""
    import cupy as cp

    meta = json.loads((work / "launch.json").read_text())
    data = np.load(work / "data.npz")
    fn = cp.RawModule(path=str(work / "kernel.ptx")).get_function(meta["kernel"])
    values: list[Any] = []
    result = None
    for a in meta["args"]:
        if "buffer" in a:
            values.append(cp.asarray(data[a["buffer"]]))
        elif "zeros" in a:
            values.append(cp.zeros(a["zeros"], np.uint8))
            result = values[-1] if a["result"] else result
        else:
            values.append(np.dtype(a["dtype"]).type(a["scalar"]))
    local, glob = meta["local"], meta["global"]
    block = tuple(local) + (1,) * (3 - len(local))
    grid = tuple(g // l for g, l in zip(glob, local)) + (1,) * (3 - len(glob))
    times = cupy_times(lambda: fn(grid, block, tuple(values)), repeat)
    want = data["want"]
    out = result.get().view(want.dtype).reshape(want.shape)
    err = float(np.abs(out - want).max())
    ok = err <= meta["atol"] + meta["rtol"] * float(np.abs(want).max())
    print(f"{meta['program']}: grid {grid}, block {block}; OpenCL {meta['opencl_ms']:.3f} ms, the "
          f"same PTX through CUDA {statistics.median(times) * 1e3:.3f} ms; max difference {err:g}"
          + ("" if ok else " (WRONG)"))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", help="a bundled single-kernel low-level program")
    ap.add_argument("--size", nargs="*", default=[], metavar="NAME=INT")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--work", default="ncu-work", help="where the OpenCL step leaves the PTX")
    ap.add_argument("--step", choices=("both", "prepare", "launch"), default="both")
    args = ap.parse_args(argv)
    work = Path(args.work) / args.program
    if args.step in ("both", "prepare"):
        prepare(args.program, {k: int(v) for k, v in (s.split("=") for s in args.size)},
                args.repeat, work)
    if args.step in ("both", "launch"):
        return launch(work, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
