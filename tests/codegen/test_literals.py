"""Literals (issue 11, defect 3): a bare number takes the type its use asks for, and array
literals whose elements differ live in the kernel as const arrays. Programs run on PoCL and
are compared with the interpreter."""

from __future__ import annotations

import os

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.codegen import CompileOptions, compile_program
from liftkit.dsl import (DOUBLE, INT, add, add2, asScalar, asVector, float32, float64, fun, id,
                         int32, join, lit, mapGlb, mapSeq, mult, pad, reduce, reduceSeq, size,
                         slide, split, vector, zip)
from liftkit.ir.typecheck import check_program
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError, TupleType

N = size("N")
D = DOUBLE
needs_pocl = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device (PoCL) installed")


@pytest.fixture(scope="module")
def runner() -> OpenCLRunner:
    """PoCL (or Intel's CPU runtime); LIFTKIT_TEST_DEVICE=gpu runs the same checks on a GPU."""
    return OpenCLRunner(os.environ.get("LIFTKIT_TEST_DEVICE", "cpu"), KernelCache(disk=False))


def _run(runner: OpenCLRunner, prog, *inputs):
    compiled = compile_program(prog)
    out = runner.run(compiled, *inputs)
    ref = interpret(prog, *inputs)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    return compiled, np.asarray(out)


# -- bare numbers -------------------------------------------------------------------------------


def test_a_bare_initial_value_takes_the_reductions_type() -> None:
    high = fun([float64[N]], lambda x: reduce(D.add, 0.0) << x)
    assert check_program(high) == float64[1]
    x = np.array([1e8] + [1.0] * 64)  # float32 would lose the ones
    assert interpret(high, x)[0] == 1e8 + 64


@needs_pocl
@pytest.mark.parametrize("n", [1, 100, 5000])
def test_reduce_over_doubles_compiles_with_a_double_accumulator(runner, n) -> None:
    prog = fun([float64[N]], lambda x: reduceSeq(D.add, 0.0) << x)
    compiled, out = _run(runner, prog, np.concatenate([[1e8], np.ones(n - 1)]))
    assert "double acc = 0.0;" in compiled.source
    assert out.dtype == np.float64 and out[0] == 1e8 + n - 1


@needs_pocl
def test_numbers_inside_functions_take_the_parameter_types(runner) -> None:
    through_lambda = reduceSeq(lambda a, b: D.add(a, D.mult(b, 2)), 0.0)
    prog = fun([float64[N]], lambda x: join << mapGlb(0)(through_lambda) << split(4)
               << mapGlb(0)(lambda a: D.add(a, 1)) << x)
    _run(runner, prog, np.arange(64, dtype=np.float64) / 3)


@needs_pocl
@pytest.mark.parametrize("n", [8, 3000])
def test_a_pad_constant_takes_the_element_type(runner, n) -> None:
    prog = fun([float64[N]], lambda x: join << mapGlb(0)(reduceSeq(D.add, 0.0)) << slide(3, 1)
               << pad(1, 1, 0.5) << x)
    _run(runner, prog, np.arange(n, dtype=np.float64) / 7)


def test_numbers_keep_their_value_and_explicit_types() -> None:
    with pytest.raises(LiftTypeError, match="parameter y has type int, got float"):
        check_program(fun([int32[N]], lambda x: mapGlb(0)(lambda a: INT.add(a, 2.5)) << x))
    with pytest.raises(LiftTypeError, match="has type double, got float"):
        check_program(fun([float64[N]], lambda x: reduceSeq(D.add, lit(0.0, float32)) << x))
    ints = fun([int32[N]], lambda x: mapGlb(0)(lambda a: INT.add(a, 2.0)) << x)
    assert check_program(ints) == int32[N]  # 2.0 is an int without losing anything


def test_a_lambda_reduction_keeps_the_default_where_it_type_checks() -> None:
    prog = fun([float32[N]], lambda x: reduceSeq(lambda a, b: add(a, b), 0) << x)
    assert check_program(prog) == float32[1]  # the 0 could only be a float here


