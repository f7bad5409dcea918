"""Issue 11 codegen checks at GPU sizes: per-step iterate kernels, nested tuple results, double
literals and const arrays, on NVIDIA OpenCL and CUDA, compared with the interpreter."""
import numpy as np
from liftkit.dsl import *
from liftkit.codegen import compile_program
from liftkit.semantics import interpret
from liftkit.testing import compare
from liftkit.backends.opencl import OpenCLRunner
from liftkit.backends.cuda import CUDARunner

N = size("N")
D = DOUBLE
st = compose(join, mapGlb(0)(reduceSeq(add, 0.0)), slide(3, 1), pad(1, 1, "wrap"))
W = lit(np.array([1.0, -2.0, 3.0], np.float32), float32[3])
wdot = lambda w: reduceSeq(lambda a, p: add(a, mult(p[0], p[1])), 0.0) << zip(w, W)
progs = {
    "iterate8(stencil)": (fun([float32[N]], lambda x: iterate(8, st) << x), 1),
    "iterate3(weighted)": (fun([float32[N]], lambda x: iterate(3, compose(join, mapGlb(0)(wdot), slide(3, 1), pad(1, 1, "clamp"))) << x), 1),
    "nested tuple": (fun([float32[N], float32[N]], lambda x, y: tuple_(tuple_(mapGlb(0)(id) << x, mapGlb(0)(neg) << y), unzip << mapGlb(0)(lambda a: tuple_(abs(a), neg(a))) << x)), 2),
    "double reduce": (fun([float64[N]], lambda x: reduceSeq(D.add, 0.0) << join << mapGlb(0)(reduceSeq(D.add, 0.0)) << split(1024) << x), 0),
}
rng = np.random.default_rng(0)
for runner in (OpenCLRunner("gpu"), CUDARunner()):
    print(type(runner).__name__, runner.device.label if hasattr(runner.device, "label") else runner.device)
    for name, (p, k) in progs.items():
        n = 1 << 22
        if k == 0:
            xs = [rng.integers(-8, 8, n).astype(np.float64)]
        else:
            xs = [rng.integers(-8, 8, n).astype(np.float32) for _ in range(k or 1)]
        out, info = runner.run_with_info(compile_program(p), *xs)
        diff = compare(out, interpret(p, *xs))
        print(f"  {name:20s} N={n}: {'ok' if diff is None else diff}; {len(info.launches)} launches, "
              f"{info.total_seconds * 1e3:.2f} ms kernel time")
