"""Accelerated sections of @jit (seed 003 §4.5.4, §5.8) through the task runtime, on the CPU
OpenCL device standing in for a GPU: kernels from parallel loops and element-wise statements,
host statements synchronised, errors at the host with the source line, the runtime's laziness
and its memory-pressure fallback seen through jitted code; CUDA with the `gpu` marker."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.jit import JitError  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

from .helpers import compile_source, held_flags, left_behind  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")

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

LIBRARY = """
import liftkit
def f(A, B, x, y):
    with liftkit.gpu():
        C = A @ B
        D = C * 2.0 + 1.0
        s = np.dot(x, y)
        t = np.sum(x * 3.0)
    return D, s, t
"""


@pytest.fixture(scope="module")
def rt():
    r = Runtime("opencl", "cpu")
    yield r
    r.close()


def gpu_fn(src: str, rt, name: str = "f", **kw):
    return compile_source(src, name, gpu_runtime=rt, **kw)


def test_parallel_loop_in_a_section_runs_as_a_kernel(rt):
    f = gpu_fn(STENCIL, rt)
    A = np.random.default_rng(1).random((40, 30))
    B = np.zeros_like(A)
    ref = B.copy()
    ref[1:-1, 1:-1] = (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]) / 5
    before, bufs = rt.stats()["kernels"], set(rt.buffers)
    out = f(A, B)
    assert out is not None and rt.stats()["kernels"] > before
    np.testing.assert_allclose(B, ref)
    assert "kernel void" in f.inspect_gpu() and "__global__" in f.inspect_gpu("cuda")
    assert not left_behind(rt, f, before=bufs)  # the section released everything but its
    assert len(held_flags(f)) == 1               # error flags, kept cleared for the next call


def test_par_domain_and_elementwise_chain_fused_into_one_kernel(rt):
    f = gpu_fn("""
import liftkit
def f(A, b, c):
    m, n = A.shape
    with liftkit.gpu():
        for i, j in PAR(Domain(m, n), shared=[A]):
            A[i, j] = A[i, j] * 2.0 + i - j
        D = A * b + c * 0.5 - np.sqrt(np.abs(A))
    return D
""", rt)
    A = np.random.default_rng(2).random((17, 9))
    b, c = np.arange(9.0), np.random.default_rng(3).random((17, 1))
    i, j = np.indices(A.shape)
    A2 = A * 2 + i - j
    ref = A2 * b + c * 0.5 - np.sqrt(np.abs(A2))
    np.testing.assert_allclose(f(A.copy(), b, c), ref)
    # the element-wise chain is one kernel (plus the user's loop)
    assert f.inspect_gpu().count("kernel void") == 2


def test_slice_store_reads_its_own_array_like_numpy(rt):
    f = gpu_fn("""
import liftkit
def f(a):
    with liftkit.gpu():
        a[1:] = a[:-1] + 1.0
    return a
""", rt)
    a = np.arange(8.0)
    ref = a.copy()
    ref[1:] = ref[:-1] + 1.0
    np.testing.assert_allclose(f(a.copy()), ref)


def test_gpu_begin_end_and_target_gpu(rt):
    f = gpu_fn("""
from liftkit.jit import gpu_begin, gpu_end
def f(x, y):
    n = x.shape[0]
    gpu_begin()
    for i in prange(n):
        y[i] = x[i] * x[i]
    gpu_end()
    s = 0.0
    for i in range(n):
        s += y[i]
    return s
""", rt)
    x = np.arange(6.0)
    assert f(x, np.zeros(6)) == pytest.approx(float((x * x).sum()))
    g = gpu_fn("""
def g(x):
    y = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        y[i] = math.exp(x[i]) if x[i] > 0 else -x[i]
    return y + 1.0
""", rt, "g", target="gpu")
    x = np.linspace(-1, 1, 11)
    np.testing.assert_allclose(g(x), np.where(x > 0, np.exp(x), -x) + 1.0)


def test_host_statements_in_a_section_see_kernel_results(rt):
    f = gpu_fn("""
import liftkit
def f(x, steps):
    n = x.shape[0]
    total = 0.0
    with liftkit.gpu():
        k = 0
        while x[0] < steps:
            for i in prange(n):
                x[i] = x[i] + 1.0
            total += x[n - 1]
            k += 1
    return total
