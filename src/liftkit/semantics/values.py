"""How the interpreter represents Lift values in NumPy.

Arrays are rectangular, so a value of type `[[float]_M]_N` is one ndarray of shape (N, M); a vector
`float4` adds a trailing lane axis of 4; an array of tuples is a tuple of arrays (structure of
arrays), so zip/unzip/get cost nothing. While evaluating the body of a map, every value carries the
map's *batch* axes in front: the body runs once over the whole array instead of once per element.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType

Value = Union[np.ndarray, tuple]  # a tuple value is a Python tuple of component values


def tmap(fn: Callable[[np.ndarray], np.ndarray], v: Value) -> Value:
    """Apply `fn` to every leaf array of a (possibly tuple) value."""
    if isinstance(v, tuple):
        return tuple(tmap(fn, x) for x in v)
    return fn(v)


def first_leaf(v: Value) -> np.ndarray:
    while isinstance(v, tuple):
        v = v[0]
    return v


def axis_len(v: Value, axis: int) -> int:
    return int(first_leaf(v).shape[axis])


def take(v: Value, i: int, axis: int) -> Value:
    """Element i along `axis` of every leaf, as a view (np.take would copy broadcast inputs)."""
    index = (slice(None),) * axis + (i,)
    return tmap(lambda a: a[index], v)


def expand(v: Value, axis: int) -> Value:
    return tmap(lambda a: np.expand_dims(a, axis), v)


def broadcast_batch(v: Value, rank_from: int, batch: tuple[int, ...]) -> Value:
    """Give a value bound at batch rank `rank_from` the extra batch axes of `batch` (zero-copy)."""
    extra = len(batch) - rank_from
    if extra <= 0:
        return v

    def f(a: np.ndarray) -> np.ndarray:
        rest = a.shape[rank_from:]
        a = a.reshape(a.shape[:rank_from] + (1,) * extra + rest)
        return np.broadcast_to(a, batch + rest)

    return tmap(f, v)


def elem_shape(t: Type) -> tuple[int, ...] | None:
    """Trailing shape of a scalar/vector element (None for tuples)."""
    if isinstance(t, ScalarType):
        return ()
    if isinstance(t, VectorType):
        return (t.width,)
    return None


def constant(value: Any, t: Type, batch: tuple[int, ...]) -> Value:
    """A literal broadcast over the current batch."""
    if isinstance(t, TupleType):
        return tuple(constant(v, et, batch) for v, et in zip(value, t.elems))
    if isinstance(t, ArrayType) and _tuple_elem(t):  # an array of tuples: one array per component
        return tuple(constant(_component(value, t, k), part, batch)
                     for k, part in enumerate(_split_tuple_type(t)))
    if isinstance(t, ArrayType):
        arr = np.asarray(value, dtype=_dtype_of(t))
        return np.broadcast_to(arr, batch + arr.shape)
    arr = np.asarray(value, dtype=_dtype_of(t))
    if isinstance(t, VectorType) and arr.ndim == 0:
        arr = np.full((t.width,), arr)
    return np.broadcast_to(arr, batch + arr.shape)


def _component(value: Any, t: Type, k: int) -> Any:
    """Component k of every tuple of an array-of-tuples literal (tuples, records or rows)."""
    if isinstance(t, ArrayType):
        return [_component(v, t.elem, k) for v in value]
    return value[k]


def _dtype_of(t: Type) -> np.dtype:
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType):
        return t.elem.dtype
    if isinstance(t, ScalarType):
        return t.dtype
    raise TypeError(f"no dtype for {t}")


def cast(v: Value, t: Type) -> Value:
    """Bring a user function's NumPy result to its declared OpenCL type."""
    if isinstance(t, TupleType):
        if not isinstance(v, tuple) or len(v) != len(t.elems):
            raise TypeError(f"user function returned {type(v).__name__}, expected a tuple {t}")
        return tuple(cast(x, et) for x, et in zip(v, t.elems))
    return np.asarray(v).astype(_dtype_of(t), copy=False)


