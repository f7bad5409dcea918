"""The task runtime (seed 003 ch. 7) on PoCL's CPU device standing in for a GPU: asynchronous
dispatch, lazy transfers, copy-on-potential-write, memory pressure with the CPU fallback, and
the same logic on CUDA where a GPU is present."""

from __future__ import annotations

import time

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Kernel, Runtime, RuntimeError_  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")

SCALE = Kernel("scale", {
    "opencl": """kernel void scale(global double* x, long xo, double a) {
        long i = get_global_id(0); x[xo + i] *= a; }""",
    "cuda": """extern "C" __global__ void scale(double* x, long xo, double a) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x; x[xo + i] *= a; }"""})

ADD = Kernel("add", {
    "opencl": """kernel void add(global const double* x, long xo, global double* y, long yo) {
        long i = get_global_id(0); y[yo + i] += x[xo + i]; }""",
    "cuda": """extern "C" __global__ void add(const double* x, long xo, double* y, long yo) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x; y[yo + i] += x[xo + i]; }"""})

FILL = Kernel("fill", {
    "opencl": """kernel void fill(global double* y, long yo, double v) {
        y[yo + get_global_id(0)] = v; }""",
    "cuda": """extern "C" __global__ void fill(double* y, long yo, double v) {
        y[yo + blockIdx.x * (long)blockDim.x + threadIdx.x] = v; }"""})

SPIN = Kernel("spin", {"opencl": """kernel void spin(global double* y, long yo, long n) {
    double s = 0.0;
    for (long k = 0; k < n; k++) s = s * 0.999999 + (double)k;
    y[yo + get_global_id(0)] = s; }"""})


@pytest.fixture
def rt():
    r = Runtime("opencl", "cpu")
    yield r
    r.close()


def test_lazy_uploads_and_downloads(rt):
    a = np.arange(16.0)
    b = np.ones(16)
    va, vb = rt.submit(a), rt.submit(b)
    for _ in range(10):  # a read-only input used by 10 tasks is uploaded once
        rt.launch(ADD, (16,), [va, vb], reads=[va, vb], writes=[vb])
    s = rt.stats()
    assert s["uploads"] == 2 and s["downloads"] == 0 and s["kernels"] == 10
    out = rt.read(vb)
    np.testing.assert_allclose(out, 1 + 10 * np.arange(16.0))
    rt.read(vb)
    rt.read(va)  # never written on the device: the host copy is current, nothing to fetch
    s = rt.stats()
    assert s["downloads"] == 1 and s["download_bytes"] == b.nbytes
    assert out.flags.writeable is False


def test_same_array_is_one_variable_and_views_share_its_buffer(rt):
    a = np.arange(12.0)
    assert rt.submit(a) is rt.submit(a)
    whole, tail = rt.submit(a), rt.submit(a[4:])
    assert whole.buffer == tail.buffer and tail.offset == 32
    rt.launch(SCALE, (8,), [tail, 2.0], writes=[tail])
    np.testing.assert_allclose(rt.read(whole), np.r_[np.arange(4.0), 2 * np.arange(4.0, 12.0)])
    assert rt.stats()["uploads"] == 1


def test_overlapping_ranges_merge(rt):
    base = np.arange(10.0)
    lo = rt.submit(base[:6])
    rt.launch(SCALE, (6,), [lo, 10.0], writes=[lo])
    hi = rt.submit(base[3:])  # overlaps lo's buffer: written back, one buffer covers both
    assert hi.buffer == rt.vars[lo.id].buffer
    rt.launch(SCALE, (7,), [hi, -1.0], writes=[hi])
    ref = np.arange(10.0)
    ref[:6] *= 10
    ref[3:] *= -1
    np.testing.assert_allclose(rt.read(lo), ref[:6])
    np.testing.assert_allclose(rt.read(hi), ref[3:])


def test_dispatch_is_asynchronous(rt):
    y = rt.empty((64,), np.float64)
    rt.launch(SPIN, (64,), [y, np.int64(1)], writes=[y])  # build the kernel before timing
    rt.wait_all()
    t0 = time.perf_counter()
    eid = rt.launch(SPIN, (64,), [y, np.int64(6_000_000)], writes=[y])
    enqueue = time.perf_counter() - t0
    pending = not rt.event_done(eid)
    t1 = time.perf_counter()
    out = rt.read(y)  # blocks here
    wait = time.perf_counter() - t1
    assert pending and rt.event_done(eid)
    assert enqueue < wait
    assert np.isfinite(out).all()


def test_device_only_arrays_and_overwrites(rt):
    y = rt.empty((32,), np.float64)
    rt.launch(FILL, (32,), [y, 3.5], writes=[y], overwrites=[y])
    host = np.zeros(32)
    h = rt.submit(host)
    rt.launch(FILL, (32,), [h, 1.0], writes=[h], overwrites=[h])  # whole array written: no upload
    rt.launch(ADD, (32,), [y, h], reads=[y, h], writes=[h])
    assert rt.stats()["uploads"] == 0
    np.testing.assert_allclose(rt.read(h), 4.5)
    np.testing.assert_allclose(host, 4.5)  # the host copy is the user's array


