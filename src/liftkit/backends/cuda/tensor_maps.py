"""CUDA tensor maps (CUtensorMap, what the bulk tensor copy engine reads) encoded on the host for
a launch, and the launch of kernels that take them by value.

A kernel argument of kind "tensormap" (`liftkit.codegen.kernel.TensorMap`) describes an input
buffer as rows of float32; `encode` makes the 128-byte map with the driver's
`cuTensorMapEncodeTiled` once the launch's sizes and the buffer's address are known. cuda.core's
launch takes pointers and scalars only (its own tensor-map type exists only in newer releases),
so such kernels go through the driver's `cuLaunchKernel` with every argument's bytes packed here
(`PackedParams`)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from liftkit.backends.cuda.driver_calls import kernel_function
from liftkit.codegen.kernel import TensorMap

MAP_BYTES = 128  # sizeof(CUtensorMap)
MAX_BOX = 256  # elements of a box along one dimension


@dataclass(frozen=True)
class EncodedTensorMap:
    """A CUtensorMap's 128 bytes, as a kernel argument value."""

    data: bytes


def map_error(spec: TensorMap, address: int, row: int, elements: int) -> "str | None":
    """Why the driver could not encode this map, in words (checked before asking it), or None."""
    inner, rows = spec.box
    if row <= 0 or elements % row:
        return f"{elements} elements are not whole rows of {row}"
    if address % 16:
        return f"the buffer's address {address:#x} is not a multiple of 16 bytes"
    if (row * 4) % 16:
        return f"rows of {row} floats are not a multiple of 16 bytes long (the row length must be a multiple of 4)"
    if not (0 < inner <= MAX_BOX and 0 < rows <= MAX_BOX) or (inner * 4) % 16:
        return f"a box of {inner}×{rows} floats (each side 1 to {MAX_BOX}, rows of a multiple of 16 bytes)"
    if spec.swizzle and inner * 4 > spec.swizzle:
        return f"a box row of {inner * 4} bytes is wider than the {spec.swizzle}-byte swizzle"
    if row % inner or (elements // row) % rows:
        return f"a {row}×{elements // row} matrix is not made of whole {inner}×{rows} boxes"
    return None


def encode(driver: Any, spec: TensorMap, address: int, row: int, elements: int) -> EncodedTensorMap:
    """The tensor map of a float32 buffer at `address` seen as rows of `row` elements (a
    ValueError in words where it cannot be made)."""
    why = map_error(spec, address, row, elements)
    if why is not None:
        raise ValueError(f"tensor map: {why}")
    d = driver
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    swizzle = {0: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
               128: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}[spec.swizzle]
    err, tmap = d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, address,
        [u64(row), u64(elements // row)], [u64(row * 4)], [u32(spec.box[0]), u32(spec.box[1])],
        [u32(1), u32(1)], d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != d.CUresult.CUDA_SUCCESS:
        raise ValueError(f"tensor map: cuTensorMapEncodeTiled failed ({getattr(err, 'name', err)})")
    return EncodedTensorMap(bytes(ctypes.string_at(int(tmap.getPtr()), MAP_BYTES)))


class PackedParams:
    """Each kernel argument's bytes in memory of its own and the array of pointers to them that
    cuLaunchKernel's `kernelParams` takes: device pointers (Python ints) as 8 bytes, NumPy
    scalars as their bytes, tensor maps as 128 bytes at a 64-byte boundary."""

    def __init__(self, values: Sequence[Any]) -> None:
        self._keep: list[Any] = []
        self.pointers = (ctypes.c_void_p * max(1, len(values)))()
        for i, v in enumerate(values):
            if isinstance(v, EncodedTensorMap):
                raw = ctypes.create_string_buffer(MAP_BYTES + 64)
                at = (ctypes.addressof(raw) + 63) // 64 * 64
                ctypes.memmove(at, v.data, MAP_BYTES)
                self._keep.append(raw)
                self.pointers[i] = at
            elif isinstance(v, np.generic):
                raw = ctypes.create_string_buffer(v.tobytes(), v.nbytes)
                self._keep.append(raw)
                self.pointers[i] = ctypes.addressof(raw)
            elif isinstance(v, int):
                raw = ctypes.c_uint64(v)
                self._keep.append(raw)
                self.pointers[i] = ctypes.addressof(raw)
            else:
                raise TypeError(f"kernel argument {i}: {type(v).__name__} cannot be packed")

    @property
    def address(self) -> int:
        return ctypes.addressof(self.pointers)

    def argument_bytes(self, i: int, n: int) -> bytes:
        """The n bytes argument i's pointer points at (for the tests)."""
        return ctypes.string_at(self.pointers[i], n)


def launch(driver: Any, kernel: Any, grid: Sequence[int], block: Sequence[int], shared: int,
           stream: Any, values: Sequence[Any]) -> None:
    """One launch through the driver with the arguments packed by `PackedParams` (a RuntimeError
    naming the driver's result where it fails)."""
    d = driver
    handle = kernel_function(d, kernel)
    params = PackedParams(values)
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = tuple(block) + (1,) * (3 - len(block))
    err = d.cuLaunchKernel(handle, *g, *b, shared, stream, params.address, 0)[0]
    if err != d.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuLaunchKernel failed ({err.name})")
