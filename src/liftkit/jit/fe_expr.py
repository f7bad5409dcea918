"""Front end, expressions: Python ``ast`` expressions to typed VRIR (NumPy's typing rules)."""

from __future__ import annotations

import ast
import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import types as T
from . import vrir as V
from .errors import JitError, at, type_at

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand",
           ast.BitOr: "bitor", ast.BitXor: "bitxor", ast.LShift: "lshift", ast.RShift: "rshift",
           ast.MatMult: "matmul"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
UNARY_MATH = ("sqrt", "exp", "log", "sin", "cos", "tan", "abs", "floor", "ceil", "tanh",
              "arctan", "log10", "exp2", "log2", "arcsin", "arccos", "sinh", "cosh")
_MATH_ALIAS = {"absolute": "abs", "fabs": "abs", "atan": "arctan", "asin": "arcsin",
               "acos": "arccos", "amin": "min", "amax": "max"}
_ALLOC = ("zeros", "ones", "empty")
_REDUCE = ("sum", "min", "max", "mean", "prod")
_DTYPE_NAMES = {"float64": T.FLOAT64, "float32": T.FLOAT32, "int64": T.INT64, "int32": T.INT32,
                "bool_": T.BOOL, "bool": T.BOOL, "complex128": T.COMPLEX128,
                "complex64": T.COMPLEX64, "double": T.FLOAT64, "intp": T.INT64}


@dataclass(frozen=True)
class Ref:
    """A compile-time value named in the source: a module, a builtin or a jitted function."""
    kind: str       # "module", "builtin", "jit", "dtype", "marker"
    value: Any


def is_array(e: V.Expr) -> bool:
    return isinstance(e.type, T.ArrayType)


def elem(t: T.Type) -> T.ScalarType:
    return t.elem if isinstance(t, T.ArrayType) else t  # type: ignore[return-value]


def cast(e: V.Expr, t: T.ScalarType) -> V.Expr:
    """``e`` converted to scalar type ``t`` (element-wise for arrays)."""
    if isinstance(e.type, T.ArrayType):
        return e if e.type.elem == t else V.Cast(e, T.ArrayType(t, e.type.ndim, "C"))
    if e.type == t:
        return e
    if isinstance(e, V.Const):
        v = e.value
        if t.is_bool:
            v = bool(v)
        elif t.is_int:
            v = int(v)
        elif t.is_float:
            v = float(v.real) if isinstance(v, complex) else float(v)
        else:
            v = complex(v)
        return V.Const(v, t)
    return V.Cast(e, t)


