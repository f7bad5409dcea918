"""tiles-t with 64-wide tiles (rows of 256 bytes in float32, results/issue15/h200-26b): exact in
the interpreter, run for real on the CPU device against NumPy, compiled for CUDA by NVRTC, in
the GPU tuning space where the tile fits the static local memory (not complex128's 64 KB,
refused with one error)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Variant
from liftkit.blas.codelets import CodeletError, derive, space
from liftkit.rewrite.rules.corpus import run

WIDE = [Variant.of("tiles-t", r=64, k=16), Variant.of("tiles-t", r=64, k=8)]


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("variant", WIDE)
def test_wide_tiles_are_exact_in_the_interpreter(dt: str, variant: Variant) -> None:
    d = derive(Kind("transpose", dt), variant)
    m, n = 128, 192
    A = np.arange(m * n).reshape(m, n).astype(dt)
    got = np.asarray(run(d.final, [A], {"M": m, "N": n}))
    assert np.array_equal(got.reshape(n, m), A.T)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_wide_tiles_run_on_the_cpu_device(session: Any, dt: str) -> None:
    """Measured as the tuner measures (checked against NumPy first), padded sizes included."""
    from liftkit.blas.tune import measure

    for v in WIDE:
        t = measure(session, Kind("transpose", dt), v, {"M": 200, "N": 130}, repeat=1)
        assert not t.error and t.rate > 0, (v, t.error)


def test_wide_tiles_in_the_gpu_space_where_they_fit() -> None:
    """r=64, k=16 (256 work-items); k=8 derives but its 512 work-items are cut to the code
    generator's 256, each looping over two columns (the slowest tiles-t on the H200): not tried."""
    for dt in ("float32", "float64", "complex64"):
        got = set(space(Kind("transpose", dt), "gpu", "cuda"))
        assert WIDE[0] in got and WIDE[1] not in got
    assert not set(WIDE) & set(space(Kind("transpose", "complex128"), "gpu", "cuda"))
    assert not set(WIDE) & set(space(Kind("transpose", "float32"), "cpu", "opencl"))
    with pytest.raises(CodeletError, match="more than 32 KB of local memory"):
        derive(Kind("transpose", "complex128"), WIDE[0])


def test_wide_tiles_compile_for_cuda(compile_cuda: Any) -> None:
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    for v in WIDE:
        for k in compile_program(derive(Kind("transpose", "float32"), v).final,
                                 CompileOptions(dialect="cuda")).kernels:
            assert "__shared__ float tmp[4096]" in k.source  # 16 KB: the 64×64 tile
            compile_cuda(k.source, "sm_90", k.build_options, name=f"{k.name}.cu")
