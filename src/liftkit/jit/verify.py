"""The VRIR verifier: symbols declared once with one type, every name use matching its symbol,
operand and result types consistent, indices integers, break/continue only inside loops,
returns matching the function's result type, calls naming functions of the module."""

from __future__ import annotations

from . import types as T
from . import vrir as V


class VerifyError(ValueError):
    """Malformed VRIR (a bug in whatever produced it)."""


def verify(m: V.Module) -> None:
    sigs = {f.name: f for f in m.functions}
    if len(sigs) != len(m.functions):
        raise VerifyError("duplicate function names")
    for f in m.functions:
        _Function(f, sigs).run()


class _Function:
    def __init__(self, f: V.Function, sigs: dict) -> None:
        self.f, self.sigs = f, sigs
        names = [s.name for s in f.symbols]
        if len(set(names)) != len(names):
            raise VerifyError(f"{f.name}: a symbol is declared twice")
        self.sym = f.symtab()
        for p in f.params:
            if p not in self.sym:
                raise VerifyError(f"{f.name}: parameter {p} has no symbol")

    def fail(self, msg: str, node: object = None) -> None:
        line = getattr(node, "line", None)
        raise VerifyError(f"{self.f.name}{f' line {line}' if line else ''}: {msg}")

    def run(self) -> None:
        self.block(self.f.body, 0, False)

    def block(self, body: tuple, loops: int, par: bool) -> None:
        for s in body:
            if not isinstance(s, V.STMT_CLASSES):
                self.fail(f"{type(s).__name__} is not a statement")
            self.stmt(s, loops, par)

    def stmt(self, s: V.Stmt, loops: int, par: bool) -> None:
        if isinstance(s, V.Assign):
            self.expr(s.target)
            self.expr(s.value)
            tt, vt = s.target.type, s.value.type
            if isinstance(s.target, V.Name):
                if tt != vt and not (isinstance(tt, T.ArrayType) and isinstance(vt, T.ArrayType)
                                     and tt.elem == vt.elem and tt.ndim == vt.ndim):
                    self.fail(f"assigning a {vt} to {s.target.name}: {tt}", s)
            elif isinstance(tt, T.ScalarType):
                if vt != tt:
                    self.fail(f"storing a {vt} into an element of type {tt}", s)
            elif isinstance(tt, T.ArrayType):
                el = vt.elem if isinstance(vt, T.ArrayType) else vt
                if el != tt.elem:
                    self.fail(f"storing {el} values into a slice of {tt.elem}", s)
        elif isinstance(s, V.ExprStmt):
            self.expr(s.value)
        elif isinstance(s, V.GpuSection):
            self.block(s.body, 0, par)  # break/continue may not leave a section
        elif isinstance(s, V.If):
            self.cond(s.cond, s)
            self.block(s.then, loops, par)
            self.block(s.orelse, loops, par)
        elif isinstance(s, V.While):
            self.cond(s.cond, s)
            self.block(s.body, loops + 1, par)
        elif isinstance(s, V.For):
            for e in (s.start, s.stop, s.step):
                self.int_expr(e, s)
            if self.sym.get(s.var) != T.INT64:
                self.fail(f"loop variable {s.var} is not int64", s)
            self.block(s.body, loops + 1, par)
        elif isinstance(s, V.ParFor):
            d = s.domain
            if not (len(d.starts) == len(d.stops) == len(d.steps) == len(s.vars) == d.type.ndim):
                self.fail("parallel loop domain and variables disagree", s)
            for e in d.starts + d.stops + d.steps:
                self.int_expr(e, s)
            for v in s.vars:
                if self.sym.get(v) != T.INT64:
                    self.fail(f"parallel loop variable {v} is not int64", s)
            for v in s.shared:
                if v not in self.sym:
                    self.fail(f"shared variable {v} is not declared", s)
            self.block(s.body, 0, True)
        elif isinstance(s, (V.Break, V.Continue)):
            if loops == 0:
                self.fail(f"{type(s).__name__.lower()} outside a loop", s)
        elif isinstance(s, V.Return):
            if par:
                self.fail("return inside a parallel loop", s)
            if s.value is None:
                if self.f.result != T.VOID:
                    self.fail("return without a value in a function returning a value", s)
            else:
                self.expr(s.value)
                if s.value.type != self.f.result:
                    self.fail(f"returning a {s.value.type} from a function returning "
                              f"{self.f.result}", s)

    def cond(self, e: V.Expr, s: object) -> None:
        self.expr(e)
        if e.type != T.BOOL:
            self.fail(f"condition of type {e.type}", s)

    def int_expr(self, e: V.Expr, s: object) -> None:
        self.expr(e)
        if e.type != T.INT64:
            self.fail(f"loop bound of type {e.type}", s)

    def expr(self, e: object) -> None:
        if isinstance(e, V.Name):
            if self.sym.get(e.name) != e.type:
                self.fail(f"use of {e.name} as {e.type}, declared {self.sym.get(e.name)}")
            return
        if isinstance(e, V.Const):
            return
        if isinstance(e, V.Index):
            self.expr(e.array)
            at = e.array.type
            if not isinstance(at, T.ArrayType):
                self.fail(f"indexing a {at}")
            if len(e.indices) > at.ndim or len(e.checks) != len(e.indices):
                self.fail("index count and checks disagree with the array's rank")
            for i in e.indices:
                if isinstance(i, V.Slice):
                    for p in (i.start, i.stop, i.step):
                        if p is not None:
                            self.expr(p)
                else:
                    self.expr(i)
                    if i.type != T.INT64:
                        self.fail(f"index of type {i.type}")
            return
        if isinstance(e, V.Call):
            if e.fn not in self.sigs:
                self.fail(f"call of unknown function {e.fn}")
            callee = self.sigs[e.fn]
            if tuple(a.type for a in e.args) != tuple(callee.symtab()[p] for p in callee.params):
                self.fail(f"call of {e.fn} with mismatching argument types")
        if isinstance(e, V.BinOp) and isinstance(e.type, T.ScalarType):
            if e.left.type != e.type or e.right.type != e.type:
                self.fail(f"{e.op} of {e.left.type} and {e.right.type} typed {e.type}")
        if isinstance(e, V.Compare) and e.type != T.BOOL and not isinstance(e.type, T.ArrayType):
            self.fail("comparison not typed bool")
        if hasattr(e, "__dataclass_fields__"):
            for f in e.__dataclass_fields__:
                v = getattr(e, f)
                if isinstance(v, tuple):
                    for x in v:
                        if hasattr(x, "__dataclass_fields__") and not isinstance(x, (T.ScalarType,)):
                            self.expr(x)
                elif hasattr(v, "__dataclass_fields__") and f != "type":
                    self.expr(v)
