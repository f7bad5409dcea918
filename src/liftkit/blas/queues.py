"""The device side of a liftkit.blas session, one class per backend: memory, copies, fills,
kernel builds and launches, and events, all asynchronous in one in-order queue.

- `CLQueue`: an OpenCL command queue (pyopencl); events are `cl.Event`s and wait lists order
  commands.
- `CUDAQueue`: one CUDA stream (cuda.core, the CUDA backend's runner and module cache); every
  command goes on the stream in order, so wait lists are not needed, and an event is a CUDA
  event recorded after a command. GPU arrays of CuPy, PyTorch or anything with
  `__cuda_array_interface__` are read and written in place: before their first use the stream
  waits (on the device, not the host) for the stream their library is working on — by CUDA's
  own ordering where that is the legacy default stream (CuPy's and PyTorch's default) and ours
  is blocking, as a session's is. A call's waits and future's event go through ctypes
  (`backends.cuda.driver_calls.PlanCalls`), its launches through cuda.core.

The session, the GEMM plans and the level-1/2 operations speak only to this interface, so the
same code runs on both backends; only the kernels' C dialect and these classes differ.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from liftkit.blas.kernels import BlasError


def _int32(v: int, what: str) -> np.int32:
    if v > np.iinfo(np.int32).max:
        raise BlasError(f"{what} = {v} exceeds the kernels' 32-bit indices")
    return np.int32(v)


class CLQueue:
    """liftkit.blas's commands on an OpenCL in-order queue."""

    backend = "opencl"

    def __init__(self, context: Any, queue: Any) -> None:
        self.context = context
        self.queue = queue
        # per kernel handle: the keys of the arguments it holds (`_arg_key`), so a launch sets
        # only what changed (a set_arg costs ~3 µs on Intel's CPU runtime, 8 of them as much as
        # the enqueue); the handle is kept so its id stays its own
        # and the call plan's Launch that set them last (its fixed arguments are still held:
        # a repeat launch checks only its slots)
        self._held: dict[int, list[Any]] = {}
        self._last: Any = None  # the last event `launch_all` enqueued (a call plan's future)

    def begin_call(self) -> None:
        """OpenCL operands carry their own events: nothing to scope."""

    def end_call(self) -> None:
        """See begin_call."""

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any:
        import pyopencl as cl

        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(1, int(nbytes)))

    def nbytes(self, buf: Any) -> int:
        return int(buf.size)

    def release(self, buf: Any) -> None:
        buf.release()

    def upload(self, buf: Any, host: np.ndarray, wait_for: Sequence[Any] = ()) -> Any:
        import pyopencl as cl

        return cl.enqueue_copy(self.queue, buf, host, is_blocking=False,
                               wait_for=list(wait_for) or None)

    def download_later(self, host: np.ndarray, buf: Any, wait_for: Sequence[Any]) -> list[Any]:
        """Enqueue the copy of `buf` into `host`; the events to wait for before reading it."""
        import pyopencl as cl

        ev = cl.enqueue_copy(self.queue, host, buf, is_blocking=False,
                             wait_for=list(wait_for) or None)
        return list(wait_for) + [ev]

    def after_download(self, host: np.ndarray, buf: Any) -> None:
        """What reading `host` needs after the events of `download_later` (nothing here)."""

    def download_now(self, host: np.ndarray, buf: Any) -> None:
        """Copy `buf` into `host` after everything enqueued (a call plan's NumPy output)."""
        self.read(host, buf)

    def read(self, host: np.ndarray, buf: Any) -> None:
        """Copy `buf` into `host` after everything enqueued (blocking)."""
        import pyopencl as cl

        cl.enqueue_copy(self.queue, host, buf, is_blocking=True)

    def fill_zero(self, buf: Any, nbytes: int, wait_for: Sequence[Any] = ()) -> Any:
        import pyopencl as cl

        return cl.enqueue_fill_buffer(self.queue, buf, np.uint8(0), 0, int(nbytes),
                                      wait_for=list(wait_for) or None)

    def copy(self, dst: Any, src: Any, nbytes: int, wait_for: Sequence[Any] = (),
             src_offset: int = 0) -> Any:
        import pyopencl as cl

        return cl.enqueue_copy(self.queue, dst, src, byte_count=int(nbytes),
                               src_offset=src_offset, wait_for=list(wait_for) or None)

    def copy2d(self, dst: Any, src: Any, rows: int, row_bytes: int, src_pitch: int,
               dst_pitch: int, wait_for: Sequence[Any] = ()) -> Any:
        """`rows` rows of `row_bytes` from src (rows `src_pitch` bytes apart) to dst."""
        import pyopencl as cl

        return cl.enqueue_copy(self.queue, dst, src, src_origin=(0, 0), dst_origin=(0, 0),
                               region=(row_bytes, rows), src_pitches=(src_pitch,),
                               dst_pitches=(dst_pitch,), wait_for=list(wait_for) or None)

    # -- events -----------------------------------------------------------------------------
    def marker(self) -> Any:
        import pyopencl as cl

        return cl.enqueue_marker(self.queue)

    def wait(self, events: Sequence[Any]) -> None:
        import pyopencl as cl

        if events:
            cl.wait_for_events(list(events))

    def done(self, events: Sequence[Any]) -> bool:
        import pyopencl as cl

        return all(e.command_execution_status == cl.command_execution_status.COMPLETE
                   for e in events)

    def seconds(self, first: Any, last: Any) -> float:
        """Device time from the end of `first` (a marker) to the end of `last`."""
        return (last.profile.end - first.profile.end) * 1e-9

    def finish(self) -> None:
        self.queue.finish()

    def flush(self) -> None:
        self.queue.flush()

    # -- kernels ----------------------------------------------------------------------------
    def build(self, compiled: Any, cache: Any, device: Any) -> list[Any]:
        import warnings

        import pyopencl as cl

        kernels = []
        with warnings.catch_warnings():  # driver build logs are not the user's business
            warnings.simplefilter("ignore", cl.CompilerWarning)
            for k in compiled.kernels:
                prog = cache.get(self.context, device, k.source, k.build_options)
                kernels.append(cl.Kernel(prog, k.name))
        return kernels

    def launch(self, handle: Any, kernel: Any, glob: tuple[int, ...],
               local: Optional[tuple[int, ...]], args: Sequence[Any],
               wait_for: Sequence[Any]) -> Any:
        import pyopencl as cl

        self._set_args(handle, args)
        return cl.enqueue_nd_range_kernel(self.queue, handle, glob, local,
                                          wait_for=list(wait_for) or None)

    # -- call plans (`liftkit.blas.calls`): the in-order queue orders every step -----------------
    def launch_config(self, handle: Any, kernel: Any, glob: tuple[int, ...],
                      local: Optional[tuple[int, ...]]) -> tuple[Any, Any]:
        """(what every launch of the kernel at one geometry shares: global and local sizes,
        the handle)."""
        return (tuple(glob), None if local is None else tuple(local)), handle

    def launch_all(self, steps: Sequence[Any], values: Sequence[Any]) -> None:
        """Enqueue a call plan's steps: a Launch's argument list filled from `values` by slot
        (memory objects, typed scalars), Clear and Copy on the slots' buffers."""
        import pyopencl as cl

        buffer_type = cl.Buffer
        ev = None
        for ln in steps:
            if ln.step == "launch":
                held = self._held.get(id(ln.handle))
                if held is not None and held[2] is ln and held[0] is ln.handle:
                    keys = held[1]
                    for pos, slot in ln.slots:
                        v = values[slot]
                        k = keys[pos]
                        if v is k:  # the scalar object it holds (a plan reuses its casts)
                            continue
                        if type(v) is buffer_type:  # (inline: a call per argument costs as much)
                            ptr = v.int_ptr
                            if ptr != k:
                                ln.handle.set_arg(pos, v)
                                keys[pos] = ptr
                            continue
                        changed, keys[pos] = _new_key(v, k)
                        if changed:
                            ln.handle.set_arg(pos, v)
                else:
                    args = list(ln.args)
                    for pos, slot in ln.slots:
                        args[pos] = values[slot]
                    self._set_args(ln.handle, args)[2] = ln
                ev = cl.enqueue_nd_range_kernel(self.queue, ln.handle, *ln.config)
            elif ln.step == "copy" and ln.rows == 1:
                ev = self.copy(values[ln.dst], values[ln.src], ln.row_bytes)
            elif ln.step == "copy":
                ev = self.copy2d(values[ln.dst], values[ln.src], ln.rows, ln.row_bytes,
                                 ln.src_pitch, ln.dst_pitch)
            else:
                ev = self.fill_zero(values[ln.slot], ln.nbytes)
        self._last = ev

    def call_event(self) -> Any:
        """The event of the last step `launch_all` enqueued (a marker where it had none)."""
        ev, self._last = self._last, None
        return ev if ev is not None else self.marker()

    def wait_library(self, x: Any) -> None:
        """A planned pyopencl array is on this in-order queue: its work is ordered already."""

    def new_array(self, like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str = "C"
                  ) -> tuple[Any, Any]:
        """A fresh pyopencl array on this queue (a call plan's output) and its buffer."""
        import pyopencl.array as cla

        arr = cla.empty(self.queue, shape, dtype, order=order)
        return arr, arr.base_data

    def _set_args(self, handle: Any, args: Sequence[Any]) -> list[Any]:
        """Set the arguments that changed since the kernel's last launch; returns the handle's
        held record [handle, argument keys, Launch] with no Launch (the caller names its own)."""
        held = self._held.get(id(handle))
        if held is None or held[0] is not handle or len(held[1]) != len(args):
            held = [handle, [_UNSET] * len(args), None]
            self._held[id(handle)] = held
        held[2] = None
        keys = held[1]
        for i, v in enumerate(args):
            k = keys[i]
            if v is k:
                continue
            changed, keys[i] = _new_key(v, k)
            if changed:
                handle.set_arg(i, v)
        return held


