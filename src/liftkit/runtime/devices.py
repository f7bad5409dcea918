"""What the task runtime asks of a device, for OpenCL (pyopencl) and CUDA (cuda.core/NVRTC).

One small adapter per backend: allocate and free buffers, copy host->device (asynchronous),
device->host (blocking), device->device, build a kernel from source in the backend's C dialect
(through the backends' kernel caches), launch it and say whether an event has completed.

Queues (seed 003 §7.3.3, §7.4): ``queues`` in-order compute queues (streams) for kernels and
device copies, and one transfer queue for uploads and downloads, all on one context, so
transfers overlap kernels. Every enqueue takes ``wait``: backend events of other queues it must
follow (OpenCL ``wait_for``; CUDA ``cuStreamWaitEvent``); the runtime derives them from the
buffers a task touches.

Kernel arguments: a device buffer is passed as ``Ref(handle)``; scalars are NumPy scalars.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from liftkit.backends.errors import BackendError


class RuntimeBackendError(BackendError):
    """A device refused an operation (a kernel that fails to build or launch)."""


class OutOfDeviceMemory(Exception):
    """An allocation the device could not satisfy (the runtime then evicts or falls back)."""


@dataclass(frozen=True)
class Ref:
    """A device buffer handle as a kernel argument."""
    handle: Any


class OpenCLDevice:
    """The runtime's view of one OpenCL device (an in-order queue, the kernel cache)."""

    dialect = "opencl"

    def __init__(self, spec: Optional[str] = None, cache: Any = None, queues: int = 1) -> None:
        import pyopencl as cl

        from liftkit.backends.opencl import KernelCache, select_device
        self._cl = cl
        self.device = select_device(spec)
        self.context = cl.Context([self.device.cl_device])
        self.queues = [cl.CommandQueue(self.context, self.device.cl_device)
                       for _ in range(max(1, int(queues)))]
        self.queue = self.queues[0]
        self.tqueue = cl.CommandQueue(self.context, self.device.cl_device)  # transfers
        self.cache = cache if cache is not None else KernelCache()
        self.label = self.device.label
        self.is_cpu = self.device.type == "cpu"
        self.total_memory = int(self.device.cl_device.global_mem_size)
        self.max_alloc = int(self.device.cl_device.max_mem_alloc_size)
        self._kernels: dict[tuple[str, str], Any] = {}
        self._typed: dict[Any, list] = {}  # kernel -> the argument types its invoker packs

    def set_queues(self, n: int) -> None:
        """Use ``n`` compute queues (before any task is enqueued)."""
        cl = self._cl
        self.queues = self.queues[:max(1, n)] + [
            cl.CommandQueue(self.context, self.device.cl_device)
            for _ in range(max(1, n) - len(self.queues))]

    @property
    def fingerprint(self) -> str:
        return self.device.fingerprint

    def alloc(self, nbytes: int) -> Any:
        cl = self._cl
        if nbytes > self.max_alloc:
            raise OutOfDeviceMemory(nbytes)
        try:
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(nbytes, 1))
        except cl.Error as err:
            raise OutOfDeviceMemory(str(err)) from None

    def free(self, handle: Any, wait: Sequence[Any] = ()) -> None:
        handle.release()  # OpenCL keeps it alive until the commands using it finish

    def upload(self, handle: Any, offset: int, host: np.ndarray, wait: Sequence[Any] = ()) -> Any:
        ev = self._cl.enqueue_copy(self.tqueue, handle, host, dst_offset=offset,
                                   is_blocking=False, wait_for=list(wait) or None)
        self.tqueue.flush()
        return ev

    def download(self, handle: Any, offset: int, host: np.ndarray, wait: Sequence[Any] = ()) -> None:
        self._cl.enqueue_copy(self.tqueue, host, handle, src_offset=offset, is_blocking=True,
                              wait_for=list(wait) or None)

    def copy(self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int,
             queue: int = 0, wait: Sequence[Any] = ()) -> Any:
        return self._cl.enqueue_copy(self.queues[queue], dst, src, byte_count=nbytes,
                                     dst_offset=dst_offset, src_offset=src_offset,
                                     wait_for=list(wait) or None)

    def build(self, name: str, source: str, dynamic_shared: int = 0) -> Any:
        """The kernel ``name`` of ``source`` (OpenCL C asks for no dynamic local memory)."""
        key = (name, source)
        k = self._kernels.get(key)
        if k is None:
            try:
                prog = self.cache.get(self.context, self.device, source)
            except BackendError as err:
                raise RuntimeBackendError(str(err)) from None
            k = self._kernels[key] = getattr(prog, name)
        return k

    def launch(self, kernel: Any, global_size: Sequence[int], local_size: Optional[Sequence[int]],
               args: Sequence[Any], queue: int = 0, wait: Sequence[Any] = ()) -> Any:
        cl = self._cl
        vals = [a.handle if type(a) is Ref else a for a in args]
        sig = [type(a) for a in vals]
        if self._typed.get(kernel) != sig:
            # scalars typed once per kernel: pyopencl then packs them itself (an untyped
            # scalar argument costs ~9 us on Intel's CPU runtime, a typed one ~0.1 us)
            kernel.set_scalar_arg_dtypes([np.dtype(t) if issubclass(t, np.generic) else None
                                          for t in sig])
            self._typed[kernel] = sig
        kernel.set_args(*vals)
        try:
            ev = cl.enqueue_nd_range_kernel(self.queues[queue], kernel, tuple(global_size),
                                            None if local_size is None else tuple(local_size),
                                            wait_for=list(wait) or None)
        except cl.Error as err:
            raise RuntimeBackendError(f"kernel {kernel.function_name}: the launch failed on "
                                      f"{self.label} ({err})") from None
        self.queues[queue].flush()
        return ev

    def flush(self) -> None:
        for q in self.queues:
            q.flush()
        self.tqueue.flush()

    def done(self, event: Any) -> bool:
        return event.command_execution_status == self._cl.command_execution_status.COMPLETE

    def wait(self, event: Any) -> None:
        event.wait()

    def finish(self) -> None:
        for q in self.queues:
            q.finish()
        self.tqueue.finish()


