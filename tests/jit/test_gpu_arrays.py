"""GPU arrays (CuPy, PyTorch: CUDA array interface or DLPack) as arguments of jitted functions
with GPU sections: used in place on the CUDA backend, results returned as arrays of the caller's
library without a download (``gpu`` marker); everything that cannot work is one TypeError
naming the argument (on the CPU, with stand-ins for GPU arrays)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

from .helpers import compile_source, left_behind  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())

STENCIL = """
import liftkit
def f(A, B):
    m, n = A.shape
    with liftkit.gpu():
        for i in prange(1, m - 1):
            for j in range(1, n - 1):
                B[i, j] = (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) / 5
    return B
"""

PAIRWISE = """
import liftkit
def f(X):
    n, d = X.shape
    D = np.empty((n, n))
    with liftkit.gpu():
        for i, j in PAR(Domain(n, n), shared=[D]):
            s = 0.0
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = math.sqrt(s)
    return D, D.shape[0] * 2
"""

HOST_READ = """
import liftkit
def f(A, B):
    s = A[0, 0]
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            B[i, 0] = A[i, 0] + s
    return B
"""


class _Fake:
    """Stands in for a CuPy array: device memory described by ``__cuda_array_interface__``."""

    def __init__(self, shape=(4, 4), typestr="<f8", strides=None, ptr=0x7F0000001000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "version": 3, "strides": strides}


class _FakeTorch:
    """Stands in for a CUDA PyTorch tensor: DLPack on device type 2 (kDLCUDA), no CUDA array
    interface."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *a, **k):
        raise BufferError("a stand-in")


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_gpu_arrays_refused_where_they_cannot_run_one_error_each():
    rt = Runtime("opencl", "cpu")
    try:
        f = compile_source(STENCIL, "f", gpu_runtime=rt)
        with pytest.raises(TypeError, match=r"^argument 'A' \(a \w+\._Fake in GPU memory\) needs "
                                            r"the CUDA task runtime|needs the CUDA task runtime"):
            f(_Fake(), np.zeros((4, 4)))
        with pytest.raises(TypeError, match=r"argument 'A'.*float16.*not supported"):
            f(_Fake(typestr="<f2"), np.zeros((4, 4)))
        with pytest.raises(TypeError, match=r"argument 'A'.*not C-contiguous"):
            f(_Fake(strides=(8, 32)), np.zeros((4, 4)))
        h = compile_source(HOST_READ, "f", gpu_runtime=rt)
        with pytest.raises(TypeError, match=r"argument 'A' \(.* in GPU memory\): line 7 uses its "
                                            r"data on the host"):
            h(_Fake(), np.zeros((4, 4)))
        g = compile_source("def g(x):\n    return x + 1.0\n", "g")  # a CPU-only function
        with pytest.raises(TypeError, match=r"argument 'x' .*has no GPU section"):
            g(_Fake())
        with pytest.raises(TypeError, match="argument 'x'"):
            g(_FakeTorch())
        out = f(np.ones((4, 4)), np.zeros((4, 4)))  # the function still works with NumPy arrays
        assert out[1, 1] == 1.0
        assert not left_behind(rt, f, h, g)  # nothing left behind by the refusals
    finally:
        rt.close()


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_host_uses_follow_views_and_copies_of_a_parameter():
    rt = Runtime("opencl", "cpu")
    try:
        f = compile_source("""
import liftkit
def f(A, B):
    V = A[1:]
    with liftkit.gpu():
        for i in prange(B.shape[0]):
            B[i] = A[i] * 2.0
    t = V[0]
    return B, A.shape[0]
""", "f", gpu_runtime=rt)
        f(np.ones(5), np.zeros(5))
        uses = f._last().gpu.plan.host_uses
        assert ("A", 11) in uses and all(n != "B" for n, _ in uses)  # B is only returned
    finally:
        rt.close()


