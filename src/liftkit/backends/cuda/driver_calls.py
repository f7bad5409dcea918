"""Driver calls through ctypes, for the task runtime's CUDA device: an event recorded on and
a wait of another library's stream (a raw handle), and its uploads and downloads; for
liftkit.blas's calls (`PlanCalls`): a future's event record and the library waits.

Kernel launches stay cuda.core's: its argument packing is compiled code, and run 7 on the H100
timed it ahead of ``cuLaunchKernel`` on arguments packed in Python (one buffer of 8-byte slots)
and called through ctypes or cuda.bindings; results/issue15/gemv24 timed it (6.1 µs) ahead of
``cuLaunchKernel`` through ctypes on arguments packed once per call plan (7.6 µs).
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional


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
    """cuEventRecord and cuStreamWaitEvent through ctypes with their argument types declared,
    so handles pass as Python ints (liftkit.blas's calls: cuda.bindings makes a handle object
    and a result enum per call; on the H100's host 0.6-0.8 µs each through ctypes, 1.3-1.4
    through cuda.bindings, results/issue15/gemv23 and gemv24). Each returns the CUresult as an
    int (0: success). `open()` is None where ctypes cannot open libcuda."""

    __slots__ = ("record", "wait")

    @staticmethod
    def open() -> Optional["PlanCalls"]:
        try:
            lib = ctypes.CDLL("libcuda.so.1")  # (its own function objects: argtypes are ours)
            calls = PlanCalls()
            calls.record, calls.wait = lib.cuEventRecord, lib.cuStreamWaitEvent
        except (OSError, AttributeError):
            return None
        p = ctypes.c_void_p
        calls.record.argtypes = [p, p]
        calls.wait.argtypes = [p, p, ctypes.c_uint]
        for f in (calls.record, calls.wait):
            f.restype = ctypes.c_int
        return calls
