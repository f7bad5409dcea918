"""Emission state of one kernel: statements, memories, names, and loads/stores through views.

The generator (`generator.py`) decides what to compute; this module knows how a location is
read or written in C (vload/vstore for vectors in scalar memory, struct fields for tuples,
scalars for constant-indexed private arrays) and keeps the declarations; spellings that differ
between OpenCL C and CUDA C come from the kernel's `Dialect`.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from liftkit.arith import ArithExpr, cst, divides, size_var
from liftkit.codegen.cast import Barrier, Block, Deferred, For, If, Line, Stmt, render
from liftkit.codegen.dialect import OPENCL, Dialect
from liftkit.codegen.memory import (
    Memory, Space, bytes_of, c_layout, ctype, element_count, storage_elem, tuple_types_in,
)
from liftkit.codegen.views import (
    Arith,
    CodegenError,
    LanesLoc,
    Loc,
    MemLoc,
    NeedsTupleIndex,
    DropLoc,
    SelectLoc,
    ValueLoc,
    View,
    ZeroLoc,
)
from liftkit.ir.nodes import UserFun
from liftkit.types import (
    ArrayType, ScalarType, TupleType, Type, VectorType, bool_, complex128, float32, float64,
)

_TOKEN = re.compile(r"\x00(\d+)\|([^\x00]*)\x00")
# a vector read at a constant offset of a private array: (memory id, offset, width)
_VECTOR_TOKEN = re.compile(r"\x01(\d+)\|(\d+)\|(\d+)\x01")


class Names:
    """Fresh C identifiers, readable: the hint plus a counter only when needed."""

    def __init__(self, taken: Optional[set[str]] = None) -> None:
        self.taken = set(taken or ())

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


# private arrays beyond this size are a mistake, not registers: drivers spill them (NVIDIA) or
# overflow the work-item stacks (PoCL runs a work-group's work-items in one thread's stack)
PRIVATE_BYTES_LIMIT = 16384


def literal_c(value: object, t: Type, dialect: Dialect = OPENCL) -> str:
    if isinstance(t, ScalarType):
        if t.is_complex:
            z = complex(value)  # type: ignore[arg-type]
            return f"{t.name}_new({literal_c(z.real, t.real)}, {literal_c(z.imag, t.real)})"
        if t == bool_:
            return "1" if value else "0"
        if t.is_float:
            x = float(value)  # type: ignore[arg-type]
            if x != x:
                s = "NAN"
            elif x in (float("inf"), float("-inf")):
                s = "INFINITY" if x > 0 else "-INFINITY"
            else:
                s = repr(x)
                if "e" not in s and "." not in s:
                    s += ".0"
            return s + ("f" if t == float32 and s[-1].isdigit() else "")
        return str(int(value)) + ("L" if t.name == "long" else "")  # type: ignore[call-overload]
    if isinstance(t, VectorType):
        return dialect.vector_literal(ctype(t), [literal_c(v, t.elem, dialect) for v in value])  # type: ignore[attr-defined]
    if isinstance(t, TupleType):
        return dialect.tuple_literal(ctype(t), [literal_c(v, e, dialect) for v, e in zip(value, t.elems)])  # type: ignore[call-overload]
    raise CodegenError(f"array literals are not supported in kernels ({t})")


def _elements(value: object, t: Type) -> list[object]:
    """The scalar, vector or tuple elements of an array literal, in memory order."""
    if not isinstance(t, ArrayType):
        return [value]
    return [x for v in value for x in _elements(v, t.elem)]  # type: ignore[attr-defined]


class Emitter:
    """Statements and declarations of one kernel under construction."""

    def __init__(self, ar: Arith, names: Names, multiples: Optional[dict[str, int]] = None,
                 dialect: Dialect = OPENCL) -> None:
        self.ar = ar
        self.dialect = dialect
        self.names = names
        # size variables known to be multiples of a constant (checked before launch): what
        # proves a float4 access aligned, so it can be one 16-byte access
        self.multiples = dict(multiples or {})
        self._scalar_names: dict[tuple[int, int], str] = {}
        self.root = Block()
        self.blocks: list[Block] = [self.root]
        self.local_decls: list[Memory] = []
        self.memories: list[Memory] = []
        self.tuple_types: list[TupleType] = []
        self.complex_types: list[ScalarType] = []  # each gets its C type and helpers
        self.user_funs: dict[str, UserFun] = {}
        self.uses_double = False
        self.uses_vectors = False
        # (scalar C type, vector width) of the evict-first loads emitted: the dialect's helpers
        self.streamed_types: set[tuple[str, int]] = set()
        # kernel attributes a pattern needs (CUDA: __cluster_dims__), between prefix and name
        self.kernel_attributes: list[str] = []
        # CUDA tensor maps a pattern reads (the bulk tensor copy): (parameter name, name of the
        # buffer parameter it describes, its kernel.TensorMap), extra kernel parameters
        self.tensor_maps: list[tuple[str, str, object]] = []

    # -- structure ---------------------------------------------------------------------------
    @property
    def block(self) -> Block:
        return self.blocks[-1]

    def line(self, text: str) -> None:
        self.block.add(Line(text))

    def barrier(self, fences: set[str]) -> None:
        self.block.add(Barrier(frozenset(fences)))

    def take_trailing_barrier(self, since: int) -> set[str]:
        """Remove the current block's last statement if it is a barrier emitted after the
        block had `since` statements; its fences (empty if there was none)."""
        stmts = self.block.stmts
        if len(stmts) > since and isinstance(stmts[-1], Barrier):
            return set(stmts.pop().fences)  # type: ignore[union-attr]
        return set()

    def deferred(self, fn) -> None:  # type: ignore[no-untyped-def]
        self.block.add(Deferred(fn))

    def nested(self, stmt: Stmt, body: Block) -> "_Enter":
        self.block.add(stmt)
        return _Enter(self, body)

    def for_loop(self, var: str, start: str, cond: str, step: str) -> "_Enter":
        body = Block()
        return self.nested(For(var, start, cond, step, body), body)

    def if_(self, cond: str) -> "_Enter":
        body = Block()
        return self.nested(If(cond, body), body)

    def scope(self) -> "_Enter":
        body = Block()
        return self.nested(body, body)

    # -- types -------------------------------------------------------------------------------
    def note_type(self, t: Type) -> None:
        for tt in tuple_types_in(t):
            if tt not in self.tuple_types:
                self.tuple_types.append(tt)
        while isinstance(t, ArrayType):
            t = t.elem
        if t in (float64, complex128) or (isinstance(t, VectorType) and t.elem == float64):
            self.uses_double = True
        if isinstance(t, ScalarType) and t.is_complex and t not in self.complex_types:
            self.complex_types.append(t)
        if isinstance(t, VectorType):
            self.uses_vectors = True
        if isinstance(t, TupleType):
            for e in t.elems:
                self.note_type(e)

    # -- memory ------------------------------------------------------------------------------
    def private_var(self, t: Type, hint: str, init: Optional[str] = None) -> Memory:
        self.note_type(t)
        m = Memory(self.names.fresh(hint), "private", t, cst(1), "var")
        self.memories.append(m)
        self.line(f"{ctype(t)} {m.name}" + (f" = {init};" if init is not None else ";"))
        return m

    def private_array(self, t: Type, hint: str) -> Memory:
        elem, count = storage_elem(t, "private"), element_count(t, "private")
        if not count.is_constant:
            raise CodegenError(f"private memory needs a constant size, but {t} has {count} elements")
        nbytes = bytes_of(t, "private")
        if nbytes.is_constant and nbytes.value > PRIVATE_BYTES_LIMIT:
            raise CodegenError(
                f"private memory: {nbytes.value} bytes per work-item for a value of type {t} "
                f"(at most {PRIVATE_BYTES_LIMIT}); private memory is for registers. A mapLcl that "
                "runs more than once per work-item (its length exceeds the local size) keeps every "
                "iteration's private result: give it a length equal to the local size, or keep "
                "the result in local memory (toLocal)")
        self.note_type(elem)
        m = Memory(self.names.fresh(hint), "private", elem, count, "array")
        self.memories.append(m)
        n = count.value
        self.deferred(lambda: (f"{ctype(elem)} " + ", ".join(self.scalar_name(m, k) for k in range(n))
                               + ";") if m.constant_offsets else f"{ctype(elem)} {m.name}[{n}];")
        return m

    def constant_array(self, value: object, t: ArrayType, hint: str = "lit") -> Memory:
        """An array literal whose elements differ: a const array declared at the top of the
        kernel with its initialiser (the same C in both dialects), read like a buffer."""
        elem, count = storage_elem(t, "private"), element_count(t, "private")
        nbytes = bytes_of(t, "private")
        if not (count.is_constant and nbytes.is_constant) or nbytes.value > PRIVATE_BYTES_LIMIT:
            raise CodegenError(f"an array literal of type {t} ({nbytes} bytes) is too large to "
                               f"live in a kernel (at most {PRIVATE_BYTES_LIMIT}): give it as an "
                               "input")
        parts = [self._initialiser(v, elem) for v in _elements(value, t)]
        self.note_type(elem)
        m = Memory(self.names.fresh(hint), "private", elem, count, "param", readonly=True)
        self.root.stmts.insert(0, Line(f"const {ctype(elem)} {m.name}[{count.value}] = "
                                       f"{{{', '.join(parts)}}};"))
        return m

    def _initialiser(self, v: object, t: Type) -> str:
        """C initialiser of one element: braces for a struct (valid C and C++ alike)."""
        if isinstance(t, TupleType):
            return "{" + ", ".join(self._initialiser(v[k], e)  # type: ignore[index]
                                   for k, e in enumerate(t.elems)) + "}"
        if isinstance(t, VectorType):
            return literal_c(tuple(np.asarray(v).reshape(-1).tolist()), t, self.dialect)
        return literal_c(np.asarray(v).item(), t, self.dialect)

    def scalar_name(self, m: Memory, k: int) -> str:
        """The variable holding element k of a private array kept in registers: `name_k`,
        unless that name is taken (a local array `tmp_2` beside a private array `tmp`)."""
        key = (id(m), k)
        if key not in self._scalar_names:
            self._scalar_names[key] = self.names.fresh(f"{m.name}_{k}")
        return self._scalar_names[key]

    def local_array(self, t: Type, hint: str, copies: ArithExpr) -> Memory:
        elem, count = storage_elem(t, "local"), element_count(t, "local") * copies
        if not count.is_constant:
            raise CodegenError(f"local memory needs a constant size, but {t} needs {count} elements "
                               f"(split by a constant before the mapWrg)")
        self.note_type(elem)
        m = Memory(self.names.fresh(hint), "local", elem, count, "array")
        self.memories.append(m)
        self.local_decls.append(m)
        return m

    # -- reading and writing -----------------------------------------------------------------
    def resolve(self, view: View, tup: Optional[list[int]] = None) -> Loc:
        return view.resolve(self.ar, [], list(tup or []))

    def load(self, view: View) -> str:
        """The C expression reading the (scalar, vector or tuple) value a view denotes."""
        t = view.type
        if isinstance(t, ArrayType):
            raise CodegenError(f"an array ({t}) is used where a single value is needed")
        try:
            return self.loc_c(self.resolve(view))
        except NeedsTupleIndex:
            assert isinstance(t, TupleType)
            self.note_type(t)
            parts = [self.load(view.get(k)) for k in range(len(t.elems))]
            return self.dialect.tuple_literal(ctype(t), parts)

    def store(self, dest: View, value: str) -> None:
        t = dest.type
        try:
            loc = self.resolve(dest)
        except NeedsTupleIndex:
            assert isinstance(t, TupleType)
            tmp = self.private_var(t, "tup", value)
            for k in range(len(t.elems)):
                self.store(dest.get(k), f"{tmp.name}._{k}")
            return
        self.store_loc(loc, value, t)

    def store_loc(self, loc: Loc, value: str, t: Type) -> None:
        """Write a value to a resolved location; a guarded one (`crop`'s dropped cells:
        SelectLoc(cond, loc, DropLoc)) under its condition."""
        if isinstance(loc, SelectLoc) and isinstance(loc.other, DropLoc):
            if isinstance(loc.then, (LanesLoc, SelectLoc)):  # the value once, not per guard
                value = self.private_var(t, "val", value).name
            with self.if_(loc.cond.to_c()):
                self.store_loc(loc.then, value, t)
            return
        if isinstance(loc, LanesLoc):
            tmp = self.private_var(loc.type, "vec", value)
            for j, lane in enumerate(loc.lanes):
                if isinstance(lane, SelectLoc) and isinstance(lane.other, DropLoc):
                    self.store_loc(lane, f"{tmp.name}.s{j:x}", loc.type.elem)
                    continue
                if not isinstance(lane, MemLoc):
                    raise CodegenError("cannot write to a constant or computed location")
                self.line(f"{self.loc_c(lane)} = {tmp.name}.s{j:x};")
            return
        if not isinstance(loc, MemLoc):
            raise CodegenError("cannot write to a constant or computed location")
        if loc.width and _is_private_array(loc.mem) and _folded(loc.offset).is_constant:
            self.store_private_vector(loc, value)
        elif loc.width:
            aligned = self.aligned_vector(loc)
            self.line(f"{aligned} = {value};" if aligned else
                      f"vstore{loc.width}({value}, {self.vec_address(loc)});")
        elif self._complex_fields(loc):
            tmp = self.private_var(t, "val", value).name
            lv = self.loc_c(loc, lvalue=True)
            self.line(f"{lv}.x = {tmp}.x; {lv}.y = {tmp}.y;")
        else:
            self.line(f"{self.loc_c(loc)} = {value};")

    def _complex_fields(self, loc: MemLoc) -> bool:
        """A whole complex number in volatile memory that the dialect reads and writes field
        by field."""
        t = loc.mem.elem
        return (loc.mem.volatile and self.dialect.volatile_complex_fields and not loc.fields
                and loc.lane is None and isinstance(t, ScalarType) and t.is_complex)

    def loc_c(self, loc: Loc, lvalue: bool = False) -> str:
        if isinstance(loc, ValueLoc):
            return loc.c_expr
        if isinstance(loc, LanesLoc):
            return self.dialect.vector_literal(ctype(loc.type), [self.loc_c(l) for l in loc.lanes])
        if isinstance(loc, SelectLoc):
            return f"({loc.cond.to_c()} ? {self.loc_c(loc.then)} : {self.loc_c(loc.other)})"
        if isinstance(loc, ZeroLoc):
            self.note_type(loc.type)
            zero = np.zeros(loc.type.width) if isinstance(loc.type, VectorType) else 0.0
            return literal_c(zero, loc.type, self.dialect)
        if loc.width and _is_private_array(loc.mem) and _folded(loc.offset).is_constant:
            self.note_type(VectorType(loc.mem.elem, loc.width))  # type: ignore[arg-type]
            return f"\x01{id(loc.mem)}|{_folded(loc.offset).value}|{loc.width}\x01"
        if loc.width:
            return self.aligned_vector(loc) or f"vload{loc.width}({self.vec_address(loc)})"
        access, addr = self.mem_c(loc.mem, loc.offset)
        if loc.streamed and not loc.fields and loc.lane is None and not lvalue:
            hinted = self.streamed_load(loc.mem, addr, 0)
            if hinted is not None:
                return hinted
        out = access
        for f in loc.fields:
            out += f"._{f}"
        if loc.lane is not None:
            if loc.mem.kind == "var" or loc.mem.space == "private":
                lane = _folded(loc.lane)
                if not lane.is_constant:  # a loop over the lanes: through the vector's address
                    scalar = ctype(loc.mem.elem.elem) if isinstance(loc.mem.elem, VectorType) \
                        else ctype(loc.mem.elem)  # type: ignore[attr-defined]
                    return f"(({self.dialect.pointer('private', scalar)})&{out})[{lane.to_c()}]"
                return f"{out}.s{lane.value:x}"
            scalar = ctype(loc.mem.elem.elem)  # type: ignore[attr-defined]
            w = loc.mem.elem.width  # type: ignore[attr-defined]
            return f"(({self.dialect.pointer(loc.mem.space, scalar)}){loc.mem.name})[{(loc.offset * w + loc.lane).to_c()}]"
        if not lvalue and self._complex_fields(loc):
            self.note_type(loc.mem.elem)
            return f"{ctype(loc.mem.elem)}_new({out}.x, {out}.y)"
        return out

    def aligned(self, w: ArithExpr, offset: ArithExpr) -> bool:
        """w divides the offset for every size satisfying the program's checks."""
        if divides(w, offset):
            return True
        names = {v.name for v in offset.free_vars()} & set(self.multiples)
        if not names:
            return False
        try:
            scaled = offset.substitute({n: cst(self.multiples[n]) * size_var(n) for n in names})
        except Exception:  # noqa: BLE001 - a form substitute cannot take: no verdict
            return False
        return divides(w, scaled) is True

    def aligned_vector(self, loc: MemLoc) -> Optional[str]:
        """`((global float4*)p)[i]` for a vector at an offset that is a multiple of its width in
        a buffer or local array (whose start is aligned): unlike vload4, which only assumes the
        scalar's alignment, this lets NVIDIA's compiler emit one 16-byte load (ld.v4) instead of
        four (the float4 loads of matrix multiplication were four scalar loads each)."""
        mem, w = loc.mem, loc.width
        if mem.kind not in ("param", "array") or mem.space == "private" or w in (0, 3):
            return None  # (a vload3 reads 12 bytes, a float3 is 16)
        if not self.aligned(cst(w), loc.offset):
            return None
        scalar = ctype(mem.elem)
        if mem.space == "local":
            mem.vector_align = max(mem.vector_align, w * c_layout(mem.elem)[0])
        ptr = self.dialect.pointer(mem.space, f"{scalar}{w}", const=mem.readonly)
        if loc.streamed:
            index = (loc.offset // cst(w)).to_c()
            hinted = self.streamed_load(mem, f"(({ptr}){mem.name}) + ({index})", w)
            if hinted is not None:
                return hinted
        return f"(({ptr}){mem.name})[{(loc.offset // cst(w)).to_c()}]"

    def streamed_load(self, mem: Memory, addr: str, width: int) -> Optional[str]:
        """A read-once load of the value at `addr` in a global buffer (the `streamed` pattern):
        the dialect's evict-first load, or None (a plain read)."""
        load = self.dialect.streamed_load
        if load is None or mem.space != "global" or mem.kind != "param" or not mem.readonly \
                or mem.volatile or not isinstance(mem.elem, ScalarType):
            return None  # (a buffer the kernel writes keeps its ordered, plain reads)
        out = load(addr, ctype(mem.elem), width)
        if out is not None:
            self.streamed_types.add((ctype(mem.elem), width))
        return out

    def vec_address(self, loc: MemLoc) -> str:
        """vloadN/vstoreN (offset, pointer) arguments: in vectors when the offset allows."""
        w = cst(loc.width)
        if self.aligned(w, loc.offset) and not loc.mem.space == "private":
            return f"{(loc.offset // w).to_c()}, {loc.mem.name}"
        return f"0, {self.mem_c(loc.mem, loc.offset)[1]}"

    def mem_c(self, mem: Memory, offset: ArithExpr) -> tuple[str, str]:
        """(element access, address) of mem[offset]; private arrays resolve at the end."""
        if mem.kind == "var":
            return mem.name, f"&{mem.name}"
        if mem.space == "private" and mem.kind == "array":
            offset = _folded(offset)
        off = offset.to_c()
        if mem.space == "private" and mem.kind == "array":
            if not offset.is_constant:
                mem.constant_offsets = False
            token = f"\x00{id(mem)}|{off}\x00"
            return token, f"({mem.name} + {off})"
        if off == "0":
            return f"{mem.name}[0]", mem.name
        return f"{mem.name}[{off}]", f"{mem.name} + {off}"

    def store_private_vector(self, loc: MemLoc, value: str) -> None:
        """A vector written at a constant offset of a private scalar array: a vstore while the
        array stays an array, lane by lane into its registers once it turned into scalars
        (`name_k`, which have no address). Decided at the end, like the declaration."""
        m, w, off = loc.mem, loc.width, _folded(loc.offset).value
        vt = VectorType(m.elem, w)  # type: ignore[arg-type]
        self.note_type(vt)
        tmp = self.names.fresh("vec")
        self.deferred(lambda: f"{ctype(vt)} {tmp} = {value};" if m.constant_offsets else
                      f"vstore{w}({value}, 0, ({m.name} + {off}));")
        self.deferred(lambda: " ".join(f"{self.scalar_name(m, off + j)} = {tmp}.s{j:x};"
                                       for j in range(w)) if m.constant_offsets else "")

    def finish(self) -> list[str]:
        """Render the body, resolving private-array accesses to scalars or array elements."""
        by_id = {str(id(m)): m for m in self.memories}

        def fix(text: str) -> str:
            def sub(mt: re.Match) -> str:  # type: ignore[type-arg]
                m = by_id[mt.group(1)]
                off = mt.group(2)
                return self.scalar_name(m, int(off)) if m.constant_offsets else f"{m.name}[{off}]"

            def sub_vector(mt: re.Match) -> str:  # type: ignore[type-arg]
                m = by_id[mt.group(1)]
                off, w = int(mt.group(2)), int(mt.group(3))
                if not m.constant_offsets:
                    return f"vload{w}(0, ({m.name} + {off}))"
                vt = VectorType(m.elem, w)  # type: ignore[arg-type]
                return self.dialect.vector_literal(
                    ctype(vt), [self.scalar_name(m, off + j) for j in range(w)])

            return _TOKEN.sub(sub, _VECTOR_TOKEN.sub(sub_vector, text))

        return render(self.root.stmts, self.dialect.barrier_text, 1, fix)


class _Enter:
    """Context manager: statements go into `body` while inside."""

    def __init__(self, em: Emitter, body: Block) -> None:
        self.em, self.body = em, body

    def __enter__(self) -> Block:
        self.em.blocks.append(self.body)
        return self.body

    def __exit__(self, *exc: object) -> None:
        self.em.blocks.pop()


def space_of_view(view: View) -> Space | None:
    """The address space a view's data lives in (None for values and mixed zips)."""
    from liftkit.codegen import views as V

    spaces: set[str] = set()

    def visit(v: View) -> None:
        if isinstance(v, V.MemoryView):
            spaces.add(v.mem.space)
        elif isinstance(v, (V.ValueView, V.ArithValueView, V.ConstArrayView)):
            spaces.add("private")
        elif isinstance(v, (V.ZipView, V.TupleView)):
            for p in (v.parents if isinstance(v, V.ZipView) else v.parts):
                visit(p)
        elif isinstance(v, V.PadView):
            visit(v.parent)
        else:
            visit(v.parent)  # type: ignore[attr-defined]

    visit(view)
    return spaces.pop() if len(spaces) == 1 else None  # type: ignore[return-value]


def _is_private_array(m: Memory) -> bool:
    """A private array, which becomes one register per element when every index is constant."""
    return m.space == "private" and m.kind == "array"


def _folded(e: ArithExpr) -> ArithExpr:
    """A private-memory index (registers need constants): with index simplification off the
    raw trees of unrolled loops, e.g. (2*4 + 1) % 4, are constants not yet folded."""
    if e.is_constant:
        return e
    try:
        return cst(int(e.eval({})))
    except Exception:  # noqa: BLE001 - free variables: not a constant
        return e