def test_copy_on_potential_write(rt):
    a = np.arange(8.0)
    va, out = rt.submit(a), rt.submit(np.zeros(8))
    c1 = rt.copy(va)
    rt.launch(ADD, (8,), [c1, out], reads=[c1, out], writes=[out])  # c1 only read: still shared
    c2 = rt.copy(va)
    np.testing.assert_allclose(rt.read(c2), np.arange(8.0))
    assert rt.stats()["cow_copies"] == 0  # nothing written: nothing copied
    rt.launch(SCALE, (8,), [va, 3.0], writes=[va])  # the source may be written: copies made
    s = rt.stats()
    assert s["cow_deferred"] == 2 and s["cow_copies"] == 2
    np.testing.assert_allclose(rt.read(va), 3 * np.arange(8.0))
    np.testing.assert_allclose(rt.read(c1), np.arange(8.0))
    np.testing.assert_allclose(rt.read(c2), np.arange(8.0))
    np.testing.assert_allclose(rt.read(out), np.arange(8.0))
    c3 = rt.copy(va)
    rt.launch(SCALE, (8,), [c3, 0.5], writes=[c3])  # writing the copy leaves the source alone
    np.testing.assert_allclose(rt.read(c3), 1.5 * np.arange(8.0))
    np.testing.assert_allclose(rt.read(va), 3 * np.arange(8.0))
    assert rt.stats()["cow_copies"] == 3


def test_host_writes_invalidate_the_device_copy(rt):
    a = np.zeros(8)
    va = rt.submit(a)
    rt.launch(FILL, (8,), [va, 2.0], writes=[va])
    rt.write(va, np.arange(8.0))
    rt.launch(SCALE, (8,), [va, 2.0], writes=[va])
    np.testing.assert_allclose(rt.read(va), 2 * np.arange(8.0))


def test_memory_pressure_evicts_lru_and_falls_back_to_the_cpu():
    n = 1024
    rt = Runtime("opencl", "cpu", memory_limit=3 * n * 8)  # room for three arrays
    try:
        arrays = [np.full(n, float(k + 1)) for k in range(6)]
        vs = [rt.submit(a) for a in arrays]
        for v in vs:  # 6 arrays through a device that holds 3: LRU ones written back
            rt.launch(SCALE, (n,), [v, 2.0], writes=[v])
        for v in vs:  # vs[0] becomes 4, then each other one gains 4
            rt.launch(ADD, (n,), [vs[0], v], reads=[vs[0], v], writes=[v])
        s = rt.stats()
        assert s["evictions"] >= 3 and s["writebacks"] >= 3 and s["peak_bytes"] <= 3 * n * 8
        for k, v in enumerate(vs):
            np.testing.assert_allclose(rt.read(v), 4.0 if k == 0 else 2.0 * (k + 1) + 4.0)
        big = rt.submit(np.ones(4 * n))  # larger than the limit: runs on the CPU
        rt.launch(SCALE, (4 * n,), [big, 5.0], writes=[big])
        assert rt.stats()["cpu_tasks"] == 1
        np.testing.assert_allclose(rt.read(big), 5.0)
        rt.launch(ADD, (n,), [vs[1], vs[2]], reads=[vs[1], vs[2]], writes=[vs[2]])  # still works
        np.testing.assert_allclose(rt.read(vs[2]), 18.0)
        cuda_only = Kernel("scale", {"cuda": SCALE.source("cuda")})  # no OpenCL C twin
        with pytest.raises(RuntimeError_, match="no OpenCL C form to run on the CPU"):
            rt.launch(cuda_only, (4 * n,), [big, 5.0], writes=[big])
        np.testing.assert_allclose(rt.read(big), 5.0)  # nothing changed
    finally:
        rt.close()


def test_released_variables_are_refused_and_build_errors_are_one_error(rt):
    v = rt.submit(np.zeros(4))
    rt.release(v)
    with pytest.raises(RuntimeError_, match="released"):
        rt.read(v)
    bad = Kernel("bad", {"opencl": "kernel void bad(global double* x, long xo) { x[0] = ; }"})
    w = rt.submit(np.zeros(4))
    with pytest.raises(Exception, match="build failed"):
        rt.launch(bad, (4,), [w])
    rt.launch(FILL, (4,), [w, 1.0], writes=[w])  # the runtime still works
    np.testing.assert_allclose(rt.read(w), 1.0)


# ------------------------------------------------------------------------------------ CUDA
def _cuda_devices():
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return cuda_devices()
    except Exception:  # noqa: BLE001
        return ()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_devices(), reason="no CUDA GPU")
def test_cuda_runtime_lazy_async_cow_and_pressure():
    """In the same process as the OpenCL tests (NVRTC compiles in its own server)."""
    n = 1 << 20
    rt = Runtime("cuda", memory_limit=3 * n * 8)
    try:
        a = np.arange(n, dtype=np.float64)  # the reference: submitted arrays are the host copies
        va, vb = rt.submit(a.copy()), rt.submit(np.ones(n))
        for _ in range(10):
            rt.launch(ADD, (n,), [va, vb], reads=[va, vb], writes=[vb])
        assert rt.stats()["uploads"] == 2
        np.testing.assert_allclose(rt.read(vb), 1 + 10 * a)
        c = rt.copy(va)
        rt.launch(SCALE, (n,), [va, 2.0], writes=[va])
        np.testing.assert_allclose(rt.read(c), a)
        np.testing.assert_allclose(rt.read(va), 2 * a)
        vs = [rt.submit(np.full(n, float(k))) for k in range(5)]
        for v in vs:
            rt.launch(SCALE, (n,), [v, 2.0], writes=[v])
        for k, v in enumerate(vs):
            np.testing.assert_allclose(rt.read(v), 2.0 * k)
        assert rt.stats()["evictions"] > 0
    finally:
        rt.close()
