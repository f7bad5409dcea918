"""Running a compiled pipeline on a CUDA GPU: NVRTC-built modules, launches through cuda.core,
CUDA-event timing; NumPy inputs are uploaded, GPU arrays (CuPy, PyTorch, CUDA array interface,
DLPack) are used in place and their results come back on the GPU.

The host side shared with OpenCL (sizes, launch geometry and the checks that report problems in
the program's terms, argument values, RunInfo) is `liftkit.backends.pipeline.HostPipeline`.
OpenCL's NDRange maps onto CUDA's launch as grid = global / local blocks of `local` threads;
a kernel without work-groups (mapGlb only) loops over its elements with a grid stride, so any
block size is right and the runner picks one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from liftkit.backends.cuda import tensor_maps
from liftkit.backends.cuda.arrays import Borrowed, check_input, device_array, new_result, plain_result
from liftkit.backends.cuda.cache import ModuleCache
from liftkit.backends.cuda.devices import Device, check, select_device
from liftkit.backends.cuda.nvrtc import CUDAError
from liftkit.backends.hostdata import buffer_layout, host_buffer, pack_array, unpack
from liftkit.backends.pipeline import HostPipeline, Launch, Transfers, in_dialect
from liftkit.codegen.kernel import CompiledProgram, CompileOptions, Kernel, KernelArg
from liftkit.ir.nodes import Lambda
from liftkit.semantics.values import leaves, to_numpy
from liftkit.types import ArrayType, bool_

DEFAULT_BLOCK = 256  # threads per block for kernels without work-groups


@dataclass
class _Transfers(Transfers):
    """Plus the events around the uploads and the results made on the device in place."""

    start: Any = None
    end: Any = None
    on_device: dict[str, Any] = field(default_factory=dict)


def core() -> Any:
    """cuda.core's namespace (before 0.4 it lived under `cuda.core.experimental`)."""
    try:
        import cuda.core as c

        c.LaunchConfig  # noqa: B018 - the top-level API exists
        return c
    except (ImportError, AttributeError):
        try:
            import cuda.core.experimental as c
        except ImportError:
            raise CUDAError("the CUDA backend needs cuda-python with cuda.core: "
                            "pip install cuda-python cuda-core") from None
        return c


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def allow_dynamic_shared(dev: Device, kernel: Any, n: int, name: str) -> None:
    """Opt a loaded kernel in to ``n`` bytes of dynamic shared memory per block (what a kernel
    whose local memory exceeds 48 KB takes; its launches must give it that many)."""
    most = max(dev.shared_memory_optin, dev.shared_memory_per_block)
    if n > most:
        raise CUDAError(f"kernel {name} needs {n} bytes of local (shared) memory; {dev.label} "
                        f"gives a block at most {most}")
    d = _driver()
    attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    handle = getattr(kernel, "handle", None) or kernel._handle
    if isinstance(handle, d.CUkernel):
        err = d.cuKernelSetAttribute(attr, n, handle, d.CUdevice(dev.ordinal))[0]
    else:
        err = d.cuFuncSetAttribute(handle, attr, n)[0]
    if err != d.CUresult.CUDA_SUCCESS:
        raise CUDAError(f"kernel {name}: cannot give it {n} bytes of shared memory ({err.name})")


