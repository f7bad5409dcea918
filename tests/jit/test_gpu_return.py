"""`return <expr>` in a function compiled for the GPU (``jit(target="gpu")``): the returned
library call, element-wise value or tuple item runs in the function's GPU plan (a library call
or kernel), not as a host statement reading the arrays; on the CPU OpenCL device and on CUDA."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

from .helpers import compile_source, left_behind  # noqa: E402

SOURCES = {
    "gemv": """
def f(M, x):
    return M @ x
""",
    "elementwise": """
def f(a, b):
    return a * 2.0 + np.sqrt(b)
""",
    "tuple": """
def f(M, x, a):
    return M @ x, a - 1.0
""",
}


def _cuda() -> bool:
    try:
        from liftkit.backends.cuda import list_devices as cuda_devices
        return bool(cuda_devices())
    except Exception:  # noqa: BLE001 - no driver, no cuda-python
        return False


RUNTIMES = [
    pytest.param(("opencl", "cpu"), marks=pytest.mark.skipif(
        not any(d.type == "cpu" for d in list_devices()), reason="no CPU OpenCL device")),
    pytest.param(("cuda",), marks=[pytest.mark.gpu,
                                   pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")]),
]


@pytest.mark.parametrize("where", RUNTIMES, ids=["cpu-opencl", "cuda"])
def test_returned_values_run_in_the_gpu_plan(where: tuple[str, ...]) -> None:
    rt = Runtime(*where)
    try:
        r = np.random.default_rng(5)
        M, x = r.random((37, 45)).astype(np.float32), r.random(45).astype(np.float32)
        a, b = r.random((6, 40)), r.random((6, 40))
        fns = {name: compile_source(src, "f", target="gpu", gpu_runtime=rt)
               for name, src in SOURCES.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the untuned-derivation notice
            y = fns["gemv"](M, x)
            e = fns["elementwise"](a, b)
            y2, d = fns["tuple"](M, x, a)
        np.testing.assert_allclose(y, M @ x, rtol=1e-5)
        np.testing.assert_allclose(e, a * 2.0 + np.sqrt(b))
        np.testing.assert_allclose(y2, M @ x, rtol=1e-5)
        np.testing.assert_allclose(d, a - 1.0)
        for name, f in fns.items():
            plans = [c.gpu.plan for c in f.specs.values()]
            assert plans and not any(acc.arrays for p in plans for acc in p.accesses), name
            libs = [lib.op for p in plans for lib in p.libraries]
            assert libs == (["gemv"] if name != "elementwise" else []), name
            if name != "gemv":
                assert any(p.kernels for p in plans), name  # a - 1.0, a * 2.0 + sqrt(b)
        assert not left_behind(rt, *fns.values())
    finally:
        rt.close()
