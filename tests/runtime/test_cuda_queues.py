"""The runtime's CUDA streams (seed 003 §7.3.3): a transfer stream beside several compute
streams, the order between them carried by CUDA events — results of a random graph of
dependent and independent tasks equal NumPy's, and a download comes back while an unrelated
long kernel still runs (``gpu`` marker; skipped without a CUDA GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.runtime import Kernel, Runtime


def _cuda_devices():
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return cuda_devices()
    except Exception:  # noqa: BLE001
        return ()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _cuda_devices(), reason="no CUDA GPU")]

AXPY = Kernel("axpy", {"cuda": """extern "C" __global__ void axpy(const double* x, long xo,
    double* y, long yo, double a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x; if (i < n) y[yo + i] += a * x[xo + i]; }"""})
BUSY = Kernel("busy", {"cuda": """extern "C" __global__ void busy(double* x, long xo, long it) {
    double v = x[xo]; for (long k = 0; k < it; k++) v = v * 0.999999 + 1e-9;
    if (threadIdx.x == 0 && blockIdx.x == 0) x[xo] = v; }"""})


def test_cuda_streams_keep_a_random_task_graph_correct():
    rng = np.random.default_rng(5)
    n = 1 << 16
    for queues in (1, 3):
        rt = Runtime("cuda", queues=queues)
        try:
            host = [rng.random(n) for _ in range(6)]
            ref = [h.copy() for h in host]
            vs = [rt.submit(h) for h in host]
            for _ in range(60):
                i, j = rng.choice(6, 2, replace=False)
                a = float(rng.integers(1, 4)) / 4
                rt.launch(AXPY, (n,), [vs[i], vs[j], a, np.int64(n)], reads=[vs[i], vs[j]],
                          writes=[vs[j]])
                ref[j] += a * ref[i]
                if rng.random() < 0.2:  # the host reads one in between
                    k = int(rng.integers(6))
                    np.testing.assert_allclose(rt.read(vs[k]), ref[k])
            for v, r in zip(vs, ref):
                np.testing.assert_allclose(rt.read(v), r)
            st = rt.stats()
            assert st["queues"] == queues and st["kernels"] == 60
            if queues > 1:
                assert st["cross_queue_waits"] > 0
        finally:
            rt.close()


def test_cuda_download_overlaps_an_unrelated_long_kernel():
    rt = Runtime("cuda", queues=2)
    try:
        slow = rt.submit(np.ones(4))
        a = rt.submit(np.arange(1 << 20, dtype=np.float64))
        b = rt.submit(np.zeros(1 << 20))
        rt.launch(AXPY, (1 << 20,), [a, b, 2.0, np.int64(1 << 20)], reads=[a, b], writes=[b])
        rt.wait_all(sync=False)
        rt.launch(BUSY, (1,), [slow, np.int64(20_000_000)], writes=[slow])  # about 50 ms
        rt.launch(AXPY, (1 << 20,), [a, b, 1.0, np.int64(1 << 20)], reads=[a, b], writes=[b])
        np.testing.assert_allclose(rt.read(b), 3 * np.arange(1 << 20))
        assert rt.stats()["overlapped_transfers"] >= 1
        assert abs(rt.read(slow)[0] - 1.0) > 0.5  # the long kernel ran (it tends to 1e-3)
    finally:
        rt.close()