class ExprLowerer:
    """Typed lowering of expressions; subclasses supply statements and variable types."""

    vars: dict[str, T.Type]
    globals: dict[str, Any]
    line: int

    # -- hooks the function lowerer provides
    def call_jitted(self, disp: Any, args: list[V.Expr]) -> V.Expr:
        """Overridden by the function lowerer (which owns the module being built)."""
        raise self.err(f"calling @jit function '{disp.__name__}' needs a function context")

    def err(self, msg: str) -> JitError:
        return at(self.line, msg)

    def terr(self, msg: str) -> JitError:
        return type_at(self.line, msg)

    # -- entry points
    def expr(self, node: ast.expr) -> V.Expr:
        v = self.value(node)
        if isinstance(v, Ref):
            raise self.err(f"{_describe_ref(v)} cannot be used as a value")
        return v

    def value(self, node: ast.expr) -> V.Expr | Ref:
        self.line = getattr(node, "lineno", self.line) + self.line_offset
        meth = getattr(self, "x_" + type(node).__name__, None)
        if meth is None:
            raise self.err(f"{construct_name(node)} are not supported inside @jit")
        return meth(node)

    # -- atoms
    def x_Constant(self, node: ast.Constant) -> V.Expr:
        v = node.value
        if isinstance(v, bool):
            return V.Const(v, T.BOOL)
        if isinstance(v, int):
            if not -2**63 <= v < 2**63:
                raise self.err(f"integer constant {v} does not fit in 64 bits")
            return V.Const(v, T.INT64)
        if isinstance(v, float):
            return V.Const(v, T.FLOAT64)
        if isinstance(v, complex):
            return V.Const(v, T.COMPLEX128)
        if isinstance(v, str):
            raise self.err("strings are not supported inside @jit")
        if v is None:
            raise self.err("None is not supported inside @jit (except as 'return')")
        raise self.err(f"constants of type {type(v).__name__} are not supported inside @jit")

    def x_Name(self, node: ast.Name) -> V.Expr | Ref:
        if node.id in self.vars:
            return V.Name(node.id, self.vars[node.id])
        if node.id in self.assigned_names:
            raise self.err(f"variable '{node.id}' is used before it is assigned")
        return self.resolve_global(node.id)

    def resolve_global(self, name: str) -> V.Expr | Ref:
        from .dispatch import JitFunction
        from .lang import PAR, Domain, gpu, gpu_begin, gpu_end, prange
        g = self.globals[name] if name in self.globals else getattr(builtins, name, _MISSING)
        if g is _MISSING:
            raise self.err(f"name '{name}' is not defined")
        if g is np:
            return Ref("module", "numpy")
        if g is math:
            return Ref("module", "math")
        if isinstance(g, JitFunction):
            return Ref("jit", g)
        if g is prange or g is PAR or g is Domain or g is gpu or g is gpu_begin or g is gpu_end:
            return Ref("marker", g.__name__)
        if getattr(g, "__name__", None) in ("liftkit", "liftkit.jit") and \
                type(g).__name__ == "module":
            return Ref("module", g.__name__)
        if g is range or g is len or g is abs or g is min or g is max or g is int or \
                g is float or g is bool or g is complex or g is round:
            return Ref("builtin", g.__name__)
        if isinstance(g, (bool, np.bool_)):
            return V.Const(bool(g), T.BOOL)
        if isinstance(g, (int, np.integer)) and not isinstance(g, bool):
            return V.Const(int(g), T.INT64)
        if isinstance(g, (float, np.floating)):
            return V.Const(float(g), T.FLOAT64)
        if isinstance(g, type) and issubclass(g, np.generic):
            s = T.scalar_of_dtype(np.dtype(g))
            if s is not None:
                return Ref("dtype", s)
        if callable(g):
            n = getattr(g, "__name__", name)
            raise self.err(f"calling '{n}' is not supported inside @jit "
                           "(only NumPy/math functions and other @jit functions)")
        raise self.err(f"global '{name}' of type {type(g).__name__} is not supported inside @jit")

    def x_Attribute(self, node: ast.Attribute) -> V.Expr | Ref:
        base = self.value(node.value)
        a = node.attr
        if isinstance(base, Ref):
            if base.kind == "module":
                mod = base.value
                if mod in ("liftkit", "liftkit.jit"):
                    if a in ("gpu", "gpu_begin", "gpu_end", "prange", "PAR", "Domain"):
                        return Ref("marker", a)
                    raise self.err(f"{mod}.{a} cannot be used inside @jit")
                if a in ("pi", "e", "inf", "nan"):
                    return V.Const(float(getattr(math, a)), T.FLOAT64)
                if mod == "numpy" and a in _DTYPE_NAMES:
                    return Ref("dtype", _DTYPE_NAMES[a])
                if mod == "numpy" and a in ("float_", "int_"):
                    return Ref("dtype", T.FLOAT64 if a == "float_" else T.INT64)
                return Ref("func", (mod, a))
            raise self.err(f"attribute '{a}' of {_describe_ref(base)} is not supported")
        if isinstance(base.type, T.ArrayType):
            nd = base.type.ndim
            if a == "shape":
                return V.TupleExpr(tuple(V.Dim(base, k) for k in range(nd)),
                                   T.TupleType((T.INT64,) * nd))
            if a == "ndim":
                return V.Const(nd, T.INT64)
            if a == "size":
                out: V.Expr = V.Const(1, T.INT64)
                for k in range(nd):
                    out = V.BinOp("mul", out, V.Dim(base, k), T.INT64) if k else V.Dim(base, 0)
                return out
            if a in ("copy", "sum", "min", "max", "mean", "prod"):
                return Ref("method", (base, a))
            raise self.err(f"array attribute '.{a}' is not supported inside @jit")
        if isinstance(base.type, T.ScalarType) and base.type.is_complex and a in ("real", "imag"):
            return V.LibCall(a, (base,), -1, T.FLOAT32 if base.type.name == "complex64" else T.FLOAT64)
        raise self.err(f"attribute '.{a}' of a {base.type} is not supported inside @jit")

    def x_Tuple(self, node: ast.Tuple) -> V.Expr:
        items = tuple(self.expr(e) for e in node.elts)
        return V.TupleExpr(items, T.TupleType(tuple(i.type for i in items)))

    # -- operators
    def x_BinOp(self, node: ast.BinOp) -> V.Expr:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err(f"operator {type(node.op).__name__} is not supported")
        return self.binop(op, self.expr(node.left), self.expr(node.right))

    def binop(self, op: str, a: V.Expr, b: V.Expr) -> V.Expr:
        if op == "matmul":
            return self.dot(a, b)
        for x in (a, b):
            if not isinstance(x.type, (T.ScalarType, T.ArrayType)):
                raise self.terr(f"operator '{_OPSYM[op]}' is not supported on {x.type}")
        ta, tb = elem(a.type), elem(b.type)
        t = self.promote_operands(a, b)
        if op in ("bitand", "bitor", "bitxor", "lshift", "rshift"):
            if not ((t.is_int or t.is_bool) and not (op.endswith("shift") and t.is_bool)):
                raise self.terr(f"operator '{_OPSYM[op]}' needs integers, got {ta} and {tb}")
        elif t.is_bool:
            t = T.INT64 if op != "div" else T.FLOAT64
        if op == "div":
            t = T.float_of(t)
        if op in ("floordiv", "mod") and t.is_complex:
            raise self.terr(f"operator '{_OPSYM[op]}' is not supported on complex numbers")
        a, b = cast(a, t), cast(b, t)
        if is_array(a) or is_array(b):
            nd = max(x.type.ndim for x in (a, b) if is_array(x))  # type: ignore[union-attr]
            return V.BinOp(op, a, b, T.ArrayType(t, nd, "C"))
        return V.BinOp(op, a, b, t)

    def promote_operands(self, a: V.Expr, b: V.Expr) -> T.ScalarType:
        """NumPy's promotion where Python literals are 'weak' (NEP 50)."""
        ta, tb = elem(a.type), elem(b.type)
        if isinstance(a, V.Const) and not isinstance(b, V.Const):
            return _weak(ta, tb)
        if isinstance(b, V.Const) and not isinstance(a, V.Const):
            return _weak(tb, ta)
        return T.promote(ta, tb)

    def x_UnaryOp(self, node: ast.UnaryOp) -> V.Expr:
        e = self.expr(node.operand)
        if not isinstance(e.type, (T.ScalarType, T.ArrayType)):
            raise self.terr(f"unary operator on {e.type} is not supported")
        t = elem(e.type)
        if isinstance(node.op, ast.Not):
            if is_array(e):
                raise self.terr("'not' of an array is ambiguous; use np.logical_not")
            return V.UnOp("not", self.truth(e), T.BOOL)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, ast.USub):
            if t.is_bool:
                e, t = cast(e, T.INT64), T.INT64
            if isinstance(e, V.Const):
                return V.Const(-e.value, t)
            return V.UnOp("neg", e, e.type)
        if isinstance(node.op, ast.Invert):
            if not (t.is_int or t.is_bool):
                raise self.terr(f"operator '~' needs integers or booleans, got {t}")
            return V.UnOp("invert", e, e.type)
        raise self.err(f"unary operator {type(node.op).__name__} is not supported")

    def truth(self, e: V.Expr) -> V.Expr:
        if isinstance(e.type, T.ScalarType):
            return e if e.type.is_bool else V.Compare("ne", e, cast(V.Const(0, T.INT64), e.type), T.BOOL)
        raise self.terr(f"the truth value of a {e.type} is ambiguous inside @jit")

    def x_BoolOp(self, node: ast.BoolOp) -> V.Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        vals = [self.expr(v) for v in node.values]
        for v in vals:
            if not (isinstance(v.type, T.ScalarType) and v.type.is_bool):
                raise self.terr(f"'{op}' needs booleans (comparisons), got {v.type}")
        out = vals[0]
        for v in vals[1:]:
            out = V.Logical(op, out, v, T.BOOL)
        return out

    def x_Compare(self, node: ast.Compare) -> V.Expr:
        left = self.expr(node.left)
        out: V.Expr | None = None
        for op, right_node in zip(node.ops, node.comparators):
            o = _CMPOPS.get(type(op))
            if o is None:
                raise self.err(f"comparison '{_CMP_SRC.get(type(op), type(op).__name__)}' "
                               "is not supported inside @jit")
            right = self.expr(right_node)
            c = self.compare(o, left, right)
            out = c if out is None else V.Logical("and", out, c, T.BOOL)
            left = right
        assert out is not None
        return out

    def compare(self, o: str, a: V.Expr, b: V.Expr) -> V.Expr:
        for x in (a, b):
            if not isinstance(x.type, (T.ScalarType, T.ArrayType)):
                raise self.terr(f"cannot compare {x.type}")
        t = self.promote_operands(a, b)
        if t.is_complex and o not in ("eq", "ne"):
            raise self.terr("complex numbers cannot be ordered")
        a, b = cast(a, t), cast(b, t)
        if is_array(a) or is_array(b):
            nd = max(x.type.ndim for x in (a, b) if is_array(x))  # type: ignore[union-attr]
            return V.Compare(o, a, b, T.ArrayType(T.BOOL, nd, "C"))
        return V.Compare(o, a, b, T.BOOL)

    def x_IfExp(self, node: ast.IfExp) -> V.Expr:
        c = self.truth(self.expr(node.test))
        a, b = self.expr(node.body), self.expr(node.orelse)
        if not (isinstance(a.type, T.ScalarType) and isinstance(b.type, T.ScalarType)):
            raise self.terr("conditional expressions must choose between scalars")
        t = self.promote_operands(a, b)
        return V.Select(c, cast(a, t), cast(b, t), t)

    # -- subscripts
    def x_Subscript(self, node: ast.Subscript) -> V.Expr:
        base = self.expr(node.value)
        sl = node.slice
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if isinstance(base.type, T.TupleType):
            if len(items) != 1 or isinstance(items[0], ast.Slice):
                raise self.err("tuples can only be indexed by one integer constant")
            k = self.expr(items[0])
            if not isinstance(k, V.Const) or not isinstance(k.value, int):
                raise self.err("tuples can only be indexed by integer constants")
            n = len(base.type.items)
            idx = k.value + n if k.value < 0 else k.value
            if not 0 <= idx < n:
                raise IndexError(f"line {self.line}: tuple index {k.value} out of range")
            if isinstance(base, V.TupleExpr):
                return base.items[idx]
            return V.TupleGet(base, idx, base.type.items[idx])
        if not isinstance(base.type, T.ArrayType):
            raise self.terr(f"a {base.type} cannot be indexed")
        return self.index(base, items)

    def index(self, base: V.Expr, items: list[ast.expr]) -> V.Expr:
        at_ = base.type
        assert isinstance(at_, T.ArrayType)
        if len(items) > at_.ndim:
            raise IndexError(f"line {self.line}: too many indices for array: array is "
                             f"{at_.ndim}-dimensional, but {len(items)} were indexed")
        idx: list[V.Expr | V.Slice] = []
        for it in items:
            if isinstance(it, ast.Slice):
                parts = []
                for p in (it.lower, it.upper, it.step):
                    if p is None:
                        parts.append(None)
                        continue
                    e = self.expr(p)
                    if not (isinstance(e.type, T.ScalarType) and (e.type.is_int)):
                        raise self.terr(f"slice bounds must be integers, got {e.type}")
                    parts.append(cast(e, T.INT64))
                if isinstance(parts[2], V.Const) and parts[2].value == 0:
                    raise ValueError(f"line {self.line}: slice step cannot be zero")
                idx.append(V.Slice(*parts))
            else:
                if isinstance(it, ast.Constant) and it.value is Ellipsis:
                    raise self.err("Ellipsis (...) indexing is not supported inside @jit")
                e = self.expr(it)
                if isinstance(e.type, T.ArrayType):
                    raise self.err("indexing with arrays (fancy indexing) is not supported "
                                   "inside @jit")
                if not (isinstance(e.type, T.ScalarType) and e.type.is_int):
                    raise self.terr(f"array indices must be integers, got {e.type}")
                idx.append(cast(e, T.INT64))
        nslices = sum(isinstance(i, V.Slice) for i in idx) + at_.ndim - len(idx)
        checks = tuple(V.FULL_CHECK for _ in idx)
        if nslices == 0:
            return V.Index(base, tuple(idx), checks, at_.elem)
        return V.Index(base, tuple(idx), checks, T.ArrayType(at_.elem, nslices,
                                                             view_layout(at_, idx)))

    # -- calls
    def x_Call(self, node: ast.Call) -> V.Expr:
        f = self.value(node.func)
        if not isinstance(f, Ref):
            raise self.err("only functions can be called inside @jit")
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.err("star-arguments (*args) are not supported inside @jit")
        kw = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.err("keyword-argument unpacking (**kwargs) is not supported inside @jit")
            kw[k.arg] = k.value
        if f.kind == "jit":
            if kw:
                raise self.err("keyword arguments to @jit functions are not supported")
            return self.call_jitted(f.value, [self.expr(a) for a in node.args])
        if f.kind == "builtin":
            return self.builtin_call(f.value, node.args, kw)
        if f.kind == "dtype":
            if len(node.args) != 1 or kw:
                raise self.err("a dtype conversion takes one argument")
            return self.convert(self.expr(node.args[0]), f.value)
        if f.kind == "method":
            base, m = f.value
            if node.args:
                raise self.err(f"positional arguments to .{m}() are not supported (use axis=)")
            if m == "copy":
                return V.LibCall("copy", (base,), -1, T.ArrayType(base.type.elem, base.type.ndim, "C"))
            return self.reduction(m, base, kw)
        if f.kind == "func":
            mod, name = f.value
            return self.library_call(mod, name, node.args, kw)
        if f.kind == "marker":
            if f.value in ("gpu_begin", "gpu_end"):
                raise self.err(f"{f.value}() is a statement of its own (it marks where an "
                               "accelerated section begins or ends)")
            if f.value == "gpu":
                raise self.err("gpu() marks an accelerated section: write 'with gpu():'")
            raise self.err(f"{f.value}() can only be used as the iterable of a for loop")
        raise self.err(f"{_describe_ref(f)} cannot be called")

    def convert(self, e: V.Expr, t: T.ScalarType) -> V.Expr:
        if not isinstance(e.type, (T.ScalarType, T.ArrayType)):
            raise self.terr(f"cannot convert {e.type} to {t}")
        if elem(e.type).is_complex and not t.is_complex:
            raise self.terr(f"cannot convert complex to {t}")
        if t.is_bool and not is_array(e):
            return self.truth(e)
        return cast(e, t)

    def builtin_call(self, name: str, args: list[ast.expr], kw: dict) -> V.Expr:
        if kw:
            raise self.err(f"keyword arguments to {name}() are not supported inside @jit")
        if name == "range":
            raise self.err("range() can only be used as the iterable of a for loop")
        vals = [self.expr(a) for a in args]
        if name == "len":
            if len(vals) != 1:
                raise self.err("len() takes one argument")
            v = vals[0]
            if isinstance(v.type, T.ArrayType):
                if v.type.ndim == 0:
                    raise self.terr("len() of a 0-d array")
                return V.Dim(v, 0)
            if isinstance(v.type, T.TupleType):
                return V.Const(len(v.type.items), T.INT64)
            raise self.terr(f"len() of a {v.type}")
        if name in ("int", "float", "bool", "complex"):
            if len(vals) != 1:
                raise self.err(f"{name}() takes one argument here")
            if is_array(vals[0]):
                raise self.terr(f"{name}() of an array")
            return self.convert(vals[0], {"int": T.INT64, "float": T.FLOAT64, "bool": T.BOOL,
                                          "complex": T.COMPLEX128}[name])
        if name == "abs":
            if len(vals) != 1:
                raise self.err("abs() takes one argument")
            return self.math_unary("abs", vals[0])
        if name == "round":
            if len(vals) != 1 or is_array(vals[0]):
                raise self.err("round() takes one scalar argument here")
            return cast(V.LibCall("round", (cast(vals[0], T.FLOAT64),), -1, T.FLOAT64), T.INT64)
        if name in ("min", "max"):
            if len(vals) == 1:
                if is_array(vals[0]):
                    return self.reduction(name, vals[0], {})
                raise self.err(f"{name}() of one scalar")
            if len(vals) < 2 or any(not isinstance(v.type, T.ScalarType) for v in vals):
                raise self.err(f"{name}() takes scalars (or one array) inside @jit")
            out = vals[0]
            for v in vals[1:]:
                out = self.math_binary("minimum" if name == "min" else "maximum", out, v)
            return out
        raise self.err(f"{name}() is not supported inside @jit")

    def math_unary(self, fn: str, e: V.Expr) -> V.Expr:
        if not isinstance(e.type, (T.ScalarType, T.ArrayType)):
            raise self.terr(f"{fn}() of a {e.type}")
        t = elem(e.type)
        if fn == "abs":
            rt = (T.FLOAT32 if t.name == "complex64" else T.FLOAT64) if t.is_complex else \
                (T.INT64 if t.is_bool else t)
            e = cast(e, T.INT64) if t.is_bool else e
        elif fn in ("floor", "ceil"):
            if t.is_complex:
                raise self.terr(f"{fn}() of a complex number")
            rt = T.float_of(t)
            e = cast(e, rt)
        else:
            if t.is_complex:
                raise self.terr(f"{fn}() of complex numbers is not supported inside @jit")
            rt = T.float_of(t)
            e = cast(e, rt)
        if is_array(e):
            return V.LibCall(fn, (e,), -1, T.ArrayType(rt, e.type.ndim, "C"))  # type: ignore[union-attr]
        return V.LibCall(fn, (e,), -1, rt)

    def math_binary(self, fn: str, a: V.Expr, b: V.Expr) -> V.Expr:
        t = self.promote_operands(a, b)
        if t.is_complex:
            raise self.terr(f"{fn}() of complex numbers is not supported inside @jit")
        a, b = cast(a, t), cast(b, t)
        if is_array(a) or is_array(b):
            nd = max(x.type.ndim for x in (a, b) if is_array(x))  # type: ignore[union-attr]
            return V.LibCall(fn, (a, b), -1, T.ArrayType(t, nd, "C"))
        return V.LibCall(fn, (a, b), -1, t)

    def library_call(self, mod: str, name: str, args: list[ast.expr], kw: dict) -> V.Expr:
        name = _MATH_ALIAS.get(name, name)
        if mod == "math":
            if name in ("floor", "ceil", "trunc") and len(args) == 1 and not kw:
                v = self.expr(args[0])
                if is_array(v):
                    raise self.terr(f"math.{name}() of an array")
                return cast(self.math_unary("floor" if name == "trunc" else name, v)
                            if name != "trunc" else v, T.INT64)
            if name in UNARY_MATH and len(args) == 1 and not kw:
                v = self.expr(args[0])
                if is_array(v):
                    raise self.terr(f"math.{name}() of an array (use np.{name})")
                return self.math_unary(name, v)
            if name == "isnan" and len(args) == 1:
                v = cast(self.expr(args[0]), T.FLOAT64)
                return V.Compare("ne", v, v, T.BOOL)
            raise self.err(f"math.{name}() is not supported inside @jit")
        from .fe_numpy import numpy_call
        return numpy_call(self, name, args, kw)

    def reduction(self, fn: str, a: V.Expr, kw: dict) -> V.Expr:
        from .fe_numpy import reduction
        return reduction(self, fn, a, kw)

    def dot(self, a: V.Expr, b: V.Expr) -> V.Expr:
        from .fe_numpy import dot
        return dot(self, a, b)

    # -- constructs that are errors everywhere
    def x_Lambda(self, node: ast.expr) -> V.Expr:
        raise self.err("lambda functions are not supported inside @jit")


