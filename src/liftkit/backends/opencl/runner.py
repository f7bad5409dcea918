"""Running a compiled pipeline with pyopencl: buffers, arguments, launches, results.

The host side shared with other backends (sizes, launch geometry, checks in the program's
terms, argument values, timings) is `liftkit.backends.pipeline.HostPipeline`; this module is
what only OpenCL does: contexts and queues, built programs from the `KernelCache`, the
device's work-group and local-memory limits, buffers and profiling events.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyopencl as cl

from liftkit.backends.hostdata import host_buffer, pack_array, unpack
from liftkit.backends.opencl.cache import KernelCache
from liftkit.backends.opencl.devices import Device, OpenCLError, select_device
from liftkit.backends.opencl.quirks import compiler_quirks
from liftkit.backends.pipeline import (  # noqa: F401 - re-exported: the runner's vocabulary
    INT32_MAX, HostPipeline, Launch, NDRangeOverride, RunInfo, Transfers, constraints_hold,
    in_dialect,
)
from liftkit.codegen.constraints import divisibility_checks  # noqa: F401 - re-exported
from liftkit.codegen.kernel import CompiledProgram, CompileOptions, Kernel
from liftkit.codegen.quirks import affects
from liftkit.codegen.views import CodegenError
from liftkit.ir.nodes import Lambda


_log = logging.getLogger(__name__)
_QUIRK_CACHE_SIZE = 64  # programs recompiled for a device's quirks, kept per runner


class OpenCLRunner(HostPipeline):
    """Runs compiled programs on one OpenCL device with a profiling queue.

    Owns the context, the queue and a `KernelCache` (a fresh one using the default directory
    unless given), so repeated runs of a program build its kernels once.
    """

    error = OpenCLError

    def __init__(self, device_spec: Union[str, Device, None] = None,
                 cache: Optional[KernelCache] = None) -> None:
        super().__init__()
        self.device = device_spec if isinstance(device_spec, Device) else select_device(device_spec)
        self.context = cl.Context([self.device.cl_device])
        self.queue = cl.CommandQueue(self.context, self.device.cl_device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.cache = cache if cache is not None else KernelCache()
        # id(program as given) -> (it, it recompiled with this device's quirks), oldest first
        self._with_quirks: dict[int, tuple[CompiledProgram, CompiledProgram]] = {}

    def __repr__(self) -> str:
        return f"OpenCLRunner({self.device.label!r})"

    # -- the backend's part of the host pipeline ---------------------------------------------------

    def for_backend(self, compiled: CompiledProgram) -> CompiledProgram:
        """In OpenCL C, recompiled with the workarounds this device's compiler needs (found by
        known-answer kernels, `quirks.py`): its defects must never give a wrong answer."""
        compiled = in_dialect(compiled, "opencl")
        quirks = compiler_quirks(self.device)
        if quirks <= compiled.options.quirks:
            return compiled
        hit = self._with_quirks.get(id(compiled))  # decided once per program, not per run
        if hit is not None and hit[0] is compiled:
            return hit[1]
        fixed = compiled
        if affects(compiled.program, quirks):
            from liftkit.codegen.compiler import compile_program

            try:
                fixed = compile_program(compiled.program, replace(
                    compiled.options, quirks=compiled.options.quirks | quirks))
            except CodegenError:
                # a hand-written kernel: its program is a high-level specification, not its source
                _log.warning("%s: the device's compiler has known defects (%s); the hand-written "
                             "kernels of this program are run as written", self.device.label,
                             ", ".join(sorted(quirks)))
        if len(self._with_quirks) >= _QUIRK_CACHE_SIZE:
            self._with_quirks.pop(next(iter(self._with_quirks)))
        self._with_quirks[id(compiled)] = (compiled, fixed)  # holds compiled: its id stays unique
        return fixed

    def get_kernel(self, k: Kernel) -> Any:
        prog = self.cache.get(self.context, self.device, k.source, k.build_options)
        try:
            return cl.Kernel(prog, k.function)
        except cl.Error as err:
            raise OpenCLError(f"kernel {k.name}: not found in its built source ({err})") from None

    def check_device_limits(self, k: Kernel, clk: Any, launch: Launch, label: str) -> None:
        dev = self.device
        if launch.local_size is not None:
            total = math.prod(launch.local_size)
            try:
                kernel_max = int(clk.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                         dev.cl_device))
            except cl.Error:
                kernel_max = dev.max_work_group_size
            limit = min(dev.max_work_group_size, kernel_max)
            if total > limit:
                raise OpenCLError(
                    f"{label}: kernel {k.name} uses work-groups of {launch.local_size} = {total} "
                    f"work-items (global size {launch.global_size}), but {dev.label} runs at most "
                    f"{limit} per work-group for this kernel; compile with a smaller local size "
                    f"(CompileOptions(local_size=...)) or pass ndrange_override")
            for d, (l, m) in enumerate(zip(launch.local_size, dev.max_work_item_sizes)):
                if l > m:
                    raise OpenCLError(f"{label}: kernel {k.name}: local size {l} in dimension {d} "
                                      f"exceeds {dev.label}'s limit {m}")
        try:
            local_mem = int(clk.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE,
                                                    dev.cl_device))
        except cl.Error:
            return
        if local_mem > dev.local_mem_size:
            raise OpenCLError(f"{label}: kernel {k.name} needs {local_mem} bytes of local memory; "
                              f"{dev.label} has {dev.local_mem_size}")

    def allocate(self, compiled: CompiledProgram, inputs: Sequence[Any], sizes: Mapping[str, int],
                 label: str) -> Transfers:
        mf = cl.mem_flags
        bufs: dict[str, Any] = {}
        hosts: list[np.ndarray] = []
        uploads: list[Any] = []
        params = compiled.program.params
        for b in compiled.buffers:
            nbytes = self.eval(b.nbytes, sizes, f"{label}: buffer {b.name}")
            if b.role == "input":
                k = b.param_index if b.param_index is not None else self.param_by_buffer(compiled, b.name)
                host = pack_array(inputs[k], params[k].type, params[k].name, sizes)  # type: ignore[arg-type]
                if host.nbytes != nbytes:
                    raise OpenCLError(f"{label}: input {params[k].name} packs to {host.nbytes} bytes "
                                      f"but buffer {b.name} is {b.nbytes} = {nbytes} bytes")
                buf = cl.Buffer(self.context, mf.READ_ONLY, size=nbytes)
                uploads.append(cl.enqueue_copy(self.queue, buf, host, is_blocking=False))
                hosts.append(host)
            else:
                buf = cl.Buffer(self.context, mf.READ_WRITE, size=nbytes)
                if b.zeroed:
                    uploads.append(cl.enqueue_fill_buffer(self.queue, buf, np.uint8(0), 0, nbytes))
            bufs[b.name] = buf
        return _Transfers(bufs, list(hosts), uploads=uploads)

    def enqueue(self, kernels: Sequence[Any], launches: Sequence[Launch],
                args: Sequence[Sequence[Any]]) -> tuple[float, ...]:
        events = []
        for clk, launch, values in zip(kernels, launches, args):
            for i, value in enumerate(values):
                try:
                    clk.set_arg(i, value)
                except cl.Error as err:
                    raise OpenCLError(f"kernel {launch.kernel}: cannot set argument {i}: {err}") from None
            events.append(cl.enqueue_nd_range_kernel(self.queue, clk, launch.global_size,
                                                     launch.local_size))
        cl.wait_for_events(events)
        return tuple(_seconds(e) for e in events)

    def download(self, compiled: CompiledProgram, transfers: Transfers, sizes: Mapping[str, int],
                 inputs: Sequence[Any]) -> tuple[list[Any], float]:
        results, downloads = [], []
        for rname in compiled.result:
            host = host_buffer(compiled.buffer(rname).type, sizes)
            downloads.append(cl.enqueue_copy(self.queue, host, transfers.buffers[rname],
                                             is_blocking=True))
            results.append(unpack(host, compiled.buffer(rname).type))
        self.queue.finish()
        assert isinstance(transfers, _Transfers)
        transfers.upload_seconds = sum(_seconds(e) for e in transfers.uploads)
        return results, sum(_seconds(e) for e in downloads)


# ---------------------------------------------------------------------------------------------
# helpers


@dataclass
class _Transfers(Transfers):
    """Plus the upload events (their profiling times are read once they have completed)."""

    uploads: list[Any] = field(default_factory=list)


def _seconds(event: Any) -> float:
    try:
        return (event.profile.end - event.profile.start) * 1e-9
    except cl.Error:  # e.g. a copy the driver did not profile
        return 0.0


# ---------------------------------------------------------------------------------------------
# convenience


def run_opencl(program_or_compiled: Union[Lambda, CompiledProgram], *inputs: Any,
               device: Union[str, Device, None] = None, options: Optional[CompileOptions] = None,
               sizes: Optional[Mapping[str, int]] = None, runner: Optional[OpenCLRunner] = None) -> Any:
    """Compile (if needed) and run once; for repeated runs keep an `OpenCLRunner`."""
    if isinstance(program_or_compiled, CompiledProgram):
        compiled = program_or_compiled
    else:
        from liftkit.codegen.compiler import compile_program

        compiled = compile_program(program_or_compiled, options)
    runner = runner if runner is not None else OpenCLRunner(device)
    return runner.run(compiled, *inputs, sizes=sizes)
