"""The Python part of a planned liftkit.blas call on CUDA, measured without a GPU: the CUDA
queue's driver calls and cuda.core's launch stubbed to no-ops, CuPy arrays faked by a class of
CuPy's module and type name (what `Operands` reads: shape, dtype, strides, device.id,
data.ptr). Prints µs per call of `liftkit.blas.gemv` / `gemm` on an installed plan, and a
cProfile of it.

    python results/issue15/gemv24/host_stub.py [--profile] [--bindings]
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import numpy as np


def fake_cupy() -> Any:
    cupy = types.ModuleType("cupy")
    cuda = types.SimpleNamespace()

    class _Stream:
        ptr = 0

    _cur = _Stream()
    cuda.get_current_stream = lambda: _cur
    cupy.cuda = cuda

    class _Mem:
        __slots__ = ("ptr", "device_id")

        def __init__(self, ptr: int) -> None:
            self.ptr, self.device_id = ptr, 0

    class _Dev:
        id = 0

    class ndarray:  # noqa: N801 - CuPy's type name
        def __init__(self, shape: tuple[int, ...], dtype: Any, ptr: int) -> None:
            self.shape, self.dtype = shape, np.dtype(dtype)
            st, step = [], self.dtype.itemsize
            for n in reversed(shape):
                st.append(step)
                step *= n
            self.strides = tuple(reversed(st))
            self.data = _Mem(ptr)

        @property
        def device(self) -> Any:
            return _Dev()

    ndarray.__module__ = "cupy._core.core"
    cupy.ndarray = ndarray
    sys.modules["cupy"] = cupy
    return cupy


def stub_session() -> Any:
    """A CUDA session whose queue calls nothing on a driver."""
    import liftkit.blas as lb
    from liftkit.blas.calls import CallPlans
    from liftkit.blas.queues import CUDAQueue, DevBuf
    from liftkit.blas.session import Future, Session

    class _Drv:
        class CUresult:
            CUDA_SUCCESS = 0

        class CUevent_flags:  # noqa: N801
            CU_EVENT_DISABLE_TIMING = 2

        class CUkernel:
            pass

        def __getattr__(self, name: str) -> Any:
            return lambda *a: (0, 99)

    drv = _Drv()
    q = CUDAQueue.__new__(CUDAQueue)
    q._drv = lambda: drv  # type: ignore[method-assign]
    q._check = lambda result, what: result[1] if len(result) > 1 else None  # type: ignore
    q._ordinals, q._plans, q._waited, q._in_call = {}, {}, None, False
    q._ring, q._ring_next, q._copies2d = [], 0, {}
    q._order_event, q.stream = object(), types.SimpleNamespace(handle=0)
    q.device = types.SimpleNamespace(ordinal=0, label="stub")
    q._core = types.SimpleNamespace(launch=lambda *a: None)
    q.alloc = lambda n: DevBuf(1 << 30, max(1, n))  # type: ignore[method-assign]
    q.fill_zero = lambda *a, **k: None  # type: ignore[method-assign]
    if "--bindings" not in sys.argv:  # the ctypes record and wait, as no-ops
        q.direct = types.SimpleNamespace(record=lambda e, s: 0, wait=lambda s, e, f: 0)
    q._stream_int, q._order_int = 0, 0
    s = Session.__new__(Session)
    s.backend, s.q, s.profile = "cuda", q, None
    s._chosen, s._units, s._zeros, s._scratch = {}, {}, None, None
    s.device = q.device
    s.calls = CallPlans(s, Future)
    lb._session_for = lambda spec, ctx: s  # the module functions find it
    return s


def install(s: Any, key: Any, nslots: int, scalars: tuple[Any, ...], zeros: int,
            launches: int, out_shape: tuple[int, ...], dt: Any) -> None:
    from liftkit.blas.calls import CallPlan, Launch, Output

    cfg = types.SimpleNamespace(grid=(64, 1, 1), block=(256, 1, 1), shmem_size=0)
    handle = types.SimpleNamespace(handle=12345)
    steps = tuple(Launch(f"k{i}", cfg, handle, (None,) * nslots + (np.int32(7),),
                         tuple((j, j) for j in range(nslots))) for i in range(launches))
    plan = CallPlan(steps, 3, scalars, (), zeros)
    s.calls.put(key, (plan, Output(out_shape, np.dtype(dt), "C", True)))


def main() -> None:
    cp = fake_cupy()
    s = stub_session()
    import liftkit.blas as lb

    n, dt = 4096, np.float32
    A, x, y = cp.ndarray((n, n), dt, 1 << 20), cp.ndarray((n,), dt, 2 << 20), cp.ndarray((n,), dt, 3 << 20)
    ops = s.calls.operands
    for trans, nl in ((False, 1), (True, 2)):
        key = ("gemv", ops.key(A), ops.key(x), ops.key(y), trans, float, float, True)
        install(s, key, 6, (np.float32, np.float32), n * 4, nl, (n,), dt)
    C = cp.ndarray((1024, 1024), np.float64, 4 << 20)
    Ad, Bd = cp.ndarray((1024, 1024), np.float64, 5 << 20), cp.ndarray((1024, 1024), np.float64, 6 << 20)
    key = ("gemm", ops.key(Ad), ops.key(Bd), ops.key(C), False, False, float, float, True, True)
    install(s, key, 5, (np.float64, np.float64), 0, 1, (1024, 1024), np.float64)

    calls = {"gemv N": lambda: lb.gemv(A, x, y), "gemv T (2 launches)": lambda: lb.gemv(A, x, y, trans=True),
             "session.gemv N": lambda: s.gemv(A, x, y), "gemm 1024 f64": lambda: lb.gemm(Ad, Bd, C),
             "nothing": lambda: None}
    for name, f in calls.items():
        best = float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(20000):
                f()
            best = min(best, (time.perf_counter() - t0) / 20000 * 1e6)
        print(f"{name:24s} {best:6.2f} us per call (Python only; driver stubbed)")
    if "--profile" in sys.argv:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(20000):
            lb.gemv(A, x, y, trans=True)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