""", rt)
    x = np.zeros(5)
    assert f(x, 3.0) == pytest.approx(6.0)
    np.testing.assert_allclose(x, 3.0)


def test_read_only_input_is_uploaded_once_and_dispatch_is_asynchronous(rt):
    f = gpu_fn("""
import liftkit
def f(a, out):
    n = a.shape[0]
    with liftkit.gpu():
        for k in range(10):
            for i in prange(n):
                out[i] = out[i] + a[i] * k
    return out
""", rt)
    a, out = np.arange(64.0), np.zeros(64)
    f(a, out.copy())  # compile and build first
    rt.reset_stats()
    f(a, out)
    s = rt.stats()
    np.testing.assert_allclose(out, a * 45)
    assert s["kernels"] >= 10 and s["uploads"] == 2  # a and out once each, not per kernel
    # out, once, at the end of the section; no error flags: every check was proved away, so
    # no kernel can set them and they are not read
    assert s["downloads"] == 1 and not any(k.fails for k in f._last().gpu.plan.kernels)
    g = gpu_fn("""
import liftkit
def g(a, idx, out):
    with liftkit.gpu():
        for i in prange(out.shape[0]):
            out[i] = a[idx[i]]
    return out
""", rt, "g")
    idx = np.arange(64)[::-1].copy()
    g(a, idx, out)
    rt.reset_stats()
    np.testing.assert_allclose(g(a, idx, out), a[::-1])
    assert rt.stats()["downloads"] == 2  # out and the flags a[idx[i]]'s check may set


def test_out_of_bounds_inside_a_section_is_an_index_error_with_the_line(rt):
    f = gpu_fn("""
import liftkit
def f(a, b, k):
    n = a.shape[0]
    with liftkit.gpu():
        for i in prange(n):
            b[i] = a[i + k]
    return b
""", rt)
    a = np.arange(10.0)
    np.testing.assert_allclose(f(a, np.zeros(10), 0), a)
    bufs = set(rt.buffers)
    with pytest.raises(IndexError, match=r"line 10: index 1[0-9] is out of bounds for axis 0 "
                                         r"with size 10"):
        f(a, np.zeros(10), 3)
    # nothing stale: the error flags kept for the next call are all clear (set ones are released)
    assert not left_behind(rt, f, before=bufs)
    assert all(not rt.read(i).any() for i in held_flags(f))
    np.testing.assert_allclose(f(a, np.zeros(10), 0), a)  # the next call works


def test_error_flags_kept_clear_between_calls_and_never_reused_once_set(rt):
    f = gpu_fn("""
import liftkit
def f(a, idx, b):
    with liftkit.gpu():
        for i in prange(b.shape[0]):
            b[i] = a[idx[i]]
    return b
""", rt)
    a, b = np.arange(10.0), np.zeros(4)
    ok, bad = np.array([1, 2, 3, 4]), np.array([1, 2, 30, 4])
    f(a, ok, b)
    (flags,) = held_flags(f)
    rt.reset_stats()
    f(a, ok, b)  # the next call takes the same cleared flags: no allocation, no clearing kernel
    assert held_flags(f) == {flags} and rt.stats()["kernels"] == 1
    with pytest.raises(IndexError, match=r"line 9: index 30 is out of bounds for axis 0 with "
                                         r"size 10"):
        f(a, bad, b)  # only the kernel can see this index
    assert flags not in rt.vars and not held_flags(f)  # set flags are released, not reused
    np.testing.assert_allclose(f(a, ok, np.zeros(4)), a[ok])  # a fresh, clear buffer
    (again,) = held_flags(f)
    assert again != flags and not rt.read(again).any()


def test_raise_and_zero_division_inside_a_kernel(rt):
    f = gpu_fn("""
import liftkit
def f(a, d):
    with liftkit.gpu():
        for i in prange(a.shape[0]):
            if a[i] < 0:
                raise ValueError("negative input")
            a[i] = a[i] // d
    return a
