"""Front end (PyRaptor, seed 003 §9.2): a Python function's ``ast`` to a typed VRIR module,
specialised to the argument types of one call. Types of locals are inferred by iterating the
lowering to a fixed point (a variable keeps one type: the union of what is assigned to it)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, Callable

from . import types as T
from . import vrir as V
from .errors import JitError
from .fe_expr import ExprLowerer, cast, construct_name

_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
        ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor",
        ast.BitXor: "bitxor", ast.LShift: "lshift", ast.RShift: "rshift", ast.MatMult: "matmul"}


def parse_function(fn: Callable) -> tuple[ast.FunctionDef, int, str]:
    """The function's ast, the offset from ast line numbers to file lines, and its source."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise JitError(f"@jit needs the source code of '{fn.__name__}' "
                       "(functions typed at the prompt or built by exec cannot be compiled)") from None
    src = textwrap.dedent("".join(lines))
    tree = ast.parse(src)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise JitError(f"@jit applies to plain functions, not {type(node).__name__}")
    return node, first - 1, src


class ModuleBuilder:
    """Collects the functions of one module: the entry point and the @jit functions it calls,
    each specialised to the types it is called with."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: dict[tuple[int, tuple], V.Function] = {}
        self.in_progress: set[tuple[int, tuple]] = set()
        self.names: dict[tuple[int, tuple], str] = {}
        self.order: list[tuple[int, tuple]] = []
        self.dispatchers: dict[str, Any] = {}

    def specialise(self, disp: Any, argtypes: tuple[T.Type, ...], line: int) -> tuple[str, T.Type]:
        key = (id(disp), argtypes)
        if key in self.in_progress:
            raise JitError(f"line {line}: recursive calls ('{disp.__name__}') are not "
                           "supported inside @jit")
        if key not in self.functions:
            self.in_progress.add(key)
            self.order.append(key)
            name = f"{disp.py_func.__name__}__{len(self.names)}" if self.names else disp.py_func.__name__
            self.names[key] = name
            self.dispatchers[name] = disp
            self.functions[key] = FunctionLowerer(disp.py_func, argtypes, self, name).lower()
            self.in_progress.discard(key)
        f = self.functions[key]
        return f.name, f.result

    def module(self) -> V.Module:
        return V.Module(self.name, True, True, tuple(self.functions[k] for k in self.order))


def lower_module(disp: Any, argtypes: tuple[T.Type, ...]) -> V.Module:
    """The VRIR module for calling ``disp`` with ``argtypes`` (first function: the entry)."""
    mb = ModuleBuilder(disp.py_func.__name__)
    mb.specialise(disp, argtypes, 0)
    return mb.module()


class FunctionLowerer(ExprLowerer):
    def __init__(self, fn: Callable, argtypes: tuple[T.Type, ...], mb: ModuleBuilder,
                 name: str) -> None:
        self.fn, self.mb, self.fname = fn, mb, name
        self.disp = mb.dispatchers.get(name)
        self.tree, self.line_offset, _ = parse_function(fn)
        self.line = self.tree.lineno + self.line_offset
        self.globals = dict(fn.__globals__)
        if fn.__closure__:
            for n, c in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.globals[n] = c.cell_contents
                except ValueError:
                    pass
        a = self.tree.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise JitError(f"line {self.line}: @jit functions take plain positional parameters "
                           "(no *args, **kwargs, keyword-only or default values)")
        self.params = tuple(p.arg for p in a.args)
        if len(self.params) != len(argtypes):
            raise TypeError(f"{fn.__name__}() takes {len(self.params)} arguments, "
                            f"{len(argtypes)} given")
        self.argtypes = argtypes
        self.assigned_names = {n.id for n in ast.walk(self.tree)
                               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.tmp = 0

    # -- driver
    def lower(self) -> V.Function:
        env: dict[str, T.Type] = dict(zip(self.params, self.argtypes))
        result: T.Type | None = None
        for _ in range(12):
            self.vars = dict(env)
            self.result, self.changed, self.tmp = result, False, 0
            self.loops: list[str] = []
            self.in_gpu = 0
            if getattr(self.disp, "target", "cpu") == "gpu":
                body = tuple(self.section(self.tree.body, self.line))
            else:
                body = self.block(self.tree.body)
            if not self.changed and self.result == result:
                break
            env = {k: v for k, v in self.vars.items()}
            result = self.result
        else:
            raise JitError(f"line {self.line}: the types of the variables of "
                           f"'{self.fn.__name__}' do not settle")
        body = tuple(self.fix_returns(body, self.result or T.VOID))
        syms = tuple(V.Sym(n, t) for n, t in self.vars.items())
        return V.Function(self.fname, self.params, syms, self.result or T.VOID, body,
                          self.tree.lineno + self.line_offset)

    def fix_returns(self, body: tuple, rt: T.Type) -> list:
        out = []
        for s in body:
            if isinstance(s, V.Return) and s.value is not None and s.value.type != rt:
                s = V.Return(self.coerce(s.value, rt, "return value"), s.line)
            elif isinstance(s, V.If):
                s = V.If(s.cond, tuple(self.fix_returns(s.then, rt)),
                         tuple(self.fix_returns(s.orelse, rt)), s.line)
            elif isinstance(s, (V.For, V.While)):
                s = s.__class__(**{**s.__dict__, "body": tuple(self.fix_returns(s.body, rt))})
            out.append(s)
        return out

    def coerce(self, e: V.Expr, t: T.Type, what: str) -> V.Expr:
        if e.type == t:
            return e
        if isinstance(t, T.ScalarType) and isinstance(e.type, T.ScalarType):
            return cast(e, t)
        if isinstance(t, T.ArrayType) and isinstance(e.type, T.ArrayType):
            return V.Cast(e, t)
        if isinstance(t, T.TupleType) and isinstance(e.type, T.TupleType):
            items = [V.TupleGet(e, k, it) if not isinstance(e, V.TupleExpr) else e.items[k]
                     for k, it in enumerate(e.type.items)]
            fixed = tuple(self.coerce(i, tt, what) for i, tt in zip(items, t.items))
            return V.TupleExpr(fixed, t)
        raise self.terr(f"{what} of type {e.type} where {t} is expected")

    def call_jitted(self, disp: Any, args: list[V.Expr]) -> V.Expr:
        line = self.line
        name, rt = self.mb.specialise(disp, tuple(a.type for a in args), line)
        self.line = line
        if rt == T.VOID:
            return V.Call(name, tuple(args), T.VOID)
        return V.Call(name, tuple(args), rt)

    def new_tmp(self) -> str:
        self.tmp += 1
        return f"$t{self.tmp}"

    def declare(self, name: str, t: T.Type) -> T.Type:
        """Record an assignment of type ``t`` to ``name``; the variable's (unified) type."""
        old = self.vars.get(name)
        if old is None:
            self.vars[name] = t
            self.changed = True
            return t
        u = T.unify(old, t)
        if u is None:
            raise self.terr(f"variable '{name}' holds a {old} and is assigned a {t}; "
                            "a variable keeps one type inside @jit")
        if u != old:
            self.vars[name] = u
            self.changed = True
        return u

    # -- statements
    def block(self, stmts: list[ast.stmt]) -> tuple[V.Stmt, ...]:
        out: list[V.Stmt] = []
        k = 0
        while k < len(stmts):
            s = stmts[k]
            k += 1
            self.line = s.lineno + self.line_offset
            mark = self._gpu_mark(s)
            if mark == "gpu_begin":
                end = next((j for j in range(k, len(stmts))
                            if self._gpu_mark(stmts[j]) in ("gpu_begin", "gpu_end")), None)
                if end is None or self._gpu_mark(stmts[end]) != "gpu_end":
                    raise self.err("gpu_begin() needs a gpu_end() later in the same block "
                                   "(sections do not nest)")
                out.extend(self.section(stmts[k:end], self.line))
                k = end + 1
                continue
            if mark == "gpu_end":
                raise self.err("gpu_end() without a gpu_begin() before it in the same block")
            meth = getattr(self, "s_" + type(s).__name__, None)
            if meth is None:
                raise self.err(f"{construct_name(s)} are not supported inside @jit")
            out.extend(meth(s))
        return tuple(out)

    def _gpu_mark(self, s: ast.stmt) -> str | None:
        """"gpu_begin"/"gpu_end" when ``s`` is such a call statement."""
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
            return None
        from .fe_expr import Ref
        try:
            f = self.value(s.value.func)
        except JitError:
            return None
        if isinstance(f, Ref) and f.kind == "marker" and f.value in ("gpu_begin", "gpu_end"):
            if s.value.args or s.value.keywords:
                raise self.err(f"{f.value}() takes no arguments")
            return f.value
        return None

    def section(self, stmts: list[ast.stmt], line: int) -> list:
        """An accelerated section (§4.5.4); one inside another is part of the outer one."""
        if "par" in self.loops:
            raise self.err("an accelerated section cannot be inside a parallel loop "
                           "(put the loop inside the section)")
        saved, self.loops = self.loops, self.loops + ["section"]
        self.in_gpu += 1
        try:
            body = self.block(stmts)
        finally:
            self.in_gpu -= 1
            self.loops = saved
        return list(body) if self.in_gpu else [V.GpuSection(body, line)]

    def s_With(self, s: ast.With) -> list:
        from .fe_expr import Ref
        line = self.line
        ce = s.items[0].context_expr if len(s.items) == 1 else None
        try:
            f = self.value(ce.func) if isinstance(ce, ast.Call) else None
        except JitError:
            f = None
        self.line = line
        if not (isinstance(f, Ref) and f.kind == "marker" and f.value == "gpu") or \
                s.items[0].optional_vars is not None or ce.args or ce.keywords:  # type: ignore[union-attr]
            raise self.err("with statements are not supported inside @jit "
                           "(except 'with gpu():', an accelerated section)")
        return self.section(s.body, line)

    def s_Pass(self, s: ast.Pass) -> list:
        return []

    def s_Expr(self, s: ast.Expr) -> list:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return []  # docstring
        v = self.expr(s.value)
        return [V.ExprStmt(v, self.line)]

    def s_Assign(self, s: ast.Assign) -> list:
        value = self.expr(s.value)
        line = self.line
        out: list = []
        if len(s.targets) > 1 and not isinstance(value, (V.Name, V.Const)):
            t = self.new_tmp()
            out += self.assign_name(t, value, line)
            value = V.Name(t, self.vars[t])
        for tgt in s.targets:
            out += self.assign(tgt, value, line)
        return out

    def s_AnnAssign(self, s: ast.AnnAssign) -> list:
        if s.value is None:
            return []
        return self.assign(s.target, self.expr(s.value), self.line)

    def assign(self, tgt: ast.expr, value: V.Expr, line: int) -> list:
        if isinstance(tgt, ast.Name):
            return self.assign_name(tgt.id, value, line)
        if isinstance(tgt, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in tgt.elts):
                raise self.err("starred assignment targets are not supported inside @jit")
            if not isinstance(value.type, T.TupleType):
                raise self.terr(f"cannot unpack a {value.type} into {len(tgt.elts)} names")
            n = len(value.type.items)
            if n != len(tgt.elts):
                raise ValueError(f"line {line}: cannot unpack {n} values into {len(tgt.elts)} names")
            out: list = []
            if isinstance(value, V.TupleExpr):
                simple = all(isinstance(i, (V.Const, V.Dim)) for i in value.items)
                items = list(value.items)
                if not simple:
                    tmps = []
                    for i in items:
                        t = self.new_tmp()
                        out += self.assign_name(t, i, line)
                        tmps.append(V.Name(t, self.vars[t]))
                    items = tmps
            else:
                if not isinstance(value, V.Name):
                    t = self.new_tmp()
                    out += self.assign_name(t, value, line)
                    value = V.Name(t, self.vars[t])
                items = [V.TupleGet(value, k, it) for k, it in enumerate(value.type.items)]
            for e, v in zip(tgt.elts, items):
                out += self.assign(e, v, line)
            return out
        if isinstance(tgt, ast.Subscript):
            ref = self.expr(tgt)
            if not isinstance(ref, V.Index):
                raise self.err("only array elements and slices can be assigned to")
            return [self.store(ref, value, line)]
        if isinstance(tgt, ast.Attribute):
            raise self.err("assigning to attributes is not supported inside @jit")
        raise self.err(f"assigning to {construct_name(tgt)} is not supported inside @jit")

    def store(self, ref: V.Index, value: V.Expr, line: int) -> V.Assign:
        if isinstance(ref.type, T.ScalarType):
            if not isinstance(value.type, T.ScalarType):
                raise self.terr(f"cannot store a {value.type} into one element of an array")
            if value.type.is_complex and not ref.type.is_complex:
                raise self.terr(f"cannot store a complex value into an array of {ref.type}")
            return V.Assign(ref, cast(value, ref.type), line)
        assert isinstance(ref.type, T.ArrayType)
        if not isinstance(value.type, (T.ScalarType, T.ArrayType)):
            raise self.terr(f"cannot store a {value.type} into an array slice")
        if isinstance(value.type, T.ArrayType) and value.type.ndim > ref.type.ndim:
            raise ValueError(f"line {line}: could not broadcast a {value.type.ndim}-d array "
                             f"into a {ref.type.ndim}-d slice")
        from .fe_expr import elem
        if elem(value.type).is_complex and not ref.type.elem.is_complex:
            raise self.terr(f"cannot store complex values into an array of {ref.type.elem}")
        return V.Assign(ref, cast(value, ref.type.elem), line)

    def assign_name(self, name: str, value: V.Expr, line: int) -> list:
        if name in self.params and isinstance(self.vars.get(name), T.ArrayType) and \
                not isinstance(value.type, T.ArrayType):
            raise self.terr(f"parameter '{name}' is an array and is assigned a {value.type}")
        if isinstance(value.type, T.VoidType):
            raise self.terr("a function without a return value is used as a value")
        if not isinstance(value.type, (T.ScalarType, T.ArrayType, T.TupleType)):
            raise self.terr(f"variables of type {value.type} are not supported")
        if isinstance(value.type, T.ArrayType) and any(self.loops_par()) and \
                not isinstance(value, (V.Name, V.Index)):
            raise self.err("arrays cannot be allocated inside a parallel loop")
        t = self.declare(name, value.type)
        return [V.Assign(V.Name(name, t), self.coerce(value, t, f"value for '{name}'"), line)]

    def loops_par(self) -> list[bool]:
        return [k == "par" for k in self.loops]

    def s_AugAssign(self, s: ast.AugAssign) -> list:
        op = _AUG.get(type(s.op))
        if op is None:
            raise self.err(f"augmented operator {type(s.op).__name__} is not supported")
        rhs = self.expr(s.value)
        line = self.line
        if isinstance(s.target, ast.Name):
            cur = self.expr(s.target)
            new = self.binop(op, cur, rhs)
            self.line = line
            if isinstance(cur.type, T.ArrayType):
                if op == "matmul":
                    raise self.err("in-place matrix multiplication (@=) is not supported")
                whole = V.Index(cur, (), (), T.ArrayType(cur.type.elem, cur.type.ndim, cur.type.layout))
                return [self._inplace(whole, new, line)]
            return self.assign_name(s.target.id, new, line)
        if isinstance(s.target, ast.Subscript):
            ref = self.expr(s.target)
            if not isinstance(ref, V.Index):
                raise self.err("only array elements and slices can be assigned to")
            new = self.binop(op, ref, rhs)
            self.line = line
            if isinstance(ref.type, T.ArrayType):
                return [self._inplace(ref, new, line)]
            if isinstance(new.type, T.ScalarType) and new.type.is_complex and not ref.type.is_complex:
                raise self.terr(f"cannot store a complex value into an array of {ref.type}")
            return [V.Assign(ref, cast(new, ref.type), line)]  # type: ignore[arg-type]
        raise self.err("augmented assignment to this target is not supported inside @jit")

    def _inplace(self, ref: V.Index, new: V.Expr, line: int) -> V.Assign:
        from .fe_expr import elem
        te, tn = ref.type.elem, elem(new.type)  # type: ignore[union-attr]
        if (tn.is_float and (te.is_int or te.is_bool)) or (tn.is_complex and not te.is_complex):
            raise self.terr(f"in-place operation would store {tn} values into an array of {te} "
                            "(NumPy refuses this cast)")
        return V.Assign(ref, cast(new, te), line)

    def s_If(self, s: ast.If) -> list:
        c = self.truth(self.expr(s.test))
        line = self.line
        return [V.If(c, self.block(s.body), self.block(s.orelse), line)]

    def s_While(self, s: ast.While) -> list:
        if s.orelse:
            raise self.err("while/else is not supported inside @jit")
        c = self.truth(self.expr(s.test))
        line = self.line
        self.loops.append("serial")
        body = self.block(s.body)
        self.loops.pop()
        return [V.While(c, body, line)]

    def s_Break(self, s: ast.Break) -> list:
        if self.loops and self.loops[-1] == "par":
            raise self.err("break is not allowed in a parallel loop")
        if self.loops and self.loops[-1] == "section":
            raise self.err("break cannot leave an accelerated section (gpu)")
        return [V.Break(self.line)]

    def s_Continue(self, s: ast.Continue) -> list:
        if self.loops and self.loops[-1] == "section":
            raise self.err("continue cannot leave an accelerated section (gpu)")
        return [V.Continue(self.line)]

    def s_Return(self, s: ast.Return) -> list:
        if "par" in self.loops:
            raise self.err("return is not allowed in a parallel loop")
        if s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None):
            if self.result not in (None, T.VOID):
                raise self.terr("this function returns a value on another path")
            self.result = T.VOID
            return [V.Return(None, self.line)]
        v = self.expr(s.value)
        if isinstance(v.type, T.VoidType):
            raise self.terr("returning the result of a function that returns nothing")
        if not isinstance(v.type, (T.ScalarType, T.ArrayType, T.TupleType)):
            raise self.terr(f"cannot return a {v.type}")
        if self.result is None:
            self.result = v.type
        elif self.result == T.VOID:
            raise self.terr("this function returns nothing on another path")
        else:
            u = T.unify(self.result, v.type)
            if u is None:
                raise self.terr(f"this function returns a {self.result} on another path and "
                                f"a {v.type} here")
            self.result = u
        return [V.Return(v, self.line)]

    def s_Assert(self, s: ast.Assert) -> list:
        c = self.truth(self.expr(s.test))
        msg = ""
        if s.msg is not None:
            if not (isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)):
                raise self.err("assert messages must be string constants inside @jit")
            msg = s.msg.value
        return [V.If(V.UnOp("not", c, T.BOOL), (V.Raise("AssertionError", msg, self.line),), (),
                     self.line)]

    def s_Raise(self, s: ast.Raise) -> list:
        exc = s.exc
        ok = {"ValueError", "IndexError", "ZeroDivisionError", "RuntimeError", "AssertionError",
              "TypeError", "ArithmeticError"}
        name, msg = None, ""
        if isinstance(exc, ast.Name):
            name = exc.id
        elif isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and not exc.keywords:
            name = exc.func.id
            if len(exc.args) > 1 or (exc.args and not (isinstance(exc.args[0], ast.Constant)
                                                       and isinstance(exc.args[0].value, str))):
                raise self.err("raised exceptions take one string constant inside @jit")
            msg = exc.args[0].value if exc.args else ""  # type: ignore[union-attr]
        if name not in ok or s.cause is not None:
            raise self.err("only 'raise ValueError(\"...\")' (or another builtin exception with "
                           "a constant message) is supported inside @jit")
        return [V.Raise(name, msg, self.line)]  # type: ignore[arg-type]

    def s_For(self, s: ast.For) -> list:
        from .fe_loops import lower_for
        return lower_for(self, s)
