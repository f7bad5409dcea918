"""The task runtime (seed 003 ch. 7, VRruntime): array variables, tasks and synchronisation over
one device, OpenCL or CUDA.

* Asynchronous dispatch (§7.3.1): ``launch`` enqueues and returns an event id; the host blocks
  only in ``read``/``sync_host``/``wait_*``.
* Lazy transfers: a buffer is uploaded only when a task needs it on the device and the device
  copy is stale, downloaded only when the host needs it and the host copy is stale; nothing is
  copied twice. Host memory is identified by address range (§7.2.1), so views of one array
  share a buffer (at an offset) and overlapping arrays are merged into one.
* Copy-on-potential-write (§7.3.2): ``copy`` records a deferred copy; it is made only when a
  task may write the source or the copy.
* Queues (§7.3.3, §7.4): uploads and downloads go on a transfer queue, kernels and device
  copies on ``queues`` compute queues (1 unless the device's calibration profile, written by
  ``liftkit runtime calibrate``, found more to pay off); the order between them is expressed
  by events: a task waits for the writers of every buffer it touches (and the readers of those
  it writes), an upload for the tasks still using its buffer, a download for the writers of its
  buffer only, so results come back while unrelated kernels still run (runtime/events.py).
* Memory pressure (§7.1.3): the runtime accounts its allocations against a limit (the device's
  memory, or ``memory_limit``); when a task's buffers do not fit it finishes pending work and
  writes back and frees least-recently-used buffers; a task that still cannot fit runs on the
  CPU (its OpenCL C on the CPU OpenCL device) with the host copies — no crash, no lost update
  (runtime/pressure.py).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from .devices import OpenCLDevice, Ref, open_device
from .events import TaskOrder
from .plans import PlannedLaunches
from .pressure import MemoryPressure
from .tables import (ArrayVar, Buffer, EventRow, Kernel, RuntimeError_, Whole, c_strides,
                     extent_of)

STAT_KEYS = ("tasks", "kernels", "uploads", "upload_bytes", "downloads", "download_bytes",
             "device_copies", "cow_deferred", "cow_copies", "evictions", "writebacks",
             "cpu_tasks", "allocated_bytes", "peak_bytes",
             "queues", "cross_queue_waits", "overlapped_transfers")


def _host_view(lo: int, nbytes: int) -> np.ndarray:
    return np.frombuffer((ctypes.c_char * max(nbytes, 1)).from_address(lo), np.uint8)[:nbytes]


class Runtime(PlannedLaunches, MemoryPressure, TaskOrder):
    """The task runtime over one device (see the module docstring).

    ``backend``: "auto" (CUDA where present, else OpenCL's default device), "opencl" or "cuda";
    ``device``: the backend's device spec ("cpu", "gpu", a name); ``memory_limit``: bytes the
    runtime may hold on the device (default: 90% of the device's memory); ``queues``: compute
    queues (default: the device's calibration profile, else 1)."""

    def __init__(self, backend: str = "auto", device: Optional[str] = None,
                 memory_limit: Optional[int] = None, dev: Any = None,
                 queues: Optional[int] = None) -> None:
        if dev is None:
            dev = open_device(backend, device)
            if queues is None:
                from .profile import queues_for
                queues = queues_for(dev)
            dev.set_queues(queues)
        elif queues is not None:
            dev.set_queues(queues)
        self.device = dev
        self.nqueues = len(getattr(dev, "queues", [None]))
        self._rr = 0  # the compute queue the next independent task goes to
        self._latest = [0] * self.nqueues  # each compute queue's newest task (event id)
        # a device that can mark a queue later (CUDA) launches without an event; a task's
        # event is recorded when a wait, a host read or a sweep needs it (``_event_of``)
        self._lazy = callable(getattr(dev, "mark", None))
        self._unmarked: list[list[int]] = [[] for _ in range(self.nqueues)]
        # per compute queue, the newest task of each other queue it was made to wait for: a
        # later task there needs no wait for it or anything before it (queues run in order)
        self._waited: list[dict[int, int]] = [{} for _ in range(self.nqueues)]
        self._to_wait: Optional[tuple] = None  # (queue, waits) of the task being enqueued:
        # entered in ``_waited`` once it is enqueued (a failed enqueue may not have waited)
        self.dialect = self.device.dialect
        self.limit = int(memory_limit) if memory_limit is not None \
            else int(self.device.total_memory * 0.9)
        self.vars: dict[int, ArrayVar] = {}
        self.buffers: dict[int, Buffer] = {}
        self.events: dict[int, EventRow] = {}
        self._by_key: dict[Any, int] = {}
        self._ids = 0
        self._clock = 0
        self._retire_at = 64  # pending tasks past which a launch sweeps finished ones out
        self._epoch = 0  # the tables' shape changed (LaunchPlan's validity)
        self._built: dict[int, tuple] = {}  # id of a Kernel -> (it, the device's built kernel)
        self._seen: dict[tuple, Any] = {}  # launches seen once (None) or repeated (their plan)
        self._memo: Optional[tuple] = None  # the last planned launch's (kernel, args, ..., plan)
        self._cpu: Optional[OpenCLDevice] = None
        self._stats: Counter = Counter()
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Runtime({self.device.label!r}, limit={self.limit})"

    # ------------------------------------------------------------------ statistics
    def stats(self) -> dict[str, int]:
        """Counts of tasks, transfers (uploads/downloads and bytes), deferred and made copies,
        evictions, write-backs, tasks run on the CPU, and device memory held (now and peak)."""
        with self.lock:
            out = {k: int(self._stats.get(k, 0)) for k in STAT_KEYS}
            out["allocated_bytes"] = self._allocated()
            out["queues"] = self.nqueues
            return out

    def reset_stats(self) -> None:
        with self.lock:
            peak = self._allocated()
            self._stats.clear()
            self._stats["peak_bytes"] = peak

    def _allocated(self) -> int:
        return sum(b.nbytes for b in self.buffers.values() if b.handle is not None and not b.borrowed)

    def _next(self) -> int:
        self._ids += 1
        return self._ids

    # ------------------------------------------------------------------ array variables
    def submit(self, x: Any) -> ArrayVar:
        """Hand an array to the runtime (§7.1.1). A NumPy array stays the host copy: do not
        touch it until ``read``/``sync_host``. On CUDA, a CuPy/PyTorch array is used in place."""
        with self.lock:
            borrow = getattr(self.device, "borrow", None)
            if borrow is not None and not isinstance(x, np.ndarray):
                got = borrow(x)
                if got is not None:
                    return self._borrowed(*got)
            if not isinstance(x, np.ndarray):
                raise TypeError(f"submit takes a NumPy array (or a GPU array on CUDA), "
                                f"not {type(x).__name__}")
            return self.attach(x.__array_interface__["data"][0], x.shape, x.strides, x.dtype, x)

    def _borrowed(self, ptr: int, shape: tuple, dtype: np.dtype, owner: Any) -> ArrayVar:
        nbytes = math.prod(shape) * dtype.itemsize
        for b in self.buffers.values():  # the same memory adopted again: one buffer
            if b.borrowed and b.lo is not None and b.lo <= ptr and ptr + nbytes <= b.hi:
                b.owners.append(owner)
                return self.attach(ptr, shape, c_strides(shape, dtype.itemsize), dtype)
        buf = Buffer(self._next(), nbytes, int(ptr), None, [owner], handle=int(ptr),
                     borrowed=True, dev_valid=True)
        self.buffers[buf.id] = buf
        strides = c_strides(shape, dtype.itemsize)
        v = self._new_var(buf, 0, shape, strides, dtype)
        v.key = (int(ptr), tuple(shape), strides, dtype.str)
        self._by_key.setdefault(v.key, v.id)
        return v

    def adopt(self, x: Any) -> ArrayVar:
        """A CuPy/PyTorch (CUDA array interface, DLPack) array used in place: its device memory
        becomes a buffer of the runtime, never copied, freed or evicted, and ``attach`` of an
        address range inside it (the pointer compiled code holds) finds it. CUDA only."""
        with self.lock:
            borrow = getattr(self.device, "borrow", None)
            got = borrow(x) if borrow is not None else None
            if got is None:
                raise TypeError(f"{type(x).__name__} is not an array in this runtime's GPU "
                                f"memory ({self.device.label})")
            return self._borrowed(*got)

    def adopt_range(self, ptr: int, shape: Sequence[int], dtype: Any, owner: Any) -> ArrayVar:
        """``adopt`` for device memory the caller already described and synchronised (a
        C-ordered array at ``ptr`` kept alive by ``owner``)."""
        with self.lock:
            if type(shape) is not tuple or type(dtype) is not np.dtype:  # (made by the caller)
                shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
            return self._borrowed(int(ptr), shape, dtype, owner)

    def detach(self, v: ArrayVar, wait: bool = True) -> Any:
        """Hand the device allocation holding ``v`` (alone in its buffer) to the caller: it
        leaves the runtime's tables without being freed or downloaded (after its writers, or
        without ``wait`` at once: the caller orders its use and its free after them)."""
        with self.lock:
            var = self._var(v)
            buf = self.buffers[var.buffer]
            if buf.borrowed or buf.handle is None or buf.vars != {var.id} or not buf.dev_valid:
                raise RuntimeError_(f"{var} cannot leave the runtime on the device")
            for eid in list(buf.writers) if wait else ():
                row = self.events.get(eid)
                if row is not None:
                    self.device.wait(self._event_of(row))
            handle = buf.handle
            buf.handle = None
            self._epoch += 1
            del self.vars[var.id]
            if var.key is not None and self._by_key.get(var.key) == var.id:
                del self._by_key[var.key]
            self.buffers.pop(buf.id, None)
            return handle

    def attach(self, ptr: int, shape: Sequence[int], strides: Sequence[int], dtype: Any,
               owner: Any = None) -> ArrayVar:
        """The variable for host memory at ``ptr`` (byte strides); the same array attached twice
        is one variable, views of one allocation share a buffer, overlapping ranges merge."""
        with self.lock:
            if type(dtype) is not np.dtype or type(shape) is not tuple or \
                    type(strides) is not tuple:  # (compiled code's callers pass these)
                dtype = np.dtype(dtype)
                shape, strides = tuple(int(n) for n in shape), tuple(int(s) for s in strides)
            key = (int(ptr), shape, strides, dtype.str)
            vid = self._by_key.get(key)
            if vid is not None and vid in self.vars:
                v = self.vars[vid]
                v.refs += 1
                if owner is not None:
                    self.buffers[v.buffer].owners.append(owner)
                return v
            elo, ehi = extent_of(shape, strides, dtype.itemsize)
            lo, hi = int(ptr) + elo, int(ptr) + max(ehi, elo + 1)
            over = []  # host buffers it overlaps
            for b in self.buffers.values():  # one pass over the buffers with an address range
                blo = b.lo
                if blo is None or blo >= hi or lo >= blo + b.nbytes:
                    continue
                if b.borrowed:  # inside a CuPy/PyTorch array adopted in place
                    if not (blo <= lo and hi <= b.hi):
                        raise RuntimeError_("an array reaches past the GPU array it views")
                    v = self._new_var(b, int(ptr) - blo, shape, strides, dtype)
                    v.key = key
                    self._by_key[key] = v.id
                    return v
                if b.registered:
                    over.append(b)
            inside = [b for b in over if b.lo <= lo and hi <= b.hi]
            if inside:
                buf = inside[0]
            else:
                for b in over:
                    lo, hi = min(lo, b.lo), max(hi, b.hi)
                    self._to_host(b)
                buf = Buffer(self._next(), hi - lo, lo, _host_view(lo, hi - lo), [],
                             registered=True, host_valid=True)
                self.buffers[buf.id] = buf
                self._epoch += 1
                for b in over:  # merge: their variables move into the new buffer
                    buf.owners += b.owners
                    for vid2 in list(b.vars):
                        v2 = self.vars[vid2]
                        v2.offset += b.lo - lo
                        v2.buffer = buf.id
                        buf.vars.add(vid2)
                    self._drop(b)
            if owner is not None:
                buf.owners.append(owner)
            v = self._new_var(buf, int(ptr) - buf.lo, shape, strides, dtype)  # type: ignore[operator]
            v.key = key
            self._by_key[key] = v.id
            return v

    def empty(self, shape: Sequence[int], dtype: Any) -> ArrayVar:
        """A new array on the device with undefined contents (no host copy until needed)."""
        with self.lock:
            dtype = np.dtype(dtype)
            shape = tuple(int(n) for n in shape)
            nbytes = math.prod(shape) * dtype.itemsize
            buf = Buffer(self._next(), nbytes, None, None)
            self.buffers[buf.id] = buf
            return self._new_var(buf, 0, shape, c_strides(shape, dtype.itemsize), dtype)

    def copy(self, v: ArrayVar) -> ArrayVar:
        """A deep copy of ``v``, deferred until a task may write either (§7.3.2)."""
        with self.lock:
            src = self._var(v)
            buf = self.buffers[src.buffer]
            c = self._new_var(buf, src.offset, src.shape, src.strides, src.dtype)
            c.cow_of = src.cow_of if src.cow_of is not None else src.id
            self._stats["cow_deferred"] += 1
            return c

    def _new_var(self, buf: Buffer, offset: int, shape: tuple, strides: tuple,
                 dtype: np.dtype) -> ArrayVar:
        v = ArrayVar(self._next(), buf.id, offset, shape, strides, dtype)
        self._epoch += 1
        self.vars[v.id] = v
        buf.vars.add(v.id)
        return v

    def _var(self, v: ArrayVar | int) -> ArrayVar:
        vid = v if isinstance(v, int) else v.id
        got = self.vars.get(vid)
        if got is None:
            raise RuntimeError_(f"array variable {vid} was released")
        return got

    def release(self, v: ArrayVar, writeback: bool = True) -> None:
        """Mark ``v`` dead (§7.1.3): with ``writeback`` its host memory is brought up to date
        first; its device buffer is freed once no variable uses it. A variable attached n
        times (the same host array submitted twice) lives until released n times."""
        with self.lock:
            var = self._var(v)
            if writeback and not self.buffers[var.buffer].borrowed:  # the device is its home
                self.sync_host(var)
            var.refs -= 1
            if var.refs > 0:
                return
            buf = self.buffers[var.buffer]
            buf.vars.discard(var.id)
            del self.vars[var.id]
            self._epoch += 1
            if var.key is not None and self._by_key.get(var.key) == var.id:
                del self._by_key[var.key]
            if not buf.vars:
                self._drop(buf)

    def _drop(self, buf: Buffer) -> None:
        if buf.handle is not None and not buf.borrowed:
            self.device.free(buf.handle, self._events(buf.readers + buf.writers))
        buf.handle = None
        self._epoch += 1
        self.buffers.pop(buf.id, None)
        if self._seen:  # remembered launches hold their buffers (and the memory they mirror)
            self._seen.clear()
        self._memo = None

    # ------------------------------------------------------------------ host side
    def sync_host(self, v: ArrayVar, write: bool = False) -> None:
        """waitForVariable (§7.1.4) and make the host copy current; with ``write`` the host is
        about to modify it, so the device copy becomes stale (and deferred copies are made)."""
        with self.lock:
            var = self._var(v)
            if write:
                self._before_write(var)
            buf = self.buffers[var.buffer]
            self._to_host(buf)
            if write:
                self._uploads_done(buf)
                buf.dev_valid = False
                buf.host_valid = True

    def host_range(self, lo: int, hi: int, write: bool = False) -> None:
        """The host is about to read (or write) host memory [lo, hi): every buffer mirroring
        part of it is brought up to date there (and, for a write, marked stale on the device)."""
        with self.lock:
            for buf in list(self.buffers.values()):
                if buf.borrowed and buf.lo is not None and buf.lo < hi and lo < buf.hi:
                    raise RuntimeError_("host code cannot read or write an array in GPU memory "
                                        "(a CuPy/PyTorch argument)")
                if not (buf.registered and buf.lo < hi and lo < buf.hi):  # type: ignore[operator]
                    continue
                if write:
                    for vid in list(buf.vars):
                        if vid in self.vars and self.vars[vid].buffer == buf.id:
                            self._before_write(self.vars[vid])
                self._to_host(buf)
                if write:
                    self._uploads_done(buf)
                    buf.dev_valid = False

    def _uploads_done(self, buf: Buffer) -> None:
        """Before the host writes memory an asynchronous upload may still be reading."""
        for eid in list(buf.writers):
            row = self.events.get(eid)
            if row is not None and row.task == "upload":
                self.device.wait(row.event)

    def read(self, v: ArrayVar) -> np.ndarray:
        """The array's values on the host (a read-only view; blocks on the tasks writing it)."""
        with self.lock:
            var = self._var(v)
            self.sync_host(var)
            out = self._view(var)
            out.flags.writeable = False
            return out

    def write(self, v: ArrayVar, values: Any) -> None:
        """Set the array's values from the host."""
        with self.lock:
            var = self._var(v)
            self.sync_host(var, write=True)
            view = self._view(self._var(var.id))
            np.copyto(view, values, casting="same_kind")

    def _view(self, var: ArrayVar) -> np.ndarray:
        buf = self.buffers[var.buffer]
        assert buf.host is not None
        return np.ndarray(var.shape, var.dtype, buffer=buf.host, offset=var.offset,
                          strides=var.strides)

    def _to_host(self, buf: Buffer) -> None:
        if buf.host is None:
            buf.host = np.empty(buf.nbytes, np.uint8)
        if not buf.host_valid and buf.dev_valid:
            wait = self._events(buf.writers)
            self._count_overlap(buf.writers)
            self.device.download(buf.handle, 0, buf.host, wait)
            self._stats["downloads"] += 1
            self._stats["download_bytes"] += buf.nbytes
        buf.host_valid = True

    def close(self) -> None:
        """Finish everything, write back, free all device memory."""
        with self.lock:
            self.wait_all()
            for buf in list(self.buffers.values()):
                self._drop(buf)
            self.vars.clear()
            self._by_key.clear()

    # ------------------------------------------------------------------ tasks
    def launch(self, kernel: Kernel, global_size: Sequence[int], args: Sequence[Any], *,
               reads: Optional[Iterable[ArrayVar]] = None,
               writes: Optional[Iterable[ArrayVar]] = None,
               overwrites: Iterable[ArrayVar] = (),
               local_size: Optional[Sequence[int]] = None, plan: bool = True) -> int:
        """Enqueue a kernel task and return its event id without waiting (§7.1.2). Each array
        argument becomes (buffer, element offset); ``reads``/``writes`` say which arrays the task
        may read or write (default: every array argument both); ``overwrites`` are written
        whole without being read (their stale contents are not uploaded). A launch repeated
        with the same kernel and arrays (a chain, a loop) goes through a launch plan from its
        second time (``plans.py``); ``plan=False`` for a one-off (its caller plans repeats)."""
        if plan and local_size is None and reads is not None and writes is not None:
            with self.lock:  # (lists and tuples as they are: the plan keeps tuples)
                m = self._memo  # the same launch as the last one (a chain): its plan at once
                try:
                    same = m is not None and m[0] is kernel and args == m[1] and \
                        reads == m[2] and writes == m[3] and overwrites == m[4]
                except (TypeError, ValueError):  # (an argument that is no kernel argument)
                    same = False
                if same:
                    return self._planned(m[5], global_size, args)  # type: ignore[index]
                if type(reads) is not list and type(reads) is not tuple:
                    reads = list(reads)
                if type(writes) is not list and type(writes) is not tuple:
                    writes = list(writes)
                if type(overwrites) is not list and type(overwrites) is not tuple:
                    overwrites = list(overwrites)
                p = self._repeated(kernel, args, reads, writes, overwrites)
                if p is not None:
                    # (copies: the caller may change its lists; equal lists of the same
                    # variables and scalars are the same launch, as ``_repeated`` keys it)
                    self._memo = (kernel, type(args)(args), type(reads)(reads),
                                  type(writes)(writes), type(overwrites)(overwrites), p)
                    return self._planned(p, global_size, args)
        return self._launch(kernel, global_size, args, reads, writes, overwrites, local_size)

    def _launch(self, kernel: Kernel, global_size: Sequence[int], args: Sequence[Any],
                reads: Optional[Iterable[ArrayVar]], writes: Optional[Iterable[ArrayVar]],
                overwrites: Iterable[ArrayVar], local_size: Optional[Sequence[int]]) -> int:
        """``launch`` without a plan."""
        with self.lock:
            table, buffers = self.vars, self.buffers
            arrays = []  # the table's own rows (a released handle is refused)
            for a in args:
                t = type(a)
                if t is ArrayVar or t is Whole:
                    a = a.var if t is Whole else a
                    arrays.append(table.get(a.id) or self._var(a))
            ow = {self._var(a).id for a in overwrites} if overwrites else ()
            rd = [(table.get(a.id) if type(a) is ArrayVar else None) or self._var(a)
                  for a in reads] if reads is not None else [a for a in arrays if a.id not in ow]
            wr = [(table.get(a.id) if type(a) is ArrayVar else None) or self._var(a)
                  for a in writes] if writes is not None else arrays
            for var in wr:  # deferred copies made now move rows in place (same objects)
                if var.cow_of is not None or len(buffers[var.buffer].vars) > 1:
                    self._before_write(var)
            self._stats["tasks"] += 1
            bufs = [buffers[b] for b in {v.buffer: None for v in arrays}]
            whole = {v.buffer for v in wr if v.id in ow and v.offset == 0 and
                     v.extent() == (0, buffers[v.buffer].nbytes) and v.id not in
                     {r.id for r in rd}} if ow else ()
            for b in bufs:
                if b.handle is None:
                    if not self._reserve([b.id for b in bufs]):
                        return self._on_cpu(kernel, global_size, local_size, args, wr)
                    break
            built = self._built.get(id(kernel))
            if built is None or built[0] is not kernel:  # (the kernel kept: its id stays its)
                built = self._built[id(kernel)] = (kernel, self.device.build(
                    kernel.name, kernel.source(self.dialect), kernel.dynamic_shared))
            keep: list = []
            wbufs = {v.buffer for v in wr}
            queue, wait = self._place(self._ready(bufs, whole, wbufs, keep))
            if self._lazy:
                ev = self.device.launch(built[1], global_size, local_size,
                                        self._kernel_args(args), queue, wait, False)
            else:
                ev = self.device.launch(built[1], global_size, local_size,
                                        self._kernel_args(args), queue, wait)
            return self._task(kernel.name, ev, queue, keep, bufs, wbufs,
                              tuple([v.id for v in rd]), tuple([v.id for v in wr]),
                              [buffers[v.buffer] for v in rd if v.buffer not in wbufs])

    def _task(self, name: str, ev: Any, queue: int, keep: list, bufs: Sequence[Buffer],
              wbufs: Any, rd_ids: tuple, wr_ids: tuple, rd_bufs: Sequence[Buffer]) -> int:
        """Enter a launched kernel in the event table and the buffers' rows of what it touches
        (``ev`` None: launched without an event, recorded when one is needed)."""
        if self._to_wait is not None:
            self._waits_made()
        self._stats["kernels"] += 1
        self._ids += 1
        eid = self._ids
        self._latest[queue] = eid
        self.events[eid] = EventRow(eid, ev, name, rd_ids, wr_ids, keep, queue)
        if ev is None:
            self._unmarked[queue].append(eid)
        self._clock += 1
        clock = self._clock
        for buf in bufs:
            buf.last_use = clock
            if buf.id in wbufs:  # it follows every earlier user of these buffers: it
                buf.writers, buf.readers = [eid], []  # alone stands for them from now on
                buf.host_valid = False
        for buf in rd_bufs:
            buf.readers.append(eid)
        if len(self.events) > self._retire_at:
            self._retire()
        return eid

    def _ready(self, bufs: Sequence[Buffer], whole: Any, wbufs: Any, keep: list) -> list[int]:
        """Make a launch's buffers valid on the device (uploading what only the host holds,
        except buffers the kernel overwrites whole) and return the tasks it must wait for: the
        writers of everything, and the readers of what it writes."""
        deps: list[int] = []
        for buf in bufs:
            if not buf.dev_valid and buf.host_valid and buf.id not in whole:
                self._upload(buf, keep)
            buf.dev_valid = True
            deps += buf.writers
            if buf.id in wbufs:
                deps += buf.readers
        return deps

    def _upload(self, buf: Buffer, keep: list) -> int:
        """Upload on the transfer queue after the tasks still using the buffer's old contents;
        the upload counts as a writer, so the tasks that need it wait for it."""
        deps = buf.readers + buf.writers
        self._count_overlap(deps)
        ev = self.device.upload(buf.handle, 0, buf.host, self._events(deps))
        keep.append(buf.host)
        self._stats["uploads"] += 1
        self._stats["upload_bytes"] += buf.nbytes
        eid = self._record(ev, "upload", (), (), [buf.host])
        buf.writers, buf.readers = [eid], []
        return eid

    def _kernel_args(self, args: Sequence[Any]) -> list:
        out: list = []
        for a in args:
            t = type(a)
            if t is ArrayVar:  # the common case first
                var = self.vars.get(a.id)
                if var is not None and not var.offset % var.dtype.itemsize:
                    out += [Ref(self.buffers[var.buffer].handle),
                            np.int64(var.offset // var.dtype.itemsize)]
                    continue
            elif t is np.int64 or t is np.int32 or t is np.float64 or t is np.float32:
                out.append(a)
                continue
            if isinstance(a, Whole):
                var = self._var(a.var)
                if var.offset:
                    raise RuntimeError_(f"{var} does not start its buffer (offset {var.offset})")
                out.append(Ref(self.buffers[var.buffer].handle))
            elif isinstance(a, ArrayVar):
                var = self._var(a)
                buf = self.buffers[var.buffer]
                if var.offset % var.dtype.itemsize:
                    raise RuntimeError_(f"{var} starts at byte {var.offset} of its buffer, not "
                                        f"a multiple of its element size")
                out += [Ref(buf.handle), np.int64(var.offset // var.dtype.itemsize)]
            elif isinstance(a, (bool, np.bool_)):
                out.append(np.int32(a))
            elif isinstance(a, int):
                out.append(np.int64(a))
            elif isinstance(a, float):
                out.append(np.float64(a))
            elif isinstance(a, np.generic):
                out.append(a)
            else:
                raise TypeError(f"kernel arguments are ArrayVars or scalars, not {type(a).__name__}")
        return out

    # ------------------------------------------------------------------ copy on write
    def _before_write(self, var: ArrayVar) -> None:
        """A task or the host may write ``var``: make the deferred copies sharing its buffer."""
        buf = self.buffers[var.buffer]
        sharers = [self.vars[i] for i in buf.vars if i != var.id]
        if var.cow_of is not None:
            if sharers:  # a deferred copy still sharing memory: make it now
                self._materialise(var)
            else:
                var.cow_of = None
            return
        for s in sharers:  # copies of this buffer's data (of var or a view overlapping it)
            if s.cow_of is not None:
                self._materialise(s)

    def _materialise(self, var: ArrayVar) -> None:
        src = self.buffers[var.buffer]
        lo, hi = var.extent()
        start, n = var.offset + lo, hi - lo
        new = Buffer(self._next(), n, None, None)
        self.buffers[new.id] = new
        if src.dev_valid and not src.host_valid and self._reserve([src.id, new.id]):
            queue, wait = self._place(list(src.writers))
            ev = self.device.copy(new.handle, 0, src.handle, start, n, queue, wait)
            self._waits_made()
            eid = self._record(ev, "copy", (), (), [], queue)
            self._latest[queue] = eid
            src.readers.append(eid)
            new.writers.append(eid)
            new.dev_valid = True
            self._stats["device_copies"] += 1
        else:
            self._to_host(src)
            assert src.host is not None
            new.host = src.host[start:start + n].copy()
            new.host_valid = True
        src.vars.discard(var.id)
        new.vars.add(var.id)
        var.buffer, var.offset, var.cow_of = new.id, -lo, None
        self._epoch += 1
        if var.key is not None and self._by_key.get(var.key) == var.id:
            del self._by_key[var.key]
            var.key = None
        self._stats["cow_copies"] += 1