_UNSET = object()  # a kernel argument liftkit has not set yet


def _new_key(v: Any, held: Any) -> tuple[bool, Any]:
    """(whether a kernel argument holding `held` must be set to `v`, what it then holds): a
    memory object is held as its handle (no two live buffers share one; the buffer itself is
    not kept alive), a NumPy scalar as itself (small; a call plan passes the same object while
    the value stays, so the caller's `is` settles most repeats), anything else as None (always
    set)."""
    if isinstance(v, np.generic):
        return (type(held) is not type(v) or held.tobytes() != v.tobytes(), v)  # -0.0 ≠ 0.0
    ptr = getattr(v, "int_ptr", None)
    if isinstance(ptr, int):
        return (type(held) is not int or held != ptr, ptr)
    return (True, None)


# ---------------------------------------------------------------------------------------------
# CUDA


@dataclass
class DevBuf:
    """Device memory on the CUDA backend: a pointer, its size and what keeps it alive (a
    cuda.core Buffer, or the caller's GPU array)."""

    ptr: int
    size: int
    owner: Any = None


class CUDAQueue:
    """liftkit.blas's commands on one CUDA stream (the CUDA backend's runner owns the stream,
    the module cache and the launch geometry). The stream orders every command, so commands
    return no event; `marker()` records one where a future or a timing needs it."""

    backend = "cuda"
    blocking = False  # (where __init__ did not run, a stubbed queue: an independent stream)

    def __init__(self, device: Any = None, blocking: bool = True) -> None:
        from liftkit.backends.cuda import CUDARunner

        # blocking: the stream is ordered after the legacy default stream's work (CuPy's and
        # PyTorch's default) by CUDA itself, so a call on an array of that stream needs no
        # event and wait (`_wait_library`); work enqueued there after a call waits for it
        self.blocking = blocking
        try:
            self.runner = CUDARunner(device, blocking=blocking)
        except Exception as err:  # noqa: BLE001 - no driver/GPU, or a bad spec: one line
            raise BlasError(f"liftkit.blas on CUDA: {str(err).splitlines()[0]}") from None
        self.device = self.runner.device
        self.stream = self.runner.stream
        self._core = self.runner._core
        # per (kernel, global size, local size): limits checked, cuda.core's launch
        # configuration (building them per call cost more than a small kernel's run)
        self._plans: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._ordinals: dict[int, Optional[int]] = {}
        self._waited: Any = None  # the library stream this call's borrows waited for
        self._in_call = False
        self._ring: list[DriverEvent] = []  # call_event's events, made as needed
        self._ring_next = 0
        # 2-D copy descriptors by geometry, made once: filling one field by field costs more
        # host time than the copy's driver call (a padded GEMM copies three matrices per call)
        self._copies2d: dict[tuple[int, int, int, int], Any] = {}
        self._library_stream = LibraryStreams()
        drv = self._drv()
        self._order_event = self._check(
            drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "event")
        self.use_plan_calls(True)

    # a future's event record and the library waits through ctypes (`driver_calls.PlanCalls`;
    # None: through cuda.bindings, as a stubbed runner or a missing libcuda leaves it). Launches
    # stay cuda.core's: on the H100's host its launch took 6.1 µs, cuLaunchKernel through ctypes
    # on arguments packed once per plan 7.6 µs (results/issue15/gemv24)
    direct: Any = None

    def use_plan_calls(self, on: bool = True) -> bool:
        """Record events and wait for library streams through ctypes (on), or through
        cuda.bindings; False where ctypes cannot open libcuda or the runner is not CUDA's."""
        from liftkit.backends.cuda.driver_calls import PlanCalls
        from liftkit.backends.cuda.runner import CUDARunner

        self.direct = PlanCalls.open() if on and type(self.runner) is CUDARunner else None
        return self.direct is not None

    def _direct_failed(self, err: int, what: str) -> None:
        """A failed ctypes driver call (its CUresult `err`) in one line naming the call."""
        from liftkit.backends.cuda.driver_calls import error_name

        raise BlasError(f"{self.device.label}: CUDA {what} failed ({error_name(int(err))})")

    def _drv(self) -> Any:
        return _driver_module()

    def _check(self, result: Any, what: str) -> Any:
        try:
            return _backend_check()(result, what)
        except Exception as err:  # noqa: BLE001 - the backend's CUDAError, in the library's words
            raise BlasError(f"{self.device.label}: {err}") from None

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> DevBuf:
        b = self.runner._allocate(max(1, int(nbytes)))
        return DevBuf(int(b.handle), max(1, int(nbytes)), b)

    def nbytes(self, buf: DevBuf) -> int:
        return buf.size

    def release(self, buf: DevBuf) -> None:
        owner, buf.owner = buf.owner, None
        close = getattr(owner, "close", None)
        if close is not None:
            close(self.stream)

    def upload(self, buf: DevBuf, host: np.ndarray, wait_for: Sequence[Any] = ()) -> Any:
        self._check(self._drv().cuMemcpyHtoDAsync(buf.ptr, host.ctypes.data, host.nbytes,
                                                  self.stream.handle), "upload")
        return None

    def download_later(self, host: np.ndarray, buf: DevBuf, wait_for: Sequence[Any]) -> list[Any]:
        # a copy into pageable host memory would block the caller until the stream reaches
        # it: the copy is made by `after_download`, once the events are complete
        return [self.marker()]

    def after_download(self, host: np.ndarray, buf: DevBuf) -> None:
        self._check(self._drv().cuMemcpyDtoH(host.ctypes.data, buf.ptr, host.nbytes), "download")

    def download_now(self, host: np.ndarray, buf: DevBuf) -> None:
        """`buf` into `host` once a call plan's event is complete (as after_download)."""
        self.after_download(host, buf)

    def read(self, host: np.ndarray, buf: DevBuf) -> None:
        self.finish()
        self.after_download(host, buf)

    def fill_zero(self, buf: DevBuf, nbytes: int, wait_for: Sequence[Any] = ()) -> Any:
        self._check(self._drv().cuMemsetD8Async(buf.ptr, 0, int(nbytes), self.stream.handle),
                    "memset")
        return None

    def zero(self, ptr: int, nbytes: int) -> None:
        """Clear `nbytes` at a device address (a call plan's memset)."""
        self._check(self._drv().cuMemsetD8Async(ptr, 0, int(nbytes), self.stream.handle),
                    "memset")

    def copy(self, dst: DevBuf, src: DevBuf, nbytes: int, wait_for: Sequence[Any] = (),
             src_offset: int = 0) -> Any:
        self._check(self._drv().cuMemcpyDtoDAsync(dst.ptr, src.ptr + src_offset, int(nbytes),
                                                  self.stream.handle), "copy")
        return None

    def copy2d(self, dst: DevBuf, src: DevBuf, rows: int, row_bytes: int, src_pitch: int,
               dst_pitch: int, wait_for: Sequence[Any] = ()) -> Any:
        drv = self._drv()
        key = (rows, row_bytes, src_pitch, dst_pitch)
        p = self._copies2d.get(key)
        if p is None:  # (the driver reads the descriptor during the call: one per geometry)
            if len(self._copies2d) > 256:
                self._copies2d.clear()
            p = self._copies2d[key] = drv.CUDA_MEMCPY2D()
            p.srcMemoryType = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
            p.srcPitch = int(src_pitch)
            p.dstMemoryType = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
            p.dstPitch = int(dst_pitch)
            p.WidthInBytes = int(row_bytes)
            p.Height = int(rows)
        p.srcDevice = src.ptr
        p.dstDevice = dst.ptr
        self._check(drv.cuMemcpy2DAsync(p, self.stream.handle), "2-D copy")
        return None

    # -- GPU arrays of other libraries --------------------------------------------------------
    def borrow(self, x: Any, what: str, op: str) -> tuple[DevBuf, tuple[int, ...], np.dtype, str]:
        """(memory, shape, dtype, order "C"/"F") of a CuPy/PyTorch/CUDA-array-interface array,
        used in place; the stream waits for the library's current stream first."""
        cai = _cai(x, what, op)
        shape = tuple(int(s) for s in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        ptr = int(cai["data"][0])
        order = _order(shape, cai.get("strides"), dtype.itemsize)
        if order is None:
            raise BlasError(f"{op}: {what} is a strided GPU array (strides {tuple(cai['strides'])})"
                            f"; pass a contiguous one (row- or column-major), e.g. "
                            f"cupy.ascontiguousarray({what}) or {what}.contiguous()")
        ordinal = self._ordinals.get(ptr, -1)
        if ordinal == -1:
            from liftkit.backends.cuda.arrays import _ordinal

            ordinal = _ordinal(ptr)
            if len(self._ordinals) > 256:
                self._ordinals.clear()
            self._ordinals[ptr] = ordinal
        if ordinal is not None and ordinal != self.device.ordinal:
            raise BlasError(f"{op}: {what} is on CUDA device {ordinal}, but this session runs on "
                            f"{self.device.label}; use a session of that device or copy it there")
        self._wait_library(x)
        nbytes = math.prod(shape) * dtype.itemsize
        return DevBuf(ptr, nbytes, x), shape, dtype, order

    def begin_call(self) -> None:
        """An operation starts: its operands' libraries are waited for once per stream (no
        user code runs between the borrowing of one call's operands)."""
        self._waited, self._in_call = None, True

    def end_call(self) -> None:
        """The operation is enqueued: the next borrow waits again (the library may enqueue
        more work before it)."""
        self._waited, self._in_call = None, False

    def wait_library(self, x: Any) -> None:
        """See `_wait_library` (the call plans' name for it)."""
        self._wait_library(x)

    def _wait_library(self, x: Any) -> None:
        """Order our stream after the work the array's library has enqueued (device-side;
        nothing to do for the legacy default stream where ours is blocking)."""
        handle = self._library_stream(x)
        if (self._in_call and handle == self._waited) or (handle == 0 and self.blocking):
            return
        self._waited = handle if self._in_call else None
        d = self.direct
        if d is not None:  # one event, re-recorded: the wait takes the work recorded now
            ev = self._order_int
            err = d.record(ev, handle) or d.wait(self._stream_int, ev, 0)
            if err:
                self._direct_failed(err, "event record / stream wait")
            return
        drv = self._drv()
        # one event, re-recorded: the wait takes the work recorded at the time of the call
        self._check(drv.cuEventRecord(self._order_event, handle), "event record")
        self._check(drv.cuStreamWaitEvent(self.stream.handle, self._order_event, 0), "stream wait")

    def new_array(self, like: Any, shape: tuple[int, ...], dtype: np.dtype, order: str = "C"
                  ) -> tuple[Any, DevBuf]:
        """A fresh GPU array of the library `like` came from (PyTorch, else CuPy)."""
        from liftkit.backends.cuda.arrays import new_result

        lib = type(like).__module__.split(".", 1)[0]
        lib = lib if lib in ("torch", "cupy") else "other"
        if order == "F":
            arr, ptr = new_result(lib, shape[::-1], dtype, self.device.ordinal, self.runner._allocate)
            arr = arr.T
        else:
            arr, ptr = new_result(lib, shape, dtype, self.device.ordinal, self.runner._allocate)
        self._wait_library(arr)  # the library may still be allocating/initialising on its stream
        return arr, DevBuf(ptr, math.prod(shape) * np.dtype(dtype).itemsize, arr)

    # -- events -----------------------------------------------------------------------------
    def marker(self) -> Any:
        """A timing event after everything enqueued (`seconds` measures between two)."""
        return self.stream.record(options=self._core.EventOptions(timing_enabled=True))

    def call_event(self) -> "DriverEvent":
        """An event after everything enqueued, for a future: one of a ring of driver events
        made once, re-recorded (one driver call; a cuda.core event costs an object, a create
        and a destroy per call). When the ring comes round while an older future is unread,
        its event marks later work on the same stream, so waiting on it still waits for the
        older call (and a little longer): never too early."""
        ring = self._ring
        i = self._ring_next
        self._ring_next = (i + 1) % _RING
        if i == len(ring):
            drv = self._drv()
            ring.append(DriverEvent(self, self._check(drv.cuEventCreate(
                drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "event")))
        ev = ring[i]
        d = self.direct
        if d is not None:
            n = ev.number
            if n is None:
                n = ev.number = int(ev.handle)
            err = d.record(n, self._stream_int)
            if err:
                self._direct_failed(err, "event record")
        else:
            self._check(self._drv().cuEventRecord(ev.handle, self.stream.handle), "event record")
        return ev

    def wait(self, events: Sequence[Any]) -> None:
        if events:
            try:
                events[-1].sync()  # one stream: the last event completes after the others
            except Exception as err:  # noqa: BLE001 - a fault in a kernel surfaces here
                raise BlasError(f"a kernel failed on {self.device.label}: {err}") from None

    def done(self, events: Sequence[Any]) -> bool:
        return not events or bool(events[-1].is_done)

    def seconds(self, first: Any, last: Any) -> float:
        return (last - first) * 1e-3

    def finish(self) -> None:
        self.stream.sync()

    def flush(self) -> None:
        """CUDA launches start at once: nothing to flush."""

    # -- kernels ----------------------------------------------------------------------------
    def build(self, compiled: Any, cache: Any, device: Any) -> list[Any]:
        try:
            return [self.runner.get_kernel(k) for k in compiled.kernels]
        except Exception as err:  # noqa: BLE001 - NVRTC or module load, in its own words
            raise BlasError(f"building {compiled.kernels[0].name if compiled.kernels else 'a kernel'}"
                            f" for {self.device.label}: {str(err).splitlines()[0]}") from None

    def launch(self, handle: Any, kernel: Any, glob: tuple[int, ...],
               local: Optional[tuple[int, ...]], args: Sequence[Any],
               wait_for: Sequence[Any]) -> Any:
        config, _ = self.launch_config(handle, kernel, glob, local)
        values = [a.ptr if isinstance(a, DevBuf) else a for a in args]
        try:
            self._core.launch(self.stream, config, handle, *values)
        except Exception as err:  # noqa: BLE001 - cuda.core's own error type
            raise BlasError(f"kernel {kernel.name}: the launch failed on {self.device.label} "
                            f"({err})") from None
        return None

    def launch_config(self, handle: Any, kernel: Any, glob: tuple[int, ...],
                      local: Optional[tuple[int, ...]]) -> tuple[Any, Any]:
        """(cuda.core's launch configuration, handle) of a kernel at one geometry, made once."""
        key = (id(handle), glob, local)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(handle, kernel, glob, local)
            if len(self._plans) > 512:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def launch_all(self, steps: Sequence[Any], values: Sequence[Any]) -> None:
        """Enqueue a call plan's steps (`liftkit.blas.calls`: a Launch's argument list filled
        from `values` by slot; Clear and Copy on the slots' addresses)."""
        launch, stream = self._core.launch, self.stream
        for ln in steps:
            if ln.step != "launch":
                if ln.step == "copy" and ln.rows == 1:  # a vector: no pitch limits
                    self.copy(DevBuf(values[ln.dst], 0), DevBuf(values[ln.src], 0), ln.row_bytes)
                elif ln.step == "copy":
                    self.copy2d(DevBuf(values[ln.dst], 0), DevBuf(values[ln.src], 0), ln.rows,
                                ln.row_bytes, ln.src_pitch, ln.dst_pitch)
                else:
                    self.zero(values[ln.slot], ln.nbytes)
                continue
            args = list(ln.args)
            for pos, slot in ln.slots:
                args[pos] = values[slot]
            try:
                launch(stream, ln.config, ln.handle, *args)
            except Exception as err:  # noqa: BLE001 - cuda.core's own error type
                raise BlasError(f"kernel {ln.name}: the launch failed on {self.device.label} "
                                f"({err})") from None

    @functools.cached_property
    def _stream_int(self) -> int:
        return int(self.stream.handle)

    @functools.cached_property
    def _order_int(self) -> int:
        return int(self._order_event)

    def _plan(self, handle: Any, kernel: Any, glob: tuple[int, ...],
              local: Optional[tuple[int, ...]]) -> tuple[Any, Any]:
        """What every launch of a kernel at one geometry shares, worked out once: the device
        limits checked and cuda.core's launch configuration (with the handle, so that its id
        stays its own while the plan is kept)."""
        from liftkit.backends.pipeline import Launch

        launch = Launch(kernel.name, glob, local)
        self.runner.check_device_limits(kernel, handle, launch, kernel.name)
        block, grid = self.runner.geometry(launch)
        shmem = int(getattr(kernel, "dynamic_shared", 0) or 0)  # > 48 KB of local memory
        c = self._core
        config = (c.LaunchConfig(grid=grid, block=block, shmem_size=shmem) if shmem else
                  c.LaunchConfig(grid=grid, block=block))
        return config, handle


_RING = 64  # events in a CUDA queue's ring of futures' events


class DriverEvent:
    """A CUDA event made by the driver and re-recorded by `CUDAQueue.call_event`; `sync` and
    `is_done` as cuda.core's events have them (a kernel's fault surfaces in `sync`)."""

    __slots__ = ("queue", "handle", "number")

    def __init__(self, queue: "CUDAQueue", handle: Any) -> None:
        self.queue, self.handle = queue, handle
        self.number: Optional[int] = None  # the handle as ctypes takes it (made on first use)

    def sync(self) -> None:
        self.queue._check(self.queue._drv().cuEventSynchronize(self.handle), "event sync")

    @property
    def is_done(self) -> bool:
        drv = self.queue._drv()
        err = drv.cuEventQuery(self.handle)[0]
        if err == drv.CUresult.CUDA_SUCCESS:
            return True
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self.sync()  # an error: raised in the library's words
        return True


def _cai(x: Any, what: str, op: str) -> Mapping[str, Any]:
    try:
        cai = getattr(x, "__cuda_array_interface__", None)
    except Exception as err:  # noqa: BLE001 - e.g. PyTorch refuses tensors that require grad
        raise BlasError(f"{op}: cannot read the GPU memory of {what} ({err})") from None
    if cai is None:
        from liftkit.backends.cuda.arrays import _from_dlpack

        cai = _from_dlpack(x).__cuda_array_interface__
    return cai


def is_cuda_array(x: Any) -> bool:
    """A GPU array the CUDA backend reads in place (CUDA array interface, or DLPack on a CUDA
    device)."""
    if isinstance(x, np.ndarray):
        return False
    t = type(x)
    if t.__name__ == "ndarray" and t.__module__.split(".", 1)[0] == "cupy":
        return True  # without building its array interface (the borrow builds it once)
    try:
        if hasattr(x, "__cuda_array_interface__"):
            return True
    except Exception:  # noqa: BLE001 - a tensor that refuses: still a GPU array
        return True
    dl = getattr(x, "__dlpack_device__", None)
    if dl is None:
        return False
    try:
        from liftkit.backends.cuda.arrays import KDL_CUDA, KDL_CUDA_MANAGED

        return int(dl()[0]) in (KDL_CUDA, KDL_CUDA_MANAGED)
    except Exception:  # noqa: BLE001
        return False


def _order(shape: tuple[int, ...], strides: Any, item: int) -> Optional[str]:
    """"C" or "F" for a contiguous array's strides (None: strided); dimensions of length 1
    may have any stride."""
    if strides is None:
        return "C"
    s = tuple(strides)

    def same(want: tuple[int, ...]) -> bool:
        return all(n <= 1 or a == b for n, a, b in zip(shape, s, want))

    if same(_c(shape, item)):
        return "C"
    if len(shape) == 2 and same(_c(shape[::-1], item)[::-1]):
        return "F"
    return None


def _c(shape: tuple[int, ...], item: int) -> tuple[int, ...]:
    out, step = [], item
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


@functools.cache
def _driver_module() -> Any:
    """cuda.bindings.driver, imported once (the per-call paths ask for it)."""
    from cuda.bindings import driver

    return driver


@functools.cache
def _backend_check() -> Any:
    """The CUDA backend's result check, imported once."""
    from liftkit.backends.cuda.devices import check

    return check


class LibraryStreams:
    """The stream handle an array's library is enqueuing on now (0: the legacy default, also
    where the library's look-up fails): how to ask is worked out once per array type and kept
    here (a queue's own; its call plans ask on every call)."""

    def __init__(self) -> None:
        self._by_type: dict[type, Callable[[Any], Any]] = {}

    def __call__(self, x: Any) -> Any:
        t = type(x)
        get = self._by_type.get(t)
        if get is None:
            get = self._by_type[t] = _stream_getter(t)
        try:
            return get(x)
        except Exception:  # noqa: BLE001 - fall back to the legacy default stream
            return 0


def _stream_getter(t: type) -> Callable[[Any], Any]:
    """How to ask an array type's library for its current stream."""
    mod = t.__module__.split(".", 1)[0]
    if mod == "cupy":  # the array's library is imported already
        get = sys.modules["cupy"].cuda.get_current_stream
        return lambda x: get().ptr
    if mod == "torch":
        current = sys.modules["torch"].cuda.current_stream
        return lambda x: current(x.device).cuda_stream
    return lambda x: 0
