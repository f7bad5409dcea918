"""Tuple results of any nesting (issue 11, defect 2): one output buffer per array, the value
returned in the result type's nesting, through the Python API and `liftkit run`."""

from __future__ import annotations

import os

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.codegen import compile_program
from liftkit.codegen.views import CodegenError
from liftkit.dsl import (abs, add, float32, fun, id, join, lit, mapGlb, mapSeq, max, neg,
                         reduceSeq, size, split, toGlobal, tuple_, unzip, zip)
from liftkit.semantics import interpret
from liftkit.testing import compare

N = size("N")
needs_pocl = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device (PoCL) installed")


@pytest.fixture(scope="module")
def runner() -> OpenCLRunner:
    """PoCL (or Intel's CPU runtime); LIFTKIT_TEST_DEVICE=gpu runs the same checks on a GPU."""
    return OpenCLRunner(os.environ.get("LIFTKIT_TEST_DEVICE", "cpu"), KernelCache(disk=False))


def _signs(x):
    return unzip << mapGlb(0)(lambda a: tuple_(neg(a), abs(a))) << x


def _sum_and_max(x):
    """partRed with a tuple accumulator, as the rewrite rules lower it, then unzipped."""
    init = tuple_(lit(0.0), lit(-1000.0))
    return unzip << join << mapGlb(0)(reduceSeq(lambda acc, v: tuple_(add(acc[0], v), max(acc[1], v)),
                                                init)) << split(4) << x


PROGRAMS = {
    "tuple of a tuple": lambda x, y: tuple_(tuple_(mapGlb(0)(id) << x, mapGlb(0)(neg) << y),
                                            mapGlb(0)(abs) << x),
    "three levels": lambda x, y: tuple_(mapGlb(0)(id) << y,
                                        tuple_(mapGlb(0)(neg) << x, tuple_(mapGlb(0)(abs) << y,
                                                                           mapGlb(0)(id) << x))),
    "unzip inside a tuple": lambda x, y: tuple_(_signs(x), mapGlb(0)(id) << y),
    "partRed and unzip": lambda x, y: tuple_(_sum_and_max(x), _signs(y)),
    "array of tuples beside a tuple": lambda x, y: tuple_(
        mapGlb(0)(lambda p: tuple_(add(p[0], p[1]), neg(p[1]))) << zip(x, y), _signs(y)),
    "with a second kernel": lambda x, y: tuple_(
        toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << mapGlb(0)(abs) << x, _signs(y)),
}


def _inputs(n: int):
    rng = np.random.default_rng(n)
    return [rng.integers(-50, 50, n).astype(np.float32) for _ in range(2)]


@needs_pocl
@pytest.mark.parametrize("n", [8, 1000, 4096])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_nested_tuple_results_match_the_interpreter(runner, name, n) -> None:
    prog = fun([float32[N], float32[N]], PROGRAMS[name])
    compiled = compile_program(prog)
    x, y = _inputs(n)
    out = runner.run(compiled, x, y)
    ref = interpret(prog, x, y)
    assert compare(out, ref) is None, compare(out, ref)


def test_one_output_buffer_per_array() -> None:
    prog = fun([float32[N], float32[N]], PROGRAMS["three levels"])
    compiled = compile_program(prog)
    assert compiled.result == ("output0", "output1", "output2", "output3")
    assert [b.name for b in compiled.buffers if b.role == "output"] == list(compiled.result)


def test_a_result_with_a_scalar_part_is_refused_in_words() -> None:
    prog = fun([float32[N], float32], lambda x, s: tuple_(mapGlb(0)(id) << x, tuple_(s, s)))
    with pytest.raises(CodegenError, match=r"must be an array or a tuple of arrays .*got float"):
        compile_program(prog)


@needs_pocl
def test_liftkit_run_prints_and_saves_a_nested_result(tmp_path, capsys) -> None:
    from liftkit.cli.main import main

    (tmp_path / "prog.py").write_text(
        "from liftkit.dsl import *\nN = size('N')\n"
        "prog = fun([float32[N], float32[N]], lambda x, y: tuple_(tuple_(mapGlb(0)(id) << x, "
        "mapGlb(0)(neg) << y), mapGlb(0)(abs) << x))\n")
    x, y = _inputs(64)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    status = main(["run", f"{tmp_path / 'prog.py'}:prog", "--device", "cpu", "--input",
                   f"x={tmp_path / 'x.npy'}", f"y={tmp_path / 'y.npy'}", "--output",
                   str(tmp_path / "out")])
    assert status in (0, None)
    text = capsys.readouterr().out
    assert "output:    (([float]_N, [float]_N), [float]_N)" in text
    saved = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(saved["out0_0"], x)
    np.testing.assert_array_equal(saved["out0_1"], -y)
    np.testing.assert_array_equal(saved["out1"], np.abs(x))