_MISSING = object()
_OPSYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
          "pow": "**", "bitand": "&", "bitor": "|", "bitxor": "^", "lshift": "<<",
          "rshift": ">>", "matmul": "@"}
_CMP_SRC = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


def _weak(lit: T.ScalarType, other: T.ScalarType) -> T.ScalarType:
    """A literal of type ``lit`` combined with a value of type ``other``."""
    kind = {"b": 0, "i": 1, "f": 2, "c": 3}
    kl, ko = kind[lit.dtype.kind], kind[other.dtype.kind]
    if kl <= ko:
        return other
    if lit.is_float and other.is_int:
        return T.FLOAT64
    if lit.is_complex and other.is_float:
        return T.COMPLEX64 if other == T.FLOAT32 else T.COMPLEX128
    return T.promote(lit, other)


def view_layout(at_: T.ArrayType, idx: list) -> str:
    """Layout of ``A[idx]``: leading integers then full slices keep a C array C (and the
    mirror for F); anything else is a strided view."""
    full = [isinstance(i, V.Slice) and i.start is None and i.stop is None and i.step is None
            for i in idx] + [True] * (at_.ndim - len(idx))
    ints = [not isinstance(i, V.Slice) for i in idx] + [False] * (at_.ndim - len(idx))
    if at_.layout == "C":
        k = 0
        while k < len(ints) and ints[k]:
            k += 1
        if all(full[k:]):
            return "C"
        # a leading slice with step None followed by full dims is still C
        if k < len(idx) and isinstance(idx[k], V.Slice) and idx[k].step is None and all(full[k + 1:]):
            return "C"
    if at_.layout == "F" and not any(ints) and all(full[1:]) and \
            (not idx or idx[0].step is None):
        return "F"
    return "A"