# -- array literals -------------------------------------------------------------------------------

WEIGHTS = lit(np.array([1.0, -2.0, 3.0], np.float32), float32[3])
TABLE = lit(np.array([[1.5, 2.0], [3.0, -4.0], [5.0, 6.25]]), float64[2][3])


def _convolution():
    def window(w):
        return reduceSeq(lambda acc, p: add(acc, mult(p[0], p[1])), 0.0) << zip(w, WEIGHTS)

    return fun([float32[N]], lambda x: join << mapGlb(0)(window) << slide(3, 1)
               << pad(1, 1, "clamp") << x)


@needs_pocl
@pytest.mark.parametrize("n", [3, 1000, 4099])
def test_an_array_literal_with_differing_elements_is_a_const_array(runner, n) -> None:
    x = np.random.default_rng(n).integers(-9, 9, n).astype(np.float32)
    compiled, _ = _run(runner, _convolution(), x)
    assert "const float lit[3] = {1.0f, -2.0f, 3.0f};" in compiled.source


@needs_pocl
@pytest.mark.parametrize("n", [3, 3000])
def test_a_two_dimensional_double_literal(runner, n) -> None:
    row_sums = join << mapSeq(lambda r: reduceSeq(D.add, 0.0) << r) << TABLE
    prog = fun([float64[N]], lambda x: join << mapGlb(0)(
        lambda row: mapSeq(D.add) << zip(row, row_sums)) << split(3) << x)
    compiled, _ = _run(runner, prog, np.arange(n, dtype=np.float64) / 3)
    assert "const double lit[6] = {1.5, 2.0, 3.0, -4.0, 5.0, 6.25};" in compiled.source


@needs_pocl
def test_a_literal_of_vectors(runner) -> None:
    table = lit(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), vector(float32, 2)[2])
    prog = fun([float32[4]], lambda x: asScalar << mapGlb(0)(lambda p: add2(p[0], p[1]))
               << zip(asVector(2) << x, table))
    compiled, _ = _run(runner, prog, np.arange(4, dtype=np.float32))
    assert "const float2 lit[2] = {(float2)(1.0f, 2.0f), (float2)(3.0f, 4.0f)};" in compiled.source


@needs_pocl
@pytest.mark.parametrize("value", [
    np.array([(1.0, 2.0), (3.0, -4.0)], dtype=[("f0", np.float32), ("f1", np.float32)]),
    ((1.0, 2.0), (3.0, -4.0)),
])
def test_a_literal_of_tuples_is_an_array_of_structs(runner, value) -> None:
    pairs = lit(value, TupleType((float32, float32))[2])
    prog = fun([float32[2]], lambda x: mapGlb(0)(lambda p: add(p[0], mult(p[1], p[1]))) << zip(
        mapGlb(0)(id) << x, mapGlb(0)(lambda q: add(q[0], q[1])) << pairs))
    compiled, out = _run(runner, prog, np.array([10, 20], np.float32))
    assert "lit[2] = {{1.0f, 2.0f}, {3.0f, -4.0f}};" in compiled.source
    np.testing.assert_array_equal(out, [19, 21])


def test_the_cuda_dialect_declares_the_same_const_array() -> None:
    source = compile_program(_convolution(), CompileOptions(dialect="cuda")).source
    assert "const float lit[3] = {1.0f, -2.0f, 3.0f};" in source


def test_an_array_literal_of_equal_elements_needs_no_memory() -> None:
    ones = lit(np.ones(3, np.float32), float32[3])
    prog = fun([float32[N]], lambda x: join << mapGlb(0)(
        lambda w: reduceSeq(lambda acc, p: add(acc, mult(p[0], p[1])), 0.0) << zip(w, ones))
        << slide(3, 1) << pad(1, 1, "clamp") << x)
    assert "const float" not in compile_program(prog).source
