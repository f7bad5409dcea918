"""Kernel launches straight through the driver, for host paths that launch small kernels
again and again (the task runtime's).

cuda.core's ``launch`` converts its launch configuration and packs every argument anew on each
call (7.3 us a launch on the GPU machine's host, run 7a); here a kernel's argument list is packed
into one buffer of 8-byte slots whose pointer array is made once per argument signature
(``Packed``) and ``cuLaunchKernel`` reads it — the driver copies the values during the call, so
the buffer is refilled for the next launch at once — called through ctypes (``DriverCalls``).
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Sequence

import numpy as np

from liftkit.backends.cuda.nvrtc import CUDAError

# struct codes of a kernel argument's type by (kind, size), each in an 8-byte slot
_KINDS = {("i", 8): "q", ("u", 8): "Q", ("f", 8): "d", ("i", 4): "i4x", ("u", 4): "I4x",
          ("f", 4): "f4x", ("i", 2): "h6x", ("u", 2): "H6x", ("i", 1): "b7x", ("u", 1): "B7x",
          ("b", 1): "?7x"}


def _code(t: type) -> str:
    """The struct code of a kernel argument of type ``t`` (a Python int is a pointer or a
    64-bit integer) in its 8-byte slot."""
    if t is int:
        return "q"
    got = None
    if issubclass(t, np.generic):
        dt = np.dtype(t)
        got = _KINDS.get((dt.kind, dt.itemsize))
    if got is None:
        raise TypeError(f"a CUDA kernel argument of type {t.__name__}")
    return got


class Packed:
    """A kernel argument list of one signature (the types of its values): a buffer of 8-byte
    slots and the array of pointers to them that ``cuLaunchKernel`` takes."""

    __slots__ = ("pack", "storage", "pointers")

    def __init__(self, types: Sequence[type]) -> None:
        s = struct.Struct("<" + "".join(_code(t) for t in types))
        self.storage = ctypes.create_string_buffer(max(s.size, 8))
        base = ctypes.addressof(self.storage)
        self.pointers = (ctypes.c_void_p * max(len(types), 1))(
            *[base + 8 * k for k in range(len(types))])
        storage, pack_into = self.storage, s.pack_into
        self.pack = lambda values: pack_into(storage, 0, *values)


class Function:
    """A loaded kernel as launches take it: its driver function handle (as ctypes passes it),
    the dynamic shared memory its launches give, its packed argument lists by signature, and
    the cuda.core kernel (kept alive: it owns the loaded code)."""

    __slots__ = ("name", "func", "shmem", "kernel", "packed")

    def __init__(self, name: str, kernel: Any, shmem: int = 0, drv: Any = None) -> None:
        self.name, self.kernel, self.shmem = name, kernel, shmem
        self.packed: dict[tuple, Packed] = {}
        handle = getattr(kernel, "handle", None) or kernel._handle
        if drv is not None and isinstance(handle, getattr(drv, "CUkernel", ())):
            err, func = drv.cuKernelGetFunction(handle)  # the current context's function
            if err != drv.CUresult.CUDA_SUCCESS:
                raise CUDAError(f"kernel {name}: no function for this context ({err})")
            handle = func
        self.func = ctypes.c_void_p(int(handle))

    def args(self, values: list) -> Any:
        """The pointer array of ``values`` packed for a launch (valid until the next call)."""
        sig = tuple([type(v) for v in values])
        p = self.packed.get(sig)
        if p is None:
            p = self.packed[sig] = Packed(sig)
        p.pack(values)
        return p.pointers


class DriverCalls:
    """The driver entry points a launch-heavy host path calls per launch or per call, through
    ctypes on the process's libcuda (loaded already by cuda.bindings): cuda.bindings' Python
    layer makes a result enum per call, about 2 us on the GPU machine's host (run 7a), more
    than the driver's own work for these. Handles are passed as ``ctypes.c_void_p``, sizes as
    Python ints; each returns the CUresult as an int (0: success). Where ctypes cannot open
    libcuda the same calls go through cuda.bindings (``_BindingCalls``)."""

    def __new__(cls) -> Any:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return _BindingCalls()
        self = super().__new__(cls)
        self.launch = lib.cuLaunchKernel      # (func, grid xyz, block xyz, shmem, stream,
        self.record = lib.cuEventRecord       #  params, extra); (event, stream);
        self.wait = lib.cuStreamWaitEvent     # (stream, event, flags);
        self.download = lib.cuMemcpyDtoHAsync_v2  # (host, device address, bytes, stream);
        self.upload = lib.cuMemcpyHtoDAsync_v2    # (device address, host, bytes, stream)
        for f in (self.launch, self.record, self.wait, self.download, self.upload):
            f.restype = ctypes.c_int
        self.download.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t,
                                  ctypes.c_void_p]
        self.upload.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_void_p]
        return self


class _BindingCalls:
    """``DriverCalls`` through cuda.bindings (the same arguments and results)."""

    def __init__(self) -> None:
        from cuda.bindings import driver
        self._d = driver

    @staticmethod
    def _h(x: Any) -> int:
        return int(x.value or 0) if isinstance(x, ctypes.c_void_p) else int(x)

    def launch(self, func: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
               shmem: int, stream: Any, params: Any, extra: Any) -> int:
        d, h = self._d, self._h
        return int(d.cuLaunchKernel(d.CUfunction(h(func)), gx, gy, gz, bx, by, bz, shmem,
                                    d.CUstream(h(stream)), ctypes.addressof(params), 0)[0])

    def record(self, event: Any, stream: Any) -> int:
        d, h = self._d, self._h
        return int(d.cuEventRecord(d.CUevent(h(event)), d.CUstream(h(stream)))[0])

    def wait(self, stream: Any, event: Any, flags: int) -> int:
        d, h = self._d, self._h
        return int(d.cuStreamWaitEvent(d.CUstream(h(stream)), d.CUevent(h(event)), flags)[0])

    def download(self, host: int, device: int, nbytes: int, stream: Any) -> int:
        d = self._d
        return int(d.cuMemcpyDtoHAsync(host, device, nbytes, d.CUstream(self._h(stream)))[0])

    def upload(self, device: int, host: int, nbytes: int, stream: Any) -> int:
        d = self._d
        return int(d.cuMemcpyHtoDAsync(device, host, nbytes, d.CUstream(self._h(stream)))[0])


def error_name(code: int) -> str:
    """The CUresult name of a driver return code."""
    try:
        from cuda.bindings import driver
        return driver.CUresult(code).name
    except Exception:  # noqa: BLE001 - an unknown code
        return f"CUresult {code}"
