"""Inlining (§5.3): a call of a module function whose only return is its last statement is
replaced by the callee's body (variables renamed apart) assigning the result to a temporary.
Calls in conditionally evaluated positions (right of and/or, conditional expressions, while
conditions) stay calls; LLVM may still inline them."""

from __future__ import annotations

import dataclasses
import itertools

from .. import types as T
from .. import vrir as V
from .walk import nodes, rewrite


def _inlinable(f: V.Function) -> bool:
    rets = [n for n in nodes(f.body) if isinstance(n, V.Return)]
    if not rets:
        return True
    return len(rets) == 1 and f.body and f.body[-1] is rets[0]


class _Inliner:
    def __init__(self, m: V.Module, report) -> None:  # noqa: ANN001
        self.fns = {f.name: f for f in m.functions}
        self.counter = itertools.count()
        self.report = report

    def function(self, f: V.Function) -> V.Function:
        self.syms = dict(f.symtab())
        body = self.block(f.body)
        syms = tuple(V.Sym(n, t) for n, t in self.syms.items())
        return dataclasses.replace(f, body=body, symbols=syms)

    def block(self, stmts: tuple) -> tuple:
        out: list = []
        for s in stmts:
            out.extend(self.stmt(s))
        return tuple(out)

    def stmt(self, s: V.Stmt) -> list:
        pre: list = []
        if isinstance(s, V.Assign):
            s = dataclasses.replace(s, target=self.expr(s.target, pre), value=self.expr(s.value, pre))
        elif isinstance(s, V.ExprStmt):
            if isinstance(s.value, V.Call) and s.value.type == T.VOID and self._ok(s.value):
                self.expr(s.value, pre)
                return pre
            s = dataclasses.replace(s, value=self.expr(s.value, pre))
        elif isinstance(s, V.Return) and s.value is not None:
            s = dataclasses.replace(s, value=self.expr(s.value, pre))
        elif isinstance(s, V.If):
            s = dataclasses.replace(s, cond=self.expr(s.cond, pre), then=self.block(s.then),
                                    orelse=self.block(s.orelse))
        elif isinstance(s, V.For):
            s = dataclasses.replace(s, start=self.expr(s.start, pre), stop=self.expr(s.stop, pre),
                                    step=self.expr(s.step, pre), body=self.block(s.body))
        elif isinstance(s, V.While):
            s = dataclasses.replace(s, body=self.block(s.body))
        elif isinstance(s, (V.ParFor, V.GpuSection)):
            s = dataclasses.replace(s, body=self.block(s.body))
        return pre + [s]

    def _ok(self, c: V.Call) -> bool:
        return c.fn in self.fns and _inlinable(self.fns[c.fn])

    def expr(self, e: object, pre: list) -> object:
        if isinstance(e, (V.Logical, V.Select)):
            return e  # conditionally evaluated operands keep their calls
        if isinstance(e, V.Call):
            args = tuple(self.expr(a, pre) for a in e.args)
            if not self._ok(e):
                return dataclasses.replace(e, args=args)
            return self.inline(self.fns[e.fn], args, pre)
        if isinstance(e, tuple):
            return tuple(self.expr(i, pre) for i in e)
        if dataclasses.is_dataclass(e) and isinstance(e, V.NODE_CLASSES):
            changes = {}
            for f in dataclasses.fields(e):
                if f.name == "type":
                    continue
                v = getattr(e, f.name)
                nv = self.expr(v, pre)
                if nv is not v:
                    changes[f.name] = nv
            return dataclasses.replace(e, **changes) if changes else e
        return e

    def inline(self, callee: V.Function, args: tuple, pre: list) -> V.Expr:
        self.report.inlined += 1
        k = next(self.counter)
        ren = {s.name: f"{callee.name}${k}${s.name}" for s in callee.symbols}
        for s in callee.symbols:
            self.syms[ren[s.name]] = s.type

        def rename(x: object) -> object:
            if isinstance(x, V.Name):
                return V.Name(ren[x.name], x.type)
            if isinstance(x, V.For):
                return dataclasses.replace(x, var=ren[x.var])
            if isinstance(x, V.ParFor):
                return dataclasses.replace(x, vars=tuple(ren[v] for v in x.vars),
                                           shared=tuple(ren.get(v, v) for v in x.shared))
            return x
        body = rewrite(callee.body, rename)
        line = callee.line
        for p, a in zip(callee.params, args):
            pre.append(V.Assign(V.Name(ren[p], callee.symtab()[p]), a, line))
        ret = None
        if body and isinstance(body[-1], V.Return):  # type: ignore[index]
            ret = body[-1].value  # type: ignore[index]
            body = body[:-1]  # type: ignore[index]
        pre.extend(self.block(body))  # type: ignore[arg-type]
        if ret is None:
            return V.Const(0, T.INT64)
        tmp = f"{callee.name}${k}$result"
        self.syms[tmp] = ret.type
        pre.append(V.Assign(V.Name(tmp, ret.type), ret, line))
        return V.Name(tmp, ret.type)


def inline_calls(m: V.Module, report) -> V.Module:  # noqa: ANN001
    inl = _Inliner(m, report)
    done: dict[str, V.Function] = {}
    for f in reversed(m.functions):  # callees come after their callers
        g = inl.function(f)
        done[f.name] = g
        inl.fns[f.name] = g
    entry = m.functions[0].name
    called = {n.fn for f in done.values() for n in nodes(f.body) if isinstance(n, V.Call)}
    keep = tuple(done[f.name] for f in m.functions if f.name == entry or f.name in called)
    return dataclasses.replace(m, functions=keep)
