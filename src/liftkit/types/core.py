"""Lift's data types: scalars, OpenCL vectors, tuples and arrays with symbolic lengths.

Array lengths are `ArithExpr`s, so `[float]_(2*N)` and `[float]_(N*2)` are the same type: the
arithmetic constructors bring both to one canonical form, and `same_type` additionally asks the
simplifier to prove equality where the canonical forms differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from liftkit.arith import ArithExpr, cst, prove_eq

VECTOR_WIDTHS = (2, 3, 4, 8, 16)


class Type:
    """Base of all Lift types. Types are immutable values."""

    def __getitem__(self, length: "ArithExpr | int") -> "ArrayType":
        """`float32[N]` is `[float]_N`; `float32[M][N]` is `[[float]_M]_N` (as in Lift)."""
        return ArrayType(self, length if isinstance(length, ArithExpr) else cst(int(length)))


@dataclass(frozen=True)
class ScalarType(Type):
    name: str  # the OpenCL C name
    dtype_name: str  # the NumPy dtype name

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.dtype_name)

    @property
    def is_float(self) -> bool:
        return self.name in ("float", "double")

    @property
    def is_complex(self) -> bool:
        return self.name in ("cfloat", "cdouble")

    @property
    def real(self) -> "ScalarType":
        """The type of a complex number's parts (a real type is its own)."""
        return {"cfloat": float32, "cdouble": float64}.get(self.name, self)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


bool_ = ScalarType("bool", "bool")
int32 = ScalarType("int", "int32")
int64 = ScalarType("long", "int64")
float32 = ScalarType("float", "float32")
float64 = ScalarType("double", "float64")
# complex numbers: a pair (re, im) of float/double, laid out as NumPy's complex64/complex128 (and
# as OpenCL's float2/double2); their arithmetic is the user functions of `complex_funs`
complex64 = ScalarType("cfloat", "complex64")
complex128 = ScalarType("cdouble", "complex128")
SCALARS: dict[str, ScalarType] = {t.name: t for t in (bool_, int32, int64, float32, float64,
                                                       complex64, complex128)}


@dataclass(frozen=True)
class VectorType(Type):
    elem: ScalarType
    width: int

    def __post_init__(self) -> None:
        if self.width not in VECTOR_WIDTHS:
            raise LiftTypeError(f"vector width {self.width} is not one of {VECTOR_WIDTHS}")
        if self.elem == bool_:
            raise LiftTypeError("vectors of bool do not exist in OpenCL")
        if self.elem.is_complex:
            raise LiftTypeError(f"vectors of {self.elem} do not exist (a complex number is "
                                "already a pair)")

    def __str__(self) -> str:
        return f"{self.elem.name}{self.width}"

    __repr__ = __str__


@dataclass(frozen=True)
class TupleType(Type):
    elems: tuple[Type, ...]

    def __post_init__(self) -> None:
        if len(self.elems) < 2:
            raise LiftTypeError("a tuple type needs at least two components")

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elems) + ")"

    __repr__ = __str__


@dataclass(frozen=True)
class ArrayType(Type):
    elem: Type
    length: ArithExpr

    def __post_init__(self) -> None:
        if not isinstance(self.length, ArithExpr):
            object.__setattr__(self, "length", cst(int(self.length)))

    def __str__(self) -> str:
        n = str(self.length)
        if not (n.isidentifier() or n.isdigit()):
            n = f"({n})"
        return f"[{self.elem}]_{n}"

    __repr__ = __str__


ElemType = Union[ScalarType, VectorType]


class LiftTypeError(Exception):
    """A program is ill-typed or structurally illegal; the message names the pattern at fault."""


def vector(elem: ScalarType, width: int) -> VectorType:
    return VectorType(elem, width)


def tuple_of(*elems: Type) -> TupleType:
    return TupleType(tuple(elems))


def same_type(a: Type, b: Type) -> bool:
    """Type equality up to arithmetic on array lengths."""
    if a == b:
        return True
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return prove_eq(a.length, b.length) and same_type(a.elem, b.elem)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(same_type(x, y) for x, y in zip(a.elems, b.elems))
    return False


def scalar_of(t: Type) -> ScalarType:
    """The scalar at the bottom of arrays and vectors (tuples have none)."""
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType):
        return t.elem
    if isinstance(t, ScalarType):
        return t
    raise LiftTypeError(f"type {t} has no single scalar element type")


def array_dims(t: Type) -> tuple[list[ArithExpr], Type]:
    """Split `[[A]_M]_N` into ([N, M], A)."""
    dims: list[ArithExpr] = []
    while isinstance(t, ArrayType):
        dims.append(t.length)
        t = t.elem
    return dims, t


def size_vars_of(t: Type) -> set:
    """Every arithmetic variable occurring in a type's lengths."""
    out: set = set()
    if isinstance(t, ArrayType):
        out |= set(t.length.free_vars())
        out |= size_vars_of(t.elem)
    elif isinstance(t, TupleType):
        for e in t.elems:
            out |= size_vars_of(e)
    return out
