"""The CUDA task runtime's host path with the driver stubbed out, for machines without a GPU.

``stub_runtime()`` is a ``Runtime`` over the real ``CUDADevice`` code whose driver, cuda.core
objects and NVRTC cache are replaced by stand-ins that do no GPU work: "device memory" is host
memory (copies are ``memmove``), streams and events are always done, a launch only counts
itself. Everything liftkit does in Python per call and per launch (dispatch, adoption of GPU
arrays, the runtime's tables, the launch configuration, argument lists) runs as on a GPU, so
``benchmarks/jit/overhead.py --stub-cuda`` measures that host path here. Kernels do not run:
results are not checked in this mode. ``GpuArray`` is a CUDA-array-interface array over
such memory (what a CuPy array looks like to liftkit, library "other").
"""

from __future__ import annotations

import ctypes
from collections import Counter
from typing import Any

import numpy as np

from liftkit.backends.cuda.devices import Device
from liftkit.runtime import Runtime
from liftkit.runtime.devices import CUDADevice

DEVICE = Device(ordinal=0, name="stubbed CUDA driver (no GPU work)", compute_capability=(9, 0),
                driver_version=13000, multiprocessors=132, max_threads_per_block=1024,
                max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535),
                shared_memory_per_block=48 * 1024, total_memory=1 << 33)


class _Stream:
    def __init__(self, handle: int, calls: Counter) -> None:
        self.handle, self.calls = handle, calls

    def record(self, ev: Any = None) -> Any:
        self.calls["event record"] += 1
        if ev is None:
            self.calls["event create"] += 1
            return _StubEvent(self.calls)
        return ev

    def wait(self, ev: Any) -> None:
        self.calls["stream wait"] += 1

    def sync(self) -> None:
        self.calls["stream sync"] += 1


class _StubEvent:
    handle = 0

    def __init__(self, calls: Counter) -> None:
        self.calls = calls

    @property
    def is_done(self) -> bool:
        self.calls["event query"] += 1
        return True

    def sync(self) -> None:
        self.calls["event sync"] += 1


class _Alloc:
    """Device memory: host memory that stays alive as long as the handle."""

    def __init__(self, nbytes: int) -> None:
        self.mem = np.zeros(nbytes, np.uint8)
        self.handle = self.mem.ctypes.data

    def close(self, stream: Any = None) -> None:
        self.mem = None  # type: ignore[assignment]


class _Dev:
    def __init__(self, calls: Counter) -> None:
        self.streams, self.calls = 0, calls

    def set_current(self) -> None:
        return None

    def create_stream(self) -> _Stream:
        self.streams += 1
        return _Stream(self.streams, self.calls)

    def create_event(self) -> _StubEvent:
        self.calls["event create"] += 1
        return _StubEvent(self.calls)

    def allocate(self, nbytes: int, stream: Any = None) -> _Alloc:
        return _Alloc(nbytes)

    def sync(self) -> None:
        return None


class _Core:
    """cuda.core's launch API: a configuration object, a launch that only counts itself and
    keeps its arguments (``last``)."""

    def __init__(self, calls: Counter) -> None:
        self.launches, self.calls = 0, calls
        self.last: tuple = ()  # the last launch's (configuration, kernel, arguments)

    @staticmethod
    def LaunchConfig(**kw: Any) -> dict:  # noqa: N802 - cuda.core's name
        return kw

    def launch(self, stream: Any, config: Any, kernel: Any, *args: Any) -> None:
        self.launches += 1
        self.calls["launch"] += 1
        self.last = (config, kernel, args)


class _Calls:
    """The driver entry points the runtime calls through ctypes (event record and wait on
    another library's stream, transfers): on host memory, always done."""

    @staticmethod
    def record(event: Any, stream: Any) -> int:
        return 0

    @staticmethod
    def wait(stream: Any, event: Any, flags: int) -> int:
        return 0

    @staticmethod
    def download(host: int, device: int, nbytes: int, stream: Any) -> int:
        ctypes.memmove(host, device, nbytes)
        return 0

    @staticmethod
    def upload(device: int, host: int, nbytes: int, stream: Any) -> int:
        ctypes.memmove(device, host, nbytes)
        return 0


class _Driver:
    """The few cuda.bindings driver calls the runtime's CUDA device makes, on host memory;
    ``cuLaunchKernel`` counts itself as a launch and keeps its arguments (``last``)."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUkernel:  # (the stub's kernels are functions already)
        pass

    def __init__(self, calls: Counter) -> None:
        self.calls = calls
        self.last: tuple = ()  # the last cuLaunchKernel's (function, dims, stream, params)

    def cuLaunchKernel(self, f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,  # noqa: N802
                       shmem: int, stream: Any, params: int, extra: Any) -> tuple[int]:
        self.calls["launch"] += 1
        self.last = (f, (gx, gy, gz, bx, by, bz, shmem), stream, params)
        return (0,)

    @staticmethod
    def CUstream(handle: int) -> int:  # noqa: N802 - the driver's name
        return handle

    @staticmethod
    def _copy(dst: int, src: int, n: int, stream: Any) -> tuple[int]:
        ctypes.memmove(dst, src, n)
        return (0,)

    cuMemcpyDtoDAsync = _copy


class _Module:
    def get_kernel(self, name: str) -> Any:
        return type("StubKernel", (), {"name": name, "handle": 1})()


class _Cache:
    """NVRTC's module cache: nothing is compiled (the source is only looked up)."""

    def get(self, device: Any, source: str, options: Any = (), name: str = "") -> _Module:
        return _Module()


class StubCUDADevice(CUDADevice):
    """``CUDADevice`` over the stand-ins above (its own methods run unchanged); ``calls``
    counts the driver calls its launches, events and streams would make (by kind)."""

    def __init__(self, queues: int = 1) -> None:  # noqa: D107 - no super(): no driver here
        self.calls: Counter = Counter()
        self._drv = _Driver(self.calls)
        self._core = _Core(self.calls)
        self._calls = _Calls()
        self.device = DEVICE
        self._dev = _Dev(self.calls)
        self.cache = _Cache()
        self._setup(queues)
        self.label = f"CUDA / {DEVICE.name}"

    def _check(self, result: Any, what: str) -> Any:
        rest = result[1:]
        return rest[0] if len(rest) == 1 else rest


class GpuArray:
    """A C-ordered array in the stub's "device memory" under the CUDA array interface."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = np.ascontiguousarray(host)
        self.shape, self.dtype = self.host.shape, self.host.dtype
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": self.dtype.str, "strides": None,
            "data": (self.host.ctypes.data, False), "version": 3}


def stub_runtime(one_gpu: bool = True) -> Runtime:
    """A CUDA ``Runtime`` over ``StubCUDADevice``. With ``one_gpu`` (benchmarks: a process of
    its own) the process's CUDA device list becomes the stub's one device, so GPU arrays'
    pointers are taken to be on it as on a one-GPU machine, where the driver is not asked;
    without it (tests, sharing the process) nothing outside the runtime changes."""
    if one_gpu:
        import liftkit.backends.cuda.devices as cuda_devices
        cuda_devices.list_devices = lambda: (DEVICE,)  # what _ordinal() consults
    return Runtime("cuda", dev=StubCUDADevice(), queues=1)
