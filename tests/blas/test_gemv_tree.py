"""GEMV T in one kernel with a tree over the row groups (rule gemv-lane-columns-tree, codelet
column-groups-tree): sound in the interpreter (integer inputs: exact sums, so any regrouping
gives the same bits; real and complex), run for real on the CPU device at random shapes (padded
to its multiples, both storage orders, α and β, the general path and the call plan) against
NumPy, and compiled for CUDA by NVRTC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.rewrite.rules.corpus import run, same_result

from .test_gemv_split import check_gemv_t_at_random_shapes

TREE = [Variant.of("column-groups-tree", lanes=2, g=8, w=4),
        Variant.of("column-groups-tree", lanes=4, g=16, w=2),
        Variant.of("column-groups-tree", lanes=2, g=4, w=8),  # float8 / double8 steps
        Variant.of("column-groups-tree", lanes=8, g=4, w=1),
        # u rows per step into u private accumulators (u loads in flight per work-item)
        Variant.of("column-groups-tree", lanes=2, g=4, w=4, u=4),
        Variant.of("column-groups-tree", lanes=8, g=4, w=1, u=8)]


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("variant", TREE)
def test_tree_columns_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    if dt == "complex64":  # one element per step, a warp's run ≥ 8 of them
        p = dict(variant.params)
        variant = Variant.of("column-groups-tree", lanes=8, g=p["g"], w=1, u=p.get("u", 1))
    check_gemv_t_in_the_interpreter(dt, variant, 7)


def check_gemv_t_in_the_interpreter(dt: str, variant: Variant, seed: int) -> None:
    """The derivation of GEMV T by `variant` replays and computes what the high-level program
    does on integer-valued 64×64 operands (exact in every dtype)."""
    kind = Kind("gemv", dt, "T")
    d = derive(kind, variant)
    assert d.replay()
    rng = np.random.default_rng(seed)
    m, n = 64, 64

    def ints(shape: tuple[int, ...]) -> np.ndarray:
        v = rng.integers(-4, 5, shape).astype(dt)
        return (v + 1j * rng.integers(-4, 5, shape)).astype(dt) if dt == "complex64" else v

    xs = [ints((m, n)), ints((m,)), ints((n,)), np.array(3.0, dt), np.array(-2.0, dt)]
    assert same_result(run(d.final, xs, {"M": m, "N": n}), run(kind.program(), xs, {"M": m, "N": n}))


def test_one_kernel_with_a_tree() -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program

    d = derive(Kind("gemv", "float32", "T"), Variant.of("column-groups-tree", lanes=2, g=128, w=8))
    c = compile_program(d.final, CompileOptions(dialect="cuda"))
    assert len(c.kernels) == 1 and c.kernels[0].ndrange.local_size == (2, 128)
    assert "iter < 6" in c.kernels[0].source  # 7 halvings: the first peeled, 6 in the loop


@pytest.mark.parametrize("variant", TREE)
def test_tree_columns_at_any_size(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 13)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_tree_columns_compile_for_cuda(dt: str, compile_cuda: Any) -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program
    from liftkit.blas.codelets import GEMV_TREE_SPACE

    for point in GEMV_TREE_SPACE:
        params = dict(zip(("lanes", "g", "w", "u"), point))
        d = derive(Kind("gemv", dt, "T"), Variant.of("column-groups-tree", **params))
        for k in compile_program(d.final, CompileOptions(dialect="cuda")).kernels:
            compile_cuda(k.source, "compute_90", list(k.build_options or []))


def test_unrolled_rows_load_back_to_back() -> None:
    """u = 8: eight private accumulators, each step's eight row loads before their sums (the
    step unrolled, no loop over the accumulators), the eight summed after the rows."""
    from liftkit.codegen.compiler import CompileOptions, compile_program

    d = derive(Kind("gemv", "float32", "T"), Variant.of("column-groups-tree", lanes=8, g=32, w=4,
                                                         u=8))
    src = compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source
    assert "float4 tmp_2[8];" in src and "tmp_2[7] = add4(tmp_2[7]" in src
    assert "i < M/256" in src  # 32 row groups × 8 rows per step


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["gpu_session", "cuda_session"])
def test_unrolled_tree_columns_on_the_gpu(backend: str, request: pytest.FixtureRequest) -> None:
    """The deep forms (u = 8, 16: 78-164 registers a work-item) on a real GPU (NVIDIA OpenCL and
    CUDA) at odd shapes and 4096², every call right against NumPy."""
    session = request.getfixturevalue(backend)
    rng = np.random.default_rng(25)
    for v in (Variant.of("column-groups-tree", lanes=8, g=32, w=4, u=8),
              Variant.of("column-groups-tree", lanes=8, g=32, w=4, u=16),
              Variant.of("column-groups-tree", lanes=16, g=16, w=2, u=16)):
        check_gemv_t_on_the_gpu(session, v, rng, backend)


def check_gemv_t_on_the_gpu(session: Session, v: Variant, rng: np.random.Generator, label: str,
                            shift: int = 0, calls: int = 2) -> None:
    """`v` forced for float32 and float64 GEMV T, at 4096² and odd shapes (the dtypes in turn,
    float64 first with an odd `shift`), α and β ≠ 0, each shape `calls` times, against NumPy."""
    from .test_gpu_codelets import _forced
    from .test_properties import _mat

    s = _forced(session, [Kind("gemv", dt, "T") for dt in ("float32", "float64")], v)
    for case, shape in enumerate(((4096, 4096), (3001, 1999), (517, 4099))):
        dt = (np.float32, np.float64)[(case + shift) % 2]
        A = _mat(rng, shape, dt)
        tol = 1e-4 if dt == np.float32 else 1e-12
        for _ in range(calls):
            x, y = _mat(rng, (shape[0],), dt), _mat(rng, (shape[1],), dt)
            want = 0.75 * A.T.astype(np.float64) @ x - 1.25 * y
            got = s.gemv(A, x, y.copy(), alpha=0.75, beta=-1.25, trans=True).result()
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10,
                                       err_msg=f"{label} {v} {shape}")
