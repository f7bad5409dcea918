"""CUDA checks of GPU sections, run in a process of their own by test_gpu.py (NVRTC and an
OpenCL CPU compiler in one process can crash each other).

    python cuda_checks.py nvrtc DIR   # every DIR/*.cu through NVRTC to PTX (no GPU needed)
    python cuda_checks.py gpu         # sections, library calls and errors on a CUDA GPU
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

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


def nvrtc(directory: str) -> None:
    from liftkit.backends.cuda import compile_cuda
    files = sorted(Path(directory).glob("*.cu"))
    assert files, "no kernels"
    for f in files:
        assert compile_cuda(f.read_text(), "compute_90a").ptx, f


def gpu() -> None:
    from helpers import compile_source

    from liftkit.runtime import Runtime
    cu = Runtime("cuda")
    try:
        f = compile_source(STENCIL, "f", gpu_runtime=cu)
        A = np.random.default_rng(7).random((300, 200))
        B = np.zeros_like(A)
        f(A, B)
        ref = np.zeros_like(A)
        ref[1:-1, 1:-1] = (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2]
                           + A[1:-1, 2:]) / 5
        np.testing.assert_allclose(B, ref)
        g = compile_source(LIBRARY, "f", gpu_runtime=cu)
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
""", "h", gpu_runtime=cu)
        try:
            h(np.arange(10.0), np.zeros(10), 1)
            raise AssertionError("no IndexError")
        except IndexError as e:
            assert "line 9: index" in str(e), e
        np.testing.assert_allclose(h(np.arange(10.0), np.zeros(10), 0), np.arange(10.0))
        assert not cu.buffers
        runtime_on_cuda()
    finally:
        cu.close()


def runtime_on_cuda() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    from test_runtime import ADD, SCALE

    from liftkit.runtime import Runtime
    n = 1 << 20
    rt = Runtime("cuda", memory_limit=3 * n * 8)
    try:
        a, b = np.arange(n, dtype=np.float64), np.ones(n)
        va, vb = rt.submit(a), rt.submit(b)
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


if __name__ == "__main__":
    {"nvrtc": lambda: nvrtc(sys.argv[2]), "gpu": gpu}[sys.argv[1]]()
    print("ok")