def construct_name(node: ast.AST) -> str:
    """How an unsupported construct is named in errors (plural, as in 'X are not supported')."""
    return _CONSTRUCT_NAMES.get(type(node).__name__, f"'{type(node).__name__}' constructs")


_CONSTRUCT_NAMES = {
    "ListComp": "list comprehensions", "SetComp": "set comprehensions",
    "DictComp": "dict comprehensions", "GeneratorExp": "generator expressions",
    "Lambda": "lambda functions", "Dict": "dict literals", "Set": "set literals",
    "List": "list literals", "JoinedStr": "f-strings", "FormattedValue": "f-strings",
    "Yield": "yield expressions", "YieldFrom": "yield expressions", "Await": "await expressions",
    "NamedExpr": "assignment expressions (:=)", "Starred": "starred expressions",
    "Slice": "slices outside subscripts", "Try": "try statements",
    "TryStar": "try statements", "With": "with statements", "AsyncWith": "async with statements",
    "ClassDef": "class definitions", "FunctionDef": "nested function definitions",
    "AsyncFunctionDef": "nested function definitions", "Global": "global declarations",
    "Nonlocal": "nonlocal declarations", "Import": "import statements",
    "ImportFrom": "import statements", "Delete": "del statements",
    "AsyncFor": "async for loops", "Match": "match statements",
}


def _describe_ref(r: Ref) -> str:
    if r.kind == "module":
        return f"module '{r.value}'"
    if r.kind == "func":
        return f"'{r.value[0]}.{r.value[1]}'"
    if r.kind == "jit":
        return f"@jit function '{r.value.__name__}'"
    if r.kind == "dtype":
        return f"dtype {r.value}"
    if r.kind == "method":
        return f"method '.{r.value[1]}'"
    return f"'{r.value}'"
