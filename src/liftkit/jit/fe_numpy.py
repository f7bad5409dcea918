"""Front end, NumPy calls: allocation, element-wise math, reductions and ``dot``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from . import types as T
from . import vrir as V
from .fe_expr import _ALLOC, _DTYPE_NAMES, UNARY_MATH, Ref, cast, elem, is_array

if TYPE_CHECKING:
    from .fe_expr import ExprLowerer


def _dtype(lw: "ExprLowerer", node: ast.expr | None, default: T.ScalarType) -> T.ScalarType:
    if node is None:
        return default
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value in _DTYPE_NAMES:
            return _DTYPE_NAMES[node.value]
        raise lw.terr(f"dtype '{node.value}' is not supported inside @jit")
    if isinstance(node, ast.Name) and node.id in ("float", "int", "bool", "complex") and \
            node.id not in lw.vars:
        return {"float": T.FLOAT64, "int": T.INT64, "bool": T.BOOL,
                "complex": T.COMPLEX128}[node.id]
    v = lw.value(node)
    if isinstance(v, Ref) and v.kind == "dtype":
        return v.value
    raise lw.terr("dtype must be a NumPy scalar type such as np.float64")


def _shape(lw: "ExprLowerer", node: ast.expr) -> tuple[V.Expr, ...]:
    v = lw.expr(node)
    items = v.items if isinstance(v, V.TupleExpr) else (
        tuple(V.TupleGet(v, k, t) for k, t in enumerate(v.type.items))
        if isinstance(v.type, T.TupleType) else (v,))
    for i in items:
        if not (isinstance(i.type, T.ScalarType) and i.type.is_int):
            raise lw.terr(f"array dimensions must be integers, got {i.type}")
    return tuple(cast(i, T.INT64) for i in items)


def _kw(lw: "ExprLowerer", kw: dict, allowed: tuple[str, ...], fn: str) -> None:
    for k in kw:
        if k not in allowed:
            raise lw.err(f"np.{fn}(): keyword '{k}' is not supported inside @jit")


def numpy_call(lw: "ExprLowerer", name: str, args: list[ast.expr], kw: dict) -> V.Expr:
    if name in _ALLOC or name == "full":
        _kw(lw, kw, ("dtype", "shape"), name)
        nargs = 2 if name == "full" else 1
        if len(args) != nargs:
            raise lw.err(f"np.{name}() takes {nargs} positional argument(s) inside @jit")
        dims = _shape(lw, args[0])
        if name == "full":
            fill = lw.expr(args[1])
            if not isinstance(fill.type, T.ScalarType):
                raise lw.terr("np.full() fill value must be a scalar")
            dt = _dtype(lw, kw.get("dtype"), fill.type if not fill.type.is_bool else T.BOOL)
            return V.LibCall("full", dims + (cast(fill, dt),), -1, T.ArrayType(dt, len(dims), "C"))
        dt = _dtype(lw, kw.get("dtype"), T.FLOAT64)
        return V.LibCall(name, dims, -1, T.ArrayType(dt, len(dims), "C"))
    if name in ("zeros_like", "ones_like", "empty_like"):
        _kw(lw, kw, ("dtype",), name)
        a = lw.expr(args[0]) if len(args) == 1 else None
        if a is None or not is_array(a):
            raise lw.err(f"np.{name}() takes one array inside @jit")
        dt = _dtype(lw, kw.get("dtype"), a.type.elem)  # type: ignore[union-attr]
        dims = tuple(V.Dim(a, k) for k in range(a.type.ndim))  # type: ignore[union-attr]
        return V.LibCall(name[:-5], dims, -1, T.ArrayType(dt, len(dims), "C"))
    if name == "arange":
        _kw(lw, kw, ("dtype",), name)
        vals = [lw.expr(a) for a in args]
        if not 1 <= len(vals) <= 3 or any(not isinstance(v.type, T.ScalarType) for v in vals):
            raise lw.err("np.arange() takes 1 to 3 scalar arguments")
        t = vals[0].type
        for v in vals[1:]:
            t = T.promote(t, v.type)  # type: ignore[arg-type]
        if t.is_bool:  # type: ignore[union-attr]
            t = T.INT64
        dt = _dtype(lw, kw.get("dtype"), t)  # type: ignore[arg-type]
        if len(vals) == 1:
            vals = [V.Const(0, T.INT64)] + vals
        if len(vals) == 2:
            vals.append(V.Const(1, T.INT64))
        if isinstance(vals[2], V.Const) and vals[2].value == 0:
            raise ZeroDivisionError(f"line {lw.line}: np.arange() step is zero")
        tt = T.FLOAT64 if not dt.is_int and not dt.is_bool else T.INT64
        return V.LibCall("arange", tuple(cast(v, tt) for v in vals), -1, T.ArrayType(dt, 1, "C"))
    if name in ("copy", "ascontiguousarray", "array"):
        _kw(lw, kw, (), name)
        a = lw.expr(args[0]) if len(args) == 1 else None
        if a is None or not is_array(a):
            raise lw.err(f"np.{name}() takes one array inside @jit")
        return V.LibCall("copy", (a,), -1, T.ArrayType(a.type.elem, a.type.ndim, "C"))  # type: ignore[union-attr]
    if name in UNARY_MATH:
        _kw(lw, kw, (), name)
        if len(args) != 1:
            raise lw.err(f"np.{name}() takes one argument")
        return lw.math_unary(name, lw.expr(args[0]))
    if name in ("minimum", "maximum"):
        _kw(lw, kw, (), name)
        if len(args) != 2:
            raise lw.err(f"np.{name}() takes two arguments")
        return lw.math_binary(name, lw.expr(args[0]), lw.expr(args[1]))
    if name == "where":
        _kw(lw, kw, (), name)
        if len(args) != 3:
            raise lw.err("np.where() takes three arguments inside @jit (condition, x, y)")
        c, a, b = (lw.expr(x) for x in args)
        if not elem(c.type).is_bool:
            raise lw.terr("np.where() condition must be boolean")
        t = lw.promote_operands(a, b)
        a, b = cast(a, t), cast(b, t)
        nds = [x.type.ndim for x in (c, a, b) if is_array(x)]  # type: ignore[union-attr]
        if not nds:
            return V.Select(c, a, b, t)
        return V.LibCall("where", (c, a, b), -1, T.ArrayType(t, max(nds), "C"))
    if name in ("sum", "min", "max", "mean", "prod"):
        if len(args) != 1:
            raise lw.err(f"np.{name}() takes one array (and axis=) inside @jit")
        return reduction(lw, name, lw.expr(args[0]), kw)
    if name in ("dot", "matmul"):
        _kw(lw, kw, (), name)
        if len(args) != 2:
            raise lw.err(f"np.{name}() takes two arguments")
        return dot(lw, lw.expr(args[0]), lw.expr(args[1]))
    if name == "power":
        return lw.binop("pow", lw.expr(args[0]), lw.expr(args[1]))
    raise lw.err(f"np.{name}() is not supported inside @jit")


def reduction(lw: "ExprLowerer", fn: str, a: V.Expr, kw: dict) -> V.Expr:
    _kw(lw, kw, ("axis",), fn)
    if not is_array(a):
        if fn == "mean":
            return cast(a, T.float_of(a.type))  # type: ignore[arg-type]
        return a
    at_ = a.type
    assert isinstance(at_, T.ArrayType)
    t = at_.elem
    if fn in ("sum", "prod") and (t.is_bool or t.is_int):
        t = T.INT64
    if fn == "mean":
        t = T.float_of(T.INT64 if t.is_bool else t)
    if fn in ("min", "max") and t.is_complex:
        raise lw.terr(f"np.{fn}() of complex numbers is not supported inside @jit")
    axis = -1
    if "axis" in kw:
        av = lw.expr(kw["axis"])
        if not isinstance(av, V.Const) or not isinstance(av.value, int) or isinstance(av.value, bool):
            raise lw.err(f"{fn}(): axis must be an integer constant inside @jit")
        axis = av.value + at_.ndim if av.value < 0 else av.value
        if not 0 <= axis < at_.ndim:
            raise lw.err(f"{fn}(): axis {av.value} is out of bounds for array of "
                         f"dimension {at_.ndim}")
        if at_.ndim == 1:
            axis = -1
    rt: T.Type = t if axis == -1 else T.ArrayType(t, at_.ndim - 1, "C")
    return V.LibCall(fn, (a,), axis, rt)


def dot(lw: "ExprLowerer", a: V.Expr, b: V.Expr) -> V.Expr:
    for x in (a, b):
        if not is_array(x) or x.type.ndim not in (1, 2):  # type: ignore[union-attr]
            raise lw.terr(f"np.dot()/@ needs 1-d or 2-d arrays inside @jit, got {x.type}")
    t = T.promote(a.type.elem, b.type.elem)  # type: ignore[union-attr]
    if t.is_bool:
        t = T.INT64
    a, b = cast(a, t), cast(b, t)
    na, nb = a.type.ndim, b.type.ndim  # type: ignore[union-attr]
    nd = {(1, 1): 0, (2, 1): 1, (1, 2): 1, (2, 2): 2}[(na, nb)]
    return V.LibCall("dot", (a, b), -1, t if nd == 0 else T.ArrayType(t, nd, "C"))
