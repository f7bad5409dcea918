"""The rule `wrg-row-groups` (rewrite/rules/grid_order.py): the tile grid's work-groups started g
rows of tiles at a time. Sound in the interpreter (bit for bit on integer-valued inputs) for
the DMMA tiles of mm-tensor-cores and the FFMA tiles of liftkit.blas's `tiles` codelet; where it
must not apply; the grid (groups of rows on dimension 0, columns on 1, groups on 2); the tiles
run on the CPU OpenCL device equal to NumPy; the DMMA kernel compiles with NVRTC; liftkit.blas's
`mma(group=g)` derives it and its multiples name whole groups of row tiles."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.blas.codelets import Kind, Variant, derive, edge_forms, multiples
from liftkit.codegen import CompileOptions, compile_program
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import tensor_core_mm
from liftkit.rewrite.rules.grid_order import GROUPS, WRG_ROW_GROUPS
from liftkit.rewrite.strategies import rule, topdown
from liftkit.semantics import interpret

RULES = {WRG_ROW_GROUPS.name: WRG_ROW_GROUPS}


def _ints(shape: tuple[int, int], dt: type, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(dt)


def _grouped(program, g: int):  # type: ignore[no-untyped-def]
    return topdown(rule(WRG_ROW_GROUPS, g=g)).derive(normal_form(program), rules=RULES).final


def _dims(program) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(n.dim for n in walk(program.body) if isinstance(n, P.MapWrg))


def test_dmma_tiles_in_row_groups_are_sound() -> None:
    """Every offered g on the DMMA derivation (128×64 tiles, ik=8 ahead=2): A·B bit for bit, at
    4 row tiles (g = 2 and 4 divide them) and 3 column tiles."""
    low = normal_form(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=2).final)
    offers = enumerate_choices(low, [WRG_ROW_GROUPS])
    assert [c.params["g"] for c in offers] == list(GROUPS) and len({c.path for c in offers}) == 1
    A, B = _ints((4 * 128, 32), np.float64, 1), _ints((32, 3 * 64), np.float64, 2)
    for g in (2, 4):
        new = _grouped(low, g)
        assert _dims(new) == [0, 1, 2]
        np.testing.assert_array_equal(interpret(new, A, B), A @ B)


def _tiles(dt: str = "float32"):  # type: ignore[no-untyped-def]
    return normal_form(derive(Kind("mm", dt, "NN"), Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4)).final)


def test_ffma_tiles_in_row_groups_are_sound() -> None:
    A, B = _ints((8 * 32, 48), np.float32, 3), _ints((48, 2 * 32), np.float32, 4)
    for g in (2, 8):  # g = M's row tiles: one group, the whole grid column by column
        new = topdown(rule(WRG_ROW_GROUPS, g=g)).derive(_tiles(), rules=RULES).final
        np.testing.assert_array_equal(interpret(new, A, B), A @ B)


def test_row_groups_keep_off_what_they_must_not_touch() -> None:
    """Not twice (the grid's third dimension is taken), not on a one-dimensional grid, not where
    the columns' array depends on the row (nothing to interchange)."""
    once = _grouped(_tiles(), 2)
    assert not enumerate_choices(once, [WRG_ROW_GROUPS])
    from liftkit import dsl as D
    from liftkit.types import float32

    N = D.size("N")
    flat = D.fun([float32[N]], lambda x: D.join << D.mapWrg(0)(D.mapLcl(0)(D.id)) << D.split(32) << x)
    assert not enumerate_choices(normal_form(flat), [WRG_ROW_GROUPS])
    M = D.size("M")
    rowwise = D.fun([float32[N][M]], lambda X: D.mapWrg(1)(
        lambda r: D.mapWrg(0)(D.mapLcl(0)(D.id)) << D.split(32) << r) << X)
    assert not enumerate_choices(normal_form(rowwise), [WRG_ROW_GROUPS])


@pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()), reason="no CPU OpenCL device")
def test_row_groups_run_on_the_cpu_device() -> None:
    """The FFMA tiles with g = 2 on a 4×3 tile grid: a 3-D range (2 rows, 3 columns, 2 groups)
    whose result equals NumPy's product."""
    runner = OpenCLRunner(os.environ.get("LIFTKIT_TEST_DEVICE", "cpu"), KernelCache(disk=False))
    new = _grouped(_tiles(), 2)
    A, B = _ints((4 * 32, 64), np.float32, 5), _ints((64, 3 * 32), np.float32, 6)
    compiled = compile_program(new)
    src = compiled.source
    assert "get_group_id(2)" in src and "get_group_id(1)" in src and "get_group_id(0)" in src
    np.testing.assert_array_equal(np.asarray(runner.run(compiled, A, B)), A @ B)
    with pytest.raises(Exception, match="M must be a multiple of 64"):  # 3 row tiles: no groups of 2
        runner.run(compiled, A[:96], B)


def test_dmma_row_groups_in_liftkit_blas_compile(compile_cuda: Any) -> None:
    """mma(group=8): the grid is 8 row tiles × N/64 × M/1024 blocks, the multiples ask for whole
    groups (M a multiple of 1024), the guarded forms drop it; NVRTC compiles the kernel."""
    kind = Kind("mm", "float64", "NN")
    v = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2, group=8)
    assert multiples(kind, v) == {"M": 1024, "N": 64, "K": 16}
    assert all("group" not in e.kw for e in edge_forms(v))
    compiled = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda"))
    (k,) = compiled.kernels
    assert [str(x) for x in k.ndrange.global_size] == ["1024", "N/64", "M/1024"]
    assert "blockIdx.z" in k.source

    compile_cuda(k.source, "sm_90a", list(k.build_options))


@pytest.mark.gpu
def test_dmma_row_groups_on_the_gpu() -> None:
    """The DMMA kernel (128×64 tiles, ik=8 ahead=2) in groups of 2 and 8 row tiles, 16 row
    tiles × 3 column tiles, equal to NumPy's product on integers."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    low = normal_form(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=2).final)
    A, B = _ints((16 * 128, 80), np.float64, 7), _ints((80, 3 * 64), np.float64, 8)
    for g in (2, 8):
        compiled = compile_program(_grouped(low, g), CompileOptions(dialect="cuda"))
        np.testing.assert_array_equal(runner.run(compiled, A, B), A @ B)
