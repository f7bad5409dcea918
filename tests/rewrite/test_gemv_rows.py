"""gemv-row-blocks and gemv-column-blocks (rules/gemv/blocks.py): r rows (GEMV N) or k·w columns
(GEMV T) per work-item, vectors of w, private accumulators.

Sound in the interpreter: with integer-valued inputs every sum is exact, so the blocked program's
result equals the high-level one's bit for bit whatever the order of the lanes and rows; with
random reals within rounding (column blocks sum each column in the row order: bit for bit
always). Refused where the rows are not the input's own (GEMV T reads A
transposed) and for complex numbers (no vectors); the derived kernels run on the CPU device in
tests/blas (codelet `row-blocks`)."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.blas import programs as bp
from liftkit.ir.nodes import FunCall, UserFun, walk
from liftkit.ir.typecheck import is_low_level
from liftkit.rewrite.core import Choice, apply_choice, typed_sites
from liftkit.rewrite.rules.corpus import run, same_result
from liftkit.rewrite.rules.gemv import (GEMV_COLUMN_BLOCKS, GEMV_ROW_BLOCK_GROUPS, GEMV_ROW_BLOCKS,
                                       GEMV_RULES)


def _sites(program):  # type: ignore[no-untyped-def]
    return [s for s in typed_sites(program) if GEMV_ROW_BLOCKS.choices(s)]


_C = {"float32": "float", "float64": "double"}  # the OpenCL names in the user functions


def _user_funs(program) -> set[str]:  # type: ignore[no-untyped-def]
    return {e.f.name for e in walk(program) if isinstance(e, FunCall) and isinstance(e.f, UserFun)}


def _inputs(dt: str, m: int, n: int, integers: bool, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    draw = (lambda *s: rng.integers(-4, 5, s)) if integers else (lambda *s: rng.uniform(-1, 1, s))
    return [draw(m, n).astype(dt), draw(n).astype(dt), draw(m).astype(dt),
            np.array(2.0, dt), np.array(-1.0, dt)]


def _assert_row_blocks_sound(p, q, dt: str, m: int, n: int, seed: int,  # type: ignore[no-untyped-def]
                             params: dict[str, int]) -> None:
    """q (p blocked in rows by `params`) fuses each step's multiply-add (OpenCL's fma, checked
    here as acc + a·b) and computes p's result: integers bit for bit, reals within rounding."""
    assert f"fmaAcc{params['w']}_{_C[dt]}" in _user_funs(q), params
    ints = _inputs(dt, m, n, True, seed)
    assert same_result(run(q, ints, {"M": m, "N": n}), run(p, ints, {"M": m, "N": n})), params
    reals = _inputs(dt, m, n, False, seed)
    np.testing.assert_allclose(run(q, reals, {"M": m, "N": n}),
                               run(p, reals, {"M": m, "N": n}),
                               rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_row_blocks_are_sound_in_the_interpreter(dt: str) -> None:
    p = bp.gemv(dt, False, False)
    sites = _sites(p)
    assert len(sites) == 1
    offered = GEMV_ROW_BLOCKS.choices(sites[0])
    assert {"r": 4, "w": 16} in offered and {"r": 1, "w": 8} in offered
    m, n = 8, 32
    for k, params in enumerate(({"r": 1, "w": 16}, {"r": 2, "w": 8}, {"r": 4, "w": 16},
                                {"r": 8, "w": 4})):
        q = apply_choice(p, Choice(GEMV_ROW_BLOCKS.name, sites[0].path, params), GEMV_RULES)
        assert is_low_level(q)
        _assert_row_blocks_sound(p, q, dt, m, n, k, params)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_row_block_groups_are_sound_in_the_interpreter(dt: str) -> None:
    """gemv-row-blocks in work-groups of L work-items: the same result (integers: bit for bit),
    and its kernel's local size is L."""
    from liftkit.codegen import compile_program

    p = bp.gemv(dt, False, False)
    site = [s for s in typed_sites(p) if GEMV_ROW_BLOCK_GROUPS.choices(s)][0]
    offered = GEMV_ROW_BLOCK_GROUPS.choices(site)
    assert {"r": 2, "w": 16, "L": 128} in offered and {"r": 8, "w": 4, "L": 32} in offered
    m, n = 64, 32
    for k, params in enumerate(({"r": 2, "w": 16, "L": 32}, {"r": 1, "w": 8, "L": 64})):
        q = apply_choice(p, Choice(GEMV_ROW_BLOCK_GROUPS.name, site.path, params), GEMV_RULES)
        assert is_low_level(q)
        _assert_row_blocks_sound(p, q, dt, m, n, k, params)
        kernel = compile_program(q).kernels[0]
        assert kernel.ndrange.local_size == (params["L"],), kernel.ndrange


def test_refused_for_transposed_rows_and_complex_numbers() -> None:
    assert not _sites(bp.gemv("float32", True, False))
    assert not [s for s in typed_sites(bp.gemv("float32", False, False))
                if GEMV_COLUMN_BLOCKS.choices(s)]
    assert not [s for s in typed_sites(bp.gemv("complex64", True, False))
                if GEMV_COLUMN_BLOCKS.choices(s)]
    assert not _sites(bp.gemv("complex64", False, False))
    assert not _sites(bp.gemv("complex128", False, True))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_column_blocks_are_sound_in_the_interpreter(dt: str) -> None:
    """gemv-column-blocks (GEMV T) sums each column over the rows in order: bit for bit."""
    p = bp.gemv(dt, True, False)
    sites = [s for s in typed_sites(p) if GEMV_COLUMN_BLOCKS.choices(s)]
    assert len(sites) == 1
    assert {"k": 8, "w": 16} in GEMV_COLUMN_BLOCKS.choices(sites[0])
    m, n = 24, 128
    for k, params in enumerate(({"k": 1, "w": 16}, {"k": 2, "w": 8}, {"k": 8, "w": 16},
                                {"k": 4, "w": 4})):
        q = apply_choice(p, Choice(GEMV_COLUMN_BLOCKS.name, sites[0].path, params), GEMV_RULES)
        assert is_low_level(q)
        # floats: a row segment times x's element broadcast, one fma per vector
        assert f"fmaAccB{params['w']}_{_C[dt]}" in _user_funs(q), params
        for integers in (True, False):
            A, y, x, alpha, beta = _inputs(dt, m, n, integers, k)  # x: M, y: N for Aᵀx
            xs = [A, x, y, alpha, beta]
            assert same_result(run(q, xs, {"M": m, "N": n}), run(p, xs, {"M": m, "N": n})), params
