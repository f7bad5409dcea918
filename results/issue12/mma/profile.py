"""One launch each of derived tensor-core products and of cuBLAS, for Nsight Compute:

    ncu --clock-control none -k regex:'KERNEL|gemm|dmma|xmma|cutlass' --section SpeedOfLight \
        --section LaunchStats --section Occupancy --section WarpStateStats \
        --section MemoryWorkloadAnalysis python3 results/issue12/mma/profile.py f64:128x64x16w4s2 ...

Each argument is KIND:TMxTNxTKwWARPSsSTAGED (benchmarks/cuda_patterns.py --tiles); after them
cuBLAS DGEMM (CuPy) and cuBLAS TF32 (PyTorch, allow_tf32) run once, 4096³ on random data."""

import sys

import numpy as np

sys.path.insert(0, "benchmarks")
from cuda_patterns import _runner, parse_tiles  # noqa: E402


def main() -> None:
    import cupy as cp
    import torch

    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.rules.cuda import tensor_core_mm

    n = 4096
    rng = np.random.default_rng(5)
    data = {k: [cp.asarray(rng.standard_normal((n, n)).astype(t)) for _ in range(2)]
            for k, t in (("f64", np.float64), ("tf32", np.float32))}
    runner = _runner()
    for kind, tilings in parse_tiles(",".join(sys.argv[1:])).items():
        for tiles in tilings:
            compiled = compile_program(tensor_core_mm(kind, *tiles).final, CompileOptions(dialect="cuda"))
            runner.run(compiled, *data[kind])
    A, B = data["f64"]
    cp.matmul(A, B)
    torch.backends.cuda.matmul.allow_tf32 = True
    ta, tb = (torch.as_tensor(x, device="cuda") for x in data["tf32"])
    torch.matmul(ta, tb)
    torch.cuda.synchronize()
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
