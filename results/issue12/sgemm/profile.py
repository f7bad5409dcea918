"""One launch each of derived SGEMM kernels and of cuBLAS SGEMM (TF32 off), for Nsight Compute:

    ncu --clock-control none -k regex:'KERNEL|gemm' --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section SchedulerStats --section LaunchStats \
        python3 results/issue12/sgemm/profile.py 64x128:32:8x8:2 ...

Each argument is a variant of benchmarks/cuda_sgemm.py (TMxTN:TK:RMxRN:S[:lb]); 4096³ on random
data (SHAPE=MxNxK in the environment for another shape); cuBLAS (CuPy A @ B) runs last."""

import os
import sys

import numpy as np

sys.path.insert(0, "benchmarks")
from cuda_sgemm import launch_bounds, parse_shape, parse_variant  # noqa: E402


def main() -> None:
    import cupy as cp

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.rules.cuda import sgemm_derivation

    os.environ.pop("CUPY_TF32", None)
    m, n, k = parse_shape(os.environ.get("SHAPE", "4096x4096x4096"))
    rng = np.random.default_rng(5)
    A = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float32))
    B = cp.asarray(rng.uniform(-1, 1, (k, n)).astype(np.float32))
    runner = CUDARunner(list_devices()[0], ModuleCache(disk=False))
    for v in sys.argv[1:]:
        (tm, tn, tk, rm, rn, stages), lb = parse_variant(v)
        compiled = compile_program(sgemm_derivation(m, n, k, tm, tn, tk, rm, rn, stages).final,
                                   CompileOptions(dialect="cuda"))
        runner.run(launch_bounds(compiled) if lb else compiled, A, B)
        print("profiled", v, flush=True)
    cp.matmul(A, B)
    cp.cuda.Device().synchronize()
    print("profiled cuBLAS", flush=True)


if __name__ == "__main__":
    main()
