"""Complex scalars (cfloat, cdouble) through the whole stack: the type, the user functions
against NumPy's complex arithmetic in the interpreter, printing and parsing, and generated code
in both dialects, run on the CPU OpenCL device (PoCL), compiled to PTX by NVRTC and run on CUDA
where a GPU is present."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.dsl import (
    fun, lit, map, mapGlb, reduce, reduceSeq, size, split, toGlobal, tuple_of, user_fun, zip,
)
from liftkit.ir.parser import parse_program
from liftkit.ir.printer import show
from liftkit.ir.userfuns import CDOUBLE, CFLOAT, complex_funs, scalar_funs, standard_user_funs
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError, complex64, complex128, float32, float64, vector

N = size("N")
TYPES = [(complex64, CFLOAT), (complex128, CDOUBLE)]
UNARY = ["neg", "conj", "re", "im", "abs", "abs1", "absSq", "id"]
BINARY = ["add", "sub", "mult", "div", "multConj"]


def _numpy(name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return {"neg": lambda: -x, "conj": lambda: np.conj(x), "re": lambda: x.real,
            "im": lambda: x.imag, "abs": lambda: np.abs(x),
            "abs1": lambda: np.abs(x.real) + np.abs(x.imag), "absSq": lambda: np.abs(x) ** 2,
            "id": lambda: x, "add": lambda: x + y, "sub": lambda: x - y, "mult": lambda: x * y,
            "div": lambda: x / y, "multConj": lambda: np.conj(x) * y}[name]()


def _data(t, n: int = 256, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(t.dtype)
    y = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(t.dtype)
    y[:4] = [1e-3 + 5j, 7 - 1e-3j, -2j, 3]  # both branches of Smith's division
    return x, y


def _program(t, F, name: str):
    f = getattr(F, name)
    if name in BINARY:
        return fun([t[N], t[N]], lambda x, y: mapGlb(lambda p: f(p[0], p[1])) << zip(x, y))
    return fun([t[N], t[N]], lambda x, y: mapGlb(f) << x)


def _tol(t) -> dict[str, float]:
    return {"rtol": 2e-6, "atol": 1e-6} if t == complex64 else {"rtol": 1e-14, "atol": 1e-14}


def test_the_types() -> None:
    assert str(complex64) == "cfloat" and complex64.dtype == np.complex64
    assert complex128.real == float64 and complex64.real == float32 and float32.real == float32
    assert complex64.is_complex and not complex64.is_float and not float64.is_complex
    with pytest.raises(LiftTypeError, match="vectors of cfloat do not exist"):
        vector(complex64, 4)
    with pytest.raises(ValueError, match="complex_funs"):
        scalar_funs(complex64)
    with pytest.raises(ValueError, match="not complex"):
        complex_funs(float32)
    names = standard_user_funs()
    assert names["mult_cfloat"] is CFLOAT.mult and names["conj_cdouble"] is CDOUBLE.conj
    assert lit(1 + 2j).type == complex64


@pytest.mark.parametrize("t,F", TYPES, ids=["cfloat", "cdouble"])
def test_user_functions_in_the_interpreter_are_numpys_complex_arithmetic(t, F) -> None:
    x, y = _data(t)
    for name in UNARY + BINARY:
        got = interpret(_program(t, F, name), x, y)
        want = _numpy(name, x, y)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, **_tol(t), err_msg=name)


@pytest.mark.parametrize("t,F", TYPES, ids=["cfloat", "cdouble"])
def test_print_and_parse_round_trip_with_complex_literals(t, F) -> None:
    prog = fun([t[N], t[N]], lambda x, y: reduce(F.add, lit(complex(0.5, -2.0), t))
               << map(F.multConj) << zip(x, y))
    text = show(prog)
    assert f"[{t}]_N" in text and f"{t}(0.5" in text and "multConj_" in text
    back = parse_program(text)
    assert back == prog
    x, y = _data(t, 64)
    np.testing.assert_allclose(interpret(back, x, y), [np.vdot(x, y) + (0.5 - 2j)], **_tol(t))


def test_a_complex_literal_needs_two_real_parts() -> None:
    from liftkit.ir.parser import ParseError

    with pytest.raises(ParseError, match=r"cfloat\(re, im\): two real numbers"):
        parse_program("λ(x: [cfloat]_N). (reduce(add_cfloat, cfloat(1.0f)))(x)")


def _cpu_runner():
    from liftkit.backends.opencl import OpenCLRunner, select_device

    try:
        select_device("cpu")
    except Exception:  # noqa: BLE001
        pytest.skip("needs a CPU OpenCL device")
    return OpenCLRunner("cpu")


@pytest.mark.parametrize("t,F", TYPES, ids=["cfloat", "cdouble"])
def test_every_complex_user_function_compiles_and_runs_on_the_cpu_device(t, F) -> None:
    runner = _cpu_runner()
    x, y = _data(t)
    for name in UNARY + BINARY:
        got = runner.run(compile_program(_program(t, F, name)), x, y)
        np.testing.assert_allclose(got, _numpy(name, x, y), **_tol(t), err_msg=name)


@pytest.mark.parametrize("t,F", TYPES, ids=["cfloat", "cdouble"])
def test_a_complex_reduction_with_a_literal_init_and_a_scalar_argument(t, F) -> None:
    """toGlobal(reduceSeq) from a complex literal, and a complex kernel argument."""
    runner = _cpu_runner()
    prog = fun([t, t[N]], lambda a, x: toGlobal(mapGlb(lambda part: reduceSeq(
        lambda acc, v: F.add(acc, F.mult(a, v)), lit(complex(1, -1), t)) << part))
        << split(16) << x)
    x, _ = _data(t, 64)
    a = t.dtype.type(0.5 - 1.5j)
    want = (a * x).reshape(4, 16).sum(1, keepdims=True) + (1 - 1j)
    np.testing.assert_allclose(interpret(prog, a, x), want, **_tol(t))
    np.testing.assert_allclose(runner.run(compile_program(prog), a, x), want, **_tol(t))
    cu = compile_program(prog, CompileOptions(dialect="cuda")).kernels[0].source
    assert f"struct __align__({t.dtype.itemsize}) {t}" in cu and f"{t}_new(1.0" in cu


def test_cuda_complex_code_compiles_to_ptx(compile_cuda: Any) -> None:
    for t, F in TYPES:
        for name in UNARY + BINARY:
            for k in compile_program(_program(t, F, name), CompileOptions(dialect="cuda")).kernels:
                assert ".entry KERNEL" in compile_cuda(k.source, "compute_90a", name="k.cu").ptx


@pytest.mark.gpu
def test_complex_user_functions_on_cuda() -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices

    devices = list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = CUDARunner(devices[0], ModuleCache(disk=False))
    for t, F in TYPES:
        x, y = _data(t)
        for name in UNARY + BINARY:
            got = runner.run(compile_program(_program(t, F, name), CompileOptions(dialect="cuda")),
                             x, y)
            np.testing.assert_allclose(got, _numpy(name, x, y), **_tol(t), err_msg=name)


def test_tuples_of_complex_and_real_keep_numpys_layout_on_the_device(compile_cuda: Any) -> None:
    """(cdouble, float) structs: the complex part 16-byte aligned in C and in the host's
    structured arrays alike."""
    runner = _cpu_runner()
    F, t = CDOUBLE, complex128
    mk = user_fun("withNorm", [("z", t)], tuple_of(t, float32),
                  "Tuple r = {cdouble_mul(z, z), (float)hypot(z.x, z.y)}; return r;",
                  lambda z: (z * z, np.abs(z).astype(np.float32)))
    prog = fun([t[N]], lambda x: mapGlb(mk) << x)
    x, _ = _data(t, 32)
    got = runner.run(compile_program(prog), x)
    want = interpret(prog, x)
    assert got.dtype.names == want.dtype.names
    np.testing.assert_allclose(got["f0"], x * x, rtol=1e-14)
    np.testing.assert_allclose(got["f1"], np.abs(x), rtol=1e-6)
    np.testing.assert_allclose(want["f0"], x * x, rtol=1e-14)
    cu = compile_program(prog, CompileOptions(dialect="cuda")).kernels[0].source
    assert "struct __align__(16) cdouble" in cu and "Tuple2_cdouble_float" in cu
    assert ".entry KERNEL" in compile_cuda(cu, "compute_90a", name="k.cu").ptx
