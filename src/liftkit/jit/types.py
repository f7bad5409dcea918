"""VRIR types (seed 003 §4.2): scalars, arrays (element type, rank, layout), domains, tuples,
void and function types. Sizes and strides are values, not types, as in the thesis."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# Scalar kinds in promotion order within their family.
SCALAR_NAMES = ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128")
LAYOUTS = ("C", "F", "A")  # row-major, column-major, strided view


@dataclass(frozen=True)
class ScalarType:
    """A scalar: bool, int32/64, float32/64 or complex64/128."""
    name: str

    def __post_init__(self) -> None:
        if self.name not in SCALAR_NAMES:
            raise ValueError(f"unknown scalar type {self.name!r}")

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def is_int(self) -> bool:
        return self.name in ("int32", "int64")

    @property
    def is_float(self) -> bool:
        return self.name in ("float32", "float64")

    @property
    def is_complex(self) -> bool:
        return self.name.startswith("complex")

    @functools.cached_property
    def dtype(self) -> np.dtype:  # once per type: calls read it per array argument
        return np.dtype("bool" if self.is_bool else self.name)

    @property
    def bits(self) -> int:
        return 1 if self.is_bool else self.dtype.itemsize * 8

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrayType:
    """An n-dimensional array: element type, rank and layout ('C', 'F' or 'A' strided)."""
    elem: ScalarType
    ndim: int
    layout: str = "A"

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}")
        if self.ndim < 0:
            raise ValueError("negative rank")

    def with_layout(self, layout: str) -> "ArrayType":
        return ArrayType(self.elem, self.ndim, layout)

    def __str__(self) -> str:
        return f"array({self.elem},{self.ndim},{self.layout})"


@dataclass(frozen=True)
class DomainType:
    """An n-dimensional rectangular iteration domain (start, stop, step per dimension)."""
    ndim: int

    def __str__(self) -> str:
        return f"domain({self.ndim})"


@dataclass(frozen=True)
class TupleType:
    """A fixed-size heterogeneous tuple, indexed by constants only."""
    items: tuple["Type", ...]

    def __str__(self) -> str:
        return "tuple(" + ",".join(map(str, self.items)) + ")"


@dataclass(frozen=True)
class VoidType:
    """No value (functions without a return)."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class FunctionType:
    """A function signature: argument types and result type."""
    args: tuple["Type", ...]
    result: "Type"

    def __str__(self) -> str:
        return "fn(" + ",".join(map(str, self.args)) + ")->" + str(self.result)


Type = ScalarType | ArrayType | DomainType | TupleType | VoidType | FunctionType

BOOL = ScalarType("bool")
INT32 = ScalarType("int32")
INT64 = ScalarType("int64")
FLOAT32 = ScalarType("float32")
FLOAT64 = ScalarType("float64")
COMPLEX64 = ScalarType("complex64")
COMPLEX128 = ScalarType("complex128")
VOID = VoidType()

# Names a user may write in annotations: Array(float64, 2, "C").
bool_, int32, int64, float32, float64, complex64, complex128 = (
    BOOL, INT32, INT64, FLOAT32, FLOAT64, COMPLEX64, COMPLEX128)


def Array(elem: ScalarType, ndim: int, layout: str = "A") -> ArrayType:
    """PyRaptor-style annotation: ``A: Array(float64, 2, "C")``."""
    return ArrayType(elem, ndim, {"RowMajor": "C", "ColMajor": "F"}.get(layout, layout))


def scalar_of_dtype(dtype: np.dtype) -> ScalarType | None:
    """The VRIR scalar for a NumPy dtype, or None when VRIR has none."""
    name = "bool" if dtype == np.bool_ else dtype.name
    return ScalarType(name) if name in SCALAR_NAMES else None


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """NumPy's promotion of two scalar types (bool+bool stays bool)."""
    if a == b:
        return a
    r = np.promote_types(a.dtype, b.dtype)
    s = scalar_of_dtype(r)
    assert s is not None
    return s


def float_of(t: ScalarType) -> ScalarType:
    """The floating type true division and transcendental functions produce for ``t``."""
    if t.is_float or t.is_complex:
        return t
    return FLOAT64


def layout_of(arr: np.ndarray) -> str:
    """The most specific layout describing a NumPy array."""
    if arr.ndim <= 1:
        return "C" if arr.ndim == 0 or arr.strides[0] == arr.itemsize or arr.shape[0] <= 1 else "A"
    if arr.flags.c_contiguous:
        return "C"
    if arr.flags.f_contiguous:
        return "F"
    return "A"


def unify(a: Type, b: Type) -> Type | None:
    """The type holding values of both ``a`` and ``b`` (variables keep one type), or None."""
    if a == b:
        return a
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        if a.is_bool != b.is_bool:
            return None
        return promote(a, b)
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        if a.elem == b.elem and a.ndim == b.ndim:
            return ArrayType(a.elem, a.ndim, "A")
        return None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.items) == len(b.items):
        items = [unify(x, y) for x, y in zip(a.items, b.items)]
        if all(i is not None for i in items):
            return TupleType(tuple(items))  # type: ignore[arg-type]
    return None