class CUDARunner(HostPipeline):
    """Runs compiled programs on one CUDA device, on a stream of its own, with a `ModuleCache`
    (a fresh one using the default directory unless given). `blocking`: the stream is ordered
    with the legacy default stream (CUDA's implicit synchronisation: its work after the work
    enqueued there before, and work enqueued there after it waits for it); else independent."""

    error = CUDAError
    dialect = "cuda"

    def __init__(self, device_spec: Union[str, Device, None] = None,
                 cache: Optional[ModuleCache] = None, blocking: bool = False) -> None:
        super().__init__()
        self.device = device_spec if isinstance(device_spec, Device) else select_device(device_spec)
        self._core = core()
        self._dev = self._core.Device(self.device.ordinal)
        self._dev.set_current()
        self.stream = self._dev.create_stream(
            options=self._core.StreamOptions(nonblocking=False) if blocking else None)
        self.cache = cache if cache is not None else ModuleCache()
        self._dynamic: dict[int, int] = {}  # id of each kernel get_kernel gave -> its dynamic shared bytes

    def __repr__(self) -> str:
        return f"CUDARunner({self.device.label!r})"

    # -- the backend's part of the host pipeline ---------------------------------------------------

    def for_backend(self, compiled: CompiledProgram) -> CompiledProgram:
        return in_dialect(compiled, "cuda")

    def get_kernel(self, k: Kernel) -> Any:
        self._dev.set_current()
        mod = self.cache.get(self.device, k.source, k.build_options, name=k.function)
        try:
            kernel = mod.get_kernel(k.function)
        except Exception as err:  # noqa: BLE001 - cuda.core's own error type
            raise CUDAError(f"kernel {k.name}: cannot load it from its module ({err})") from None
        if k.dynamic_shared:
            self._allow_dynamic_shared(k, kernel)
        self._dynamic[id(kernel)] = k.dynamic_shared  # what its launches give it
        return kernel

    def _allow_dynamic_shared(self, k: Kernel, kernel: Any) -> None:
        allow_dynamic_shared(self.device, kernel, k.dynamic_shared, k.name)

    def check_device_limits(self, k: Kernel, kernel: Any, launch: Launch, label: str) -> None:
        dev = self.device
        block, grid = self.geometry(launch)
        try:
            kernel_max = int(kernel.attributes.max_threads_per_block)
            shared = int(kernel.attributes.shared_size_bytes)
        except Exception:  # noqa: BLE001 - an older cuda.core without these attributes
            kernel_max, shared = dev.max_threads_per_block, 0
        total = math.prod(block)
        limit = min(dev.max_threads_per_block, kernel_max)
        if total > limit:
            raise CUDAError(
                f"{label}: kernel {k.name} uses work-groups of {launch.local_size} = {total} "
                f"threads, but {dev.label} runs at most {limit} per block for this kernel; compile "
                f"with a smaller local size (CompileOptions(local_size=...)) or pass ndrange_override")
        for d, (b, bmax) in enumerate(zip(block, dev.max_block_dims)):
            if b > bmax:
                raise CUDAError(f"{label}: kernel {k.name}: local size {b} in dimension {d} exceeds "
                                f"{dev.label}'s limit {bmax}")
        if k.whole_grid and any(-(-g // b) > gmax for g, b, gmax in
                                zip(launch.global_size, block, dev.max_grid_dims)):
            raise CUDAError(f"{label}: kernel {k.name} runs one block per work-group, but "
                            f"{launch.global_size} threads in groups of {block} exceed "
                            f"{dev.label}'s grid of {dev.max_grid_dims} blocks")
        if shared > dev.shared_memory_per_block:
            raise CUDAError(f"{label}: kernel {k.name} needs {shared} bytes of local (shared) "
                            f"memory; {dev.label} has {dev.shared_memory_per_block}")

    def geometry(self, launch: Launch) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(block, grid) of a launch; without a local size, blocks of up to DEFAULT_BLOCK threads
        over dimension 0. The grid covers the global size, at most the device's grid limits
        (65535 blocks in y and z): the generated mapGlb and mapWrg loops step by the grid's
        extent, so a smaller grid runs more iterations per thread, never fewer elements."""
        if launch.local_size is not None:
            block = launch.local_size
        else:
            first = min(launch.global_size[0], DEFAULT_BLOCK)
            block = (first,) + (1,) * (len(launch.global_size) - 1)
        grid = tuple(min(-(-g // b), gmax)
                     for g, b, gmax in zip(launch.global_size, block, self.device.max_grid_dims))
        return block, grid

    def allocate(self, compiled: CompiledProgram, inputs: Sequence[Any], sizes: Mapping[str, int],
                 label: str) -> Transfers:
        self._dev.set_current()
        params = compiled.program.params
        borrowed: dict[int, Borrowed] = {}
        for k, (p, x) in enumerate(zip(params, inputs)):
            b = device_array(x, p.name)
            if b is not None:
                if not isinstance(p.type, ArrayType):
                    raise CUDAError(f"{label}: input {p.name} is a single {p.type}, but a GPU array "
                                    "was given")
                check_input(b, p.type, p.name, sizes, self.device.ordinal)
                borrowed[k] = b
            elif isinstance(x, tuple) and any(device_array(c, p.name) for c in x):
                raise CUDAError(f"{label}: input {p.name}: an array of tuples ({p.type}) must be "
                                "given as NumPy arrays: its device layout is an array of C structs")
        if borrowed:
            self._dev.sync()  # the libraries' own streams may still be writing the inputs
        library = next(iter(borrowed.values())).library if borrowed else None
        keep: list[Any] = list(borrowed.values())
        bufs: dict[str, int] = {}
        results: dict[str, Any] = {}
        start = self._event()
        for b in compiled.buffers:
            nbytes = self.eval(b.nbytes, sizes, f"{label}: buffer {b.name}")
            if b.role == "input":
                k = b.param_index if b.param_index is not None else self.param_by_buffer(compiled, b.name)
                if k in borrowed:
                    bufs[b.name] = borrowed[k].ptr
                    continue
                host = pack_array(inputs[k], params[k].type, params[k].name, sizes)  # type: ignore[arg-type]
                if host.nbytes != nbytes:
                    raise CUDAError(f"{label}: input {params[k].name} packs to {host.nbytes} bytes "
                                    f"but buffer {b.name} is {b.nbytes} = {nbytes} bytes")
                buf = self._allocate(nbytes)
                check(_driver().cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, nbytes,
                                                  self.stream.handle), "upload")
                keep += [buf, host]
                bufs[b.name] = int(buf.handle)
            elif b.role == "output" and library is not None and plain_result(b.type):
                shape, dtype = buffer_layout(b.type, sizes)
                if _is_bool(b.type):
                    dtype = np.dtype(np.bool_)  # chars 0/1, read as bools
                arr, ptr = new_result(library, shape, dtype, self.device.ordinal, self._allocate)
                results[b.name] = arr
                bufs[b.name] = ptr
            else:
                buf = self._allocate(nbytes)
                keep.append(buf)
                bufs[b.name] = int(buf.handle)
                if b.zeroed:  # e.g. reduceSplitTail's flags: this launch's own, zero-filled
                    check(_driver().cuMemsetD8Async(int(buf.handle), 0, nbytes, self.stream.handle),
                          "memset")
        return _Transfers(bufs, keep, start=start, end=self._event(), on_device=results)

    def _allocate(self, nbytes: int) -> Any:
        try:
            return self._dev.allocate(nbytes, stream=self.stream)
        except Exception as err:  # noqa: BLE001 - out of memory, in cuda.core's words
            raise CUDAError(f"cannot allocate {nbytes} bytes on {self.device.label}: {err}") from None

    def _event(self) -> Any:
        return self.stream.record(options=self._core.EventOptions(timing_enabled=True))

    def tensor_map(self, a: KernelArg, buffer: Any, sizes: Mapping[str, int], label: str) -> Any:
        spec = a.tensor_map
        assert spec is not None
        what = f"{label}: argument {a.name}"
        try:
            return tensor_maps.encode(_driver(), spec, int(buffer), self.eval(spec.row, sizes, what),
                                      self.eval(spec.elements, sizes, what))
        except ValueError as err:
            raise CUDAError(f"{what}: {err}") from None

    def enqueue(self, kernels: Sequence[Any], launches: Sequence[Launch],
                args: Sequence[Sequence[Any]]) -> tuple[float, ...]:
        c = self._core
        events = [self._event()]
        for kernel, launch, values in zip(kernels, launches, args):
            block, grid = self.geometry(launch)
            shared = self._dynamic.get(id(kernel), 0)
            if any(isinstance(v, tensor_maps.EncodedTensorMap) for v in values):
                try:  # a tensor map goes by value: cuda.core's launch takes none (before 0.5)
                    tensor_maps.launch(_driver(), kernel, grid, block, shared, self.stream.handle, values)
                except (RuntimeError, TypeError) as err:
                    raise CUDAError(f"kernel {launch.kernel}: the launch failed ({err})") from None
                events.append(self._event())
                continue
            values = [_kernel_value(v, launch.kernel, i) for i, v in enumerate(values)]
            try:
                config = c.LaunchConfig(grid=grid, block=block, shmem_size=shared)
                c.launch(self.stream, config, kernel, *values)
            except Exception as err:  # noqa: BLE001 - cuda.core's own error type
                raise CUDAError(f"kernel {launch.kernel}: the launch failed ({err})") from None
            events.append(self._event())
        try:
            self.stream.sync()
        except Exception as err:  # noqa: BLE001 - a fault inside a kernel surfaces here
            raise CUDAError(f"kernel {'/'.join(l.kernel for l in launches)} failed on "
                            f"{self.device.label}: {err}") from None
        return tuple((b - a) * 1e-3 for a, b in zip(events, events[1:]))

    def download(self, compiled: CompiledProgram, transfers: Transfers, sizes: Mapping[str, int],
                 inputs: Sequence[Any]) -> tuple[list[Any], float]:
        assert isinstance(transfers, _Transfers)
        on_device = transfers.on_device
        out: list[Any] = []
        hosts = []
        t0 = self._event()
        for rname in compiled.result:
            if rname in on_device:
                out.append(on_device[rname])
                continue
            host = host_buffer(compiled.buffer(rname).type, sizes)
            check(_driver().cuMemcpyDtoHAsync(host.ctypes.data, transfers.buffers[rname], host.nbytes,
                                              self.stream.handle), "download")
            hosts.append(host)
            out.append(host)
        t1 = self._event()
        self.stream.sync()
        transfers.upload_seconds = (transfers.end - transfers.start) * 1e-3
        results = [r if rname in on_device else unpack(r, compiled.buffer(rname).type)
                   for rname, r in zip(compiled.result, out)]
        return results, (t1 - t0) * 1e-3

    def result_value(self, value: Any, compiled: CompiledProgram) -> Any:
        if any(not isinstance(p, (np.ndarray, bool, int, float, np.generic)) for p in leaves(value)):
            return value  # GPU arrays, made in place: returned as they are
        return to_numpy(value, compiled.result_type)


def _is_bool(t: Any) -> bool:
    while isinstance(t, ArrayType):
        t = t.elem
    return t == bool_


def _kernel_value(v: Any, kernel: str, i: int) -> Any:
    """A kernel argument as cuda.core passes it: a pointer (Python int) or a NumPy scalar."""
    if isinstance(v, (int, np.generic)):
        return v
    raise CUDAError(f"kernel {kernel}: argument {i} is a vector or tuple value ({getattr(v, 'dtype', v)}), "
                    "which CUDA kernels cannot take by value here; give it as a one-element array")


# ---------------------------------------------------------------------------------------------
# convenience


def run_cuda(program_or_compiled: Union[Lambda, CompiledProgram], *inputs: Any,
             device: Union[str, Device, None] = None, options: Optional[CompileOptions] = None,
             sizes: Optional[Mapping[str, int]] = None, runner: Optional[CUDARunner] = None) -> Any:
    """Compile (if needed) and run once on a CUDA GPU; for repeated runs keep a `CUDARunner`."""
    if isinstance(program_or_compiled, CompiledProgram):
        compiled = program_or_compiled
    else:
        from dataclasses import replace

        from liftkit.codegen.compiler import compile_program

        compiled = compile_program(program_or_compiled, replace(options or CompileOptions(),
                                                                 dialect="cuda"))
    runner = runner if runner is not None else CUDARunner(device)
    return runner.run(compiled, *inputs, sizes=sizes)

