"""Lanes sharing a reduction loop (gpu_lanes.lane_plan): on CUDA a group of a warp's lanes
takes one iteration of a parallel loop whose work is a sum over contiguous elements (CSR's
``for k in range(indptr[i], indptr[i + 1])``), the partial sums meeting through shuffles.
Which loops take it is checked on the CUDA sources written here (NVRTC compiles them); the
OpenCL kernels are unchanged and run on the CPU device; results, the first failing index and
odd grids on a GPU (`gpu` marker)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

from .helpers import compile_source  # noqa: E402

pytestmark = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device")

SPMV = """
import liftkit
def f(data, indices, indptr, x, y):
    n = indptr.shape[0] - 1
    with liftkit.gpu():
        for i in prange(n):
            s = data[0] * 0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * x[indices[k]]
            y[i] = s
    return y
"""

ROWS = """
import liftkit
def f(A, r, r2):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 0.0
            s2 = 0.0
            for j in range(A.shape[1] // 2):
                v = A[i, j]
                s += v
                s2 += v * v
            r[i] = s
            r2[i] = s2
    return r, r2
"""

# each of these keeps one work-item per iteration
NOT_SHARED = {
    "columns (neighbouring work-items read neighbours already)": """
import liftkit
def f(MT, r, out):
    n = MT.shape[0]
    with liftkit.gpu():
        for i in prange(n):
            s = 0.0
            for j in range(n):
                s += MT[j, i] * r[j]
            out[i] = s
    return out
""",
    "a value carried between iterations": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 0.0
            t = 1.0
            for j in range(A.shape[1]):
                s += A[i, j] * t
                t = A[i, j]
            out[i] = s
    return out
""",
    "a store before the loop": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            out[i] = 0.0
            s = 0.0
            for j in range(A.shape[1]):
                s += A[i, j]
            out[i] = s
    return out
""",
    "the loop variable used after the loop": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 0.0
            j = 0
            for j in range(A.shape[1]):
                s += A[i, j]
            out[i] = s + j
    return out
""",
    "a short loop of known length": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 0.0
            for j in range(3):
                s += A[i, j]
            out[i] = s
    return out
""",
    "a sum the bounds read": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 2.0
            for j in range(int(s), A.shape[1]):
                s += A[i, j]
            out[i] = s
    return out
""",
    "no sum": """
import liftkit
def f(A, out):
    with liftkit.gpu():
        for i in prange(A.shape[0]):
            s = 0.0
            for j in range(A.shape[1]):
                s = A[i, j]
            out[i] = s
    return out
""",
}


def csr(rng, n, lens, dtype=np.float64, ncols=None):
    """A CSR matrix with the given row lengths, random columns and values."""
    lens = np.asarray(lens, np.int64)
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    ncols = ncols or n
    indices = rng.integers(0, ncols, int(indptr[-1])).astype(np.int64)
    data = (rng.random(int(indptr[-1])) * 10).astype(dtype) if dtype != np.int64 else \
        rng.integers(-50, 50, int(indptr[-1])).astype(np.int64)
    x = (rng.random(ncols) * 10).astype(dtype) if dtype != np.int64 else \
        rng.integers(-50, 50, ncols).astype(np.int64)
    return data, indices, indptr, x, np.zeros(n, dtype)


def ref_spmv(data, indices, indptr, x, y=None):
    n = indptr.shape[0] - 1
    return np.array([np.dot(data[indptr[i]:indptr[i + 1]], x[indices[indptr[i]:indptr[i + 1]]])
                     for i in range(n)], dtype=data.dtype)


@pytest.fixture(scope="module")
def rt():
    r = Runtime("opencl", "cpu")
    yield r
    r.close()


