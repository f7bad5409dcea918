"""Profile a generated OpenCL kernel with Nsight Compute, which does not see OpenCL launches:
NVIDIA's OpenCL driver compiles the kernel to PTX, CuPy loads that PTX as a CUDA module and
launches it with the same geometry and arguments, and `ncu` profiles that launch — the same
machine code the OpenCL run executes.

    ncu --set full -k KERNEL python benchmarks/ncu_ptx.py mm_nvidia --size M=4096 N=4096 K=4096

Without ncu it still runs: it checks the CUDA launch's result against the OpenCL run of the
same program and prints both kernel times (they should agree), so a profile can be trusted
to describe the kernel `liftkit bench` times. Single-kernel programs only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from liftkit.backends.opencl import OpenCLRunner
from liftkit.backends.opencl.hostdata import pack_array, pack_scalar
from liftkit.bench.timing import cupy_times
from liftkit.codegen import compile_program
from liftkit.programs import PROGRAMS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", help="a bundled low-level program")
    ap.add_argument("--size", nargs="*", default=[], metavar="NAME=INT")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)
    import cupy as cp
    import pyopencl as cl

    spec = PROGRAMS[args.program]
    sizes = dict(spec.sizes) | {k: int(v) for k, v in (s.split("=") for s in args.size)}
    compiled = compile_program(spec.program)
    if len(compiled.kernels) != 1:
        raise SystemExit(f"ncu_ptx: {args.program} has {len(compiled.kernels)} kernels; one expected")
    kernel = compiled.kernels[0]
    inputs = spec.inputs(sizes)
    runner = OpenCLRunner("gpu")
    want, info = runner.run_with_info(compiled, *inputs, sizes=sizes, timing=True, repeat=args.repeat)
    sizes = info.sizes
    launch = info.launches[0]

    prog = cl.Program(runner.context, kernel.source).build(options=list(kernel.build_options))
    ptx = prog.get_info(cl.program_info.BINARIES)[0].rstrip(b"\0")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.ptx"
        path.write_bytes(ptx)
        fn = cp.RawModule(path=str(path)).get_function(kernel.name)

    params = compiled.program.params
    bufs: dict[str, Any] = {}
    for b in compiled.buffers:
        nbytes = int(b.nbytes.eval(sizes))
        if b.role == "input":
            k = b.param_index
            bufs[b.name] = cp.asarray(pack_array(inputs[k], params[k].type, params[k].name, sizes).view(np.uint8))
        else:
            bufs[b.name] = cp.zeros(nbytes, np.uint8)
    values: list[Any] = []
    for a in kernel.args:
        if a.kind == "buffer":
            values.append(bufs[a.buffer])
        elif a.kind == "scalar":
            values.append(pack_scalar(inputs[a.param_index], params[a.param_index].type, a.name))
        else:
            values.append(np.int32(int(a.size.eval(sizes))))
    block = tuple(launch.local_size) + (1,) * (3 - len(launch.local_size))
    grid = tuple(g // l for g, l in zip(launch.global_size, launch.local_size)) + (1,) * (3 - len(launch.global_size))

    def run() -> None:
        fn(grid, block, tuple(values))

    times = cupy_times(run, args.repeat)
    out = bufs[compiled.result[0]].get().view(np.asarray(want).dtype).reshape(np.shape(want))
    err = float(np.abs(out - want).max())
    print(f"{args.program} at {sizes}: grid {grid}, block {block}; "
          f"OpenCL {info.total_seconds * 1e3:.3f} ms, same PTX through CUDA "
          f"{statistics.median(times) * 1e3:.3f} ms; max difference {err:g}")
    return 0 if err <= spec.atol + spec.rtol * float(np.abs(want).max()) else 1


if __name__ == "__main__":
    sys.exit(main())
