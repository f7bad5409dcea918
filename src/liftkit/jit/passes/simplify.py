"""Simplification (§5.2): constant folding of integer/boolean scalar operators, algebraic
identities (x+0, x*1, x-0) and removal of branches whose condition is a constant."""

from __future__ import annotations

import dataclasses

from .. import types as T
from .. import vrir as V
from .walk import rewrite

_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _expr(x: object) -> object:
    if isinstance(x, V.BinOp) and isinstance(x.type, T.ScalarType) and x.type.is_int:
        l, r = x.left, x.right
        if isinstance(l, V.Const) and isinstance(r, V.Const) and x.op in _FOLD:
            v = _FOLD[x.op](int(l.value), int(r.value))
            if -2**63 <= v < 2**63:
                return V.Const(v, x.type)
        if x.op == "floordiv" and isinstance(l, V.Const) and isinstance(r, V.Const) and r.value:
            return V.Const(int(l.value) // int(r.value), x.type)
        if x.op in ("add", "sub") and isinstance(r, V.Const) and r.value == 0:
            return l
        if x.op == "add" and isinstance(l, V.Const) and l.value == 0:
            return r
        if x.op == "mul" and isinstance(r, V.Const) and r.value == 1:
            return l
        if x.op == "mul" and isinstance(l, V.Const) and l.value == 1:
            return r
    if isinstance(x, V.Compare) and isinstance(x.left, V.Const) and isinstance(x.right, V.Const) \
            and x.type == T.BOOL and not x.left.type.is_complex:  # type: ignore[union-attr]
        return V.Const(bool(_CMP[x.op](x.left.value, x.right.value)), T.BOOL)
    if isinstance(x, V.UnOp) and x.op == "not" and isinstance(x.operand, V.Const):
        return V.Const(not x.operand.value, T.BOOL)
    if isinstance(x, V.Logical) and isinstance(x.left, V.Const):
        if x.op == "and":
            return x.right if x.left.value else V.Const(False, T.BOOL)
        return V.Const(True, T.BOOL) if x.left.value else x.right
    if isinstance(x, V.LibCall) and x.fn in ("minimum", "maximum") and \
            all(isinstance(a, V.Const) for a in x.args) and isinstance(x.type, T.ScalarType) \
            and x.type.is_int:
        vals = [int(a.value) for a in x.args]  # type: ignore[union-attr]
        return V.Const(min(vals) if x.fn == "minimum" else max(vals), x.type)
    return x


def _body(stmts: tuple) -> tuple:
    out: list = []
    for s in stmts:
        if isinstance(s, V.If) and isinstance(s.cond, V.Const):
            out.extend(_body(s.then if s.cond.value else s.orelse))
            continue
        if isinstance(s, (V.If,)):
            s = dataclasses.replace(s, then=_body(s.then), orelse=_body(s.orelse))
        elif isinstance(s, V.GpuSection):
            s = dataclasses.replace(s, body=_body(s.body))
        elif isinstance(s, (V.For, V.While, V.ParFor)):
            if isinstance(s, V.While) and isinstance(s.cond, V.Const) and not s.cond.value:
                continue
            s = dataclasses.replace(s, body=_body(s.body))
        out.append(s)
        if isinstance(s, (V.Return, V.Break, V.Continue, V.Raise)):
            break  # the rest of the block is unreachable
    return tuple(out)


def simplify(m: V.Module) -> V.Module:
    fns = []
    for f in m.functions:
        body = rewrite(f.body, _expr)
        fns.append(dataclasses.replace(f, body=_body(body)))  # type: ignore[arg-type]
    return dataclasses.replace(m, functions=tuple(fns))
