"""LLVM code generation, scalars: types and operators on LLVM values (NumPy/Python semantics).

Pure helpers over an ``IRBuilder``; fast-math stays off (results match NumPy bit for bit in the
serial case), except where a caller asks for reassociation of a reduction."""

from __future__ import annotations

from typing import Callable

from llvmlite import ir

from . import types as T

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
PTR = ir.IntType(8).as_pointer()
I64P = I64.as_pointer()


def ll(t: T.Type) -> ir.Type:
    """The LLVM register type of a scalar VRIR type."""
    assert isinstance(t, T.ScalarType), t
    return {"bool": I1, "int32": I32, "int64": I64, "float32": F32, "float64": F64,
            "complex64": ir.LiteralStructType([F32, F32]),
            "complex128": ir.LiteralStructType([F64, F64])}[t.name]


def mem(t: T.ScalarType) -> ir.Type:
    """The LLVM type of an array element in memory (NumPy stores bools as bytes)."""
    return I8 if t.is_bool else ll(t)


def const(t: T.ScalarType, v: object) -> ir.Constant:
    if t.is_complex:
        ft = F32 if t.name == "complex64" else F64
        c = complex(v)  # type: ignore[arg-type]
        return ir.Constant(ll(t), [ir.Constant(ft, c.real), ir.Constant(ft, c.imag)])
    if t.is_bool:
        return ir.Constant(I1, int(bool(v)))
    if t.is_int:
        return ir.Constant(ll(t), int(v))  # type: ignore[arg-type]
    return ir.Constant(ll(t), float(v))  # type: ignore[arg-type]


def convert(b: ir.IRBuilder, v: ir.Value, src: T.ScalarType, dst: T.ScalarType) -> ir.Value:
    if src == dst:
        return v
    if dst.is_complex:
        ft = F32 if dst.name == "complex64" else F64
        if src.is_complex:
            re = convert(b, b.extract_value(v, 0), _part(src), _part(dst))
            im = convert(b, b.extract_value(v, 1), _part(src), _part(dst))
        else:
            re, im = convert(b, v, src, _part(dst)), ir.Constant(ft, 0.0)
        out = b.insert_value(ir.Constant(ll(dst), ir.Undefined), re, 0)
        return b.insert_value(out, im, 1)
    if src.is_complex:
        return convert(b, b.extract_value(v, 0), _part(src), dst)
    if dst.is_bool:
        if src.is_float:
            return b.fcmp_unordered("!=", v, ir.Constant(ll(src), 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(ll(src), 0))
    if src.is_bool:
        return b.zext(v, ll(dst)) if dst.is_int else b.uitofp(v, ll(dst))
    if src.is_int and dst.is_int:
        return b.sext(v, ll(dst)) if dst.bits > src.bits else b.trunc(v, ll(dst))
    if src.is_int:
        return b.sitofp(v, ll(dst))
    if dst.is_int:
        return b.fptosi(v, ll(dst))
    return b.fpext(v, ll(dst)) if dst.bits > src.bits else b.fptrunc(v, ll(dst))


def _part(t: T.ScalarType) -> T.ScalarType:
    return T.FLOAT32 if t.name == "complex64" else T.FLOAT64 if t.is_complex else t


def intrinsic(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """A call of the floating-point intrinsic ``name`` overloaded on its operand type."""
    ty = args[0].type
    full = f"{name}.{'f32' if ty == F32 else 'f64'}"
    mod = b.module
    fn = mod.globals.get(full)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ty, [ty] * len(args)), full)
    return b.call(fn, args)


def libm(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """A call of a C math library function (``tanh``, ``atan``...)."""
    ty = args[0].type
    cname = name + ("f" if ty == F32 else "")
    mod = b.module
    fn = mod.globals.get(cname)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ty, [ty] * len(args)), cname)
    return b.call(fn, args)


def binop(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, t: T.ScalarType,
          fail: Callable[[ir.Value, int], None], reassoc: bool = False) -> ir.Value:
    """``x op y`` for operands already of type ``t``. ``fail(cond, kind)`` emits a check."""
    if t.is_complex:
        return _cbinop(b, op, x, y, t)
    fl = t.is_float
    flags = ("reassoc", "nsz") if reassoc else ()
    if op == "add":
        return b.fadd(x, y, flags=flags) if fl else b.add(x, y)
    if op == "sub":
        return b.fsub(x, y, flags=flags) if fl else b.sub(x, y)
    if op == "mul":
        return b.fmul(x, y, flags=flags) if fl else (b.and_(x, y) if t.is_bool else b.mul(x, y))
    if op == "div":
        return b.fdiv(x, y)
    if op in ("floordiv", "mod"):
        if fl:
            if op == "floordiv":
                return intrinsic(b, "llvm.floor", [b.fdiv(x, y)])
            r = b.frem(x, y)
            zero = ir.Constant(x.type, 0.0)
            adjust = b.and_(b.fcmp_ordered("!=", r, zero),
                            b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero)))
            return b.select(adjust, b.fadd(r, y), r)
        zero = ir.Constant(x.type, 0)
        fail(b.icmp_signed("==", y, zero), 2)
        r = b.srem(x, y)
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        if op == "mod":
            return b.select(adjust, b.add(r, y), r)
        q = b.sdiv(x, y)
        return b.select(adjust, b.sub(q, ir.Constant(x.type, 1)), q)
    if op == "pow":
        if fl:
            return intrinsic(b, "llvm.pow", [x, y])
        return _ipow(b, x, y, fail)
    if op == "bitand":
        return b.and_(x, y)
    if op == "bitor":
        return b.or_(x, y)
    if op == "bitxor":
        return b.xor(x, y)
    if op == "lshift":
        return b.shl(x, y)
    if op == "rshift":
        return b.ashr(x, y)
    if op == "minimum":
        if fl:
            return intrinsic(b, "llvm.minimum", [x, y])
        return b.select(b.icmp_signed("<", y, x), y, x)
    if op == "maximum":
        if fl:
            return intrinsic(b, "llvm.maximum", [x, y])
        return b.select(b.icmp_signed(">", y, x), y, x)
    raise AssertionError(op)


