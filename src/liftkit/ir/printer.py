"""Printing programs in the papers' notation: right-to-left composition, lambdas, `split 128`,
`mapLcl(0)(f)`, `reduceSeq(add, 0.0f)`.

The output is deterministic (parameter names are made unique in traversal order), so derivations
can be printed and diffed, and `liftkit.ir.parser` reads it back. Each pattern's printed form
follows from its declared signature (see `patterns.base.Kind`): dimensions in parentheses right
after the name, sizes and boundaries after a space, functions in one parenthesised group.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Optional

import numpy as np

from liftkit.arith import ArithExpr
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun, walk
from liftkit.ir.patterns.base import Boundary, IndexFun, Kind, Pattern
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType, bool_, float32, int64

COMPOSE = " ∘ "


class Names:
    """Display names for parameters: the given name, suffixed `_1`, `_2` ... when it clashes."""

    def __init__(self, root: Optional[Node] = None) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        if root is not None:
            for n in walk(root):
                if isinstance(n, Lambda):
                    for p in n.params:
                        self.name(p)
                elif isinstance(n, Param):
                    self.name(n)

    def name(self, p: Param) -> str:
        if p.uid not in self.names:
            base = p.name if p.name.isidentifier() else "p"
            cand, k = base, 0
            while cand in self.used or cand in reserved_names():
                k += 1
                cand = f"{base}_{k}"
            self.used.add(cand)
            self.names[p.uid] = cand
        return self.names[p.uid]


@functools.cache
def reserved_names() -> frozenset[str]:
    """Names a parameter may not print as, or the parser would read a pattern."""
    from liftkit.ir.patterns import PATTERNS_BY_NAME

    return frozenset(PATTERNS_BY_NAME) | {"λ", "true", "false", "inf", "nan", "inff", "nanf"}


# ---------------------------------------------------------------------------------------------
# literals and types


def show_scalar(v: Any, t: ScalarType) -> str:
    if t.is_complex:
        z = complex(v)
        return f"{t}({show_scalar(z.real, t.real)}, {show_scalar(z.imag, t.real)})"
    if t == bool_:
        return "true" if bool(v) else "false"
    if t.is_float:
        x = float(v)
        if math.isnan(x):
            s = "nan"
        elif math.isinf(x):
            s = "inf" if x > 0 else "-inf"
        else:
            s = repr(float(np.float32(x))) if t == float32 else repr(x)
            if "e" not in s and "." not in s:
                s += ".0"
        return s + ("f" if t == float32 else "")
    return f"{int(v)}{'L' if t == int64 else ''}"


def show_literal(value: Any, t: Type) -> str:
    if isinstance(t, ScalarType):
        return show_scalar(value, t)
    if isinstance(t, VectorType):
        return f"{t}(" + ", ".join(show_scalar(v, t.elem) for v in value) + ")"
    if isinstance(t, TupleType):
        return "(" + ", ".join(show_literal(v, et) for v, et in zip(value, t.elems)) + ")"
    if isinstance(t, ArrayType):
        elems = [show_literal(v, t.elem) for v in value]
        if len(elems) > 1 and all(e == elems[0] for e in elems):
            return f"[{elems[0]}; {len(elems)}]"  # n copies, as a tile's zero accumulators are
        return "[" + ", ".join(elems) + "]"
    raise TypeError(f"cannot print a literal of type {t}")


def show_type(t: Type) -> str:
    return str(t)


def show_size(e: ArithExpr) -> str:
    s = str(e)
    return s if (s.isidentifier() or s.isdigit()) else f"({s})"


# ---------------------------------------------------------------------------------------------
# expressions and functions


class Printer:
    def __init__(self, names: Names) -> None:
        self.names = names

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        if isinstance(e, Param):
            return self.names.name(e)
        if isinstance(e, Literal):
            return show_literal(e.value, e.type)
        assert isinstance(e, FunCall)
        funs, base = self.chain(e)
        if not funs:
            return self.call(base)  # type: ignore[arg-type]
        inner = self.expr(base)
        if len(funs) == 1:
            head = self.in_chain(funs[0])
            if _has_top_level_space(head):  # (split 128)(x), (get 0)(xy)
                head = f"({head})"
            return f"{head}({inner})"
        return "(" + COMPOSE.join(self.in_chain(f) for f in funs) + f")({inner})"

    def call(self, e: FunCall) -> str:
        """A call that is not part of a unary chain: f(a, b)."""
        f = e.f
        args = ", ".join(self.expr(a) for a in e.args)
        return f"{self.in_chain(f)}({args})"

    def chain(self, e: Expr) -> tuple[list[FunDecl], Expr]:
        """Peel unary calls f(g(h(x))) into ([f, g, h], x); a multi-argument call ends the chain."""
        funs: list[FunDecl] = []
        while isinstance(e, FunCall):
            unary = self.as_unary(e)
            if unary is None:
                break
            f, e = unary
            funs.append(f)
        return funs, e

    def as_unary(self, e: FunCall) -> Optional[tuple[FunDecl, Expr]]:
        if len(e.args) == 1:
            return e.f, e.args[0]
        if (isinstance(e.f, Pattern) and e.f.inline_init and len(e.args) == 2
                and isinstance(e.args[0], Literal)):
            return _InlineInit(e.f, e.args[0]), e.args[1]
        return None

    # -- functions ---------------------------------------------------------------------------
    def in_chain(self, f: FunDecl) -> str:
        s = self.fun(f)
        return f"({s})" if s.startswith("λ") else s

    def fun(self, f: FunDecl) -> str:
        if isinstance(f, _InlineInit):
            return self.pattern(f.pattern, init=f.init)
        if isinstance(f, UserFun):
            return f.name
        if isinstance(f, Pattern):
            return self.pattern(f)
        assert isinstance(f, Lambda)
        eta = self.eta(f)
        if eta is not None:
            return eta
        ps = [self.names.name(p) for p in f.params]
        head = ps[0] if len(ps) == 1 else "(" + ", ".join(ps) + ")"
        return f"λ{head}. {self.expr(f.body)}"

    def eta(self, f: Lambda) -> Optional[str]:
        """λp. f(g(p)) prints as f ∘ g; λ(a, b). f(a, b) prints as f."""
        body = f.body
        if not isinstance(body, FunCall):
            return None
        if len(f.params) == 1:
            funs, base = self.chain(body)
            p = f.params[0]
            if base is p and funs and not any(p in _params_in(g) for g in funs):
                return COMPOSE.join(self.in_chain(g) for g in funs)
            return None
        if (tuple(body.args) == f.params and len(set(f.params)) == len(f.params)
                and not (set(f.params) & _params_in(body.f))):
            return self.in_chain(body.f)
        return None

    def pattern(self, p: Pattern, init: Optional[Literal] = None) -> str:
        dims, atoms, funs = [], [], []
        for name, kind in p.signature():
            v = getattr(p, name)
            if kind is Kind.DIM:
                dims.append(f"({v})")
            elif kind is Kind.SIZE:
                atoms.append(show_size(v))
            elif kind is Kind.BOUNDARY:
                atoms.append(str(v) if not isinstance(v, Boundary) or v.value is None
                             else f"constant({show_literal(v.value.value, v.value.type)})")
            elif kind is Kind.INDEX:
                funs.append(show_index_fun(v))
            elif kind is Kind.FUN:
                funs.append(self.fun(v))
        if init is not None:
            funs.append(self.expr(init))
        s = p.name + "".join(dims)
        if atoms:
            s += " " + " ".join(atoms)
        if funs:
            s += (" " if atoms else "") + "(" + ", ".join(funs) + ")"
        return s


class _InlineInit(FunDecl):
    """Printing aid: reduceSeq(add, 0.0f) seen as one unary function."""

    def __init__(self, pattern: Pattern, init: Literal) -> None:
        self.pattern = pattern
        self.init = init


def _params_in(node: Node) -> set[Param]:
    if isinstance(node, _InlineInit):
        return _params_in(node.pattern) | _params_in(node.init)
    return {n for n in walk(node) if isinstance(n, Param)}


def _has_top_level_space(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == " " and depth == 0:
            return True
    return False


def show_index_fun(f: IndexFun) -> str:
    return f"λ({f.i.name}, {f.n.name}). {f.body}"


# ---------------------------------------------------------------------------------------------
# entry points


def show(node: Node) -> str:
    """The one-line printed form of a program, expression or function."""
    pr = Printer(Names(node))
    if isinstance(node, Lambda) and node.params and all(p.type is not None for p in node.params):
        params = ", ".join(f"{pr.names.name(p)}: {show_type(p.type)}" for p in node.params)  # type: ignore[arg-type]
        return f"λ({params}). {pr.expr(node.body)}"
    if isinstance(node, Expr):
        return pr.expr(node)
    return pr.fun(node)  # type: ignore[arg-type]


def show_fun(f: FunDecl) -> str:
    return Printer(Names(f)).fun(f)


def show_short(node: Node, limit: int = 160) -> str:
    s = show(node)
    if len(s) <= limit:
        return s
    half = limit // 2 - 2
    return s[:half] + " … " + s[-half:]


def pretty(node: Node, width: int = 100) -> str:
    """Multi-line layout of `show(node)` for reading and diffing derivations: a composition that
    does not fit on its line puts one function per line; a pattern's function argument that does
    not fit is indented below it."""
    return _reflow(show(node), width)


def _reflow(text: str, width: int) -> str:
    out: list[str] = []
    _layout(text, 0, width, out, "")
    return "\n".join(out)


def _layout(text: str, indent: int, width: int, out: list[str], suffix: str) -> None:
    """Lay out `text` + `suffix` at `indent`, breaking compositions, then argument groups."""
    pad = " " * indent
    if len(text) + len(suffix) + indent <= width:
        out.append(pad + text + suffix)
        return
    parts = [p.strip() for p in _split_top(text, COMPOSE.strip())]
    if len(parts) > 1 and all(parts):
        for k, part in enumerate(parts):
            _layout(part, indent, width, out, " ∘" if k < len(parts) - 1 else suffix)
        return
    # break inside the last top-level parenthesised group (the function argument of a pattern)
    depth, start, groups = 0, -1, []
    for i, ch in enumerate(text):
        if ch in "([":
            if depth == 0:
                start = i
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and ch == ")":  # array literals stay on one line
                groups.append((start, i))
    groups = [(a, b) for a, b in groups if b - a > 20]
    if not groups:
        out.append(pad + text + suffix)
        return
    a, b = max(groups, key=lambda g: g[1] - g[0])
    head, inner, tail = text[: a + 1], text[a + 1: b], text[b:]
    out.append(pad + head)
    pieces = [p.strip() for p in _split_top(inner, ",")]
    for k, piece in enumerate(pieces):
        _layout(piece, indent + 2, width, out, "," if k < len(pieces) - 1 else "")
    _layout(tail, indent, width, out, suffix)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` at parenthesis depth 0 (outside lambdas' bodies too)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts

