"""Device arrays in and out of CUDA kernels without copies.

An input that is already on the GPU — a CuPy array, a PyTorch CUDA tensor, anything exposing
`__cuda_array_interface__`, or a DLPack producer on a CUDA device — is passed to the kernels as
its own memory; it must have exactly the buffer's layout (dtype, shape, C order, the runner's
device), otherwise one error says which input and what is wrong. Results then come back as
arrays of the same library, written in place by the kernels. NumPy inputs take the host path
(uploaded, results downloaded).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple, Optional

import numpy as np

from liftkit.backends.cuda.nvrtc import CUDAError
from liftkit.backends.hostdata import buffer_layout, shape_of
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType, bool_

KDL_CUDA, KDL_CUDA_MANAGED = 2, 13  # DLPack device types whose memory kernels can read


class Borrowed(NamedTuple):
    """An input's device memory as the kernels see it (a named tuple: made per GPU argument
    per call)."""

    obj: Any  # what keeps the memory alive (the array, or its zero-copy CuPy/PyTorch view)
    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    ordinal: Optional[int]
    library: str  # "torch", "cupy" or "other": what results are made with


def _library(x: Any) -> str:
    mod = type(x).__module__.split(".", 1)[0]
    return mod if mod in ("torch", "cupy") else "other"


def _from_dlpack(x: Any) -> Any:
    """A zero-copy CuPy or PyTorch view of a DLPack producer on a CUDA device."""
    try:
        import cupy

        return cupy.from_dlpack(x)
    except ImportError:
        pass
    try:
        import torch

        return torch.from_dlpack(x)
    except ImportError:
        raise CUDAError("a DLPack array on the GPU needs CuPy or PyTorch to be read without a "
                        "copy; install one, or pass a CuPy array") from None


def device_array(x: Any, what: str) -> Optional[Borrowed]:
    """The device memory of x, or None for host data (NumPy, lists, scalars)."""
    if isinstance(x, np.ndarray):
        return None
    obj = x
    try:
        cai = getattr(x, "__cuda_array_interface__", None)
    except Exception as err:  # noqa: BLE001 - e.g. PyTorch refuses tensors that require grad
        raise CUDAError(f"input {what}: cannot read its GPU memory ({err})") from None
    if cai is None:
        dl = getattr(x, "__dlpack_device__", None)
        if dl is None:
            return None
        kind, _ = dl()
        if int(kind) not in (KDL_CUDA, KDL_CUDA_MANAGED):
            return None
        obj = _from_dlpack(x)
        cai = obj.__cuda_array_interface__
    ptr = int(cai["data"][0])
    shape = cai["shape"]
    if type(shape) is not tuple or not all(type(n) is int for n in shape):
        shape = tuple(int(s) for s in shape)
    typestr = cai["typestr"]
    dtype = _DTYPES.get(typestr) if type(typestr) is str else None
    if dtype is None:  # (an element type no kernel takes: the input's check says so)
        dtype = np.dtype(typestr)
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != _c_strides(shape, dtype.itemsize):
        raise CUDAError(f"input {what}: the GPU array is not C-contiguous (strides {tuple(strides)}); "
                        "make it contiguous first (cupy.ascontiguousarray / tensor.contiguous())")
    return Borrowed(obj, ptr, shape, dtype, _ordinal(ptr), _library(x))


# typestr -> dtype of the element types kernels take, fixed at import (read per GPU argument per
# call: a look-up costs 25 ns, np.dtype(typestr) 80)
_DTYPES: Mapping[str, np.dtype] = MappingProxyType({d.str: d for d in map(np.dtype, (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
    "float32", "float64", "complex64", "complex128"))})


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _ordinal(ptr: int) -> Optional[int]:
    """The device a pointer's memory belongs to (None where the driver cannot say)."""
    if ptr == 0:
        return None
    try:
        from liftkit.backends.cuda.devices import list_devices
        devs = list_devices()  # (cached) one GPU: its memory is all there is, no driver query
        if len(devs) == 1:
            return devs[0].ordinal
        from cuda.bindings import driver

        err, value = driver.cuPointerGetAttribute(
            driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        return int(value) if err == driver.CUresult.CUDA_SUCCESS else None
    except Exception:  # noqa: BLE001 - an old driver without the attribute
        return None


def check_input(b: Borrowed, t: Type, what: str, sizes: Mapping[str, int], ordinal: int) -> None:
    """Refuse, in one sentence, a device array whose layout is not the buffer's."""
    _, elem = shape_of(t, sizes)
    if isinstance(elem, TupleType):
        raise CUDAError(f"input {what}: an array of tuples ({t}) must be given as NumPy arrays: "
                        "its device layout is an array of C structs")
    shape, dtype = buffer_layout(t, sizes)
    ok_dtypes = {dtype} | ({np.dtype(np.bool_)} if elem == bool_ else set())
    if b.dtype not in ok_dtypes:
        raise CUDAError(f"input {what}: expected {_elem_name(elem)} elements ({dtype.name}), got a "
                        f"GPU array of {b.dtype.name}; convert it first (x.astype(...)) — the "
                        "CUDA backend reads GPU arrays in place and never converts them")
    if b.shape != shape:
        raise CUDAError(f"input {what}: expected shape {shape} for type {t}, got a GPU array of "
                        f"shape {b.shape}")
    if b.ordinal is not None and b.ordinal != ordinal:
        raise CUDAError(f"input {what}: the array is on CUDA device {b.ordinal}, but the program "
                        f"runs on device {ordinal}; copy it there first")


def plain_result(t: Type) -> bool:
    """Results of scalar or vector elements can be handed back as device arrays as they are."""
    while isinstance(t, ArrayType):
        t = t.elem
    return isinstance(t, (ScalarType, VectorType))


def _elem_name(t: Type) -> str:
    return str(t.elem) if isinstance(t, VectorType) else str(t)


class DeviceArray:
    """A result in GPU memory for callers whose inputs came from neither CuPy nor PyTorch (and
    neither is installed): it exposes `__cuda_array_interface__`, so any CUDA library reads it
    without a copy, and `get()` copies it to NumPy."""

    def __init__(self, buffer: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.buffer, self.shape, self.dtype = buffer, shape, np.dtype(dtype)

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def get(self) -> np.ndarray:
        from cuda.bindings import driver

        out = np.empty(self.shape, dtype=self.dtype)
        err, = driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, out.nbytes)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise CUDAError(f"copying a result to the host failed ({err.name})")
        return out

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name})"


def new_result(library: str, shape: tuple[int, ...], dtype: np.dtype, ordinal: int,
               allocate: Callable[[int], Any]) -> tuple[Any, int]:
    """A result array on the device made by `library` (PyTorch for PyTorch inputs, else CuPy,
    else a `DeviceArray` over `allocate(nbytes)`), and its pointer."""
    dtype = np.dtype(dtype)
    if library == "torch":
        import torch

        tdtype = torch.bool if dtype == np.bool_ else getattr(torch, dtype.name)
        t = torch.empty(shape, dtype=tdtype, device=f"cuda:{ordinal}")
        return t, int(t.data_ptr())
    try:
        import cupy
    except ImportError:
        buf = allocate(max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1))
        return DeviceArray(buf, shape, dtype), int(buf.handle)
    with cupy.cuda.Device(ordinal):
        a = cupy.empty(shape, dtype=dtype)
    return a, int(a.data.ptr)
