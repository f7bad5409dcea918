"""Compiler defects found by known-answer kernels never give a wrong answer.

Intel's CPU OpenCL runtime 2026.2.0 vectorises sequential subtraction loops wrongly
(`acc = acc - x[i]` gives init - x[N-1]); on such a device the runner recompiles programs with
the code generator's workaround (`liftkit.codegen.quirks`). The shapes below are those that
were wrong there; on a correct runtime they simply pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.backends.opencl.quirks import compiler_quirks
from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.quirks import NO_VECTORIZE_PRAGMA, SERIAL_SUB_REDUCTIONS, check_quirks
from liftkit.dsl import *  # noqa: F403
from liftkit.semantics import interpret
from liftkit.testing import check_case, failure_report
from liftkit.testing.random_programs import generate

# ruff: noqa: F405
N = size("N")
needs_cpu = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                               reason="no CPU OpenCL device")
QUIRK = CompileOptions(quirks=frozenset({SERIAL_SUB_REDUCTIONS}))


def _single(t, f, init):  # one work-item reduces the whole array
    return fun([t[N]], lambda x: toGlobal(mapSeq(id_of(t))) << reduceSeq(f, init) << x)


def _rows(t, f, init):  # one reduction per work-item, rows of 128
    return fun([t[N]], lambda x: join << mapGlb(0)(
        toGlobal(mapSeq(id_of(t))) << reduceSeq(f, init)) << split(128) << x)


F, D, I = scalar_funs(float32), scalar_funs(float64), scalar_funs(int32)
SHAPES = {
    "float sub": _single(float32, F.sub, 0.0),
    "float sub, init 1": _single(float32, F.sub, 1.0),
    "float add of neg": _single(float32, lambda acc, v: F.add(acc, F.neg(v)), 0.0),
    "float sub in mapGlb rows": _rows(float32, F.sub, 0.0),
    "double sub": _single(float64, D.sub, 0.0),
    "int sub": _single(int32, I.sub, 0),
    "float add": _single(float32, F.add, 0.0),
}


@pytest.fixture(scope="module")
def runner() -> OpenCLRunner:
    return OpenCLRunner("cpu", KernelCache(disk=False))


@needs_cpu
@pytest.mark.parametrize("n", [16, 384, 4096])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_reduction_shapes_match_the_interpreter(shape: str, n: int, runner: OpenCLRunner) -> None:
    if n % 128 and "rows" in shape:
        pytest.skip("rows of 128")
    prog = SHAPES[shape]
    x = (np.arange(1, n + 1) % 7 + 1).astype(prog.params[0].type.elem.dtype)
    got = runner.run(compile_program(prog), x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(interpret(prog, x)), err_msg=shape)


@needs_cpu
@pytest.mark.parametrize("seed", [51090, 51340, 60106, 60128, 60139])
def test_random_programs_that_found_the_defect(seed: int, runner: OpenCLRunner) -> None:
    case = generate(seed)
    outcome = check_case(case, runner)
    assert outcome.ok, failure_report(case, outcome)


def test_the_workaround_touches_only_subtracting_reductions() -> None:
    """Additions keep their vectorised loops (5x faster on the affected runtime)."""
    sub, add = SHAPES["float sub"], SHAPES["float add"]
    assert NO_VECTORIZE_PRAGMA in compile_program(sub, QUIRK).source
    assert NO_VECTORIZE_PRAGMA in compile_program(SHAPES["float add of neg"], QUIRK).source
    assert NO_VECTORIZE_PRAGMA not in compile_program(add, QUIRK).source
    assert NO_VECTORIZE_PRAGMA not in compile_program(sub).source  # correct compilers: unchanged
    assert QUIRK.key() != CompileOptions().key()
    with pytest.raises(ValueError, match="unknown compiler quirk"):
        check_quirks(frozenset({"no-such-quirk"}))


@needs_cpu
def test_an_affected_device_runs_programs_with_the_workaround(runner: OpenCLRunner) -> None:
    compiled = compile_program(SHAPES["float sub"])
    quirks = compiler_quirks(runner.device)
    fixed = runner.for_backend(compiled)
    assert fixed.options.quirks == quirks
    assert runner.for_backend(compiled) is fixed  # recompiled once per program, not per run
    assert (NO_VECTORIZE_PRAGMA in fixed.source) == (SERIAL_SUB_REDUCTIONS in quirks)
