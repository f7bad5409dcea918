"""Views (seed 000 §5.3): how data-layout patterns turn into array indices without copies.

A view describes where the elements of a (possibly multi-dimensional, possibly tuple) value live.
Layout patterns wrap views; maps access them with their loop variable. Resolving a view walks
back to a memory with an *array stack* (pending indices, outermost first) and a *tuple stack*
(pending tuple components), producing a `Loc`: a memory and a flat offset, which the index
simplifier keeps short. The same views serve as write destinations: a map writing through
`join` writes through a split view of the destination, and so on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from liftkit.arith import ArithExpr, Cond, Var, cst, ge, lt, prove_eq
from liftkit.codegen.memory import Memory
from liftkit.ir.patterns.base import Boundary, IndexFun
from liftkit.types import ArrayType, LiftTypeError, TupleType, Type, VectorType


class CodegenError(LiftTypeError):
    """A program the code generator cannot compile, with the reason in pattern terms."""


class Arith:
    """Arithmetic used by views: simplifying (the default) or raw (index simplification off)."""

    def __init__(self, simplify: bool) -> None:
        self.simplify = simplify
        if simplify:
            self.add: Callable[[ArithExpr, ArithExpr], ArithExpr] = lambda a, b: a + b
            self.sub = lambda a, b: a - b
            self.mul = lambda a, b: a * b
            self.div = lambda a, b: a // b
            self.mod = lambda a, b: a % b
        else:
            from liftkit.arith import raw

            self.add, self.sub, self.mul = raw.add, raw.sub, raw.mul
            self.div, self.mod = raw.div, raw.mod


# ---------------------------------------------------------------------------------------------
# locations


@dataclass(frozen=True)
class MemLoc:
    """An element of a memory. offset counts the memory's declared elements; `fields` selects
    inside a struct element; `width` > 0 reads/writes a vector of that width from a scalar memory
    (vload/vstore), with the offset then counting scalars."""

    mem: Memory
    offset: ArithExpr
    fields: tuple[int, ...] = ()
    width: int = 0
    lane: Optional[ArithExpr] = None  # a scalar lane of a vector element
    streamed: bool = False  # read once (`streamed`): the dialect's evict-first load, if any


@dataclass(frozen=True)
class ValueLoc:
    """A value that lives in no memory: a literal, or an expression such as a loop variable."""

    c_expr: str
    type: Type


@dataclass(frozen=True)
class SelectLoc:
    """`cond ? a : b`: reading a padded array with a constant boundary."""

    cond: Cond
    then: "Loc"
    other: "Loc"


@dataclass(frozen=True)
class ZeroLoc:
    """The zero of a (scalar or vector) type: a zero-padded array's cells past its edge seen
    through asScalar/asVector (a lane of a zero vector, a vector of zero lanes)."""

    type: Type


def is_zero(loc: "Loc") -> bool:
    """A zero: ZeroLoc, or a literal whose every number is 0 (0.0f, (float4)(0.0f, …))."""
    import re

    if isinstance(loc, ZeroLoc):
        return True
    if not isinstance(loc, ValueLoc):
        return False
    text = re.sub(r"[A-Za-z_][A-Za-z_0-9]*", " ", loc.c_expr)  # type names, casts, 'f' suffixes
    nums = re.findall(r"[0-9.]+", text)
    return (bool(nums) and re.fullmatch(r"[0-9.(),\s-]*", text) is not None
            and all(float(x) == 0 for x in nums))


@dataclass(frozen=True)
class DropLoc:
    """Nowhere: a cell a `crop` drops. A store resolving to SelectLoc(cond, loc, DropLoc()) is
    guarded (`if (cond)`); a load never reaches one."""


@dataclass(frozen=True)
class LanesLoc:
    """A vector whose lanes live at unrelated places (asVector over a permuted view): read as
    (float4)(a, b, c, d), written lane by lane."""

    lanes: tuple["Loc", ...]
    type: VectorType


Loc = MemLoc | ValueLoc | SelectLoc | LanesLoc | DropLoc | ZeroLoc


class NeedsTupleIndex(Exception):
    """A tuple whose components live in different places was read whole (handled by the caller,
    which reads the components one by one)."""


# ---------------------------------------------------------------------------------------------
# views


class View:
    """Base class. `type` is the Lift type of the value the view denotes."""

    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:  # pragma: no cover
        raise CodegenError(f"{type(self).__name__} cannot be resolved")  # every view overrides it

    def access(self, i: ArithExpr) -> "View":
        if not isinstance(self.type, ArrayType):
            raise CodegenError(f"cannot index a value of type {self.type}")
        return AccessView(self, i, self.type.elem)

    def get(self, i: int) -> "View":
        if not isinstance(self.type, TupleType):
            raise CodegenError(f"cannot take component {i} of a value of type {self.type}")
        return GetView(self, i, self.type.elems[i])


@dataclass(frozen=True, eq=False)
class MemoryView(View):
    """The root: a memory seen as a nested array of `type` (row-major, densely packed)."""

    mem: Memory
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        t, off = self.type, cst(0)
        for i in idx:
            if not isinstance(t, ArrayType):
                raise CodegenError(f"too many indices into memory {self.mem.name}")
            off = ar.add(ar.mul(off, t.length), i)
            t = t.elem
        if isinstance(t, ArrayType):
            raise CodegenError(f"memory {self.mem.name} read as a whole array (missing index)")
        if isinstance(t, VectorType) and not isinstance(self.mem.elem, VectorType):
            if tup:
                raise CodegenError("tuple component of a vector")
            return MemLoc(self.mem, ar.mul(off, cst(t.width)), (), t.width)
        fields: list[int] = []
        for k in tup:
            if not isinstance(t, TupleType):
                raise CodegenError(f"tuple component {k} of non-tuple {t} in {self.mem.name}")
            fields.append(k)
            t = t.elems[k]
        return MemLoc(self.mem, off, tuple(fields))


@dataclass(frozen=True, eq=False)
class ThreadPrivateView(View):
    """A mapLcl's result in private memory, one element per work-item: the leading `dims`
    dimensions are the work-items of an exactly-once mapLcl, so each work-item stores only its
    own element (registers, not an array indexed by the thread id). Reading it with any index
    but the reading work-item's own id would read another work-item's registers: refused.
    `thread_ids` maps the names of exactly-once mapLcl variables to their dimension (the
    generator fills it as it emits those loops)."""

    parent: View
    type: Type
    dims: tuple[int, ...]
    thread_ids: dict[str, int]

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k = len(self.dims)
        for d, i in zip(self.dims, idx[:k]):
            if not _is_thread_id(i, d, self.thread_ids):
                raise CodegenError(
                    f"private memory written by the work-items of mapLcl({d}) is read at index "
                    f"{i}: a work-item can only read its own private memory (read it in a "
                    f"mapLcl({d}) over the same elements, or use local memory)")
        return self.parent.resolve(ar, idx[k:], tup)


def _is_thread_id(i: ArithExpr, dim: int, thread_ids: dict[str, int]) -> bool:
    """i is (provably equal to) the variable of an exactly-once mapLcl(dim) loop; with index
    simplification off it may arrive as a raw tree such as l_id % 8."""
    if isinstance(i, Var):
        return thread_ids.get(i.name) == dim
    vs = [v for v in i.free_vars() if isinstance(v, Var) and thread_ids.get(v.name) == dim]
    return len(vs) == 1 and prove_eq(i, vs[0])


@dataclass(frozen=True, eq=False)
class ValueView(View):
    """A scalar, vector or tuple value given by a C expression (literals, private variables)."""

    c_expr: str
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        if idx:
            raise CodegenError(f"cannot index the value {self.c_expr}")
        expr, t = self.c_expr, self.type
        for k in tup:
            assert isinstance(t, TupleType)
            expr, t = f"{expr}._{k}", t.elems[k]
        return ValueLoc(expr, t)


@dataclass(frozen=True, eq=False)
class ArithValueView(View):
    """An integer known as arithmetic (e.g. a loop variable used as data)."""

    value: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return ValueLoc(self.value.to_c(), self.type)


@dataclass(frozen=True, eq=False)
class AccessView(View):
    parent: View
    index: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return self.parent.resolve(ar, [self.index] + idx, tup)


@dataclass(frozen=True, eq=False)
class GetView(View):
    parent: View
    component: int
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return self.parent.resolve(ar, idx, [self.component] + tup)


@dataclass(frozen=True, eq=False)
class ZipView(View):
    """zip(a, b, ...): the tuple index chooses the array."""

    parents: tuple[View, ...]
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        if not tup:
            raise NeedsTupleIndex()
        return self.parents[tup[0]].resolve(ar, idx, tup[1:])


@dataclass(frozen=True, eq=False)
class TupleView(View):
    """tuple(a, b, ...) of values: the tuple index chooses the component."""

    parts: tuple[View, ...]
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        if not tup:
            raise NeedsTupleIndex()
        return self.parts[tup[0]].resolve(ar, idx, tup[1:])


@dataclass(frozen=True, eq=False)
class SameView(View):
    """A view with another type and the same locations (unzip, Id, reorder)."""

    parent: View
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return self.parent.resolve(ar, idx, tup)


@dataclass(frozen=True, eq=False)
class StreamedView(View):
    """`streamed`: the same locations, those in global memory read with the dialect's
    evict-first load (a hint: the values are the same)."""

    parent: View
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return _streamed(self.parent.resolve(ar, idx, tup))


def _streamed(loc: Loc) -> Loc:
    if isinstance(loc, MemLoc) and loc.mem.space == "global":
        return replace(loc, streamed=True)
    if isinstance(loc, SelectLoc):
        return SelectLoc(loc.cond, _streamed(loc.then), _streamed(loc.other))
    if isinstance(loc, LanesLoc):
        return LanesLoc(tuple(_streamed(l) for l in loc.lanes), loc.type)
    return loc


@dataclass(frozen=True, eq=False)
class SingletonView(View):
    """[A]_1 around a single value (a reduction's accumulator): element 0 is the value."""

    parent: View
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        _, rest = _pop(idx, "reduce result")
        return self.parent.resolve(ar, rest, tup)


@dataclass(frozen=True, eq=False)
class ElementwiseView(View):
    """map(g) for a data-layout-only g: element i is g's view of the parent's element i.

    `fn` builds g's view over an element view (reading), or, for a destination, the view g's
    argument must be written through (writing)."""

    parent: View
    fn: Callable[[View], View]
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        i, rest = _pop(idx, "map")
        return self.fn(self.parent.access(i)).resolve(ar, rest, tup)


@dataclass(frozen=True, eq=False)
class ConstArrayView(View):
    """An array literal whose elements are all equal: every index reads the same value."""

    value: View
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        return self.value.resolve(ar, [], tup)


def _pop(idx: list[ArithExpr], what: str) -> tuple[ArithExpr, list[ArithExpr]]:
    if not idx:
        raise CodegenError(f"{what}: an array was used whole where an element is needed")
    return idx[0], idx[1:]


@dataclass(frozen=True, eq=False)
class SplitView(View):
    """split n: element [i][j] is element i*n + j of the parent."""

    parent: View
    n: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        i, rest = _pop(idx, "split")
        j, rest = _pop(rest, "split")
        return self.parent.resolve(ar, [ar.add(ar.mul(i, self.n), j)] + rest, tup)


@dataclass(frozen=True, eq=False)
class JoinView(View):
    """join: element k is element [k / n][k mod n] of the parent (n: inner length)."""

    parent: View
    n: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k, rest = _pop(idx, "join")
        return self.parent.resolve(ar, [ar.div(k, self.n), ar.mod(k, self.n)] + rest, tup)


@dataclass(frozen=True, eq=False)
class IndexMapView(View):
    """gather(f), scatter(f) written through, reorderStride: element k is element g(k)."""

    parent: View
    fn: Callable[[Arith, ArithExpr], ArithExpr]
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k, rest = _pop(idx, "gather")
        return self.parent.resolve(ar, [self.fn(ar, k)] + rest, tup)


def gather_fn(f: IndexFun, n: ArithExpr) -> Callable[[Arith, ArithExpr], ArithExpr]:
    """The index function applied at k (without re-simplification when simplification is off)."""

    def g(ar: Arith, k: ArithExpr) -> ArithExpr:
        if ar.simplify:
            return f(k, n)
        from liftkit.arith import raw

        return raw.substitute(f.body, {f.i.name: k, f.n.name: n})

    return g


def reorder_stride_fn(s: ArithExpr, n: ArithExpr) -> Callable[[Arith, ArithExpr], ArithExpr]:
    def g(ar: Arith, k: ArithExpr) -> ArithExpr:
        m = ar.div(n, s)
        return ar.add(ar.div(k, m), ar.mul(s, ar.mod(k, m)))

    return g


@dataclass(frozen=True, eq=False)
class TransposeView(View):
    parent: View
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        i, rest = _pop(idx, "transpose")
        j, rest = _pop(rest, "transpose")
        return self.parent.resolve(ar, [j, i] + rest, tup)


@dataclass(frozen=True, eq=False)
class SlideView(View):
    """slide size step: element [w][e] is element w*step + e of the parent."""

    parent: View
    step: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        w, rest = _pop(idx, "slide")
        e, rest = _pop(rest, "slide")
        return self.parent.resolve(ar, [ar.add(ar.mul(w, self.step), e)] + rest, tup)


@dataclass(frozen=True, eq=False)
class PadView(View):
    """pad l r boundary over a parent of length n."""

    parent: View
    left: ArithExpr
    n: ArithExpr
    boundary: Boundary
    const: Optional[View]
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        from liftkit.arith import if_then_else, max_, min_

        k, rest = _pop(idx, "pad")
        j = ar.sub(k, self.left)
        n = self.n
        kind = self.boundary.kind
        if kind == "clamp":
            src = min_(max_(j, cst(0)), n - 1)
        elif kind == "wrap":
            # k - l >= -l; adding a multiple of n that covers l keeps the operand non-negative
            reps = self.left // n + 1
            src = ar.mod(ar.add(j, ar.mul(reps, n)), n)
        elif kind == "mirror":
            period = ar.mul(cst(2), n)
            reps = self.left // period + 1
            m = ar.mod(ar.add(j, ar.mul(reps, period)), period)
            src = if_then_else(lt(m, n), m, period - 1 - m)
        else:
            inner = self.parent.resolve(ar, [min_(max_(j, cst(0)), n - 1)] + rest, tup)
            assert self.const is not None
            outside = self.const.resolve(ar, [], tup)
            inside = _in_range(j, n)
            if inside is True:
                return inner
            return SelectLoc(inside, inner, outside)  # type: ignore[arg-type]
        return self.parent.resolve(ar, [src] + rest, tup)


def _in_range(j: ArithExpr, n: ArithExpr) -> "Cond | bool":
    from liftkit.arith import prove_ge, prove_lt

    if prove_ge(j, cst(0)) and prove_lt(j, n):
        return True
    return _And(ge(j, cst(0)), lt(j, n))  # type: ignore[return-value]


@dataclass(frozen=True)
class _And:
    """Conjunction of two comparisons, printed in C."""

    a: Cond
    b: Cond

    def to_c(self) -> str:
        return f"({self.a.to_c()} && {self.b.to_c()})"


@dataclass(frozen=True, eq=False)
class CropView(View):
    """crop l r read: cell k of the result is cell k + l of the parent."""

    parent: View
    left: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k, rest = _pop(idx, "crop")
        return self.parent.resolve(ar, [ar.add(k, self.left)] + rest, tup)


@dataclass(frozen=True, eq=False)
class GuardView(View):
    """The destination of a computation written through `crop l r` into `parent` (of length
    n): cell k lands in the parent's cell k - l when l <= k < l + n, else nowhere (the store is
    guarded by that condition; none where the index is provably inside)."""

    parent: View
    left: ArithExpr
    n: ArithExpr
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k, rest = _pop(idx, "crop")
        j = ar.sub(k, self.left)
        from liftkit.arith import prove_ge, prove_lt

        inner = self.parent.resolve(ar, [j] + rest, tup)
        conds = [c for c, known in ((ge(j, cst(0)), prove_ge(j, cst(0))),
                                    (lt(j, self.n), prove_lt(j, self.n))) if not known]
        if not conds:
            return inner
        cond = conds[0] if len(conds) == 1 else _And(conds[0], conds[1])
        return SelectLoc(cond, inner, DropLoc())  # type: ignore[arg-type]


def select_map(loc: Loc, f: Callable[[Loc], Loc]) -> Loc:
    """f applied to the places a guarded location (SelectLoc …, DropLoc) stores to."""
    if isinstance(loc, SelectLoc) and isinstance(loc.other, DropLoc):
        return SelectLoc(loc.cond, select_map(loc.then, f), loc.other)
    return f(loc)


def _merge_guarded(first: Loc, some: Loc, width: int, j: ArithExpr,
                   vec: Optional[Type] = None) -> Optional[Loc]:
    """One guarded (or zero-padded) vector location from those of its lane 0 (`first`) and of
    a symbolic lane j (`some`): the same conditions, both dropped (DropLoc) or both zeros
    otherwise (a zero vector of type `vec`), and plain lanes provably consecutive."""
    if isinstance(first, SelectLoc) and isinstance(some, SelectLoc):
        if first.cond.to_c() != some.cond.to_c():
            return None
        if isinstance(first.other, DropLoc) and isinstance(some.other, DropLoc):
            other: Loc = first.other
        elif vec is not None and is_zero(first.other) and is_zero(some.other):
            other = ZeroLoc(vec)
        else:
            return None
        inner = _merge_guarded(first.then, some.then, width, j, vec)
        return None if inner is None else SelectLoc(first.cond, inner, other)
    if (isinstance(first, MemLoc) and isinstance(some, MemLoc) and some.mem is first.mem
            and first.mem.elem_width() == 1 and not first.width and first.lane is None
            and not first.fields and not some.fields and not some.width and some.lane is None
            and prove_eq(some.offset - first.offset, j)):
        return MemLoc(first.mem, first.offset, first.fields, width, streamed=first.streamed)
    return None


@dataclass(frozen=True, eq=False)
class AsVectorView(View):
    """asVector w over scalars: vector element k is scalars k*w .. k*w + w - 1."""

    parent: View
    width: int
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        """One vload when the lanes are provably consecutive in one memory, else lane by lane."""
        from liftkit.arith import prove_eq

        from liftkit.arith import Var

        k, rest = _pop(idx, "asVector")
        base = ar.mul(k, cst(self.width))
        first = self.parent.resolve(ar, [base] + rest, tup)
        # one symbolic lane j in [0, w) decides: its offset must be provably first + j. A field
        # of an array of structs is never one vector: its lanes are a struct apart
        j = Var("_vector_lane_", 0, self.width)
        some = self.parent.resolve(Arith(True), [base + j] + rest, tup)
        if (isinstance(first, MemLoc) and isinstance(some, MemLoc) and some.mem is first.mem
                and first.mem.elem_width() == 1 and not first.width and first.lane is None
                and not first.fields and not some.fields and not some.width and some.lane is None
                and prove_eq(some.offset - first.offset, j)):
            return MemLoc(first.mem, first.offset, first.fields, self.width,
                          streamed=first.streamed)
        if isinstance(first, SelectLoc):  # a guarded store, or a zero-padded load
            merged = _merge_guarded(first, some, self.width, j,
                                    array_view_type(self.type).elem)
            if merged is not None:
                return merged
        lanes = [first] + [self.parent.resolve(ar, [ar.add(base, cst(i))] + rest, tup)
                           for i in range(1, self.width)]
        elem = array_view_type(self.type).elem
        assert isinstance(elem, VectorType)
        return LanesLoc(tuple(lanes), elem)


@dataclass(frozen=True, eq=False)
class AsScalarView(View):
    """asScalar over vectors of width w: scalar k is lane k mod w of vector k / w."""

    parent: View
    width: int
    type: Type

    def resolve(self, ar: Arith, idx: list[ArithExpr], tup: list[int]) -> Loc:
        k, rest = _pop(idx, "asScalar")
        w = cst(self.width)
        loc = self.parent.resolve(ar, [ar.div(k, w)] + rest, tup)
        if isinstance(loc, SelectLoc) and isinstance(loc.other, DropLoc):  # a guarded store
            return select_map(loc, lambda inner: self._lane(ar, k, w, inner))
        return self._lane(ar, k, w, loc)

    def _lane(self, ar: Arith, k: ArithExpr, w: ArithExpr, loc: Loc) -> Loc:
        if isinstance(loc, SelectLoc) and is_zero(loc.other):  # a zero-padded vector's lane
            elem = array_view_type(self.type).elem
            return SelectLoc(loc.cond, self._lane(ar, k, w, loc.then), ZeroLoc(elem))
        if isinstance(loc, LanesLoc):
            lane = ar.mod(k, w)
            if lane.is_constant:
                return loc.lanes[lane.value]
            raise CodegenError("asScalar over a permuted vector view needs a constant lane")
        if isinstance(loc, MemLoc):
            if loc.width:  # a vload view read back as scalars: plain scalar offset
                return MemLoc(loc.mem, ar.add(loc.offset, ar.mod(k, w)), loc.fields,
                              streamed=loc.streamed)
            return MemLoc(loc.mem, loc.offset, loc.fields, 0, ar.mod(k, w), loc.streamed)
        raise CodegenError("asScalar of a computed vector value: store it in memory first")


def array_view_type(t: Type) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise CodegenError(f"expected an array, got {t}")
    return t


def vector_width(t: Type) -> int:
    return t.width if isinstance(t, VectorType) else 1

