"""Matrix-vector products in GPU sections (``M @ x``, ``x @ M``, ``np.dot(M, x)``) as library
calls on liftkit.blas's GEMV program (N and T), fed from the runtime's device buffers, on the
CPU OpenCL device standing in for a GPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

from .helpers import compile_source, left_behind  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")

GEMV = """
import liftkit
def f(M, x, z):
    with liftkit.gpu():
        y = M @ x
        w = z @ M
        v = np.dot(M, x) * 2.0
    return y, w, v
"""

GEMV_FN = """
from liftkit.jit import jit
@jit(target="gpu")
def g(M, x):
    return M @ x
"""

# 1×1, a row, a column, odd sizes, multiples of the row-/column-block codelets' tiles
SHAPES = [(1, 1), (1, 9), (9, 1), (5, 3), (64, 32), (33, 129), (8, 256), (17, 200)]


@pytest.fixture(scope="module")
def rt():
    r = Runtime("opencl", "cpu")
    yield r
    r.close()


def _pipelines(f) -> set:
    """The library operations run on Lift pipelines (the JIT runtime's LiftLibrary: shared by
    every function of the process, so it says what ran, not which function ran it)."""
    return {k[0] for c in f.specs.values() if c.gpu is not None and c.gpu.library is not None
            for k in c.gpu.library.pipelines}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_vector_products_run_on_lift_gemv(rt, dtype):
    before = set(rt.buffers)
    f = compile_source(GEMV, "f", gpu_runtime=rt)
    g = np.random.default_rng(14)
    tol = 1e-4 if dtype == "float32" else 1e-12
    for m, n in SHAPES + [tuple(int(v) for v in g.integers(1, 90, 2)) for _ in range(4)]:
        M = g.standard_normal((m, n)).astype(dtype)
        x, z = g.standard_normal(n).astype(dtype), g.standard_normal(m).astype(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the once-per-device tuning notice
            y, w, v = f(M, x, z)
        assert y.dtype == w.dtype == v.dtype == np.dtype(dtype)
        assert y.shape == (m,) and w.shape == (n,) and v.shape == (m,)
        np.testing.assert_allclose(y, M @ x, rtol=tol, atol=tol * n)
        np.testing.assert_allclose(w, z @ M, rtol=tol, atol=tol * m)
        np.testing.assert_allclose(v, 2 * (M @ x), rtol=tol, atol=tol * n)
    ops = _pipelines(f)
    assert {"gemv:N", "gemv:T"} <= ops  # both layouts ran on Lift pipelines
    rt.reset_stats()
    f(M, x, z)
    st = rt.stats()
    # up: M, x, z once each; back: the three results; nothing copied on the device, nothing on
    # the CPU (a zero fill and a GEMV per product, the doubling fused into a Lift map)
    assert (st["uploads"], st["downloads"], st["device_copies"], st["cpu_tasks"]) == (3, 3, 0, 0)
    assert st["kernels"] == 7
    assert not left_behind(rt, f, before=before)  # the zero-filled y's released


def test_gemv_uses_the_blas_codelets_where_sizes_divide():
    """Untuned: liftkit.blas's CPU defaults (row-blocks for A·x, column-blocks for Aᵀ·x) where
    the sizes are multiples of their blocks, the any-size derivation otherwise."""
    from liftkit.jit.gpu_library import _program
    for op, codelet in (("gemv:N", "row-blocks"), ("gemv:T", "column-blocks")):
        for dtype in ("float32", "float64"):
            _, derived, v = _program(op, dtype, {"M": 64, "N": 256}, "cpu")
            assert v.codelet == codelet and derived() is not None
            _, _, odd = _program(op, dtype, {"M": 33, "N": 129}, "cpu")
            assert odd.codelet == "glb"


def test_strided_operands_and_shape_errors(rt):
    f = compile_source(GEMV, "f", gpu_runtime=rt)
    g = np.random.default_rng(3)
    M, x, z = g.random((12, 10)), g.random(10), g.random(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, w, _ = f(M[::2, ::2], x[::2], z[::2])  # views Lift cannot index: NumPy on the host
    np.testing.assert_allclose(y, M[::2, ::2] @ x[::2])
    np.testing.assert_allclose(w, z[::2] @ M[::2, ::2])
    with pytest.raises(ValueError, match="line 8: shapes not aligned"):
        f(M, z, z)  # M @ z
    with pytest.raises(ValueError, match="line 9: shapes not aligned"):
        f(M, x, x)  # x @ M
    y, _, _ = f(M, x, z)  # the runtime is still consistent
    np.testing.assert_allclose(y, M @ x)


def test_whole_gpu_function(rt):
    g = compile_source(GEMV_FN, "g", gpu_runtime=rt)
    r = np.random.default_rng(7)
    M, x = r.random((31, 45)).astype(np.float32), r.random(45).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = g(M, x)
    np.testing.assert_allclose(y, M @ x, rtol=1e-5)
    # `return M @ x` is this function's own library call, not a host statement reading M and x
    plans = [c.gpu.plan for c in g.specs.values()]
    assert [lib.op for p in plans for lib in p.libraries] == ["gemv"]
    assert not any(a.arrays for p in plans for a in p.accesses)
    assert "gemv:N" in _pipelines(g)


def test_the_gpu_default_gemv_derivation_runs(rt, monkeypatch):
    """What a GPU runs untuned (liftkit.blas's group-rows GEMV: a work-group per row, a tree in
    local memory), run through the runtime on the CPU device: right, odd sizes on `glb`."""
    from liftkit.jit import gpu_library as gl
    plain = gl._program
    assert plain("gemv:N", "float32", {"M": 40, "N": 512}, "gpu")[2].codelet == "group-rows"
    monkeypatch.setattr(gl, "_program", lambda op, dtype, sizes, devkind, device=None, cuda=False:
                        plain(op, dtype, sizes, "gpu"))  # a GPU without a profile
    f = compile_source(GEMV, "f", gpu_runtime=rt)
    g = np.random.default_rng(2)
    for dtype, (m, n) in (("float32", (40, 512)), ("float64", (3, 256)), ("float64", (7, 300))):
        M = g.standard_normal((m, n)).astype(dtype)
        x, z = g.standard_normal(n).astype(dtype), g.standard_normal(m).astype(dtype)
        tol = 1e-4 if dtype == "float32" else 1e-12
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, w, _ = f(M, x, z)
        np.testing.assert_allclose(y, M @ x, rtol=tol, atol=tol * n)
        np.testing.assert_allclose(w, z @ M, rtol=tol, atol=tol * m)
    origins = {p.origin for c in f.specs.values() for k, p in c.gpu.library.pipelines.items()
               if k[0] == "gemv:N"}
    assert any(o.startswith("group-rows") for o in origins) and "glb()" in origins


def test_a_column_major_matrix_runs_as_the_other_layout(rt):
    """A Fortran-ordered M is Mᵀ stored row-major: M @ x runs GEMV T and x @ M GEMV N on it in
    place (no copy, no transfer beyond the operands' upload)."""
    f = compile_source(GEMV, "f", gpu_runtime=rt)
    g = np.random.default_rng(11)
    for m, n in ((1, 5), (6, 1), (13, 21), (64, 32)):
        M = np.asfortranarray(g.standard_normal((m, n)))
        x, z = g.standard_normal(n), g.standard_normal(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, w, v = f(M, x, z)
        np.testing.assert_allclose(y, M @ x, rtol=1e-12, atol=1e-12 * n)
        np.testing.assert_allclose(w, z @ M, rtol=1e-12, atol=1e-12 * m)
        np.testing.assert_allclose(v, 2 * (M @ x), rtol=1e-12, atol=1e-12 * n)
    keys = {(k[0], k[2]) for c in f.specs.values() if c.gpu is not None
            and c.gpu.library is not None for k in c.gpu.library.pipelines}
    assert ("gemv:T", (("M", 32), ("N", 64))) in keys  # M @ x on the stored 32×64 Mᵀ
    rt.reset_stats()
    f(M, x, z)
    st = rt.stats()
    assert (st["uploads"], st["downloads"], st["device_copies"], st["cpu_tasks"]) == (3, 3, 0, 0)
