"""The CUDA queue's host path with the driver stubbed out (runs without a GPU): an operation's
operands wait for their library's stream once per call, outside a call every borrow waits;
a launch's limits and configuration are worked out once per kernel and geometry."""

from __future__ import annotations

from typing import Any

import numpy as np

from liftkit.blas.queues import CUDAQueue, DevBuf, LibraryStreams


class _Driver:
    """Counts the driver calls the queue makes."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUevent_flags:  # noqa: N801 - the driver's name
        CU_EVENT_DISABLE_TIMING = 2

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> tuple[int]:
            self.calls.append(name)
            return (0,)
        return call


class _GPUArray:
    def __init__(self, shape: tuple[int, ...], ptr: int) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False),
                                         "strides": None, "version": 3}


def _queue(drv: _Driver) -> CUDAQueue:
    q = CUDAQueue.__new__(CUDAQueue)
    q._drv = lambda: drv  # type: ignore[method-assign]
    q._check = lambda result, what: None  # type: ignore[method-assign]
    q._ordinals, q._plans, q._waited, q._in_call = {}, {}, None, False
    q._ring, q._ring_next, q._library_stream = [], 0, LibraryStreams()
    q._order_event, q.stream = object(), type("S", (), {"handle": 0})()
    q.device = type("D", (), {"ordinal": 0, "label": "stub"})()
    return q


def test_library_waits_once_per_call() -> None:
    drv = _Driver()
    q = _queue(drv)
    arrays = [_GPUArray((4, 4), 1 << 20), _GPUArray((4,), 2 << 20), _GPUArray((4,), 3 << 20)]
    q._ordinals.update({a.__cuda_array_interface__["data"][0]: 0 for a in arrays})
    q.begin_call()
    for a in arrays:
        q.borrow(a, "A", "gemv")
    q.end_call()
    assert drv.calls == ["cuEventRecord", "cuStreamWaitEvent"]
    for a in arrays:  # outside an operation (the plan API): every borrow waits
        q.borrow(a, "A", "gemv")
    assert drv.calls.count("cuStreamWaitEvent") == 4
    q.begin_call()  # a new call waits again
    q.borrow(arrays[0], "A", "gemv")
    assert drv.calls.count("cuStreamWaitEvent") == 5


def test_a_launch_plan_is_made_once_per_geometry() -> None:
    q = _queue(_Driver())
    made: list[Any] = []
    launched: list[tuple[Any, ...]] = []

    def plan(handle: Any, kernel: Any, glob: Any, local: Any) -> tuple[Any, Any]:
        made.append((glob, local))
        return ("config", glob), handle

    q._plan = plan  # type: ignore[method-assign]
    q._core = type("C", (), {"launch": staticmethod(lambda *a: launched.append(a))})()
    kernel, handle = type("K", (), {"name": "k"})(), object()
    for glob in ((64,), (64,), (128,), (64,)):
        q.launch(handle, kernel, glob, (32,), [DevBuf(7, 4), np.int32(3)], [])
    assert made == [((64,), (32,)), ((128,), (32,))]
    assert [a[1] for a in launched] == [("config", (64,)), ("config", (64,)),
                                         ("config", (128,)), ("config", (64,))]
    assert launched[0][3:] == (7, np.int32(3))


def test_a_cupy_array_is_recognised_without_its_interface() -> None:
    """CuPy arrays are device arrays by type (their interface is built once, by the borrow);
    other objects are asked for the interface or DLPack as before."""
    from liftkit.blas.queues import is_cuda_array

    class ndarray:  # noqa: N801 - CuPy's type name
        @property
        def __cuda_array_interface__(self) -> Any:
            raise AssertionError("built")

    ndarray.__module__ = "cupy._core.core"
    assert is_cuda_array(ndarray())
    assert is_cuda_array(_GPUArray((2,), 1 << 20)) and not is_cuda_array(np.zeros(2))
    assert not is_cuda_array([1.0, 2.0])


def test_futures_events_come_from_a_ring_made_once() -> None:
    """A future's event is one driver record on one of 64 events made once; the 65th call
    re-records the first (later work on the same stream: waiting on it never returns early)."""
    drv = _Driver()
    q = _queue(drv)
    q._check = lambda result, what: object()  # type: ignore[method-assign]
    evs = [q.call_event() for _ in range(65)]
    assert drv.calls.count("cuEventCreate") == 64
    assert drv.calls.count("cuEventRecord") == 65
    assert evs[64] is evs[0] and len({id(e) for e in evs}) == 64
