"""The thesis' Python benchmarks, now in liftkit.bench.jit_programs (kept importable here for
the scripts of this folder)."""

from liftkit.bench.jit_programs import (PARALLEL, fft, growcut, julia, lud, pagerank,  # noqa: F401
                                        pairwise, spmv, srad)

from liftkit.runtime import Kernel  # noqa: E402

# a small dependent kernel (x = x/2 + a) for the runtime's chain measurements (gpu.py, overhead.py)
CHAIN = Kernel("chain", {"cuda": """extern "C" __global__ void chain(double* x, long xo,
    const double* a, long ao, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) x[xo + i] = x[xo + i] * 0.5 + a[ao + i]; }""", "opencl": """
kernel void chain(global double* x, long xo, const global double* a, long ao, long n) {
    long i = get_global_id(0); if (i < n) x[xo + i] = x[xo + i] * 0.5 + a[ao + i]; }"""})
