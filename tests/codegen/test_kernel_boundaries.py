"""Never a silent wrong answer (issue 11, defect 1): a global-memory result is read only by a
later kernel. An iterate whose function contains a mapGlb or mapWrg runs as one kernel per
step; what cannot be cut into kernels is refused in pattern words. Each program runs on PoCL
at sizes below and well above one work-group and is compared with the interpreter."""

from __future__ import annotations

import os

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.codegen import compile_program
from liftkit.codegen.compiler import kernel_structure_error
from liftkit.codegen.views import CodegenError
from liftkit.dsl import (add, compose, float32, fun, id, iterate, join, let, lit, mapGlb, mapLcl,
                         mapSeq, mapWrg, mult, pad, reduceSeq, size, slide, split, toGlobal,
                         toLocal, toPrivate, tuple_, zip)
from liftkit.semantics import interpret
from liftkit.testing import compare

N = size("N")
SIZES = (3, 64, 1000, 4099)  # 4099: several work-groups whatever the driver picks, and odd
needs_pocl = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device (PoCL) installed")


@pytest.fixture(scope="module")
def runner() -> OpenCLRunner:
    """PoCL (or Intel's CPU runtime); LIFTKIT_TEST_DEVICE=gpu runs the same checks on a GPU."""
    return OpenCLRunner(os.environ.get("LIFTKIT_TEST_DEVICE", "cpu"), KernelCache(disk=False))


def _stencil(boundary: str = "clamp"):
    return compose(join, mapGlb(0)(reduceSeq(add, 0.0)), slide(3, 1), pad(1, 1, boundary))


def _inputs(n: int, seed: int = 0) -> np.ndarray:
    # small integers: every sum is exact, so the kernels must match the interpreter bit for bit
    return np.random.default_rng(seed).integers(-8, 8, n).astype(np.float32)


def _check(runner: OpenCLRunner, prog, *inputs) -> int:
    compiled = compile_program(prog)
    out = runner.run(compiled, *inputs)
    diff = compare(out, interpret(prog, *inputs))
    assert diff is None, diff
    return len(compiled.kernels)


@needs_pocl
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("steps", [1, 2, 5])
def test_iterate_over_a_global_stencil_runs_one_kernel_per_step(runner, n, steps) -> None:
    prog = fun([float32[N]], lambda x: iterate(steps, _stencil()) << x)
    assert _check(runner, prog, _inputs(n, steps)) == steps


@needs_pocl
def test_the_steps_share_one_source_and_build(runner) -> None:
    prog = fun([float32[N]], lambda x: iterate(12, _stencil()) << x)
    compiled = compile_program(prog)
    assert len({k.name for k in compiled.kernels}) == 12
    assert len({k.source for k in compiled.kernels}) == 3  # the first step, the others, the last
    assert compiled.source.count("kernel void") == 3
    built = runner.cache.stats().misses
    _check(runner, prog, _inputs(3000))
    assert runner.cache.stats().misses - built <= 3


@needs_pocl
def test_an_address_space_wrapper_around_the_iterate_is_no_obstacle(runner) -> None:
    prog = fun([float32[N]], lambda x: toGlobal(iterate(3, _stencil("wrap"))) << x)
    assert _check(runner, prog, _inputs(2000)) == 3


@needs_pocl
@pytest.mark.parametrize("n", [512, 4096])
def test_iterate_whose_steps_shrink_the_array(runner, n) -> None:
    halve = compose(join, mapGlb(0)(reduceSeq(add, 0.0)), split(2))
    prog = fun([float32[N]], lambda x: iterate(3, halve) << x)
    assert _check(runner, prog, _inputs(n)) == 3


@needs_pocl
@pytest.mark.parametrize("n", [256, 4096])
def test_iterate_over_work_groups_runs_one_kernel_per_step(runner, n) -> None:
    # each work-group reads its neighbours' elements (slide over the padded array)
    step = compose(join, mapWrg(0)(compose(join, mapLcl(0)(reduceSeq(add, 0.0)))), split(64),
                   slide(3, 1),
                   pad(1, 1, "wrap"))
    prog = fun([float32[N]], lambda x: iterate(3, step) << x)
    assert _check(runner, prog, _inputs(n)) == 3


