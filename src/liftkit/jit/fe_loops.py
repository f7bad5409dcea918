"""Front end, loops: ``for`` over ``range``, ``prange`` and ``PAR(Domain(...), shared=[...])``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from . import types as T
from . import vrir as V
from .errors import JitError
from .fe_expr import Ref, cast

if TYPE_CHECKING:
    from .frontend import FunctionLowerer

_I = T.INT64


def _int(lw: "FunctionLowerer", node: ast.expr, what: str) -> V.Expr:
    e = lw.expr(node)
    if not (isinstance(e.type, T.ScalarType) and (e.type.is_int or e.type.is_bool)):
        raise lw.terr(f"{what} must be an integer, got {e.type}")
    return cast(e, _I)


def _range_args(lw: "FunctionLowerer", call: ast.Call, fn: str) -> tuple[V.Expr, V.Expr, V.Expr]:
    if call.keywords:
        raise lw.err(f"{fn}() takes no keyword arguments")
    args = [_int(lw, a, f"{fn}() argument") for a in call.args]
    if not 1 <= len(args) <= 3:
        raise lw.err(f"{fn}() takes 1 to 3 arguments")
    if len(args) == 1:
        args = [V.Const(0, _I)] + args
    if len(args) == 2:
        args.append(V.Const(1, _I))
    if isinstance(args[2], V.Const) and args[2].value == 0:
        raise ValueError(f"line {lw.line}: {fn}() arg 3 must not be zero")
    return args[0], args[1], args[2]


def lower_for(lw: "FunctionLowerer", s: ast.For) -> list:
    line = lw.line
    if s.orelse:
        raise lw.err("for/else is not supported inside @jit")
    it = s.iter
    f = lw.value(it.func) if isinstance(it, ast.Call) else None
    kind = None
    if isinstance(f, Ref) and f.kind == "builtin" and f.value == "range":
        kind = "range"
    elif isinstance(f, Ref) and f.kind == "marker" and f.value in ("prange", "PAR"):
        kind = f.value
    if kind is None:
        what = "arrays" if not isinstance(it, ast.Call) and _is_array(lw, it) else "this iterable"
        raise lw.err(f"for loops over {what} are not supported inside @jit "
                     "(use range(), prange() or PAR(Domain(...)))")
    assert isinstance(it, ast.Call)
    if kind in ("range", "prange"):
        if not isinstance(s.target, ast.Name):
            raise lw.err(f"the target of a for loop over {kind}() must be one name")
        start, stop, step = _range_args(lw, it, kind)
        lw.line = line
        var = s.target.id
        lw.declare(var, _I)
        if lw.vars[var] != _I:
            raise lw.terr(f"loop variable '{var}' is also assigned a {lw.vars[var]}")
        par = kind == "prange" and "par" not in lw.loops
        lw.loops.append("par" if par else "serial")
        body = lw.block(s.body)
        lw.loops.pop()
        if par:
            inner = _nested_prange(lw, s, body, var)
            if inner is not None:  # perfectly nested pranges: one 2-d domain, both shared out
                _private_check(lw, inner.body, line)
                dom = V.DomainExpr((start, inner.start), (stop, inner.stop), (step, inner.step),
                                   T.DomainType(2))
                return [V.ParFor((var, inner.var), dom, _arrays(lw), inner.body, line)]
            _private_check(lw, body, line)
            dom = V.DomainExpr((start,), (stop,), (step,), T.DomainType(1))
            return [V.ParFor((var,), dom, _arrays(lw), body, line)]
        return [V.For(var, start, stop, step, body, line)]
    # PAR(Domain(m, n), shared=[A, B])
    if len(it.args) != 1:
        raise lw.err("PAR() takes a Domain(...) and shared=[...]")
    dnode = it.args[0]
    dref = lw.value(dnode.func) if isinstance(dnode, ast.Call) else None
    if not (isinstance(dref, Ref) and dref.kind == "marker" and dref.value == "Domain"):
        raise lw.err("PAR() iterates over a Domain(...) written in the loop header")
    starts, stops, steps = [], [], []
    for d in dnode.args:  # type: ignore[union-attr]
        if isinstance(d, ast.Tuple):
            fake = ast.Call(func=ast.Name("range", ast.Load()), args=d.elts, keywords=[])
            ast.copy_location(fake, d)
            a, b, c = _range_args(lw, fake, "Domain dimension")
        else:
            a, b, c = V.Const(0, _I), _int(lw, d, "Domain size"), V.Const(1, _I)
        starts.append(a)
        stops.append(b)
        steps.append(c)
    shared: list[str] = []
    for k in it.keywords:
        if k.arg != "shared" or not isinstance(k.value, (ast.List, ast.Tuple)):
            raise lw.err("PAR() takes shared=[name, ...] as its only keyword")
        for e in k.value.elts:
            if not isinstance(e, ast.Name) or e.id not in lw.vars:
                raise lw.err("shared= lists variables defined before the parallel loop")
            shared.append(e.id)
    n = len(starts)
    names = [s.target.id] if isinstance(s.target, ast.Name) else [
        e.id for e in getattr(s.target, "elts", []) if isinstance(e, ast.Name)]
    if len(names) != n or (n > 1 and not isinstance(s.target, ast.Tuple)):
        raise lw.err(f"a PAR loop over a {n}-d Domain needs {n} loop variable name(s)")
    for v in names:
        lw.declare(v, _I)
    lw.line = line
    par = "par" not in lw.loops
    lw.loops.append("par" if par else "serial")
    body = lw.block(s.body)
    lw.loops.pop()
    dom = V.DomainExpr(tuple(starts), tuple(stops), tuple(steps), T.DomainType(n))
    if par:
        _private_check(lw, body, line)
        return [V.ParFor(tuple(names), dom, tuple(shared), body, line)]
    # nested inside another parallel loop: serial nest
    out: tuple = body
    for k in reversed(range(n)):
        out = (V.For(names[k], starts[k], stops[k], steps[k], out, line),)
    return list(out)


def _nested_prange(lw: "FunctionLowerer", s: ast.For, body: list, var: str) -> V.For | None:
    """The inner loop of ``for i in prange(..): for j in prange(..): ...`` (nothing else in the
    outer body, inner bounds free of ``i``), lowered as a serial For; None otherwise."""
    from .passes.walk import nodes

    if len(s.body) != 1 or len(body) != 1 or not isinstance(body[0], V.For):
        return None
    it = s.body[0].iter if isinstance(s.body[0], ast.For) else None
    f = lw.value(it.func) if isinstance(it, ast.Call) else None
    if not (isinstance(f, Ref) and f.kind == "marker" and f.value == "prange"):
        return None
    inner = body[0]
    bounds = (inner.start, inner.stop, inner.step)
    if any(isinstance(n, V.Name) and n.name == var for n in nodes(bounds)):
        return None
    return inner


def _private_check(lw: "FunctionLowerer", body: tuple, line: int) -> None:
    """Scalars are private to a parallel iteration: one read before it is written in the
    iteration would carry a value between iterations (a reduction), which is refused."""
    from .passes.walk import nodes

    def reads(x: object) -> list[str]:
        return [n.name for n in nodes(x) if isinstance(n, V.Name)
                and isinstance(n.type, (T.ScalarType, T.TupleType))]
    written = {n.target.name for n in nodes(body) if isinstance(n, V.Assign)
               and isinstance(n.target, V.Name)}
    done: set[str] = set()

    def block(stmts: tuple) -> None:
        for st in stmts:
            if isinstance(st, V.Assign):
                for r in reads(st.value) + (reads(st.target) if isinstance(st.target, V.Index) else []):
                    bad(r, st.line)
                if isinstance(st.target, V.Name):
                    done.add(st.target.name)
            elif isinstance(st, (V.If, V.While)):
                for r in reads(st.cond):
                    bad(r, st.line)
                block(st.then if isinstance(st, V.If) else st.body)
                if isinstance(st, V.If):
                    block(st.orelse)
            elif isinstance(st, V.For):
                for r in reads((st.start, st.stop, st.step)):
                    bad(r, st.line)
                done.add(st.var)
                block(st.body)
            else:
                for r in reads(st):
                    bad(r, getattr(st, "line", line))

    def bad(name: str, at: int) -> None:
        if name in written and name not in done:
            raise JitError(f"line {at}: '{name}' is updated across iterations of the parallel "
                           f"loop of line {line} (reductions over prange/PAR are not supported; "
                           "use a serial loop or an array per iteration)")
    block(body)


def _arrays(lw: "FunctionLowerer") -> tuple[str, ...]:
    return tuple(n for n, t in lw.vars.items() if isinstance(t, T.ArrayType))


def _is_array(lw: "FunctionLowerer", node: ast.expr) -> bool:
    try:
        return isinstance(lw.expr(node).type, T.ArrayType)
    except Exception:
        return False