""", rt)
    np.testing.assert_allclose(f(np.array([4, 9, -7 + 8]), 2), [2, 4, 0])
    with pytest.raises(ValueError, match="negative input"):
        f(np.array([1, -1]), 2)
    with pytest.raises(ZeroDivisionError, match="line 11"):
        f(np.array([1, 2]), 0)
    np.testing.assert_array_equal(f(np.array([-7 + 0, 7]) * 0 + np.array([7, -7]) * 0 + 7, -2),
                                  [-4, -4])


@pytest.mark.parametrize("body, message", [
    ("for i in prange(n):\n            t = a[i:]\n            b[i] = t[0]",
     "line 10: array operations and views cannot run inside a GPU parallel loop"),
    ("for i in prange(n):\n            b[i] = np.sum(a)",
     "line 10: np.sum of arrays cannot run inside a GPU parallel loop (line 9)"),
    ("for i in prange(n):\n            t = np.zeros(3)",
     "line 10: arrays cannot be allocated inside a parallel loop"),
    ("for i in prange(n):\n            z = a[i] * 1j\n            b[i] = z.real",
     "line 10: complex numbers cannot be used in a GPU kernel"),
])
def test_code_that_cannot_run_on_a_gpu_is_one_error_naming_the_line(rt, body, message):
    f = gpu_fn(f"""
import liftkit
def f(a, b):
    n = a.shape[0]
    with liftkit.gpu():
        {body}
    return b
""", rt)
    with pytest.raises(JitError) as e:
        f(np.ones(4), np.zeros(4))
    assert message in str(e.value) and "Traceback" not in str(e.value)


def test_section_markers_misused(rt):
    f = gpu_fn("""
from liftkit.jit import gpu_begin
def f(a):
    gpu_begin()
    a[0] = 1.0
    return a
""", rt)
    with pytest.raises(JitError, match="line 7: gpu_begin\\(\\) needs a gpu_end\\(\\)"):
        f(np.zeros(2))
    g = gpu_fn("""
import liftkit
def g(a):
    for k in range(3):
        with liftkit.gpu():
            break
    return a
""", rt, "g")
    with pytest.raises(JitError, match="line 9: break cannot leave an accelerated section"):
        g(np.zeros(2))


def test_memory_pressure_through_a_section_completes_on_the_cpu():
    small = Runtime("opencl", "cpu", memory_limit=3 * 256 * 8)
    try:
        f = gpu_fn("""
import liftkit
def f(a, b, c, d):
    n = a.shape[0]
    with liftkit.gpu():
        for i in prange(n):
            d[i] = a[i] + b[i] + c[i]
        for i in prange(n):
            a[i] = d[i] * 2.0
    return d
""", small)
        a, b, c = (np.full(256, float(k + 1)) for k in range(3))
        d = np.zeros(256)
        f(a, b, c, d)  # four arrays never fit in room for three: the first loop runs on the CPU
        np.testing.assert_allclose(d, 6.0)
        np.testing.assert_allclose(a, 12.0)
        assert small.stats()["cpu_tasks"] >= 1 and not left_behind(small, f)
    finally:
        small.close()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_library_calls_run_on_lift_kernels(rt, dtype):
    from liftkit.jit.gpu_library import TuningNotice
    f = gpu_fn(LIBRARY, rt)
    g = np.random.default_rng(5)
    A, B = g.random((24, 16)).astype(dtype), g.random((16, 8)).astype(dtype)
    x, y = g.random(50).astype(dtype), g.random(50).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    with pytest.warns(TuningNotice, match="nothing tuned for mm"):
        D, s, t = f(A, B, x, y)
    np.testing.assert_allclose(D, (A @ B) * 2 + 1, rtol=tol)
    assert s == pytest.approx(float(x @ y), rel=tol) and t == pytest.approx(3 * float(x.sum()),
                                                                            rel=tol)
    rt.reset_stats()
    f(A, B, x, y)
    st = rt.stats()
    # inputs up once; back: D and the two scalars (C and x*3 die in the section); the error
    # flags, kept clear since the last call, need no download: no kernel here could set them
    assert st["uploads"] == 4 and st["downloads"] == 3
    # strided operands run on the host copies, still right
    D2, s2, _ = f(A[:, ::2], B[::2], x[::2], y[::2])
    np.testing.assert_allclose(D2, (A[:, ::2] @ B[::2]) * 2 + 1, rtol=tol)
    assert s2 == pytest.approx(float(x[::2] @ y[::2]), rel=tol)


def test_library_shape_errors_are_numpy_errors(rt):
    f = gpu_fn(LIBRARY, rt)
    with pytest.raises(ValueError, match="line 8: shapes not aligned"):
        f(np.ones((3, 4)), np.ones((3, 4)), np.ones(3), np.ones(3))


def _cuda_gpus():
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return cuda_devices()
    except Exception:  # noqa: BLE001
        return ()


_KERNEL_SOURCES = [STENCIL, LIBRARY, """
import liftkit
def f(a, b, k):
    with liftkit.gpu():
        for i in prange(a.shape[0]):
            x = a[i] // k + a[i] % k + a[i] ** 2 + min(a[i], k) + abs(a[i])
            while x > 100:
                x = x // 2
            b[i] = x if x > 0 else -x
    return b