def _cuda():
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return bool(cuda_devices())
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_cupy_and_torch_arrays_stay_on_the_device():
    cp = pytest.importorskip("cupy")
    cu = Runtime("cuda")
    try:
        f = compile_source(STENCIL, "f", gpu_runtime=cu)
        A = cp.asarray(np.random.default_rng(7).random((300, 200)))
        B = cp.zeros_like(A)
        cu.reset_stats()
        out = f(A, B)
        assert out is B  # the caller's array, written in place
        st = cu.stats()
        assert st["uploads"] == 0 and st["download_bytes"] <= 64, st  # the error flags only
        a = cp.asnumpy(A)
        ref = np.zeros_like(a)
        ref[1:-1, 1:-1] = (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2]
                           + a[1:-1, 2:]) / 5
        np.testing.assert_allclose(cp.asnumpy(B), ref)
        g = compile_source(PAIRWISE, "f", gpu_runtime=cu)
        X = np.random.default_rng(8).random((300, 3))
        cu.reset_stats()
        D, n2 = g(cp.asarray(X))
        assert isinstance(D, cp.ndarray) and n2 == 600
        st = cu.stats()
        assert st["download_bytes"] <= 64 and st["uploads"] == 0, st  # D never left the GPU
        np.testing.assert_allclose(cp.asnumpy(D), np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)))
        Dn, _ = g(X)  # NumPy in, NumPy out
        assert isinstance(Dn, np.ndarray)
        np.testing.assert_allclose(Dn, cp.asnumpy(D))
        with pytest.raises(TypeError, match="float16"):
            g(cp.ones((4, 3), cp.float16))
        mm = compile_source("""
import liftkit
def f(A, B):
    with liftkit.gpu():
        C = A @ B
    return C
""", "f", gpu_runtime=cu)
        Am = cp.asarray(np.random.default_rng(9).random((64, 32), dtype=np.float32))
        Bm = cp.asarray(np.random.default_rng(10).random((32, 48), dtype=np.float32))
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            C = mm(Am, Bm)
        assert isinstance(C, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(C), cp.asnumpy(Am) @ cp.asnumpy(Bm), rtol=1e-4)
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            Xt = torch.as_tensor(X, device="cuda")
            Dt, _ = g(Xt)
            assert isinstance(Dt, torch.Tensor) and Dt.is_cuda
            np.testing.assert_allclose(Dt.cpu().numpy(), Dn)
        # the calls left nothing in the runtime but each function's cleared error flags
        assert not left_behind(cu, f, g, mm)
    finally:
        cu.close()


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_arrays_a_function_only_returns_are_planned_to_stay_on_the_device():
    rt = Runtime("opencl", "cpu")
    try:
        g = compile_source(PAIRWISE, "f", gpu_runtime=rt)
        g(np.ones((5, 3)))
        assert g._last().gpu.plan.returned == {0: frozenset({"D"})}
        h = compile_source(PAIRWISE.replace("return D, D.shape[0] * 2", "return D, D[0, 0]"),
                           "f", gpu_runtime=rt)
        h(np.ones((5, 3)))  # the host reads D after the section: it comes back
        assert h._last().gpu.plan.returned == {0: frozenset()}
    finally:
        rt.close()


def test_gpu_matmul_takes_the_blas_profile_of_the_same_gpu_model():
    """A @ B in a section on the H100 runs the GEMM derivation liftkit.blas tuned there (its
    shipped profile), not the untuned default."""
    from types import SimpleNamespace

    from liftkit.jit.gpu_library import _profiled, blas_kind
    sizes = {"M": 4096, "K": 4096, "N": 4096}
    v = _profiled(blas_kind("mm", "float32"), sizes, SimpleNamespace(name="NVIDIA H100 80GB HBM3"))
    assert v is not None and v.codelet == "tiles"
    assert _profiled(blas_kind("mm", "float32"), sizes, SimpleNamespace(name="no such GPU")) is None


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_a_whole_gpu_function_returns_its_result_from_inside_the_section():
    rt = Runtime("opencl", "cpu")
    try:
        g = compile_source(PAIRWISE.replace("with liftkit.gpu():", "if True:"), "f",
                           gpu_runtime=rt, target="gpu")
        X = np.random.default_rng(1).random((6, 3))
        D, _ = g(X)
        np.testing.assert_allclose(D, np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)))
        assert g._last().gpu.plan.returned == {0: frozenset({"D"})}
    finally:
        rt.close()
