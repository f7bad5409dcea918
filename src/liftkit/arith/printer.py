"""Printing of expressions as readable text (``str``) and OpenCL C (``to_c``).

Both forms use C operator precedence with the minimal parentheses needed to
parse back to the same tree shape (``*``, ``/`` and ``%`` are left
associative and *not* interchangeable for integers, so a right operand of one
of them that is itself a product/division gets parentheses).
"""

from __future__ import annotations

from .nodes import (
    ArithExpr,
    Cond,
    Cst,
    IfThenElse,
    IntDiv,
    Log,
    Max,
    Min,
    Mod,
    Pow,
    Prod,
    Sum,
    Var,
    Xor,
)

SUM, MUL, UNARY, ATOM = 1, 2, 3, 4


def to_str(e: ArithExpr) -> str:
    return _fmt(e, False)[0]


def to_c(e: ArithExpr) -> str:
    return _fmt(e, True)[0]


def cond_str(c: Cond, in_c: bool) -> str:
    return f"{_fmt(c.lhs, in_c)[0]} {c.op} {_fmt(c.rhs, in_c)[0]}"


def _wrap(e: ArithExpr, need: int, in_c: bool) -> str:
    s, p = _fmt(e, in_c)
    return s if p >= need else f"({s})"


def _negated(t: ArithExpr) -> ArithExpr | None:
    """The positive version of a term that prints with a leading minus."""
    if type(t) is Cst:
        return Cst(-t.v) if t.v < 0 else None
    if type(t) is Prod:
        f = t._f
        if type(f[0]) is Cst and f[0].v < 0:
            if f[0].v == -1:
                rest = f[1:]
                return rest[0] if len(rest) == 1 else Prod(rest, t._canon)
            return Prod((Cst(-f[0].v),) + f[1:], t._canon)
    return None


def _fmt(e: ArithExpr, in_c: bool) -> tuple[str, int]:
    t = type(e)
    if t is Var:
        return e.name, ATOM  # type: ignore[attr-defined]
    if t is Cst:
        return str(e.v), (ATOM if e.v >= 0 else UNARY)  # type: ignore[attr-defined]
    if t is Sum:
        return _fmt_sum(e, in_c), SUM
    if t is Prod:
        return _fmt_prod(e._f, in_c)
    if t is IntDiv or t is Mod:
        op = "/" if t is IntDiv else " % "
        return f"{_wrap(e.a, MUL, in_c)}{op}{_wrap(e.b, ATOM, in_c)}", MUL  # type: ignore[attr-defined]
    if t is Pow or t is Log or t is Min or t is Max:
        name = {Pow: "pow", Log: "log", Min: "min", Max: "max"}[t]
        if in_c and t in (Pow, Log):
            name = "lift_" + name
        return f"{name}({_fmt(e.a, in_c)[0]}, {_fmt(e.b, in_c)[0]})", ATOM  # type: ignore[attr-defined]
    if t is Xor:  # C's ^ binds looser than + and ==: always in parentheses
        return f"({_fmt(e.a, in_c)[0]} ^ {_fmt(e.b, in_c)[0]})", ATOM  # type: ignore[attr-defined]
    if t is IfThenElse:
        c = cond_str(e.cond, in_c)  # type: ignore[attr-defined]
        if in_c:
            c = f"({c})"
        return f"({c} ? {_fmt(e.then, in_c)[0]} : {_fmt(e.els, in_c)[0]})", ATOM  # type: ignore[attr-defined]
    raise TypeError(f"cannot print {type(e).__name__}")  # pragma: no cover


def _fmt_sum(e: ArithExpr, in_c: bool) -> str:
    terms = list(e._f)
    if e._canon:
        # read naturally: positive terms first ("N - i - 1", not "-i + N - 1")
        terms = [x for x in terms if _negated(x) is None] + [x for x in terms if _negated(x) is not None]
    parts: list[str] = []
    for idx, term in enumerate(terms):
        pos = _negated(term)
        if idx == 0:
            parts.append(_fmt(term, in_c)[0])
        elif pos is not None:
            parts.append(" - " + _wrap(pos, MUL, in_c))
        else:
            parts.append(" + " + _wrap(term, MUL, in_c))
    return "".join(parts)


def _fmt_prod(fs: tuple, in_c: bool) -> tuple[str, int]:
    if type(fs[0]) is Cst and fs[0].v == -1 and len(fs) >= 2:
        rest = fs[1:]
        if len(rest) > 1:
            s, _ = _fmt_prod(rest, in_c)
            # "-x*y" reads as (-x)*y == -(x*y); keep parens if x is not an atom
            bare = _fmt(rest[0], in_c)[1] == ATOM
        else:
            s, p = _fmt(rest[0], in_c)
            bare = p >= UNARY
        bare = bare and not s.startswith("-")
        return ("-" + (s if bare else f"({s})")), UNARY
    parts = [_wrap(fs[0], MUL, in_c)] + [_wrap(f, ATOM, in_c) for f in fs[1:]]
    return "*".join(parts), MUL
