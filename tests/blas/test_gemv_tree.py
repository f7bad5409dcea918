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
        Variant.of("column-groups-tree", lanes=8, g=4, w=1)]


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("variant", TREE)
def test_tree_columns_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    if dt == "complex64":  # one element per step, a warp's run ≥ 8 of them
        variant = Variant.of("column-groups-tree", lanes=8, g=dict(variant.params)["g"], w=1)
    kind = Kind("gemv", dt, "T")
    d = derive(kind, variant)
    assert d.replay()
    rng = np.random.default_rng(7)
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

    for lanes, g, w in GEMV_TREE_SPACE:
        d = derive(Kind("gemv", dt, "T"), Variant.of("column-groups-tree", lanes=lanes, g=g, w=w))
        for k in compile_program(d.final, CompileOptions(dialect="cuda")).kernels:
            compile_cuda(k.source, "compute_90", list(k.build_options or []))
