"""The CUDA queue's call-plan driver calls through ctypes (`driver_calls.PlanCalls`,
`PackedLaunch`), with the driver stubbed (runs without a GPU): a plan's launch is packed once
and each call's pointers and scalars land in the argument cells cuLaunchKernel reads, the
fixed arguments stay; complex scalars and clusters launch through cuda.core; the library wait
and a future's event are one record (+ one wait) on the right handles; a failed call is one
line."""

from __future__ import annotations

import ctypes
import types
from typing import Any

import numpy as np
import pytest

from liftkit.backends.cuda.driver_calls import PackedLaunch
from liftkit.blas.calls import Launch
from liftkit.blas.kernels import BlasError
from liftkit.blas.queues import CUDAQueue


def _read(params: int, n: int, kinds: str) -> list[Any]:
    """The n arguments at a cuLaunchKernel parameter array, read as `kinds` (Q, f, d, i)."""
    addrs = (ctypes.c_void_p * n).from_address(params)
    ct = {"Q": ctypes.c_uint64, "f": ctypes.c_float, "d": ctypes.c_double, "i": ctypes.c_int32}
    return [ct[k].from_address(addrs[i]).value for i, k in enumerate(kinds)]


class _Calls:
    """PlanCalls' three entry points, recording their arguments (and the launch's parameter
    values at the time of the call: the driver copies them then)."""

    def __init__(self, kinds: str = "", fail: int = 0) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.kinds, self.fail = kinds, fail

    def record(self, ev: int, stream: int) -> int:
        self.log.append(("record", ev, stream))
        return self.fail

    def wait(self, stream: int, ev: int, flags: int) -> int:
        self.log.append(("wait", stream, ev, flags))
        return 0

    def launch(self, func: int, *rest: Any) -> int:
        dims, stream, params = rest[:7], rest[7], rest[8]
        self.log.append(("launch", func, dims, stream, _read(params, len(self.kinds), self.kinds)))
        return self.fail


def test_packed_arguments_follow_the_slots_and_keep_the_fixed_ones() -> None:
    calls = _Calls("QfQiQd")
    args = [0, np.float32(0), 5 << 30, np.int32(4096), 0, np.float64(0)]
    slots = ((0, 0), (1, 3), (4, 1), (5, 4))  # positions 2, 3 fixed
    pk = PackedLaunch.make(calls, 77, (8, 1, 1, 256, 1, 1, 0), 9, args, slots)  # type: ignore[arg-type]
    assert pk is not None
    for a, b, alpha, beta in ((1 << 20, 2 << 20, 1.5, -0.25), (3 << 20, 4 << 20, 2.0, 0.0)):
        assert pk.launch([a, b, None, np.float32(alpha), np.float64(beta)]) == 0
        assert calls.log[-1] == ("launch", 77, (8, 1, 1, 256, 1, 1, 0), 9,
                                 [a, alpha, 5 << 30, 4096, b, beta])
    assert PackedLaunch.make(calls, 77, (1,) * 7, 9, [np.complex64(1)], ((0, 0),)) is None  # type: ignore[arg-type]


def _queue(calls: _Calls) -> tuple[CUDAQueue, list[tuple[Any, ...]]]:
    core_launches: list[tuple[Any, ...]] = []

    class Drv:
        class CUkernel:
            pass

    q = CUDAQueue.__new__(CUDAQueue)
    q._drv = lambda: Drv()  # type: ignore[method-assign]
    q.direct, q._packed = calls, {}
    q._stream_int, q._order_int = 55, 66  # type: ignore[misc]
    q.stream = types.SimpleNamespace(handle=55)
    q._core = types.SimpleNamespace(launch=lambda *a: core_launches.append(a))
    q.device = types.SimpleNamespace(ordinal=0, label="stub GPU")
    q._waited, q._in_call, q._ring, q._ring_next = None, False, [], 0
    return q, core_launches