"""]


def test_cuda_dialect_kernels_compile_with_nvrtc(rt):
    """NVRTC (in its compile server) beside PoCL's compiler in one process."""
    pytest.importorskip("cuda.bindings", reason="cuda-python is not installed")
    import warnings

    from liftkit.backends.cuda import compile_cuda
    sources = []
    for k, src in enumerate(_KERNEL_SOURCES):
        f = gpu_fn(src, rt)
        args = [(np.ones((6, 5)), np.zeros((6, 5))),
                (np.ones((4, 4)), np.ones((4, 4)), np.ones(4), np.ones(4)),
                (np.arange(8), np.zeros(8, dtype=np.int64), 3)][k]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(*args)
        sources += [kern.source("cuda") for kern in f._last().gpu.plan.kernels]
    assert len(sources) >= 4
    for s in sources:
        assert compile_cuda(s, "compute_90a").ptx
    f = gpu_fn(STENCIL.replace("/ 5", "/ 4"), rt)  # a new build: PoCL still builds after NVRTC
    A = np.random.default_rng(3).random((9, 7))
    B = f(A, np.zeros_like(A))
    np.testing.assert_allclose(B[1:-1, 1:-1], (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1]
                                               + A[1:-1, :-2] + A[1:-1, 2:]) / 4)


def _sections_then_an_error_then_a_clean_call(rt) -> None:
    """Kernels, library calls, a kernel's IndexError and the next call on one runtime: results
    right, and nothing stale left in its tables (only each function's cleared error flags)."""
    import warnings

    f = compile_source(STENCIL, "f", gpu_runtime=rt)
    A = np.random.default_rng(7).random((300, 200))
    B = np.zeros_like(A)
    f(A, B)
    ref = np.zeros_like(A)
    ref[1:-1, 1:-1] = (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2]
                       + A[1:-1, 2:]) / 5
    np.testing.assert_allclose(B, ref)
    g = compile_source(LIBRARY, "f", gpu_runtime=rt)
    rng = np.random.default_rng(8)
    X, Y, x = rng.random((256, 128)), rng.random((128, 64)), rng.random(4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        D, s, t = g(X, Y, x, x)
    np.testing.assert_allclose(D, (X @ Y) * 2 + 1, rtol=1e-10)
    assert abs(s - float(x @ x)) < 1e-8 * abs(s) and abs(t - 3 * float(x.sum())) < 1e-8 * t
    h = compile_source("""
import liftkit
def h(a, b, k):
    with liftkit.gpu():
        for i in prange(a.shape[0]):
            b[i] = a[i + k]
    return b
""", "h", gpu_runtime=rt)
    with pytest.raises(IndexError, match="line 9: index"):
        h(np.arange(10.0), np.zeros(10), 1)
    assert not left_behind(rt, f, g, h) and not held_flags(h)  # the set flags were released
    np.testing.assert_allclose(h(np.arange(10.0), np.zeros(10), 0), np.arange(10.0))
    # the error-flag buffers the functions keep (gpu_host.ErrorFlags) are all that is left,
    # one each, all clear; every other buffer of the four calls was released
    assert not left_behind(rt, f, g, h)
    kept = held_flags(f) | held_flags(g) | held_flags(h)
    assert len(kept) == 3 and all(not rt.read(i).any() for i in kept)
    assert sorted(v for b in rt.buffers.values() for v in b.vars) == sorted(kept)


def test_sections_error_and_next_call_leave_nothing_stale_on_the_cpu_device():
    r = Runtime("opencl", "cpu")
    try:
        _sections_then_an_error_then_a_clean_call(r)
    finally:
        r.close()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_gpus(), reason="no CUDA GPU")
