"""Host-side data: NumPy inputs to the bytes kernels expect, and result bytes back to NumPy.

Shared by every backend. The kernels see global memory as the code generator declared it (`memory.storage_elem`):
vectors as runs of scalars, tuples as C structs with C padding (`memory.numpy_dtype`), bools as
chars. Users see what the interpreter takes and returns: plain arrays with a trailing lane axis
for vectors, tuples of arrays or structured arrays for arrays of tuples. Going through the
interpreter's own `to_value`/`to_numpy` keeps both backends accepting and returning the same.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from liftkit.backends.errors import BackendError
from liftkit.codegen.memory import numpy_dtype, storage_elem
from liftkit.semantics.values import Value, to_value
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType, array_dims


def shape_of(t: Type, sizes: Mapping[str, int]) -> tuple[tuple[int, ...], Type]:
    dims, elem = array_dims(t)
    return tuple(int(d.eval(sizes)) for d in dims), elem


def _lanes(t: VectorType) -> int:
    return 4 if t.width == 3 else t.width


def _user_value(x: Any, t: Type, what: str) -> Value:
    try:
        return to_value(x, t, what)
    except ValueError as err:
        raise BackendError(str(err)) from None


def _fill(out: np.ndarray, value: Value, t: TupleType) -> None:
    """Write a tuple value (tuple of component arrays) into a C-struct array, field by field."""
    if not isinstance(value, tuple) or len(value) != len(t.elems):
        raise BackendError(f"expected {len(t.elems)} tuple components for {t}")
    for k, (comp, et) in enumerate(zip(value, t.elems)):
        field = out[f"f{k}"]
        if isinstance(et, TupleType):
            _fill(field, comp, et)
        elif isinstance(et, VectorType):
            field[..., : et.width] = comp
        else:
            field[...] = comp


def pack_array(x: Any, t: Type, what: str, sizes: Mapping[str, int]) -> np.ndarray:
    """An array input as the contiguous host array its global buffer is filled from."""
    value = _user_value(x, t, what)
    shape, elem = shape_of(t, sizes)
    if isinstance(elem, TupleType):
        out = np.zeros(shape, dtype=numpy_dtype(elem))
        _fill(out, value, elem)
        return out
    if isinstance(elem, ArrayType) or not isinstance(elem, (ScalarType, VectorType)):
        raise BackendError(f"input {what}: elements of type {elem} cannot be stored in a buffer")
    want = shape + ((elem.width,) if isinstance(elem, VectorType) else ())
    arr = np.asarray(value)
    if arr.shape != want:
        raise BackendError(f"input {what}: expected shape {want} for type {t}, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=numpy_dtype(storage_elem(elem, "global")))


def pack_scalar(x: Any, t: Type, what: str) -> Any:
    """A non-array program input as a kernel argument value with the C type's exact bytes."""
    value = _user_value(x, t, what)
    if isinstance(t, ScalarType):
        arr = np.asarray(value, dtype=numpy_dtype(t))
        if arr.shape != ():
            raise BackendError(f"input {what}: expected a single {t}, got shape {arr.shape}")
        return arr[()]  # a NumPy scalar: pyopencl passes its bytes
    if isinstance(t, VectorType):
        out = np.zeros(_lanes(t), dtype=t.elem.dtype)
        out[: t.width] = np.asarray(value)
        return out
    if isinstance(t, TupleType):
        st = np.zeros((), dtype=numpy_dtype(t))
        _fill(st, value, t)
        return st
    raise BackendError(f"input {what}: a value of type {t} cannot be a kernel argument")


def buffer_layout(t: Type, sizes: Mapping[str, int]) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of a host array with the exact layout of a global buffer holding type t."""
    shape, elem = shape_of(t, sizes)
    if isinstance(elem, TupleType):
        return shape, numpy_dtype(elem)
    if isinstance(elem, VectorType):
        shape = shape + (elem.width,)
    return shape, numpy_dtype(storage_elem(elem, "global"))


def host_buffer(t: Type, sizes: Mapping[str, int]) -> np.ndarray:
    """An empty host array with the exact layout of a global buffer holding type t."""
    shape, dtype = buffer_layout(t, sizes)
    return np.empty(shape, dtype=dtype)


def _component(a: np.ndarray, t: Type) -> Value:
    if isinstance(t, TupleType):
        return tuple(_component(a[f"f{k}"], et) for k, et in enumerate(t.elems))
    if isinstance(t, VectorType):
        return np.ascontiguousarray(a[..., : t.width])
    if isinstance(t, ScalarType) and t.name == "bool":
        return a != 0
    return np.ascontiguousarray(a)


def unpack(host: np.ndarray, t: Type) -> Value:
    """A result buffer's host copy (from `host_buffer`) in the interpreter's representation
    (give it to `to_numpy` for what users see)."""
    _, elem = array_dims(t)
    return _component(host, elem)