def _ipow(b: ir.IRBuilder, x: ir.Value, y: ir.Value, fail: Callable) -> ir.Value:
    """Integer power by squaring; a negative exponent is NumPy's ValueError."""
    ty = x.type
    fail(b.icmp_signed("<", y, ir.Constant(ty, 0)), 9)
    pre = b.block
    head = b.append_basic_block("pow.head")
    body = b.append_basic_block("pow.body")
    done = b.append_basic_block("pow.done")
    b.branch(head)
    b.position_at_end(head)
    acc = b.phi(ty)
    base = b.phi(ty)
    e = b.phi(ty)
    acc.add_incoming(ir.Constant(ty, 1), pre)
    base.add_incoming(x, pre)
    e.add_incoming(y, pre)
    b.cbranch(b.icmp_signed(">", e, ir.Constant(ty, 0)), body, done)
    b.position_at_end(body)
    odd = b.trunc(e, I1)
    acc2 = b.select(odd, b.mul(acc, base), acc)
    base2 = b.mul(base, base)
    e2 = b.ashr(e, ir.Constant(ty, 1))
    acc.add_incoming(acc2, body)
    base.add_incoming(base2, body)
    e.add_incoming(e2, body)
    b.branch(head)
    b.position_at_end(done)
    return acc


def _cbinop(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, t: T.ScalarType) -> ir.Value:
    a, bb = b.extract_value(x, 0), b.extract_value(x, 1)
    c, d = b.extract_value(y, 0), b.extract_value(y, 1)
    if op == "add":
        re, im = b.fadd(a, c), b.fadd(bb, d)
    elif op == "sub":
        re, im = b.fsub(a, c), b.fsub(bb, d)
    elif op == "mul":
        re = b.fsub(b.fmul(a, c), b.fmul(bb, d))
        im = b.fadd(b.fmul(a, d), b.fmul(bb, c))
    elif op == "div":
        den = b.fadd(b.fmul(c, c), b.fmul(d, d))
        re = b.fdiv(b.fadd(b.fmul(a, c), b.fmul(bb, d)), den)
        im = b.fdiv(b.fsub(b.fmul(bb, c), b.fmul(a, d)), den)
    else:
        raise NotSupported(f"operator '{op}' on complex numbers is not supported inside @jit")
    out = b.insert_value(ir.Constant(ll(t), ir.Undefined), re, 0)
    return b.insert_value(out, im, 1)


class NotSupported(Exception):
    """A construct the code generator cannot emit (turned into a JitError with the line)."""


def compare(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, t: T.ScalarType) -> ir.Value:
    sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[op]
    if t.is_complex:
        re = b.fcmp_ordered("==", b.extract_value(x, 0), b.extract_value(y, 0))
        im = b.fcmp_ordered("==", b.extract_value(x, 1), b.extract_value(y, 1))
        eq = b.and_(re, im)
        return eq if op == "eq" else b.not_(eq)
    if t.is_float:
        return b.fcmp_unordered(sym, x, y) if op == "ne" else b.fcmp_ordered(sym, x, y)
    if t.is_bool:
        return b.icmp_unsigned(sym, x, y)
    return b.icmp_signed(sym, x, y)


def unop(b: ir.IRBuilder, op: str, x: ir.Value, t: T.ScalarType) -> ir.Value:
    if op == "not":
        return b.not_(x)
    if op == "invert":
        return b.not_(x)
    if op == "neg":
        if t.is_complex:
            out = b.insert_value(ir.Constant(ll(t), ir.Undefined), b.fneg(b.extract_value(x, 0)), 0)
            return b.insert_value(out, b.fneg(b.extract_value(x, 1)), 1)
        return b.fneg(x) if t.is_float else b.neg(x)
    raise AssertionError(op)


_INTRINSIC = {"sqrt": "llvm.sqrt", "exp": "llvm.exp", "log": "llvm.log", "sin": "llvm.sin",
              "cos": "llvm.cos", "floor": "llvm.floor", "ceil": "llvm.ceil", "log10": "llvm.log10",
              "exp2": "llvm.exp2", "log2": "llvm.log2", "round": "llvm.roundeven"}
_LIBM = {"tan": "tan", "tanh": "tanh", "arctan": "atan", "arcsin": "asin", "arccos": "acos",
         "sinh": "sinh", "cosh": "cosh"}


def math1(b: ir.IRBuilder, fn: str, x: ir.Value, src: T.ScalarType) -> ir.Value:
    """Element-wise one-argument math; ``src`` is the operand's type."""
    if fn == "abs":
        if src.is_complex:
            re, im = b.extract_value(x, 0), b.extract_value(x, 1)
            return intrinsic(b, "llvm.sqrt", [b.fadd(b.fmul(re, re), b.fmul(im, im))])
        if src.is_float:
            return intrinsic(b, "llvm.fabs", [x])
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
    if fn in ("real", "imag"):
        return b.extract_value(x, 0 if fn == "real" else 1)
    if fn in _INTRINSIC:
        return intrinsic(b, _INTRINSIC[fn], [x])
    return libm(b, _LIBM[fn], [x])
