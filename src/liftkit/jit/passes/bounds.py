"""Bounds-check elimination (§5.6 preliminary, §6.6 on affine loop nests).

Every index carries three checks (wrap negatives, lower bound, upper bound). Inside loops the
index expressions and loop bounds are translated to linear integer arithmetic over the loop
variables and loop-invariant symbols (array extents are symbols >= 0, or constants after
region specialisation; ``min``/``max`` become if-then-else terms) and the Z3 SMT solver is
asked whether an iteration can make the index negative or reach the extent. A check is
dropped when the answer is "no" (unsat). Z3 (``z3-solver`` on PyPI, maintained by Microsoft
Research) is used rather than isl because bounds such as ``range(max(j - r, 0), min(j + r + 1,
n))`` are not affine but are exact in Z3's linear integer arithmetic with if-then-else, and
symbolic extents need no parametric set machinery."""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import types as T
from .. import vrir as V
from .walk import assigned, nodes


def count_checks(m: V.Module) -> int:
    return sum(sum(c.negative + c.lower + c.upper for c in n.checks)
               for f in m.functions for n in nodes(f.body) if isinstance(n, V.Index))


class _Ctx:
    """Symbols and facts valid at one point of the program."""

    def __init__(self, z3: Any, solver: Any) -> None:
        self.z3, self.solver = z3, solver
        self.terms: dict[str, Any] = {}     # variable -> term (stable where visible)
        self.unstable: set[str] = set()
        self.symbols: dict[str, Any] = {}
        self.counter = 0

    def fresh(self, name: str) -> Any:
        self.counter += 1
        return self.z3.Int(f"{name}#{self.counter}")