_CTYPES = {np.int64: ctypes.c_int64, np.int32: ctypes.c_int32, np.float64: ctypes.c_double,
           np.float32: ctypes.c_float, int: ctypes.c_uint64}  # (an int is a device address)


class Packed:
    """A kernel's launch with its arguments packed once for ``cuLaunchKernel`` (a launch plan
    repeats it): the function, the grid, block and shared memory, one ctypes slot per
    argument (a scalar slot is set again before each launch) and the array of their
    addresses."""

    __slots__ = ("func", "dims", "slots", "params", "addr")

    def __init__(self, func: Any, dims: tuple, slots: list) -> None:
        self.func, self.dims, self.slots = func, dims, slots
        self.params = (ctypes.c_void_p * max(len(slots), 1))(
            *[ctypes.addressof(x) for x in slots])
        self.addr = ctypes.addressof(self.params)


class CUDADevice:
    """The runtime's view of one CUDA device (streams of its own, the NVRTC module cache).
    Launches, events and our streams' waits go through cuda.core; transfers and another
    library's stream's event record and waits through ctypes (``backends.cuda.driver_calls``:
    cuda.bindings' Python layer costs more per call). CuPy/PyTorch arrays are used in place
    (``borrow``)."""

    dialect = "cuda"
    is_cpu = False

    def __init__(self, spec: Optional[str] = None, cache: Any = None, queues: int = 1) -> None:
        from cuda.bindings import driver

        from liftkit.backends.cuda import ModuleCache, select_device
        from liftkit.backends.cuda.runner import core
        self._drv = driver
        self.device = select_device(spec)
        self._core = core()
        self._dev = self._core.Device(self.device.ordinal)
        self._dev.set_current()
        from liftkit.backends.cuda.driver_calls import DriverCalls
        self._calls = DriverCalls()
        self.cache = cache if cache is not None else ModuleCache()
        self._setup(queues)

    def _setup(self, queues: int) -> None:
        """Streams and tables (the driver, its calls, the device and the cache are set)."""
        self.streams = [self._dev.create_stream() for _ in range(max(1, int(queues)))]
        self.stream = self.streams[0]
        self.tstream = self._dev.create_stream()  # transfers; allocations are ordered on it
        self._thandle = ctypes.c_void_p(int(self.tstream.handle))
        self._alloc_gen = 0                       # allocations made on tstream so far
        self._alloc_event: Any = None
        self._seen = [0] * len(self.streams)      # the allocation each compute stream follows
        self.queues = self.streams
        self._shandles = [s.handle for s in self.streams]  # (read per packed launch)
        self.label = self.device.label
        self.total_memory = int(self.device.total_memory)
        self.max_alloc = self.total_memory
        self._kernels: dict[tuple[str, str], Any] = {}
        self._configs: dict[tuple, Any] = {}
        self._shmem: dict[int, int] = {}  # id of a built kernel -> its dynamic shared bytes
        self._follow: Any = None  # the event another library's stream is recorded into
        self._spare: list = []  # events of retired tasks, recorded again by later ones
        self._foreign: dict[int, Any] = {}  # other libraries' streams as ctypes handles

    def _check(self, result: Any, what: str) -> Any:
        from liftkit.backends.cuda.devices import check
        try:
            return check(result, what)
        except BackendError as err:
            raise RuntimeBackendError(str(err)) from None

    def set_queues(self, n: int) -> None:
        """Use ``n`` compute streams (before any task is enqueued)."""
        self.streams = self.streams[:max(1, n)] + [
            self._dev.create_stream() for _ in range(max(1, n) - len(self.streams))]
        self.stream = self.streams[0]
        self.queues = self.streams
        self._shandles = [s.handle for s in self.streams]
        self._seen = [0] * len(self.streams)

    @property
    def fingerprint(self) -> str:
        return self.device.fingerprint

    def alloc(self, nbytes: int) -> Any:
        try:
            h = self._dev.allocate(max(nbytes, 1), stream=self.tstream)
        except Exception as err:  # noqa: BLE001 - out of memory, in cuda.core's words
            raise OutOfDeviceMemory(str(err)) from None
        self._alloc_gen += 1
        prev, self._alloc_event = self._alloc_event, self._record(self.tstream)
        if prev is not None:  # streams only ever wait for the newest allocation's event
            self.recycle(prev)
        return _Memory(h)

    def _on(self, queue: int, wait: Sequence[Any]) -> Any:
        """Compute stream ``queue``, made to follow ``wait`` and the allocations before now."""
        s = self.streams[queue]
        if self._seen[queue] != self._alloc_gen:
            s.wait(self._alloc_event)
            self._seen[queue] = self._alloc_gen
        for ev in wait:
            s.wait(ev)
        return s

    def free(self, handle: Any, wait: Sequence[Any] = ()) -> None:
        handle.close(self._on(0, wait))  # after the tasks still using it (stream-ordered)

    def ptr(self, handle: Any) -> int:
        return handle if type(handle) is int else handle.ptr

    def upload(self, handle: Any, offset: int, host: np.ndarray, wait: Sequence[Any] = ()) -> Any:
        for ev in wait:
            self.tstream.wait(ev)
        err = self._calls.upload(self.ptr(handle) + offset, host.ctypes.data, host.nbytes,
                                 self._thandle)
        if err:
            from liftkit.backends.cuda.driver_calls import error_name
            raise RuntimeBackendError(f"CUDA upload failed on {self.label} ({error_name(err)})")
        return self._record(self.tstream)

    def download(self, handle: Any, offset: int, host: np.ndarray, wait: Sequence[Any] = ()) -> None:
        for ev in wait:
            self.tstream.wait(ev)
        err = self._calls.download(host.ctypes.data, self.ptr(handle) + offset, host.nbytes,
                                   self._thandle)
        if err:
            from liftkit.backends.cuda.driver_calls import error_name
            raise RuntimeBackendError(f"CUDA download failed on {self.label} ({error_name(err)})")
        self.tstream.sync()

    def copy(self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int,
             queue: int = 0, wait: Sequence[Any] = ()) -> Any:
        s = self._on(queue, wait)
        self._check(self._drv.cuMemcpyDtoDAsync(self.ptr(dst) + dst_offset,
                                                self.ptr(src) + src_offset, nbytes,
                                                s.handle), "device copy")
        return self._record(s)

    def build(self, name: str, source: str, dynamic_shared: int = 0) -> Any:
        """The kernel ``name`` of ``source``; with ``dynamic_shared`` bytes (a kernel whose
        local memory exceeds 48 KB) opted in to that much, which its launches then give."""
        key = (name, source)
        k = self._kernels.get(key)
        if k is None:
            self._dev.set_current()
            try:
                mod = self.cache.get(self.device, source, (), name=name)
                k = mod.get_kernel(name)
                if dynamic_shared:
                    from liftkit.backends.cuda.runner import allow_dynamic_shared
                    allow_dynamic_shared(self.device, k, dynamic_shared, name)
                    self._shmem[id(k)] = dynamic_shared
                self._kernels[key] = k
            except BackendError as err:
                raise RuntimeBackendError(str(err)) from None
        return k

    def launch(self, kernel: Any, global_size: Sequence[int], local_size: Optional[Sequence[int]],
               args: Sequence[Any], queue: int = 0, wait: Sequence[Any] = (),
               record: bool = True) -> Any:
        """cuda.core's launch (its argument packing is compiled code: run 7 timed it ahead of
        cuLaunchKernel on arguments packed in Python and called through ctypes or
        cuda.bindings), with a launch configuration made once per geometry. Without
        ``record`` no event is recorded (None): the runtime marks the stream with ``mark``
        only when a wait, a host read or a retirement sweep needs an event (an in-order
        stream orders its own tasks)."""
        config = self.config(kernel, global_size, local_size)
        vals = []
        for a in args:
            if type(a) is Ref:
                h = a.handle
                vals.append(h if type(h) is int else h.ptr)
            else:
                vals.append(a)
        return self.launch_values(kernel, config, vals, queue, wait, record)

    def config(self, kernel: Any, global_size: Sequence[int],
               local_size: Optional[Sequence[int]]) -> Any:
        """cuda.core's launch configuration of ``kernel`` over ``global_size`` (made once per
        geometry)."""
        shmem = self._shmem.get(id(kernel), 0) if self._shmem else 0
        ck = (global_size if type(global_size) is tuple else tuple(global_size),
              None if local_size is None else tuple(local_size), shmem)
        config = self._configs.get(ck)
        if config is None:  # a launch configuration per geometry, made once
            grid, block = self._geometry(global_size, local_size)
            c = self._core
            config = self._configs[ck] = (
                c.LaunchConfig(grid=grid, block=block, shmem_size=shmem) if shmem
                else c.LaunchConfig(grid=grid, block=block))
        return config

    def _geometry(self, global_size: Sequence[int],
                  local_size: Optional[Sequence[int]]) -> tuple[tuple, tuple]:
        """The grid and block of a launch over ``global_size`` (blocks of 256 by default)."""
        if local_size is None:
            local_size = (min(global_size[0], 256),) + (1,) * (len(global_size) - 1)
        grid = tuple(min(math.ceil(g / b), m) for g, b, m in
                     zip(global_size, local_size, self.device.max_grid_dims))
        return grid, tuple(local_size)

    def pack(self, kernel: Any, global_size: Sequence[int], vals: Sequence[Any]) -> Optional[Packed]:
        """``vals`` (as ``values`` gives them) packed for ``launch_packed`` over
        ``global_size`` (default blocks), or None where a value has no fixed C type or the
        kernel no function handle (the plan then launches through cuda.core)."""
        slots = []
        for v in vals:
            t = _CTYPES.get(type(v))
            if t is None:
                return None
            slots.append(t(v))
        try:
            from liftkit.backends.cuda.driver_calls import kernel_function
            h = kernel_function(self._drv, kernel)
        except Exception:  # noqa: BLE001 - no handle the driver takes: cuda.core's launch
            return None
        grid, block = self._geometry(global_size, None)
        grid, block = grid + (1,) * (3 - len(grid)), block + (1,) * (3 - len(block))
        shmem = self._shmem.get(id(kernel), 0) if self._shmem else 0
        return Packed(h, (*grid, *block, shmem), slots)

    def launch_packed(self, pk: Packed, queue: int = 0, wait: Sequence[Any] = (),
                      record: bool = True) -> Any:
        """``cuLaunchKernel`` of a packed launch (cuda.bindings; run 7 on the H100: 5.6 us
        against cuda.core's launch 7.7 us, which packs its arguments at each call)."""
        s = self._on(queue, wait) if wait or self._seen[queue] != self._alloc_gen \
            else self.streams[queue]
        err = self._drv.cuLaunchKernel(pk.func, *pk.dims, self._shandles[queue], pk.addr, 0)[0]
        if err:
            from liftkit.backends.cuda.driver_calls import error_name
            raise RuntimeBackendError(f"a kernel launch failed on {self.label} "
                                      f"({error_name(int(err))})")
        return self._record(s) if record else None

    def values(self, args: Sequence[Any]) -> list:
        """``args`` as ``launch_values`` takes them (a buffer as its address)."""
        return [(a.handle if type(a.handle) is int else a.handle.ptr) if type(a) is Ref else a
                for a in args]

    def launch_values(self, kernel: Any, config: Any, vals: Sequence[Any], queue: int = 0,
                      wait: Sequence[Any] = (), record: bool = True) -> Any:
        """``launch`` with its configuration (``config``) and argument values (``values``)
        worked out before: what a launch plan repeats."""
        s = self._on(queue, wait) if wait or self._seen[queue] != self._alloc_gen \
            else self.streams[queue]
        try:
            self._core.launch(s, config, kernel, *vals)
        except Exception as err:  # noqa: BLE001 - cuda.core's own error type
            raise RuntimeBackendError(f"a kernel launch failed on {self.label} ({err})") from None
        return self._record(s) if record else None

    def mark(self, queue: int) -> Any:
        """An event recorded on compute stream ``queue`` now: done once every task enqueued
        there so far is (the event of the tasks launched there without one)."""
        return self._record(self.streams[queue])

    def flush(self) -> None:
        return None

    def done(self, event: Any) -> bool:
        return bool(event.is_done)

    def wait(self, event: Any) -> None:
        event.sync()

    def finish(self) -> None:
        try:
            for s in self.streams:
                s.sync()
            self.tstream.sync()
        except Exception as err:  # noqa: BLE001 - a fault inside a kernel surfaces here
            raise RuntimeBackendError(f"a kernel failed on {self.label}: {err}") from None

    def _record(self, stream: Any) -> Any:
        """An event recorded on ``stream``: a finished task's event re-recorded when there is
        one (creating events is a driver call per task)."""
        return stream.record(self._spare.pop()) if self._spare else stream.record()

    def _foreign_stream(self, stream: int) -> Any:
        s = self._foreign.get(stream)
        if s is None:
            if len(self._foreign) > 64:
                self._foreign.clear()
            s = self._foreign[stream] = ctypes.c_void_p(int(stream))
        return s

    def follow(self, stream: int) -> bool:
        """Order the kernels and device copies enqueued from now on (the compute streams)
        after the work already on another library's stream (a raw CUstream handle), without
        blocking the host; False if the driver refused (the caller then waits). The transfer
        stream need not follow: the library's arrays are never uploaded or downloaded."""
        try:
            if self._follow is None:
                ev = self._dev.create_event()
                self._follow = (ev, ctypes.c_void_p(int(ev.handle)))
            ev, handle = self._follow  # re-recorded each time: a wait takes the record before it
            if self._calls.record(handle, self._foreign_stream(stream)):
                return False
            for s in self.streams:
                s.wait(ev)
            return True
        except Exception:  # noqa: BLE001 - an event or stream the driver cannot take
            return False

    def stream_wait(self, stream: int, event: Any) -> bool:
        """Make another library's stream (a raw CUstream handle) wait for ``event`` without
        blocking the host; False if the driver refused (the caller then waits)."""
        try:
            return not self._calls.wait(self._foreign_stream(stream),
                                        ctypes.c_void_p(int(event.handle)), 0)
        except Exception:  # noqa: BLE001 - an event or stream the driver cannot take
            return False

    def recycle(self, event: Any) -> None:
        """``event``'s task has left the runtime's tables: its event may be recorded again."""
        if len(self._spare) < 256:
            self._spare.append(event)

    def sync_device(self) -> None:
        """Wait for all work on the device (other libraries' streams included)."""
        self._dev.sync()

    def borrow(self, x: Any) -> Optional[tuple[int, tuple[int, ...], np.dtype, Any]]:
        """(pointer, shape, dtype, owner) of a CuPy/PyTorch/CUDA-array-interface array, or None."""
        from liftkit.backends.cuda.arrays import device_array
        b = device_array(x, "array")
        if b is None:
            return None
        self._dev.sync()  # the library's own stream may still be writing it
        return b.ptr, b.shape, b.dtype, b.obj


class _Memory:
    """A device allocation of the runtime (cuda.core's buffer) with its address as an int."""

    __slots__ = ("buffer", "ptr")

    def __init__(self, buffer: Any) -> None:
        self.buffer, self.ptr = buffer, int(buffer.handle)

    @property
    def handle(self) -> Any:
        return self.buffer.handle

    def close(self, stream: Any = None) -> None:
        self.buffer.close(stream)


def open_device(backend: str = "auto", spec: Optional[str] = None, queues: int = 1) -> Any:
    """An OpenCLDevice or CUDADevice: ``auto`` takes CUDA where a CUDA GPU is present, else
    OpenCL's default device (a GPU, else the CPU: PoCL in CI)."""
    if backend == "auto":
        from liftkit.backends.choose import resolve_backend
        backend = resolve_backend("auto", spec or "gpu")
        if backend == "opencl" and (spec or "gpu") == "gpu":
            spec = None
    if backend == "cuda":
        return CUDADevice(spec, queues=queues)
    if backend == "opencl":
        return OpenCLDevice(spec, queues=queues)
    raise ValueError(f"unknown backend {backend!r}: choose auto, opencl or cuda")
