"""GEMV T's tree form with its block of y read into local memory beside the rows (p = 1:
before them, p = 2: after), not after the tree where nothing hides the read's latency: sound in
the interpreter (integer inputs), run for real on the CPU device at random shapes against NumPy
(α, β ≠ 0: the copy is read), the generated code's shape (the copy shares the rows' barrier, no
read of y after the tree; p = 0 unchanged), NVRTC compiles, and the GPU test (NVIDIA OpenCL
and CUDA)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.codegen.compiler import CompileOptions, compile_program

from .test_gemv_split import check_gemv_t_at_random_shapes
from .test_gemv_tree import check_gemv_t_in_the_interpreter, check_gemv_t_on_the_gpu

# the interpreter's 64×64 operands: g·u ≤ 64 rows, lanes·w ≤ 64 columns (real types take ~40 s
# here, complex ones ~6: one real case); the CPU device's random shapes: both storage orders
SMALL = [Variant.of("column-groups-tree", lanes=8, g=64, w=1, k=1, f=8, p=1),
         Variant.of("column-groups-tree", lanes=8, g=64, w=1, k=1, f=8, p=2)]
DEVICE = [Variant.of("column-groups-tree", lanes=2, g=16, w=4, u=2, f=4, p=1),
          Variant.of("column-groups-tree", lanes=2, g=4, w=4, u=2, p=2)]
SHIPPED = Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=4, k=1, f=8)


def _kernel(dt: str, variant: Variant, dialect: str = "cuda") -> Any:
    c = compile_program(derive(Kind("gemv", dt, "T"), variant).final, CompileOptions(dialect=dialect))
    assert len(c.kernels) == 1
    return c.kernels[0]


@pytest.mark.parametrize("dt,variant", [("float32", SMALL[0]), ("complex64", SMALL[1])])
def test_y_copied_ahead_is_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    check_gemv_t_in_the_interpreter(dt, variant, 29)


@pytest.mark.parametrize("variant", DEVICE)
def test_y_copied_ahead_at_any_size(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 29)


def test_the_copy_shares_the_rows_barrier_and_y_is_not_read_after_the_tree() -> None:
    """p = 1: row 0's work-items copy y's block into local memory before the rows' loop, p = 2
    after it; either way no barrier of its own (as many as p = 0's) and the finish reads the
    copy, not y. p = 0 reads y after the tree, as before."""
    def parts(src: str) -> tuple[int, int, int, int]:
        body = src[src.index("__global__"):]
        return (body.index("= id(y["), body.index("for (int i_2 = 0; i_2 < M/256"),
                body.count("__syncthreads()"), body.rindex("y["))

    before = _kernel("float32", SHIPPED).source
    body0 = before[before.index("__global__"):]
    copy, loop, bars, last_y = parts(_kernel("float32", Variant.of(
        "column-groups-tree", **dict(SHIPPED.params, p=1))).source)
    assert copy < loop and bars == body0.count("__syncthreads()") and last_y == copy + 5
    src2 = _kernel("float32", Variant.of("column-groups-tree", **dict(SHIPPED.params, p=2))).source
    body2 = src2[src2.index("__global__"):]
    assert body2.index("for (int i = 0; i < M/256") < body2.index("= id(y[") \
        < body2.index("__syncthreads()")
    assert body2.count("__syncthreads()") == body0.count("__syncthreads()")
    assert body0.index("mult(beta, y[") > body0.index("__syncthreads()")  # p = 0: at the end
    assert _kernel("float32", Variant.of("column-groups-tree", **dict(SHIPPED.params, p=0))
                   ).source == before


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_y_copied_ahead_compiles_for_cuda(dt: str, compile_cuda: Any) -> None:
    for p in (1, 2):
        k = _kernel(dt, Variant.of("column-groups-tree", **dict(SHIPPED.params, p=p)))
        compile_cuda(k.source, "compute_90", list(k.build_options or []))


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["gpu_session", "cuda_session"])
def test_y_copied_ahead_on_the_gpu(backend: str, request: pytest.FixtureRequest) -> None:
    """p = 1 and 2 on a real GPU (NVIDIA OpenCL and CUDA) at 4096² and odd shapes, α and β ≠ 0,
    every call right against NumPy."""
    session = request.getfixturevalue(backend)
    rng = np.random.default_rng(29)
    for p in (1, 2):
        v = Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=2, k=1, f=8, p=p)
        check_gemv_t_on_the_gpu(session, v, rng, backend, shift=p)


def test_the_shipped_h100_profile_reads_y_beside_the_rows_at_4096() -> None:
    """The H100 profile's float32 and float64 GEMV T at 2048-4096² (results/issue15/gemv26b
    run 1: float32 p = 1 1.003x cuBLAS by kernel, 1.008x per call in alternating rounds, where
    p = 0 ran 0.985x / 0.993x; float64 1.030x / 1.028x where p = 0 ran 1.026x / 1.023x): y's
    block copied into local memory before the rows, no read of y after the tree."""
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import SHIPPED as PROFILES, Profile

    prof = Profile.load(PROFILES / "profile-397cb6df054d2a73.json")
    for dt, u in (("float32", 4), ("float64", 2)):
        for n in (2048, 4096):
            got = prof.choose(Kind("gemv", dt, "T"), {"M": n, "N": n}, multiples)
            assert got == Variant.of("column-groups-tree", **dict(SHIPPED.params, u=u, p=1, h=1))
        src = _kernel(dt, got).source
        body = src[src.index("__global__"):]
        assert body.index("y[") < body.index("__syncthreads()") and body.count("y[") == 1