class _BCE:
    def __init__(self, f: V.Function, report, shapes: dict) -> None:  # noqa: ANN001
        import z3
        self.shapes = shapes
        self.z3 = z3
        self.f = f
        self.report = report
        self.solver = z3.Solver()
        self.solver.set("timeout", 200)
        self.ctx = _Ctx(z3, self.solver)
        counts: dict[str, int] = {}
        for n in nodes(f.body):
            if isinstance(n, V.Assign) and isinstance(n.target, V.Name):
                counts[n.target.name] = counts.get(n.target.name, 0) + 1
            elif isinstance(n, V.For):
                counts[n.var] = counts.get(n.var, 0) + 2
            elif isinstance(n, V.ParFor):
                for v in n.vars:
                    counts[v] = counts.get(v, 0) + 2
        self.single = {k for k, v in counts.items() if v == 1}
        self.counts = counts

    # -- terms
    def term(self, e: V.Expr) -> Any:
        """A Z3 integer term for ``e`` or None when it is not analysable here."""
        z3, ctx = self.z3, self.ctx
        if isinstance(e, V.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return z3.IntVal(e.value)
        if isinstance(e, V.Cast) and isinstance(e.type, T.ScalarType) and e.type.is_int and \
                isinstance(e.operand.type, T.ScalarType) and e.operand.type.is_int:
            return self.term(e.operand)
        if isinstance(e, V.Name) and e.type == T.INT64:
            if e.name in ctx.unstable:
                return None
            if e.name in ctx.terms:
                return ctx.terms[e.name]
            if e.name in self.f.params and e.name not in self.counts:
                ctx.terms[e.name] = ctx.fresh(e.name)
                return ctx.terms[e.name]
            return None
        if isinstance(e, V.Dim) and isinstance(e.array, V.Name):
            a = e.array.name
            if a in ctx.unstable or self.counts.get(a, 0) > 1:
                return None
            if a in self.shapes:  # specialised: the extent is a known constant
                return z3.IntVal(int(self.shapes[a][e.axis]))
            key = f"{a}.shape[{e.axis}]"
            if key not in ctx.symbols:
                s = ctx.fresh(key)
                ctx.symbols[key] = s
                self.solver.add(s >= 0)
            return ctx.symbols[key]
        if isinstance(e, V.BinOp) and e.type == T.INT64:
            l, r = self.term(e.left), self.term(e.right)
            if l is None or r is None:
                return None
            if e.op == "add":
                return l + r
            if e.op == "sub":
                return l - r
            if e.op == "mul" and (z3.is_int_value(l) or z3.is_int_value(r)):
                return l * r
            if e.op == "floordiv" and z3.is_int_value(r) and r.as_long() > 0:
                return l / r  # Z3's integer division floors for positive divisors
            return None
        if isinstance(e, V.LibCall) and e.fn in ("minimum", "maximum") and e.type == T.INT64:
            a, b = (self.term(x) for x in e.args)
            if a is None or b is None:
                return None
            return z3.If(a < b, a, b) if e.fn == "minimum" else z3.If(a > b, a, b)
        return None

    def cond(self, e: V.Expr) -> Any:
        if isinstance(e, V.Compare) and e.left.type == T.INT64:
            l, r = self.term(e.left), self.term(e.right)
            if l is None or r is None:
                return None
            return {"lt": l < r, "le": l <= r, "gt": l > r, "ge": l >= r, "eq": l == r,
                    "ne": l != r}[e.op]
        if isinstance(e, V.Logical) and e.op == "and":
            a, b = self.cond(e.left), self.cond(e.right)
            if a is not None and b is not None:
                return self.z3.And(a, b)
            return a if a is not None else b
        return None

    def proven(self, fact: Any) -> bool:
        self.solver.push()
        self.solver.add(self.z3.Not(fact))
        r = self.solver.check()
        self.solver.pop()
        return r == self.z3.unsat

    # -- statements
    def block(self, stmts: tuple) -> tuple:
        return tuple(self.stmt(s) for s in stmts)

    def stmt(self, s: V.Stmt) -> V.Stmt:
        ctx = self.ctx
        if isinstance(s, V.Assign):
            s = dataclasses.replace(s, target=self.expr(s.target), value=self.expr(s.value))
            if isinstance(s.target, V.Name):
                n = s.target.name
                if n in self.single and n not in ctx.unstable:
                    t = self.term(s.value) if s.target.type == T.INT64 else None
                    if t is not None:
                        ctx.terms[n] = t
                    v = s.value
                    if isinstance(v, V.LibCall) and v.fn in ("zeros", "ones", "empty", "full"):
                        for k in range(s.target.type.ndim):  # type: ignore[union-attr]
                            ext, d = self.term(V.Dim(s.target, k)), self.term(v.args[k])
                            if ext is not None and d is not None:
                                self.solver.add(ext == d)
            return s
        if isinstance(s, (V.ExprStmt, V.Return)):
            v = getattr(s, "value", None)
            return dataclasses.replace(s, value=self.expr(v)) if v is not None else s
        if isinstance(s, V.If):
            c = self.cond(s.cond)
            cond = self.expr(s.cond)
            self.solver.push()
            if c is not None:
                self.solver.add(c)
            then = self.block(s.then)
            self.solver.pop()
            self.solver.push()
            if c is not None:
                self.solver.add(self.z3.Not(c))
            orelse = self.block(s.orelse)
            self.solver.pop()
            return dataclasses.replace(s, cond=cond, then=then, orelse=orelse)
        if isinstance(s, V.For):
            s = dataclasses.replace(s, start=self.expr(s.start), stop=self.expr(s.stop),
                                    step=self.expr(s.step))
            return self.loop(s, [(s.var, s.start, s.stop, s.step)], s.body)
        if isinstance(s, V.ParFor):
            s = dataclasses.replace(s, domain=self.expr(s.domain))
            d = s.domain
            dims = list(zip(s.vars, d.starts, d.stops, d.steps))
            return self.loop(s, dims, s.body)
        if isinstance(s, V.GpuSection):
            return dataclasses.replace(s, body=self.block(s.body))
        if isinstance(s, V.While):
            saved = set(ctx.unstable)
            ctx.unstable |= assigned(s.body)
            cond, body = self.expr(s.cond), self.block(s.body)
            ctx.unstable = saved
            return dataclasses.replace(s, cond=cond, body=body)
        return s

    def loop(self, s: Any, dims: list, body: tuple) -> Any:
        ctx = self.ctx
        bounds = [(v, self.term(a), self.term(b), c) for v, a, b, c in dims]
        saved_unstable, saved_terms = set(ctx.unstable), dict(ctx.terms)
        changed = assigned(body)
        rebound = {n.var for n in nodes(body) if isinstance(n, V.For)} | \
            {v for n in nodes(body) if isinstance(n, V.ParFor) for v in n.vars}
        ctx.unstable |= changed
        self.solver.push()
        for v, lo, hi, step in bounds:
            if v in rebound or _writes(body, v):
                ctx.unstable.add(v)  # the body changes it: no facts about it
                continue
            ctx.unstable.discard(v)
            iv = ctx.fresh(v)
            ctx.terms[v] = iv
            stepv = step.value if isinstance(step, V.Const) else None
            if lo is not None and hi is not None and stepv is not None and stepv > 0:
                self.solver.add(iv >= lo, iv < hi)
            elif lo is not None and hi is not None and stepv is not None and stepv < 0:
                self.solver.add(iv <= lo, iv > hi)
        new_body = self.block(body)
        self.solver.pop()
        ctx.unstable, ctx.terms = saved_unstable, saved_terms
        return dataclasses.replace(s, body=new_body)

    # -- expressions
    def expr(self, e: Any) -> Any:
        if isinstance(e, V.Index):
            arr = self.expr(e.array)
            idx = tuple(self.expr(i) if not isinstance(i, V.Slice) else i for i in e.indices)
            checks = []
            for k, (i, c) in enumerate(zip(idx, e.checks)):
                if isinstance(i, V.Slice) or not (c.negative or c.lower or c.upper):
                    checks.append(c)
                    continue
                self.report.checks_total += c.negative + c.lower + c.upper
                t = self.term(i)
                ext = self.term(V.Dim(arr, k)) if isinstance(arr, V.Name) else None
                nonneg = t is not None and self.proven(t >= 0)
                below = nonneg and ext is not None and self.proven(t < ext)
                nc = V.Check(negative=c.negative and not nonneg, lower=c.lower and not nonneg,
                             upper=c.upper and not below)
                self.report.checks_removed += (c.negative + c.lower + c.upper) - \
                    (nc.negative + nc.lower + nc.upper)
                checks.append(nc)
            return dataclasses.replace(e, array=arr, indices=idx, checks=tuple(checks))
        if isinstance(e, tuple):
            return tuple(self.expr(i) for i in e)
        if dataclasses.is_dataclass(e) and isinstance(e, V.NODE_CLASSES):
            changes = {}
            for f in dataclasses.fields(e):
                if f.name == "type":
                    continue
                v = getattr(e, f.name)
                nv = self.expr(v)
                if nv is not v:
                    changes[f.name] = nv
            return dataclasses.replace(e, **changes) if changes else e
        return e


def _writes(body: tuple, v: str) -> bool:
    return any(isinstance(n, V.Assign) and isinstance(n.target, V.Name) and n.target.name == v
               for n in nodes(body))


def eliminate_bounds_checks(m: V.Module, report, shapes: dict | None = None) -> V.Module:  # noqa: ANN001
    """``shapes``: extents of specialised array parameters of the entry function."""
    fns = []
    for k, f in enumerate(m.functions):
        b = _BCE(f, report, (shapes or {}) if k == 0 else {})
        fns.append(dataclasses.replace(f, body=b.block(f.body)))
    return dataclasses.replace(m, functions=tuple(fns))
