"""LLVM code generation, library operators: allocation (zeros ones empty full arange copy),
reductions (sum prod min max mean, over all or one axis) and ``dot``/``@``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import types as T
from . import vrir as V
from .cg_arrays import (C0, C1, Leaves, allocate, broadcast_shape, collect, elem_ptr,
                        materialize, nest, run_elementwise, size_of)
from .cg_scalar import I8, I64, binop, const, convert, intrinsic, ll
from .codegen import ERR_DOT, ERR_EMPTY, Arr

if TYPE_CHECKING:
    from .codegen import FunctionCodegen


def array_libcall(cg: "FunctionCodegen", e: V.LibCall) -> Arr:
    b = cg.b
    t = e.type
    assert isinstance(t, T.ArrayType)
    if e.fn in ("zeros", "ones", "empty", "full"):
        dims = [cg.value(a) for a in e.args[:t.ndim]]
        out = allocate(cg, t, dims)
        if e.fn == "empty":
            return out
        if e.fn == "zeros":
            nbytes = b.mul(size_of(cg, dims), ir.Constant(I64, t.elem.dtype.itemsize))
            memset = cg.ctx.module.declare_intrinsic("llvm.memset", [ir.IntType(8).as_pointer(), I64])
            b.call(memset, [b.bitcast(out.data, ir.IntType(8).as_pointer()), ir.Constant(I8, 0),
                            nbytes, ir.Constant(ir.IntType(1), 0)])
            return out
        v = const(t.elem, 1) if e.fn == "ones" else cg.value(e.args[-1])
        cg.counted_loop(size_of(cg, dims), lambda i: cg.store_elem(b.gep(out.data, [i]), v, t.elem),
                        name="fill")
        return out
    if e.fn == "arange":
        start, stop, step = (cg.value(a) for a in e.args)
        at = e.args[0].type
        if at == T.INT64:
            n = cg.trip_count(start, stop, step, e.args[2])
        else:
            q = intrinsic(b, "llvm.ceil", [b.fdiv(b.fsub(stop, start), step)])
            n = b.fptosi(q, I64)
            n = b.select(b.icmp_signed(">", n, C0), n, C0)
        out = allocate(cg, t, [n])

        def body(i: ir.Value) -> None:
            if at == T.INT64:
                v = b.add(start, b.mul(i, step))
            else:
                v = b.fadd(start, b.fmul(b.sitofp(i, ll(at)), step))
            cg.store_elem(b.gep(out.data, [i]), convert(b, v, at, t.elem), t.elem)  # type: ignore[arg-type]
        cg.counted_loop(n, body, name="arange")
        return out
    if e.fn == "copy":
        a = materialize(cg, e.args[0])
        out = allocate(cg, t, a.shape)
        lv = Leaves()
        lv.arrays.append(a)
        lv.ids[id(e.args[0])] = 0

        def sink(idx, flat, v):  # noqa: ANN001
            p = b.gep(out.data, [flat]) if idx is None else elem_ptr(cg, out, idx)
            cg.store_elem(p, v, t.elem)
        run_elementwise(cg, e.args[0], lv, a.shape, sink, out)
        return out
    if e.fn in ("sum", "prod", "min", "max", "mean"):
        return axis_reduction(cg, e)
    if e.fn == "dot":
        return dot(cg, e)
    raise AssertionError(e.fn)


def _identity(fn: str, t: T.ScalarType) -> ir.Value:
    if fn in ("sum", "mean"):
        return const(t, 0)
    if fn == "prod":
        return const(t, 1)
    if t.is_float:
        return const(t, float("inf") if fn == "min" else float("-inf"))
    if t.is_bool:
        return const(t, fn == "min")
    bits = t.bits
    return ir.Constant(ll(t), (1 << (bits - 1)) - 1 if fn == "min" else -(1 << (bits - 1)))


def _combine(cg: "FunctionCodegen", fn: str, acc: ir.Value, v: ir.Value, t: T.ScalarType) -> ir.Value:
    op = {"sum": "add", "mean": "add", "prod": "mul", "min": "minimum", "max": "maximum"}[fn]
    if t.is_bool and op in ("minimum", "maximum"):
        return cg.b.and_(acc, v) if op == "minimum" else cg.b.or_(acc, v)
    return binop(cg.b, op, acc, v, t, cg._fail_kind, reassoc=True)


def scalar_reduction(cg: "FunctionCodegen", e: V.LibCall) -> ir.Value:
    """sum/prod/min/max/mean over all elements (fused with an element-wise operand), or a
    vector dot product."""
    b = cg.b
    if e.fn == "dot":
        x, y = (materialize(cg, a) for a in e.args)
        t = e.type
        cg.fail_if(b.icmp_signed("!=", x.shape[0], y.shape[0]), ERR_DOT, x.shape[0], y.shape[0])
        acc = cg.temp(t)
        b.store(const(t, 0), acc)  # type: ignore[arg-type]
        cg.counted_loop(x.shape[0], lambda k: b.store(binop(
            b, "add", b.load(acc), binop(b, "mul", cg.load_elem(elem_ptr(cg, x, [k]), t),
                                         cg.load_elem(elem_ptr(cg, y, [k]), t), t, cg._fail_kind),
            t, cg._fail_kind, reassoc=True), acc), name="dot")  # type: ignore[arg-type]
        return b.load(acc)
    assert e.axis == -1 and e.fn in ("sum", "prod", "min", "max", "mean"), e.fn
    src = e.args[0]
    at = src.type
    assert isinstance(at, T.ArrayType)
    t = e.type if e.fn != "mean" else at.elem if not at.elem.is_bool and not at.elem.is_int else T.INT64
    t = e.type if e.fn != "mean" else (e.type if at.elem.is_float else T.INT64)
    lv = Leaves()
    collect(cg, src, lv)
    shape = broadcast_shape(cg, lv.arrays, at.ndim)
    total = size_of(cg, shape)
    if e.fn in ("min", "max"):
        cg.fail_if(b.icmp_signed("==", total, C0), ERR_EMPTY)
    acc = cg.temp(t)
    b.store(_identity(e.fn, t), acc)  # type: ignore[arg-type]

    def sink(idx, flat, v):  # noqa: ANN001
        v = convert(b, v, at.elem, t)  # type: ignore[arg-type]
        b.store(_combine(cg, e.fn, b.load(acc), v, t), acc)  # type: ignore[arg-type]
    run_elementwise(cg, src, lv, shape, sink, None)
    r = b.load(acc)
    if e.fn == "mean":
        r = convert(b, r, t, e.type)  # type: ignore[arg-type]
        r = b.fdiv(r, b.sitofp(total, ll(e.type)))
    return r


def axis_reduction(cg: "FunctionCodegen", e: V.LibCall) -> Arr:
    """Reduction along one axis: the result starts at the identity and the input is walked in
    its own order, so a C array is read contiguously whatever the axis."""
    b = cg.b
    src = materialize(cg, e.args[0])
    t = e.type
    assert isinstance(t, T.ArrayType)
    ax = e.axis
    rshape = [n for k, n in enumerate(src.shape) if k != ax]
    out = allocate(cg, t, rshape)
    et = t.elem if e.fn != "mean" else t.elem
    if e.fn in ("min", "max"):
        cg.fail_if(b.icmp_signed("==", src.shape[ax], C0), ERR_EMPTY)
    ident = _identity(e.fn, et)
    cg.counted_loop(size_of(cg, rshape), lambda i: cg.store_elem(b.gep(out.data, [i]), ident, et),
                    name="init")

    def body(idx: list) -> None:
        p = elem_ptr(cg, out, [i for k, i in enumerate(idx) if k != ax])
        v = convert(b, cg.load_elem(elem_ptr(cg, src, idx), src.type.elem), src.type.elem, et)
        cg.store_elem(p, _combine(cg, e.fn, cg.load_elem(p, et), v, et), et)
    nest(cg, src.shape, body)
    if e.fn == "mean":
        n = b.sitofp(src.shape[ax], ll(et))
        cg.counted_loop(size_of(cg, rshape), lambda i: cg.store_elem(
            b.gep(out.data, [i]), b.fdiv(cg.load_elem(b.gep(out.data, [i]), et), n), et), name="mean")
    return out


def dot(cg: "FunctionCodegen", e: V.LibCall) -> Arr:
    b = cg.b
    x, y = (materialize(cg, a) for a in e.args)
    t = e.type
    assert isinstance(t, T.ArrayType)
    et = t.elem
    kx = x.shape[-1]
    ky = y.shape[0]
    cg.fail_if(b.icmp_signed("!=", kx, ky), ERR_DOT, kx, ky)

    def mul(p, q):  # noqa: ANN001
        return binop(b, "mul", p, q, et, cg._fail_kind)

    def add(p, q):  # noqa: ANN001
        return binop(b, "add", p, q, et, cg._fail_kind, reassoc=True)
    if x.type.ndim == 2 and y.type.ndim == 1:            # matrix @ vector: row dot products
        out = allocate(cg, t, [x.shape[0]])
        acc = cg.temp(et)

        def row(i: ir.Value) -> None:
            b.store(const(et, 0), acc)
            cg.counted_loop(kx, lambda k: b.store(add(b.load(acc), mul(
                cg.load_elem(elem_ptr(cg, x, [i, k]), et), cg.load_elem(elem_ptr(cg, y, [k]), et))),
                acc), name="mv")
            cg.store_elem(b.gep(out.data, [i]), b.load(acc), et)
        _with_blas(cg, x, y, out, et, lambda: cg.counted_loop(x.shape[0], row, name="rows"))
        return out
    # vector @ matrix and matrix @ matrix: out[i, :] += x[i, k] * y[k, :] (contiguous rows)
    rows = x.shape[0] if x.type.ndim == 2 else C1
    ncols = y.shape[1]
    oshape = [x.shape[0], ncols] if x.type.ndim == 2 else [ncols]
    out = allocate(cg, t, oshape)
    zero = const(et, 0)

    def over_i(i: ir.Value) -> None:
        orow = b.gep(out.data, [b.mul(i, ncols)])

        def over_k(k: ir.Value) -> None:
            xv = cg.load_elem(elem_ptr(cg, x, [i, k] if x.type.ndim == 2 else [k]), et)

            def over_j(j: ir.Value) -> None:
                p = b.gep(orow, [j])
                cg.store_elem(p, binop(b, "add", cg.load_elem(p, et),
                                       mul(xv, cg.load_elem(elem_ptr(cg, y, [k, j]), et)),
                                       et, cg._fail_kind), et)
            cg.counted_loop(ncols, over_j, name="mm.j")
        cg.counted_loop(kx, over_k, name="mm.k")
    def loops() -> None:
        cg.counted_loop(size_of(cg, oshape),
                        lambda i: cg.store_elem(b.gep(out.data, [i]), zero, et), name="zero")
        cg.counted_loop(rows, over_i, name="mm.i")
    _with_blas(cg, x, y, out, et, loops)
    return out


# Environment slots holding BLAS entry points (0 when SciPy's BLAS is not available).
BLAS_SLOTS = {("gemv", "float64"): 8, ("gemm", "float64"): 9, ("gemv", "float32"): 10,
              ("gemm", "float32"): 11}


def _with_blas(cg: "FunctionCodegen", x: Arr, y: Arr, out: Arr, et: T.ScalarType,
               loops) -> None:  # noqa: ANN001
    """``out = x @ y`` through the BLAS (as the thesis' library does) when it is loaded and
    the operands have unit inner strides; otherwise (or for other types) ``loops()``."""
    if et.name not in ("float32", "float64"):
        loops()
        return
    b = cg.b
    i32 = ir.IntType(32)
    kind = "gemm" if x.type.ndim == 2 and y.type.ndim == 2 else "gemv"
    fptr = b.load(b.gep(cg.env, [ir.Constant(I64, BLAS_SLOTS[(kind, et.name)])]))
    ok = b.icmp_unsigned("!=", fptr, C0)
    big = ir.Constant(I64, 2**31 - 1)

    def small(v: ir.Value) -> ir.Value:
        return b.and_(b.icmp_signed(">", v, C0), b.icmp_signed("<", v, big))
    for a in (x, y):
        if a.type.ndim == 2:
            ok = b.and_(ok, b.icmp_signed("==", a.strides[1], C1))
            ok = b.and_(ok, b.icmp_signed(">=", a.strides[0], b.select(
                b.icmp_signed(">", a.shape[1], C1), a.shape[1], C1)))
            ok = b.and_(ok, small(a.strides[0]))
        else:
            ok = b.and_(ok, small(a.strides[0]))
        for n in a.shape:
            ok = b.and_(ok, small(n))
    blas_bb, loop_bb, join = (b.append_basic_block(n) for n in ("blas", "blas.loops", "blas.join"))
    b.cbranch(ok, blas_bb, loop_bb)
    b.position_at_end(blas_bb)
    ft = ll(et)
    fp = ft.as_pointer()
    ip = i32.as_pointer()
    cp = ir.IntType(8).as_pointer()

    def ival(v: ir.Value) -> ir.Value:
        p = cg.b.alloca(i32)
        b.store(b.trunc(v, i32) if v.type != i32 else v, p)
        return p

    def fval(v: float) -> ir.Value:
        p = cg.b.alloca(ft)
        b.store(ir.Constant(ft, v), p)
        return p

    def ch(c: str) -> ir.Value:
        p = cg.b.alloca(ir.IntType(8))
        b.store(ir.Constant(ir.IntType(8), ord(c)), p)
        return p
    one, zero = fval(1.0), fval(0.0)
    if kind == "gemv":
        # row-major M (m x n) is column-major M^T: y = M @ v is gemv('T'); v @ M is gemv('N')
        m_arr, v_arr, trans = (x, y, "T") if x.type.ndim == 2 else (y, x, "N")
        fnty = ir.FunctionType(ir.VoidType(), [cp, ip, ip, fp, fp, ip, fp, ip, fp, fp, ip])
        f = b.inttoptr(fptr, fnty.as_pointer())
        b.call(f, [ch(trans), ival(m_arr.shape[1]), ival(m_arr.shape[0]), one, m_arr.data,
                   ival(m_arr.strides[0]), v_arr.data, ival(v_arr.strides[0]), zero, out.data,
                   ival(C1)])
    else:
        # C = A @ B (row-major) is C^T = B^T A^T (column-major): gemm('N', 'N', n, m, k, B, A)
        fnty = ir.FunctionType(ir.VoidType(), [cp, cp, ip, ip, ip, fp, fp, ip, fp, ip, fp, fp, ip])
        f = b.inttoptr(fptr, fnty.as_pointer())
        m, k, n = x.shape[0], x.shape[1], y.shape[1]
        b.call(f, [ch("N"), ch("N"), ival(n), ival(m), ival(k), one, y.data, ival(y.strides[0]),
                   x.data, ival(x.strides[0]), zero, out.data, ival(n)])
    b.branch(join)
    b.position_at_end(loop_bb)
    loops()
    b.branch(join)
    b.position_at_end(join)


__all__ = ["array_libcall", "scalar_reduction"]