def ensure_batch(v: Value, t: Type, batch: tuple[int, ...]) -> Value:
    """Broadcast a result that does not depend on the batch (e.g. a constant) to the batch."""
    if isinstance(t, TupleType):
        return tuple(ensure_batch(x, et, batch) for x, et in zip(v, t.elems))  # type: ignore[arg-type]
    es = elem_shape(t)
    want = batch + (es if es is not None else ())
    a = np.asarray(v)
    if a.shape != want:
        a = np.broadcast_to(a, want)
    return a


def to_value(x: Any, t: Type, what: str) -> Value:
    """Convert a user's NumPy input to the interpreter's representation, checking the dtype.

    Arrays of tuples may be given as a structured array or a tuple of arrays."""
    if isinstance(t, TupleType) or (isinstance(t, ArrayType) and _tuple_elem(t)):
        if isinstance(x, np.ndarray) and x.dtype.names:
            x = tuple(x[name] for name in x.dtype.names)
        if not isinstance(x, tuple):
            raise ValueError(f"input {what}: expected a tuple of arrays (or a structured array)")
        parts = _split_tuple_type(t)
        if len(x) != len(parts):
            raise ValueError(f"input {what}: expected {len(parts)} components, got {len(x)}")
        return tuple(to_value(xi, ti, f"{what}[{k}]") for k, (xi, ti) in enumerate(zip(x, parts)))
    dt = _dtype_of(t)
    arr = np.asarray(x)
    if arr.dtype != dt:
        if isinstance(x, (np.ndarray, np.generic)):
            # a NumPy array's dtype is the caller's statement: its values are never rounded or
            # truncated without a word (float64 or int32 data for a float parameter); only
            # conversions that keep every value (NumPy's "safe" casting) are made
            if not np.can_cast(arr.dtype, dt, casting="safe"):
                raise ValueError(f"input {what}: {arr.dtype} values, but {t} takes {dt}; convert "
                                 f"them with .astype(numpy.{dt}) if that is what you mean")
        elif not (np.can_cast(arr.dtype, dt, casting="same_kind")
                  or arr.dtype.kind in "iub" and dt.kind == "f"):
            # Python numbers and lists take the parameter's type, within the same kind
            raise ValueError(f"input {what}: {arr.dtype} values, but {t} takes {dt}")
        arr = arr.astype(dt)
    return arr


def _tuple_elem(t: Type) -> bool:
    while isinstance(t, ArrayType):
        t = t.elem
    return isinstance(t, TupleType)


def _split_tuple_type(t: Type) -> list[Type]:
    """[[(A, B)]_M]_N -> [[[A]_M]_N, [[B]_M]_N]: the SoA components of an array of tuples."""
    if isinstance(t, TupleType):
        return list(t.elems)
    assert isinstance(t, ArrayType)
    return [ArrayType(c, t.length) for c in _split_tuple_type(t.elem)]


def to_numpy(v: Value, t: Type) -> Any:
    """Interpreter value -> what users get: ndarrays, tuples for tuples, structured arrays for
    arrays of tuples of scalars."""
    if isinstance(t, ArrayType) and _tuple_elem(t):
        parts = _split_tuple_type(t)
        comps = [to_numpy(x, pt) for x, pt in zip(v, parts)]  # type: ignore[arg-type]
        if all(isinstance(c, np.ndarray) for c in comps):
            shape = comps[0].shape[: len(_outer_dims(t))]
            dtype = np.dtype([(f"f{k}", c.dtype, c.shape[len(shape):]) for k, c in enumerate(comps)])
            out = np.empty(shape, dtype=dtype)
            for k, c in enumerate(comps):
                out[f"f{k}"] = c
            return out
        return tuple(comps)
    if isinstance(t, TupleType):
        return tuple(to_numpy(x, et) for x, et in zip(v, t.elems))  # type: ignore[arg-type]
    return np.ascontiguousarray(v)


def _outer_dims(t: Type) -> list:
    dims = []
    while isinstance(t, ArrayType):
        dims.append(t.length)
        t = t.elem
    return dims


def leaves(v: Value) -> Sequence[np.ndarray]:
    if isinstance(v, tuple):
        return [leaf for x in v for leaf in leaves(x)]
    return [v]