@needs_pocl
@pytest.mark.parametrize("n", [64, 4096])
def test_iterate_of_a_computed_input_and_a_reduction_of_its_result(runner, n) -> None:
    prog = fun([float32[N]], lambda x: reduceSeq(add, 0.0) << iterate(2, _stencil("mirror"))
               << mapGlb(0)(lambda a: mult(a, a)) << x)
    assert _check(runner, prog, _inputs(n)) == 4  # the map, two steps, the reduction


@needs_pocl
@pytest.mark.parametrize("n", [64, 4096])
def test_a_let_whose_body_reduces_a_parallel_map_is_cut_into_kernels(runner, n) -> None:
    # the let stays a let (its parameter is used twice); its body used to be compiled into one
    # kernel whose every work-item summed what the others were still writing
    prog = fun([float32[N]], lambda x: let(x, lambda y: reduceSeq(add, 0.0) << mapGlb(0)(mult)
                                           << zip(y, y)))
    assert _check(runner, prog, _inputs(n)) == 2


@needs_pocl
@pytest.mark.parametrize("n", [64, 4096])
def test_a_loop_beside_a_parallel_map_gets_its_own_kernel(runner, n) -> None:
    # a top-level iterate runs in every work-item of its kernel; beside a mapGlb it would read
    # buffers that other work-items are overwriting, so it runs in a kernel of its own
    loop = iterate(3, mapSeq(lambda a: add(a, a)))
    prog = fun([float32[N], float32[N]], lambda x, y: zip(mapGlb(0)(id) << x, mapGlb(0)(id) << loop << y))
    assert _check(runner, prog, _inputs(n, 1), _inputs(n, 2)) == 2
    direct = fun([float32[N], float32[N]], lambda x, y: zip(mapGlb(0)(id) << x, loop << y))
    assert _check(runner, direct, _inputs(n, 1), _inputs(n, 2)) == 2  # the loop, then a copy
    nested = fun([float32[N], float32[N]], lambda x, y: tuple_(
        mapGlb(0)(id) << x, tuple_(loop << y, toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << y)))
    assert _check(runner, nested, _inputs(n, 1), _inputs(n, 2)) == 3


def test_a_global_map_inside_a_sequential_loop_is_refused() -> None:
    step = compose(join, mapGlb(0)(reduceSeq(add, 0.0)), slide(3, 1), pad(1, 1, "clamp"))
    nested = fun([float32[16][N]], lambda xs: mapSeq(iterate(2, step)) << xs)
    with pytest.raises(CodegenError, match=r"iterate's function contains mapGlb\(0\).*top level"):
        compile_program(nested)
    assert "one kernel per step" in (kernel_structure_error(nested) or "")


def test_a_reduction_whose_function_is_a_global_map_is_refused() -> None:
    zeros = lit(np.zeros(16, np.float32), float32[16])
    prog = fun([float32[16][N]], lambda xs: reduceSeq(
        lambda acc, row: mapGlb(0)(add) << zip(acc, row), toGlobal(mapGlb(0)(id)) << zeros) << xs)
    with pytest.raises(CodegenError, match=r"reduceSeq's function contains mapGlb\(0\)"):
        compile_program(prog)


def test_a_loop_every_work_item_of_a_group_runs_over_shared_memory_is_refused() -> None:
    def group(chunk):
        return toGlobal(mapLcl(0)(id)) << iterate(2, mapSeq(lambda a: add(a, a))) \
            << toLocal(mapLcl(0)(id)) << chunk

    prog = fun([float32[N]], lambda x: join << mapWrg(0)(group) << split(64) << x)
    with pytest.raises(CodegenError, match=r"iterate inside mapWrg but outside mapLcl"):
        compile_program(prog)


@needs_pocl
def test_a_private_accumulator_in_a_work_group_is_fine(runner) -> None:
    zeros = lit(np.zeros(4, np.float32), float32[4])

    def group(chunk):
        acc = reduceSeq(lambda a, row: mapSeq(add) << zip(a, row),
                        toPrivate(mapSeq(id)) << zeros) << split(4) << chunk
        return toGlobal(mapLcl(0)(id)) << join << acc

    prog = fun([float32[N]], lambda x: join << mapWrg(0)(group) << split(64) << x)
    _check(runner, prog, _inputs(1024))
