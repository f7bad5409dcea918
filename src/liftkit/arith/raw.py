"""Unsimplified builders: the same node classes, exactly as written.

Used when index simplification is switched off (``to_c`` then prints the
expression as built) and by the differential tests.  Operands are taken as
given (ints become constants); nothing is folded or reordered.
"""

from __future__ import annotations

from typing import Any

from .nodes import ArithExpr, Cond, Cst, IfThenElse, IntDiv, Log, Max, Min, Mod, Pow, Prod, Sum, Xor


def _e(x: Any) -> ArithExpr:
    if isinstance(x, ArithExpr):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Cst(x)
    raise TypeError(f"expected an integer expression, got {type(x).__name__} {x!r}")


def add(a: Any, b: Any) -> Sum:
    return Sum((_e(a), _e(b)))


def sub(a: Any, b: Any) -> Sum:
    return Sum((_e(a), Prod((Cst(-1), _e(b)))))


def neg(a: Any) -> Prod:
    return Prod((Cst(-1), _e(a)))


def mul(a: Any, b: Any) -> Prod:
    return Prod((_e(a), _e(b)))


def div(a: Any, b: Any) -> IntDiv:
    return IntDiv(_e(a), _e(b))


def mod(a: Any, b: Any) -> Mod:
    return Mod(_e(a), _e(b))


def pow_(a: Any, b: Any) -> Pow:
    return Pow(_e(a), _e(b))


def log(base: Any, x: Any) -> Log:
    return Log(_e(base), _e(x))


def min_(a: Any, b: Any) -> Min:
    return Min(_e(a), _e(b))


def max_(a: Any, b: Any) -> Max:
    return Max(_e(a), _e(b))


def xor(a: Any, b: Any) -> Xor:
    return Xor(_e(a), _e(b))


def cond(op: str, a: Any, b: Any) -> Cond:
    return Cond(op, _e(a), _e(b))


def if_then_else(c: Cond, a: Any, b: Any) -> IfThenElse:
    return IfThenElse(c, _e(a), _e(b))


__all__ = ["add", "cond", "div", "if_then_else", "log", "max_", "min_", "mod", "mul", "neg", "pow_", "sub", "xor"]


def substitute(e: ArithExpr, mapping: "dict[str, Any]") -> ArithExpr:
    """Replace variables (by name) without simplifying anything: the index-simplification-off
    ablation instantiates index functions (gather, reorderStride) with this."""
    from .nodes import Var

    if isinstance(e, Var):
        return _e(mapping[e.name]) if e.name in mapping else e
    if isinstance(e, Cst):
        return e
    if isinstance(e, (Sum, Prod)):
        return type(e)(tuple(substitute(k, mapping) for k in e._kids()))
    if isinstance(e, IfThenElse):
        c, a, b = e._kids()
        return IfThenElse(_subst_cond(c, mapping), substitute(a, mapping), substitute(b, mapping))
    a, b = e._kids()
    return type(e)(substitute(a, mapping), substitute(b, mapping))


def _subst_cond(c: Cond, mapping: "dict[str, Any]") -> Cond:
    op, lhs, rhs = c._f
    return Cond(op, substitute(lhs, mapping), substitute(rhs, mapping))