def test_sections_on_cuda():
    cu = Runtime("cuda")
    try:
        _sections_then_an_error_then_a_clean_call(cu)
    finally:
        cu.close()


def test_np_empty_results_are_not_uploaded_but_loops_keep_earlier_writes(rt):
    f = gpu_fn("""
import liftkit
def f(x):
    n = x.shape[0]
    y = np.empty(n)
    with liftkit.gpu():
        for i in prange(n):
            y[i] = x[i] * 2.0
    return y
""", rt)
    x = np.arange(16.0)
    f(x)
    rt.reset_stats()
    np.testing.assert_allclose(f(x), 2 * x)
    assert rt.stats()["uploads"] == 1  # x only: y's contents are undefined until written
    g = gpu_fn("""
import liftkit
def g(n):
    d = np.empty(n)
    for it in range(2):
        with liftkit.gpu():
            for i in prange(it, n, 2):
                d[i] = i * 1.0
    return d
""", rt, "g")
    np.testing.assert_allclose(g(9), np.arange(9.0))


def test_elementwise_chains_run_as_lift_maps(rt):
    import warnings

    from liftkit.jit.dispatch import RUNTIME
    f = gpu_fn("""
import liftkit
def f(A, B, s, k):
    with liftkit.gpu():
        D = A * s + np.sqrt(B) - k     # same shapes: map(f) << zip(A, B) on Lift
        E = A * B[0]                   # broadcasting: the jit's own kernel
    return D, E
""", rt)
    A, B = np.random.default_rng(11).random((6, 5)), np.random.default_rng(12).random((6, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the default-derivation notice (once per process)
        D, E = f(A, B, 1.5, 3)
    np.testing.assert_allclose(D, A * 1.5 + np.sqrt(B) - 3)
    np.testing.assert_allclose(E, A * B[0])
    lifted = [k.lift for k in f._last().gpu.plan.kernels]
    assert lifted[0] is not None and "sqrt" in lifted[0].body
    assert any(key[0] == "map:" + lifted[0].body for key in RUNTIME.library.pipelines)


def test_kernel_errors_come_first_and_sections_load_from_the_disk_cache(rt, tmp_path,
                                                                        monkeypatch):
    from liftkit.jit.dispatch import Runtime as JitRuntime
    monkeypatch.setenv("LIFTKIT_JIT_CACHE", str(tmp_path))
    src = """
import liftkit
def f(a, b):
    with liftkit.gpu():
        for i in prange(b.shape[0]):
            b[i] = a[i + 1] * 2.0
        c = a[1:] * 3.0 + b
    return c
"""
    a = np.arange(10.0)
    for k in range(2):
        f = gpu_fn(src, rt, cache=True, runtime=JitRuntime())
        # the kernel's IndexError (line 9) is raised, not the later host broadcast error
        with pytest.raises(IndexError, match="line 9: index 10 is out of bounds"):
            f(a, np.zeros(10))
        b = np.zeros(9)
        np.testing.assert_allclose(f(a, b), a[1:] * 3 + a[1:] * 2)
        assert f._last().from_cache == (k == 1)


def test_scratch_arrays_allocated_before_a_section_are_not_downloaded(rt):
    f = gpu_fn("""
import liftkit
def f(x):
    n = x.shape[0]
    t = np.empty(n)
    y = np.empty(n)
    with liftkit.gpu():
        for i in prange(n):
            t[i] = x[i] * 2.0
        for i in prange(n):
            y[i] = t[i] + 1.0
    return y
""", rt)
    x = np.arange(1000.0)
    f(x)
    rt.reset_stats()
    np.testing.assert_allclose(f(x), 2 * x + 1)
    assert rt.stats()["download_bytes"] < 2 * x.nbytes  # y (and the error flags), not t
    g = gpu_fn("""
import liftkit
def g(x):
    n = x.shape[0]
    acc = np.zeros(n)
    for it in range(3):
        with liftkit.gpu():
            for i in prange(n):
                acc[i] = acc[i] + x[i]
    s = 0.0
    return x
""", rt, "g")
    h = gpu_fn("""
import liftkit
def h(x):
    n = x.shape[0]
    acc = np.zeros(n)
    out = np.zeros(n)
    for it in range(3):
        with liftkit.gpu():
            for i in prange(n):
                acc[i] = acc[i] + x[i]
                out[i] = acc[i]
    return out
""", rt, "h")
    np.testing.assert_allclose(g(x), x)
    np.testing.assert_allclose(h(x), 3 * x)  # a section in a loop keeps its arrays' values


def test_an_array_made_in_a_section_and_copied_to_an_outer_name_comes_back(rt):
    """``r = (1 - d) / n + d * (M @ r)`` in a loop: each new r is made in the section and
    only its copy to ``r`` (a name also holding host memory) is used later."""
    f = gpu_fn("""
import liftkit
def f(M, d, niter):
    n = M.shape[0]
    r = np.ones(n) / n
    with liftkit.gpu():
        for it in range(niter):
            r = (1.0 - d) / n + d * (M @ r)
    return r
""", rt)
    M = np.random.default_rng(4).random((32, 32))
    r = np.ones(32) / 32
    for _ in range(3):
        r = 0.15 / 32 + 0.85 * (M @ r)
    np.testing.assert_allclose(f(M, 0.85, 3), r)


def test_bounds_checks_of_a_loop_variable_index_move_before_the_loop(rt):
    """spmv's inner loop: data[k] and indices[k] are checked once per row (first and last k),
    x[indices[k]] per element; a range reaching past the arrays still raises the exact error."""
    f = gpu_fn("""
import liftkit
def f(data, indices, indptr, x, y):
    with liftkit.gpu():
        for i in prange(y.shape[0]):
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * x[indices[k]]
            y[i] = s
    return y
""", rt)
    g = np.random.default_rng(5)
    n, per = 40, 3
    indptr = np.arange(0, n * per + 1, per)
    indices, data, x = g.integers(0, n, n * per), g.random(n * per), g.random(n)
    y = f(data, indices, indptr, x, np.zeros(n))
    np.testing.assert_allclose(y, (data * x[indices]).reshape(n, per).sum(1))
    src = f.inspect_gpu("cuda")
    fast = src.split("} else {")[0]
    assert "< v1_data_n0 && " in src and "v1_data_n0)" not in fast.split("for (long t")[-1]
    bad = indptr.copy()
    bad[-1] += 2  # the last row reaches past data and indices
    with pytest.raises(IndexError, match=r"line 11: index 120 is out of bounds for axis 0 with "
                                         r"size 120"):
        f(data, indices, bad, x, np.zeros(n))
    # x[indices[k]]'s check waits for the loop's end (the body only sums): no early exit in
    # the loop, a failing load reads 0, and the first failure is the one reported
    loop = fast.split("for (long t")[-1]  # the loop, then the report of its failure
    assert loop.count("return;") == 1 and "? v2_x_d[" in loop
    wrong = indices.copy()
    wrong[7], wrong[8] = 99, -70
    with pytest.raises(IndexError, match=r"line 11: index 99 is out of bounds for axis 0 with "
                                         r"size 40"):
        f(data, wrong, indptr, x, np.zeros(n))
    wrong[7] = -3  # negative indices wrap as in Python
    y = f(data, np.where(wrong < -40, 0, wrong), indptr, x, np.zeros(n))
    np.testing.assert_allclose(y[2], data[6:9] @ x[[wrong[6], -3, 0]])
    g = gpu_fn("""
import liftkit
def g(a, idx, out):
    with liftkit.gpu():
        for i in prange(out.shape[0]):
            for k in range(3):
                out[i, k] = a[idx[i, k]]
    return out
""", rt, "g")
    g(np.ones(3), np.zeros((2, 3), np.int64), np.zeros((2, 3)))
    assert "_a = 0L" not in g.inspect_gpu("cuda")  # a loop that stores checks as it goes
    with pytest.raises(IndexError, match=r"line 10: index 5 is out of bounds"):
        g(np.ones(3), np.array([[0, 5, 9], [0, 0, 0]]), np.zeros((2, 3)))  # a store: not deferred
