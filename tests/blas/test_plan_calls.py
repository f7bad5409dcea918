"""The CUDA queue's driver calls through ctypes (`driver_calls.PlanCalls`), with the driver
stubbed (runs without a GPU): the library wait and a future's event are one record (+ one
wait) on the right handles, none for the legacy default stream where the session's stream is
blocking; a failed call is one line; on the GPU, calls are ordered with CuPy's default stream
both ways without a wait."""

from __future__ import annotations

import types
from typing import Any

import pytest

from liftkit.blas.kernels import BlasError
from liftkit.blas.queues import CUDAQueue, LibraryStreams


class _Calls:
    """PlanCalls' entry points, recording their arguments."""

    def __init__(self, fail: int = 0) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.fail = fail

    def record(self, ev: int, stream: int) -> int:
        self.log.append(("record", ev, stream))
        return self.fail

    def wait(self, stream: int, ev: int, flags: int) -> int:
        self.log.append(("wait", stream, ev, flags))
        return 0


def _queue(calls: _Calls) -> CUDAQueue:
    q = CUDAQueue.__new__(CUDAQueue)
    q.direct = calls
    q._stream_int, q._order_int = 55, 66  # type: ignore[misc]
    q.stream = types.SimpleNamespace(handle=55)
    q.device = types.SimpleNamespace(ordinal=0, label="stub GPU")
    q._waited, q._in_call, q._ring, q._ring_next = None, False, [], 0
    q._library_stream = LibraryStreams()
    return q


def test_library_wait_and_future_events_are_single_records() -> None:
    calls = _Calls()
    q = _queue(calls)
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
    q = _queue(_Calls(fail=700))  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(BlasError, match=r"^stub GPU: CUDA event record / stream wait failed "
                                        r"\(\w+\)$"):
        q.wait_library(types.SimpleNamespace())


def test_a_blocking_stream_needs_no_wait_for_the_legacy_default_stream() -> None:
    """CUDA orders a blocking stream after the legacy default stream's work (handle 0): no
    record and wait; another library stream is still waited for, as is stream 0 by a
    non-blocking queue."""
    calls = _Calls()
    q = _queue(calls)
    library = {"stream": 0}
    q._library_stream = lambda x: library["stream"]  # type: ignore[assignment]
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
