"""LLVM code generation, arrays: views (slicing), allocation, fused element-wise loops with
broadcasting, stores into slices (with NumPy's overlap rule), reductions and ``dot`` — the
library operators of §5.7.2, emitted inline as loops so LLVM can optimise them together."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from llvmlite import ir

from . import types as T
from . import vrir as V
from .cg_scalar import I64, binop, compare, convert, math1, mem, unop
from .codegen import ERR_BROADCAST, ERR_NEGDIM, ERR_STEP, Arr

if TYPE_CHECKING:
    from .codegen import FunctionCodegen

_ELEMENTWISE_LIB = ("sqrt", "exp", "log", "sin", "cos", "tan", "abs", "floor", "ceil", "tanh",
                    "arctan", "log10", "exp2", "log2", "arcsin", "arccos", "sinh", "cosh",
                    "minimum", "maximum", "where", "real", "imag")
C0 = ir.Constant(I64, 0)
C1 = ir.Constant(I64, 1)


def is_elementwise(e: V.Expr) -> bool:
    if not isinstance(e.type, T.ArrayType):
        return False
    if isinstance(e, (V.BinOp, V.UnOp, V.Compare)):
        return True
    if isinstance(e, V.Cast):
        return isinstance(e.operand.type, T.ArrayType) and e.operand.type.elem != e.type.elem
    return isinstance(e, V.LibCall) and e.fn in _ELEMENTWISE_LIB


# ----------------------------------------------------------------------------- views
def view(cg: "FunctionCodegen", e: V.Index) -> Arr:
    arr = cg.value(e.array)
    b = cg.b
    data, shape, strides = arr.data, [], []
    off = None
    for k in range(arr.type.ndim):
        ix = e.indices[k] if k < len(e.indices) else V.Slice(None, None, None)
        n, st = arr.shape[k], arr.strides[k]
        if isinstance(ix, V.Slice):
            start, length, step = _slice(cg, ix, n)
            shape.append(length)
            strides.append(st if step is None else b.mul(st, step))
            term = b.mul(start, st) if start is not None else None
        else:
            i = cg.checked_index(cg.value(ix), n, k, e.checks[k])
            term = b.mul(i, st)
        if term is not None:
            off = term if off is None else b.add(off, term)
    if off is not None:
        data = b.gep(data, [off])
    t = e.type
    assert isinstance(t, T.ArrayType)
    return Arr(data, shape, strides, t)


def _slice(cg: "FunctionCodegen", s: V.Slice, n: ir.Value) -> tuple:
    """(start or None, length, step or None) of slice ``s`` over a dimension of size ``n``."""
    b = cg.b
    if s.step is None or (isinstance(s.step, V.Const) and s.step.value == 1):
        start = _clamp(cg, cg.value(s.start), n, False) if s.start is not None else None
        stop = _clamp(cg, cg.value(s.stop), n, False) if s.stop is not None else n
        st0 = start if start is not None else C0
        d = b.sub(stop, st0)
        return start, b.select(b.icmp_signed(">", d, C0), d, C0), None
    step = cg.value(s.step)
    if not isinstance(s.step, V.Const):
        cg.fail_if(b.icmp_signed("==", step, C0), ERR_STEP)
    pos = b.icmp_signed(">", step, C0)
    nm1 = b.sub(n, C1)
    if s.start is None:
        start = b.select(pos, C0, nm1)
    else:
        start = _clamp_step(cg, cg.value(s.start), n, pos)
    if s.stop is None:
        stop = b.select(pos, n, ir.Constant(I64, -1))
    else:
        stop = _clamp_step(cg, cg.value(s.stop), n, pos)
    d = b.select(pos, b.sub(stop, start), b.sub(start, stop))
    ast_ = b.select(pos, step, b.neg(step))
    length = b.sdiv(b.add(d, b.sub(ast_, C1)), ast_)
    length = b.select(b.icmp_signed(">", d, C0), length, C0)
    # an empty slice may start at n; keep the pointer inside [0, n]
    return start, length, step


def _clamp(cg: "FunctionCodegen", i: ir.Value, n: ir.Value, _: bool) -> ir.Value:
    b = cg.b
    i = b.select(b.icmp_signed("<", i, C0), b.add(i, n), i)
    i = b.select(b.icmp_signed("<", i, C0), C0, i)
    return b.select(b.icmp_signed(">", i, n), n, i)


def _clamp_step(cg: "FunctionCodegen", i: ir.Value, n: ir.Value, pos: ir.Value) -> ir.Value:
    b = cg.b
    i = b.select(b.icmp_signed("<", i, C0), b.add(i, n), i)
    lo = b.select(pos, C0, ir.Constant(I64, -1))
    hi = b.select(pos, n, b.sub(n, C1))
    i = b.select(b.icmp_signed("<", i, C0), lo, i)
    return b.select(b.icmp_signed(">=", i, n), hi, i)


# ----------------------------------------------------------------------------- allocation
def allocate(cg: "FunctionCodegen", t: T.ArrayType, shape: list) -> Arr:
    from .cg_runtime import alloc
    b = cg.b
    total = C1
    for k, n in enumerate(shape):
        cg.fail_if(b.icmp_signed("<", n, C0), ERR_NEGDIM, n, k)
        total = b.mul(total, n)
    size = t.elem.dtype.itemsize
    data = alloc(cg, b.mul(total, ir.Constant(I64, size)))
    data = b.bitcast(data, mem(t.elem).as_pointer())
    return cg.make_arr(T.ArrayType(t.elem, t.ndim, "C"), data, shape, None)


def nest(cg: "FunctionCodegen", shape: list, body: Callable[[list], None]) -> None:
    """A loop nest over ``shape`` (last index innermost)."""
    def level(k: int, idx: list) -> None:
        if k == len(shape):
            body(idx)
            return
        cg.counted_loop(shape[k], lambda i: level(k + 1, idx + [i]), name=f"nest{k}")
    level(0, [])


def elem_ptr(cg: "FunctionCodegen", a: Arr, idx: list) -> ir.Value:
    off = None
    for i, st in zip(idx, a.strides):
        term = i if isinstance(st, ir.Constant) and st.constant == 1 else cg.b.mul(i, st)
        off = term if off is None else cg.b.add(off, term)
    return cg.b.gep(a.data, [off if off is not None else C0])


def size_of(cg: "FunctionCodegen", shape: list) -> ir.Value:
    total = C1
    for n in shape:
        total = cg.b.mul(total, n)
    return total


# ----------------------------------------------------------------------------- element-wise
class Leaves:
    """The operands of a fused element-wise tree: arrays (broadcast) and scalars (hoisted)."""

    def __init__(self) -> None:
        self.arrays: list[Arr] = []
        self.scalars: dict[int, Any] = {}
        self.ids: dict[int, int] = {}


def collect(cg: "FunctionCodegen", e: V.Expr, lv: Leaves) -> None:
    if is_elementwise(e):
        for c in _children(e):
            collect(cg, c, lv)
        return
    if isinstance(e.type, T.ArrayType):
        lv.ids[id(e)] = len(lv.arrays)
        lv.arrays.append(materialize(cg, e))
    else:
        lv.scalars[id(e)] = cg.value(e)


def _children(e: V.Expr) -> tuple:
    if isinstance(e, (V.BinOp, V.Compare)):
        return (e.left, e.right)
    if isinstance(e, (V.UnOp,)):
        return (e.operand,)
    if isinstance(e, V.Cast):
        return (e.operand,)
    return e.args  # type: ignore[union-attr]


def evaluate(cg: "FunctionCodegen", e: V.Expr, lv: Leaves, load: Callable[[int], ir.Value],
             ) -> ir.Value:
    """One element of ``e``; ``load(k)`` reads leaf array k at the current point."""
    b = cg.b
    if not is_elementwise(e):
        if id(e) in lv.ids:
            arr = lv.arrays[lv.ids[id(e)]]
            return load(lv.ids[id(e)]) if arr is not None else None
        return lv.scalars[id(e)]
    t = e.type.elem  # type: ignore[union-attr]
    ops = [evaluate(cg, c, lv, load) for c in _children(e)]
    if isinstance(e, V.BinOp):
        return binop(b, e.op, ops[0], ops[1], t, cg._fail_kind)
    if isinstance(e, V.Compare):
        return compare(b, e.op, ops[0], ops[1], _elem(e.left.type))
    if isinstance(e, V.UnOp):
        return unop(b, e.op, ops[0], t)
    if isinstance(e, V.Cast):
        return convert(b, ops[0], _elem(e.operand.type), t)
    assert isinstance(e, V.LibCall)
    if e.fn in ("minimum", "maximum"):
        return binop(b, e.fn, ops[0], ops[1], t, cg._fail_kind)
    if e.fn == "where":
        return b.select(ops[0], ops[1], ops[2])
    return math1(b, e.fn, ops[0], _elem(e.args[0].type))


def _elem(t: T.Type) -> T.ScalarType:
    return t.elem if isinstance(t, T.ArrayType) else t  # type: ignore[return-value]


def broadcast_shape(cg: "FunctionCodegen", arrays: list[Arr], nd: int) -> list:
    b = cg.b
    shape = []
    for d in range(nd):
        r = C1
        for a in arrays:
            k = d - (nd - a.type.ndim)
            if k >= 0:
                n = a.shape[k]
                r = b.select(b.icmp_signed("!=", n, C1), n, r)
        for a in arrays:
            k = d - (nd - a.type.ndim)
            if k >= 0:
                n = a.shape[k]
                bad = b.and_(b.icmp_signed("!=", n, C1), b.icmp_signed("!=", n, r))
                cg.fail_if(bad, ERR_BROADCAST, n, d, r)
        shape.append(r)
    return shape


def run_elementwise(cg: "FunctionCodegen", e: V.Expr, lv: Leaves, shape: list,
                    sink: Callable[[list | None, ir.Value, ir.Value], None],
                    out: Arr | None) -> None:
    """Evaluate ``e`` at every point of ``shape``; ``sink(idx, flat, value)`` consumes it.

    When every array (leaves and ``out``) is C-contiguous with exactly ``shape``, one flat loop
    runs (what LLVM vectorises best); otherwise a loop nest with broadcast strides."""
    b = cg.b
    nd = len(shape)
    arrays = [a for a in lv.arrays]
    everyone = arrays + ([out] if out is not None else [])
    same = ir.Constant(ir.IntType(1), 1)
    for a in everyone:
        if a.type.layout != "C" or a.type.ndim != nd:
            same = ir.Constant(ir.IntType(1), 0)
            break
        for k in range(nd):
            same = b.and_(same, b.icmp_signed("==", a.shape[k], shape[k]))
    flat = b.append_basic_block("ew.flat")
    general = b.append_basic_block("ew.general")
    end = b.append_basic_block("ew.end")
    b.cbranch(same, flat, general)
    b.position_at_end(flat)

    def flat_body(i: ir.Value) -> None:
        v = evaluate(cg, e, lv, lambda k: cg.load_elem(b.gep(arrays[k].data, [i]), arrays[k].type.elem))
        sink(None, i, v)
    cg.counted_loop(size_of(cg, shape), flat_body, name="ew")
    b.branch(end)
    b.position_at_end(general)
    bstrides = []
    for a in arrays:
        st = []
        for d in range(nd):
            k = d - (nd - a.type.ndim)
            if k < 0:
                st.append(C0)
            else:
                st.append(b.select(b.icmp_signed("==", a.shape[k], C1), C0, a.strides[k]))
        bstrides.append(st)

    def nest_body(idx: list) -> None:
        def load(k: int) -> ir.Value:
            a = arrays[k]
            return cg.load_elem(elem_ptr(cg, Arr(a.data, shape, bstrides[k], a.type), idx), a.type.elem)
        sink(idx, None, evaluate(cg, e, lv, load))
    nest(cg, shape, nest_body)
    b.branch(end)
    b.position_at_end(end)


def materialize(cg: "FunctionCodegen", e: V.Expr) -> Arr:
    """An array-valued expression as an array (views stay views; operators allocate)."""
    t = e.type
    assert isinstance(t, T.ArrayType)
    if isinstance(e, V.Name):
        return cg.load_var(e.name)
    if isinstance(e, V.Index):
        return view(cg, e)
    if isinstance(e, V.Cast) and not is_elementwise(e):
        a = materialize(cg, e.operand)
        if t.layout == "A":
            return Arr(a.data, a.shape, a.strides, t)
        return a
    if isinstance(e, V.Call):
        return cg.x_Call(e)
    if isinstance(e, V.TupleGet):
        return cg.value(e.tuple)[e.index]
    if is_elementwise(e):
        lv = Leaves()
        collect(cg, e, lv)
        shape = broadcast_shape(cg, lv.arrays, t.ndim)
        out = allocate(cg, t, shape)
        res_t = t.elem

        def sink(idx: list | None, flat: ir.Value | None, v: ir.Value) -> None:
            p = cg.b.gep(out.data, [flat]) if idx is None else elem_ptr(cg, out, idx)
            cg.store_elem(p, v, res_t)
        run_elementwise(cg, e, lv, shape, sink, out)
        return out
    assert isinstance(e, V.LibCall), e
    from .cg_library import array_libcall
    return array_libcall(cg, e)


def store_into(cg: "FunctionCodegen", target: Arr, e: V.Expr) -> None:
    """``target[...] = e`` with broadcasting; operands overlapping the target (other than the
    very same view) are copied first, as NumPy does."""
    b = cg.b
    nd = target.type.ndim
    if not isinstance(e.type, T.ArrayType):
        v = cg.value(e)
        nest(cg, target.shape, lambda idx: cg.store_elem(elem_ptr(cg, target, idx), v, target.type.elem))
        return
    lv = Leaves()
    collect(cg, e, lv)
    for k, a in enumerate(lv.arrays):
        lv.arrays[k] = _unalias(cg, a, target)
    shape = broadcast_shape(cg, lv.arrays + [target], nd)
    del shape

    def sink(idx: list | None, flat: ir.Value | None, v: ir.Value) -> None:
        p = b.gep(target.data, [flat]) if idx is None else elem_ptr(cg, target, idx)
        cg.store_elem(p, v, target.type.elem)
    run_elementwise(cg, e, lv, target.shape, sink, target)


def _extent(cg: "FunctionCodegen", a: Arr) -> tuple[ir.Value, ir.Value]:
    """Byte range [lo, hi) an array view touches (empty arrays touch nothing)."""
    b = cg.b
    lo_off, hi_off = C0, C0
    empty = ir.Constant(ir.IntType(1), 0)
    for n, st in zip(a.shape, a.strides):
        span = b.mul(b.sub(n, C1), st)
        neg = b.icmp_signed("<", span, C0)
        lo_off = b.add(lo_off, b.select(neg, span, C0))
        hi_off = b.add(hi_off, b.select(neg, C0, span))
        empty = b.or_(empty, b.icmp_signed("<=", n, C0))
    base = b.ptrtoint(a.data, I64)
    size = ir.Constant(I64, a.type.elem.dtype.itemsize)
    lo = b.add(base, b.mul(lo_off, size))
    hi = b.add(base, b.mul(b.add(hi_off, C1), size))
    return b.select(empty, C0, lo), b.select(empty, C0, hi)


def _unalias(cg: "FunctionCodegen", a: Arr, target: Arr) -> Arr:
    b = cg.b
    alo, ahi = _extent(cg, a)
    tlo, thi = _extent(cg, target)
    overlap = b.and_(b.icmp_unsigned("<", alo, thi), b.icmp_unsigned("<", tlo, ahi))
    same = b.icmp_unsigned("==", b.ptrtoint(a.data, I64), b.ptrtoint(target.data, I64))
    if a.type.ndim == target.type.ndim:
        for x, y in zip(a.strides + a.shape, target.strides + target.shape):
            same = b.and_(same, b.icmp_signed("==", x, y))
    else:
        same = ir.Constant(ir.IntType(1), 0)
    need = b.and_(overlap, b.not_(same))
    pre = b.block
    copy_bb = b.append_basic_block("unalias.copy")
    join = b.append_basic_block("unalias.join")
    b.cbranch(need, copy_bb, join)
    b.position_at_end(copy_bb)
    c = copy_array(cg, a)
    copied_block = b.block
    b.branch(join)
    b.position_at_end(join)
    data = b.phi(a.data.type)
    data.add_incoming(a.data, pre)
    data.add_incoming(c.data, copied_block)
    strides = []
    for s_old, s_new in zip(a.strides, c.strides):
        p = b.phi(I64)
        p.add_incoming(s_old, pre)
        p.add_incoming(s_new, copied_block)
        strides.append(p)
    return Arr(data, a.shape, strides, T.ArrayType(a.type.elem, a.type.ndim, "A"))


def copy_array(cg: "FunctionCodegen", a: Arr) -> Arr:
    out = allocate(cg, T.ArrayType(a.type.elem, a.type.ndim, "C"), a.shape)
    nest(cg, a.shape, lambda idx: cg.b.store(cg.b.load(elem_ptr(cg, a, idx)), elem_ptr(cg, out, idx)))
    return out


def scalar_libcall(cg: "FunctionCodegen", e: V.LibCall) -> ir.Value:
    from .cg_library import scalar_reduction
    return scalar_reduction(cg, e)


__all__ = ["materialize", "store_into", "view", "allocate", "nest", "elem_ptr", "Leaves",
           "collect", "run_elementwise", "broadcast_shape", "copy_array"]
