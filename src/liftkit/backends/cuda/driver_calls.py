"""Driver calls through ctypes, for the task runtime's CUDA device: an event recorded on and
a wait of another library's stream (a raw handle), and its uploads and downloads; for
liftkit.blas's call plans (`PlanCalls`, `PackedLaunch`): record, wait and launches whose
arguments are packed once per plan, a call writing only its pointers and scalars.

The runtime's kernel launches stay cuda.core's: its argument packing is compiled code, and run
7 on the H100 timed it ahead of ``cuLaunchKernel`` on arguments packed in Python at each call
(one buffer of 8-byte slots) and called through ctypes or cuda.bindings.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence

import numpy as np


class DriverCalls:
    """The driver entry points the runtime calls on handles cuda.core has no object for
    (another library's stream) and its transfers, through ctypes on the process's libcuda
    (loaded already by cuda.bindings): cuda.bindings' Python layer makes a result enum per call,
    about 2 us on the GPU machine's host (run 7: cuEventRecord 2.3 us, through ctypes 1.1 us).
    Handles are passed as ``ctypes.c_void_p``; each returns the CUresult as an int (0:
    success). Where ctypes cannot open libcuda the same calls go through cuda.bindings
    (``_BindingCalls``)."""

    def __new__(cls) -> Any:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return _BindingCalls()
        self = super().__new__(cls)
        self.record = lib.cuEventRecord       # (event, stream);
        self.wait = lib.cuStreamWaitEvent     # (stream, event, flags);
        self.download = lib.cuMemcpyDtoHAsync_v2  # (host, device address, bytes, stream);
        self.upload = lib.cuMemcpyHtoDAsync_v2    # (device address, host, bytes, stream)
        for f in (self.record, self.wait, self.download, self.upload):
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


def kernel_function(driver: Any, kernel: Any) -> Any:
    """The CUfunction `cuLaunchKernel` takes for a cuda.core kernel: its handle, or, where
    cuda.core loaded a library (a CUkernel), that kernel's function in the current context (a
    RuntimeError naming the driver's result where it cannot be had)."""
    handle = getattr(kernel, "handle", None) or kernel._handle
    if isinstance(handle, driver.CUkernel):
        err, handle = driver.cuKernelGetFunction(handle)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuKernelGetFunction failed ({getattr(err, 'name', err)})")
    return handle


class PlanCalls:
    """cuEventRecord, cuStreamWaitEvent and cuLaunchKernel through ctypes with their argument
    types declared, so handles and addresses pass as Python ints (liftkit.blas's call plans:
    cuda.bindings makes a handle object and a result enum per call, cuda.core's launch packs
    every argument per call, where a plan changes only its pointers and scalars). Each returns
    the CUresult as an int (0: success). `open()` is None where ctypes cannot open libcuda."""

    __slots__ = ("record", "wait", "launch")

    @staticmethod
    def open() -> Optional["PlanCalls"]:
        try:
            lib = ctypes.CDLL("libcuda.so.1")  # (its own function objects: argtypes are ours)
            calls = PlanCalls()
            calls.record, calls.wait, calls.launch = (lib.cuEventRecord, lib.cuStreamWaitEvent,
                                                      lib.cuLaunchKernel)
        except (OSError, AttributeError):
            return None
        p, u = ctypes.c_void_p, ctypes.c_uint
        calls.record.argtypes = [p, p]
        calls.wait.argtypes = [p, p, u]
        calls.launch.argtypes = [p, u, u, u, u, u, u, u, p, p, p]
        for f in (calls.record, calls.wait, calls.launch):
            f.restype = ctypes.c_int
        return calls


# a kernel argument's bytes by its value's type (an int is a device address), 8 per argument
_CODES = {int: "Q", np.int32: "i4x", np.int64: "q", np.uint32: "I4x", np.float32: "f4x",
          np.float64: "d"}


class PackedLaunch:
    """A kernel launch as `cuLaunchKernel` reads it, made once for a launch that repeats with
    new values in some arguments (`slots`: (argument position, index into the values a call
    passes)): every argument has an 8-byte cell, those of the slots first, in order, so one
    `struct.pack_into` writes a call's values; the driver copies the arguments at the launch,
    so the cells are reused. `go()` launches (returns the CUresult); None from `make` where a
    value has no fixed C type here (a complex scalar: the caller launches through cuda.core)."""

    __slots__ = ("fill", "pick", "go", "_cells", "_params")

    @staticmethod
    def make(calls: "PlanCalls", func: int, dims: tuple[int, ...], stream: int,
             args: Sequence[Any], slots: Sequence[tuple[int, int]]) -> Optional["PackedLaunch"]:
        import operator
        import struct
        from functools import partial

        n = len(args)
        first = [pos for pos, _ in slots]
        rest = [i for i in range(n) if i not in set(first)]
        codes = [_CODES.get(type(args[i])) for i in first + rest]
        if None in codes:
            return None
        pk = PackedLaunch()
        cell = {pos: k for k, pos in enumerate(first + rest)}
        pk._cells = (ctypes.c_uint64 * max(1, n))()
        base = ctypes.addressof(pk._cells)
        pk._params = (ctypes.c_void_p * max(1, n))(*[base + 8 * cell[i] for i in range(n)])
        k = len(first)
        struct.pack_into("<" + "".join(codes[k:]), pk._cells, 8 * k, *[args[i] for i in rest])
        pk.fill = struct.Struct("<" + "".join(codes[:k]))
        pick = operator.itemgetter(*[slot for _, slot in slots]) if slots else (lambda v: ())
        pk.pick = (lambda v: (pick(v),)) if k == 1 else pick
        pk.go = partial(calls.launch, func, *dims, stream, ctypes.addressof(pk._params), None)
        return pk

    def launch(self, values: Sequence[Any]) -> int:
        """Launch with `values` in the slots (the CUresult)."""
        self.fill.pack_into(self._cells, 0, *self.pick(values))
        return self.go()