def _cuda_sources(src, args, rt, **kw):
    f = compile_source(src, "f", gpu_runtime=rt, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(*args)
    return out, [k.source("cuda") for k in f._last().gpu.plan.kernels], \
        [k.source("opencl") for k in f._last().gpu.plan.kernels]


def test_csr_and_row_sums_share_their_loop_on_cuda_and_run_unchanged_on_opencl(rt):
    rng = np.random.default_rng(0)
    args = csr(rng, 50, rng.integers(0, 40, 50))
    y, cu, cl = _cuda_sources(SPMV, args, rt)
    np.testing.assert_allclose(y, ref_spmv(*args), rtol=1e-12)
    assert "__shfl_xor_sync" in cu[0] and "lk_lane" in cu[0]
    assert "lk_lane" not in cl[0]
    A = rng.random((20, 64))
    (r, r2), cu, _ = _cuda_sources(ROWS, (A, np.zeros(20), np.zeros(20)), rt)
    np.testing.assert_allclose(r, A[:, :32].sum(1))
    np.testing.assert_allclose(r2, (A[:, :32] ** 2).sum(1))
    assert cu[0].count("__shfl_xor_sync(lk_mask, v") == 2  # both sums
    _, cu, _ = _cuda_sources(SPMV, args, rt, passes={"lanes": False})
    assert "lk_lane" not in cu[0]
    _, cu, _ = _cuda_sources(SPMV, args, rt, passes={"lanes": 4})
    assert "int lk_g = 4;" in cu[0]
    from liftkit.jit import JitError
    with pytest.raises(JitError, match=r"passes\['lanes'\] must be True, False or a power of "
                                       r"two up to 32, not 12"):
        _cuda_sources(SPMV, args, rt, passes={"lanes": 12})


@pytest.mark.parametrize("why", sorted(NOT_SHARED))
def test_loops_lanes_cannot_share_keep_one_work_item_per_iteration(rt, why):
    A = np.random.default_rng(1).random((16, 16))
    args = (A, np.arange(16.0), np.zeros(16)) if "columns" in why else (A, np.zeros(16))
    _, cu, _ = _cuda_sources(NOT_SHARED[why], args, rt)
    assert all("lk_lane" not in s for s in cu)


def test_lane_kernels_compile_with_nvrtc(rt):
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed")
    from liftkit.backends.cuda import compile_cuda
    rng = np.random.default_rng(2)
    args = csr(rng, 30, rng.integers(0, 9, 30))
    for lanes in (None, 2, 32):
        _, cu, _ = _cuda_sources(SPMV, args, rt, passes={"lanes": lanes})
        assert compile_cuda(cu[0], "compute_90").ptx
    iargs = csr(rng, 30, rng.integers(0, 9, 30), np.int64)
    _, cu, _ = _cuda_sources(SPMV, iargs, rt)
    assert "lk_lane" in cu[0] and compile_cuda(cu[0], "compute_90").ptx


def _cuda_gpus():
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return cuda_devices()
    except Exception:  # noqa: BLE001
        return ()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_gpus(), reason="no CUDA GPU")
def test_lanes_on_cuda_results_errors_and_odd_grids():
    cu = Runtime("cuda")
    rng = np.random.default_rng(3)
    try:
        for lanes in (None, 2, 32):
            f = compile_source(SPMV, "f", gpu_runtime=cu, passes={"lanes": lanes})
            for n, lens in ((2000, rng.integers(0, 40, 2000)),  # short rows, some empty
                            (300, rng.integers(0, 2000, 300)),  # long rows
                            (5, [3, 0, 70, 1, 9]),  # a block of 5 threads: one lane each
                            (48, rng.integers(15, 25, 48)),  # 48 threads: a warp and a half
                            (257, rng.integers(0, 13, 257))):  # a block of 1 thread at the end
                args = csr(rng, n, lens)
                np.testing.assert_allclose(f(*args), ref_spmv(*args), rtol=1e-12, atol=1e-9)
            iargs = csr(rng, 999, rng.integers(0, 30, 999), np.int64)
            np.testing.assert_array_equal(f(*iargs), ref_spmv(*iargs))
            data, indices, indptr, x, y = csr(rng, 100, np.full(100, 40))
            indices[indptr[7] + 3] = 1000003  # the first failure of row 7
            indices[indptr[7] + 9] = 1000009
            indices[indptr[7] + 30] = 1000030
            with pytest.raises(IndexError, match="index 1000003 is out of bounds for axis 0 "
                                                 "with size 100"):
                f(data, indices, indptr, x, y)
            args = csr(rng, 64, rng.integers(0, 50, 64))  # the next call is clean
            np.testing.assert_allclose(f(*args), ref_spmv(*args), rtol=1e-12)
    finally:
        cu.close()
