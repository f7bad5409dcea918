"""Memory pressure (seed 003 §7.1.3): the runtime accounts its device allocations against a
limit; a task whose buffers do not fit first finishes pending work and writes back and frees
least-recently-used buffers, and a task that still cannot fit runs on the CPU OpenCL device with
the host copies (no crash, no lost update). A mixin of ``Runtime`` (runtime/core.py), whose
tables these methods read and change."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .devices import OpenCLDevice, OutOfDeviceMemory
from .tables import ArrayVar, Buffer, Kernel, RuntimeError_, Whole


class MemoryPressure:
    """``Runtime``'s device allocations under its limit and its CPU fallback (a mixin: the
    runtime's tables, device and bookkeeping are its)."""
    buffers: dict    # set by Runtime.__init__
    device: Any
    limit: int
    _epoch: int
    _stats: Any
    _cpu: Any
    _allocated: Any
    _retire: Any
    _to_host: Any
    _var: Any
    _kernel_args: Any
    _record: Any

    def _reserve(self, bids: list[int]) -> bool:
        """Device allocations for every buffer in ``bids``; False if they cannot all fit even
        after evicting every other buffer."""
        need = sum(self.buffers[b].nbytes for b in bids if self.buffers[b].handle is None)
        if need == 0:
            return True
        if need > self.limit:
            return False
        if self._allocated() + need > self.limit:
            self._make_room(need, set(bids))
            if self._allocated() + need > self.limit:
                return False
        for b in bids:
            buf = self.buffers[b]
            if buf.handle is not None:
                continue
            self._epoch += 1
            try:
                buf.handle = self.device.alloc(buf.nbytes)
            except OutOfDeviceMemory:
                self._make_room(self.limit, set(bids))  # the driver disagrees: free all we can
                try:
                    buf.handle = self.device.alloc(buf.nbytes)
                except OutOfDeviceMemory:
                    return False
            buf.dev_valid = False
        alloc = self._allocated()
        if alloc > self._stats["peak_bytes"]:
            self._stats["peak_bytes"] = alloc
        return True

    def _make_room(self, need: int, pinned: set) -> None:
        self.device.finish()
        self._retire(finished=True)
        for buf in sorted((b for b in self.buffers.values() if b.handle is not None
                           and not b.borrowed and b.id not in pinned), key=lambda b: b.last_use):
            if self._allocated() + need <= self.limit:
                return
            self._evict(buf)

    def _evict(self, buf: Buffer) -> None:
        if buf.dev_valid and not buf.host_valid:
            self._to_host(buf)
            self._stats["writebacks"] += 1
        self.device.free(buf.handle)
        buf.handle = None
        self._epoch += 1
        buf.dev_valid = False
        self._stats["evictions"] += 1

    def _on_cpu(self, kernel: Kernel, global_size: Sequence[int],
                local_size: Optional[Sequence[int]], args: Sequence[Any],
                writes: list[ArrayVar]) -> int:
        """Run a task that does not fit on the device with the host copies, on the CPU OpenCL
        device (the thesis runs the same OpenCL kernel on the CPU)."""
        import pyopencl as cl
        name, source = kernel.name, kernel.sources.get("opencl")
        if source is None and kernel.cpu is not None:  # a CUDA-only derivation's OpenCL twin
            form = kernel.cpu
            name, source, global_size, local_size = \
                form.name, form.source, form.global_size, form.local_size
            if form.args is not None:
                args = [args[i] for i in form.args]
        if source is None:
            raise RuntimeError_(f"kernel {kernel.name} does not fit in device memory and has "
                                "no OpenCL C form to run on the CPU (a CUDA-only derivation)")
        self.device.finish()
        self._retire(finished=True)
        if self._cpu is None:
            self._cpu = OpenCLDevice("cpu")
        cpu = self._cpu
        kern = cpu.build(name, source)
        mf = cl.mem_flags
        made: dict[int, Any] = {}
        vals: list = []
        for a in args:
            if isinstance(a, (ArrayVar, Whole)):
                var = self._var(a.var if isinstance(a, Whole) else a)
                buf = self.buffers[var.buffer]
                if buf.borrowed:
                    raise RuntimeError_("a GPU-resident (borrowed) array cannot run on the CPU")
                self._to_host(buf)
                if buf.id not in made:
                    assert buf.host is not None
                    made[buf.id] = cl.Buffer(cpu.context, mf.READ_WRITE | mf.USE_HOST_PTR,
                                             hostbuf=buf.host)
                vals.append(made[buf.id])
                if not isinstance(a, Whole):
                    vals.append(np.int64(var.offset // var.dtype.itemsize))
            else:
                vals += self._kernel_args([a])
        ev = cpu.launch(kern, global_size, local_size, vals)
        ev.wait()
        for bid, clbuf in made.items():  # USE_HOST_PTR: map to make the host memory current
            host = self.buffers[bid].host
            assert host is not None
            cl.enqueue_copy(cpu.queue, host, clbuf, is_blocking=True)
            clbuf.release()
        for var in writes:
            buf = self.buffers[var.buffer]
            buf.host_valid, buf.dev_valid = True, False
        self._stats["cpu_tasks"] += 1
        self._stats["kernels"] += 1
        return self._record(ev, kernel.name + "@cpu", (), (), [])
