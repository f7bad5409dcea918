"""A user function that returns a tuple as a C99 compound literal, `return (Tuple){...};`, is
OpenCL C; CUDA C (C++) has no compound literals, so the CUDA dialect writes it as aggregate
initialisation. NVRTC compiles without a GPU, so this runs in CI; the OpenCL build runs on the
CPU device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.dialect import dialect_named
from liftkit.dsl import float32, fun, mapGlb, size, zip
from liftkit.ir.nodes import UserFun
from liftkit.types import TupleType
from liftkit.types import float32 as F

PAIR = TupleType((F, F))
N = size("N")


def sum_diff(literal: str) -> UserFun:
    return UserFun("sumDiff", ("a", "b"), (F, F), PAIR, f"return ({literal}){{a + b, a - b}};",
                   lambda a, b: (a + b, a - b))


def program(literal: str):  # type: ignore[no-untyped-def]
    return fun([float32[N], float32[N]], lambda x, y: mapGlb(0)(sum_diff(literal)) << zip(x, y))


@pytest.mark.parametrize("literal", ["Tuple", "Tuple2_float_float"])
def test_nvrtc_compiles_a_tuple_compound_literal(literal: str, compile_cuda: Any) -> None:
    compiled = compile_program(program(literal), CompileOptions(dialect="cuda"))
    src = compiled.kernels[0].source
    assert f"return {literal}{{a + b, a - b}};" in src
    assert compile_cuda(src, "compute_90", name="tuple_literal.cu").ptx


def test_only_compound_literals_change() -> None:
    body = dialect_named("cuda").user_body
    assert body("return c ? (Tuple){a, b} : (Tuple) {b, a};") == "return c ? Tuple{a, b} : Tuple{b, a};"
    assert body("Tuple t = (Tuple2_float_float){a, b}; return f((Tuple){t._0, b});") == \
        "Tuple t = Tuple2_float_float{a, b}; return f(Tuple{t._0, b});"
    kept = "if (TupleOk) { return x; } return (float2)(a, b);"
    assert body(kept) == "if (TupleOk) { return x; } return float2(a, b);"
    assert dialect_named("opencl").user_body("return (Tuple){a, b};") == "return (Tuple){a, b};"


def test_the_opencl_build_runs_it() -> None:
    cl = pytest.importorskip("pyopencl")  # noqa: F841
    from liftkit.backends.opencl import OpenCLRunner, list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    x = np.arange(64, dtype=np.float32)
    y = np.ones(64, dtype=np.float32)
    out = OpenCLRunner("cpu").run(compile_program(program("Tuple")), x, y)
    got = np.asarray(out.tolist() if hasattr(out, "tolist") else out, dtype=np.float32)
    np.testing.assert_allclose(got.reshape(64, 2), np.stack([x + y, x - y], axis=1))