def test_a_plan_launch_through_ctypes_then_cuda_core_where_it_cannot() -> None:
    calls = _Calls("QQf")
    q, core = _queue(calls)
    cfg = types.SimpleNamespace(grid=(16, 2), block=(32, 4), shmem_size=1024, cluster=None)
    ln = Launch("k", cfg, types.SimpleNamespace(handle=1234), (None, None, None), ((0, 1), (1, 0), (2, 2)))
    for a, b in ((10, 20), (30, 40)):
        q.launch_all([ln], [a, b, np.float32(0.5)])
        assert calls.log[-1] == ("launch", 1234, (16, 2, 1, 32, 4, 1, 1024), 55, [b, a, 0.5])
    assert len(q._packed) == 1 and not core
    ln2 = Launch("c", cfg, types.SimpleNamespace(handle=1), (None,), ((0, 0),))
    q.launch_all([ln2], [np.complex64(1 + 2j)])  # no C type packed here: cuda.core
    assert core and core[-1][1:] == (cfg, ln2.handle, np.complex64(1 + 2j))
    clustered = Launch("k", types.SimpleNamespace(**{**vars(cfg), "cluster": (2, 1, 1)}),
                       ln.handle, ln.args, ln.slots)
    q.launch_all([clustered], [1, 2, np.float32(0)])
    assert len(core) == 2


def test_library_wait_and_future_events_are_single_records() -> None:
    calls = _Calls()
    q, _ = _queue(calls)
    q.call_event = CUDAQueue.call_event.__get__(q)  # type: ignore[method-assign]
    q._check = lambda result, what: 888  # type: ignore[method-assign]

    class Drv:
        class CUevent_flags:  # noqa: N801 - the driver's name
            CU_EVENT_DISABLE_TIMING = 2

        def cuEventCreate(self, flags: int) -> tuple[int, int]:  # noqa: N802
            return (0, 888)

    q._drv = lambda: Drv()  # type: ignore[method-assign]
    A = types.SimpleNamespace()  # no library: the legacy default stream (0)
    q.begin_call()
    q.wait_library(A)
    q.wait_library(A)  # once per call
    q.end_call()
    ev = q.call_event()
    assert calls.log == [("record", 66, 0), ("wait", 55, 66, 0), ("record", 888, 55)]
    assert ev.number == 888


def test_a_failed_driver_call_is_one_line() -> None:
    q, _ = _queue(_Calls("Q", fail=700))  # CUDA_ERROR_ILLEGAL_ADDRESS
    cfg = types.SimpleNamespace(grid=(1,), block=(32,), shmem_size=0, cluster=None)
    with pytest.raises(BlasError, match=r"^stub GPU: CUDA launch of kernel k failed \(\w+\)$"):
        q.launch_all([Launch("k", cfg, types.SimpleNamespace(handle=5), (None,), ((0, 0),))], [1])
    with pytest.raises(BlasError, match="event record / stream wait failed"):
        q.wait_library(types.SimpleNamespace())


def test_a_blocking_stream_needs_no_wait_for_the_legacy_default_stream(monkeypatch: Any) -> None:
    """CUDA orders a blocking stream after the legacy default stream's work (handle 0): no
    record and wait; another library stream is still waited for, as is stream 0 by a
    non-blocking queue."""
    import liftkit.blas.queues as queues

    calls = _Calls()
    q, _ = _queue(calls)
    library = {"stream": 0}
    monkeypatch.setattr(queues, "_library_stream", lambda x: library["stream"])
    q.blocking = True
    q.wait_library(object())
    assert calls.log == []
    library["stream"] = 7
    q.wait_library(object())
    assert calls.log == [("record", 66, 7), ("wait", 55, 66, 0)]
    q.blocking, library["stream"] = False, 0
    q.wait_library(object())
    assert calls.log[2:] == [("record", 66, 0), ("wait", 55, 66, 0)]


@pytest.mark.gpu
def test_calls_follow_and_precede_cupy_work_on_its_default_stream(cuda_session: Any) -> None:
    """On the GPU: a (planned) call reads x after the CuPy work that wrote it and CuPy reads y
    after the call, with no event, wait or `.result()` in between: the session's stream is
    blocking and CuPy's default is the legacy stream, which CUDA orders with it both ways."""
    cp = pytest.importorskip("cupy")
    s = cuda_session
    assert s.q.blocking and s.q.direct is not None
    n = 2048
    A = cp.random.random_sample((n, n), dtype=cp.float32) - 0.5
    x, y = cp.empty(n, cp.float32), cp.empty(n, cp.float32)
    for i in range(3):  # the general path, then the call plan
        B = A @ A  # (long: a race would read stale x / y)
        cp.multiply(B[i], 1.0, out=x)
        s.gemv(A, x, y, trans=bool(i % 2))
        z = y * 2  # CuPy, right after the call
        want = 2 * ((A.T if i % 2 else A).astype(cp.float64) @ B[i].astype(cp.float64))
        err = float(cp.max(cp.abs(z - want)) / cp.max(cp.abs(want)))
        assert err < 1e-4, (i, err)
