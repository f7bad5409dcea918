"""Memories, OpenCL C types of Lift types, and address-space inference (seed 000 §5.2, Alg. 1).

Only calls that compute (contain a user function) get memory; data-layout patterns are views.
Global and local arrays are declared with their scalar element type (vectors are read and written
with vload/vstore) or as arrays of structs for tuples; private memory keeps vector and struct
types. `c_layout` gives the C struct layout so the host can mirror it in NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Optional, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType

Space = Literal["global", "local", "private"]
MemKind = Literal["param", "array", "var", "pointer"]


@dataclass(eq=False)
class Memory:
    """A named piece of memory in a kernel.

    kind: `param` (a kernel buffer argument), `array` (a local or private array), `var` (a
    private scalar/vector/struct variable, accessed without index), `pointer` (a pointer
    variable swapped between buffers by `iterate`).
    elem: the declared C element type; count: number of elements.
    """

    name: str
    space: Space
    elem: Type
    count: ArithExpr
    kind: MemKind
    readonly: bool = False
    constant_offsets: bool = True  # private arrays: every access used a constant index so far
    vector_align: int = 0  # local arrays: bytes of the widest vector read or written as such
    volatile: bool = False  # global: read by other work-groups of the same launch (lastWrg)

    def elem_width(self) -> int:
        return self.elem.width if isinstance(self.elem, VectorType) else 1


def storage_elem(t: Type, space: Space) -> Type:
    """The element type memory of Lift type t is declared with in address space `space`."""
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType) and space != "private":
        return t.elem
    return t


def element_count(t: Type, space: Space) -> ArithExpr:
    """Number of declared elements needed to store a value of type t."""
    n: ArithExpr = cst(1)
    while isinstance(t, ArrayType):
        n = n * t.length
        t = t.elem
    if isinstance(t, VectorType) and space != "private":
        n = n * t.width
    return n


# ---------------------------------------------------------------------------------------------
# C types and layout


def struct_name(t: TupleType) -> str:
    return f"Tuple{len(t.elems)}_" + "_".join(_tag(e) for e in t.elems)


def _tag(t: Type) -> str:
    if isinstance(t, TupleType):
        return struct_name(t)
    return str(t)


def ctype(t: Type) -> str:
    """OpenCL C name of a scalar, vector or tuple type."""
    if isinstance(t, ScalarType):
        return "char" if t.name == "bool" else t.name
    if isinstance(t, VectorType):
        return str(t)
    if isinstance(t, TupleType):
        return struct_name(t)
    raise LiftTypeError(f"no C type for the array type {t}")


def tuple_types_in(t: Type, out: Optional[list[TupleType]] = None) -> list[TupleType]:
    """Every tuple type inside t, innermost first (struct definition order)."""
    out = [] if out is None else out
    if isinstance(t, ArrayType):
        tuple_types_in(t.elem, out)
    elif isinstance(t, TupleType):
        for e in t.elems:
            tuple_types_in(e, out)
        if t not in out:
            out.append(t)
    return out


def struct_definition(t: TupleType) -> str:
    fields = " ".join(f"{ctype(e)} _{k};" for k, e in enumerate(t.elems))
    return f"typedef struct {{ {fields} }} {struct_name(t)};"


def c_layout(t: Type) -> tuple[int, int]:
    """(size, alignment) in bytes of an element type under OpenCL C rules."""
    if isinstance(t, ScalarType):
        s = t.dtype.itemsize if t.name != "bool" else 1
        return s, s
    if isinstance(t, VectorType):
        lanes = 4 if t.width == 3 else t.width
        s = t.elem.dtype.itemsize * lanes
        return s, s
    if isinstance(t, TupleType):
        off, align = 0, 1
        for e in t.elems:
            s, a = c_layout(e)
            off = (off + a - 1) // a * a + s
            align = max(align, a)
        return (off + align - 1) // align * align, align
    raise LiftTypeError(f"no C layout for {t}")


def numpy_dtype(t: Type) -> np.dtype:
    """A NumPy dtype with exactly the C layout of element type t (structs with explicit offsets)."""
    if isinstance(t, ScalarType):
        return np.dtype(np.int8) if t.name == "bool" else t.dtype
    if isinstance(t, VectorType):
        lanes = 4 if t.width == 3 else t.width
        return np.dtype((t.elem.dtype, (lanes,)))
    if isinstance(t, TupleType):
        names, formats, offsets, off = [], [], [], 0
        for k, e in enumerate(t.elems):
            s, a = c_layout(e)
            off = (off + a - 1) // a * a
            names.append(f"f{k}")
            formats.append(numpy_dtype(e))
            offsets.append(off)
            off += s
        size, _ = c_layout(t)
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
    raise LiftTypeError(f"no NumPy dtype for {t}")


def bytes_of(t: Type, space: Space = "global") -> ArithExpr:
    """Size in bytes of the memory holding a value of type t."""
    elem = storage_elem(t, space)
    size, _ = c_layout(elem)
    return element_count(t, space) * size


# ---------------------------------------------------------------------------------------------
# Algorithm 1: address spaces


def infer_space(f: "object", arg_spaces: Sequence[Space], write_to: Optional[Space],
                env: Optional[Mapping[object, Space]] = None) -> Space:
    """The address space a call of f writes to (seed 000 Algorithm 1).

    write_to comes from an enclosing toGlobal/toLocal/toPrivate (or a reduction's initial value);
    without it a computation writes where its inputs live (all in one space: that space; mixed:
    global). The code generator additionally keeps a user function's result that no map writes
    out (an intermediate scalar) in a private register.
    """
    from liftkit.ir.nodes import FunCall, Lambda, Literal, Param, UserFun
    from liftkit.ir.patterns import (
        AbstractMap, AbstractReduce, AddressSpaceWrapper, Iterate, MapVec, ParallelMap, Pattern,
        Zip,
    )

    env = dict(env or {})

    def expr_space(e: object, wt: Optional[Space]) -> Space:
        if isinstance(e, Literal):
            return "private"
        if isinstance(e, Param):
            return env.get(e, "global" if isinstance(e.type, ArrayType) or e.type is None else "private")
        assert isinstance(e, FunCall)
        return call_space(e.f, [expr_space(a, wt) for a in e.args], wt)

    def call_space(g: object, args: Sequence[Space], wt: Optional[Space]) -> Space:
        if isinstance(g, UserFun):
            if wt is not None:
                return wt
            return args[0] if args and len(set(args)) == 1 else "global"
        if isinstance(g, Lambda):
            for p, s in zip(g.params, args):
                env[p] = s
            return expr_space(g.body, wt)
        if isinstance(g, AddressSpaceWrapper):
            return call_space(g.f, args, g.space)  # type: ignore[arg-type]
        if isinstance(g, AbstractReduce):
            return call_space(g.f, [args[0], args[1]], args[0])
        if isinstance(g, (AbstractMap, MapVec)):
            inner = call_space(g.f, args, wt)
            if wt is None and inner == "private" and isinstance(g, ParallelMap):
                return "global"  # a parallel map's result is shared: never in registers
            return inner if wt is None else wt
        if isinstance(g, Iterate):
            return call_space(g.f, args, wt)
        if isinstance(g, Zip):
            return args[0] if len(set(args)) == 1 else "global"
        if isinstance(g, Pattern):
            return args[0] if args else "private"
        raise LiftTypeError(f"cannot infer the address space of {g!r}")

    return call_space(f, arg_spaces, write_to)
