"""Symbolic integer arithmetic with value ranges (Lift's ``arithexpr``).

Array lengths and indices are expressions over size variables (``N >= 1``)
and index variables with ranges (``l_id`` in ``[0, M)``).  The constructors
and operators simplify eagerly into a canonical form, using the ranges, so
generated index expressions read like hand-written ones::

    >>> N, M = size_var("N"), size_var("M")
    >>> wg, l = index_var("wg_id", N), index_var("l_id", M)
    >>> i = wg * M + l
    >>> j = i // M + (i % M) * N
    >>> str(j // N * N + j % N)
    'l_id*N + wg_id'

Division and modulo follow C for non-negative operands; simplifications
preserve the value wherever the expression as written divides non-negative
numbers by positive ones.  :mod:`liftkit.arith.raw` builds unsimplified trees.
"""

from . import raw
from .errors import ArithError
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
from .parse import parse_arith
from .ranges import prove_eq, prove_ge, prove_gt, prove_le, prove_lt
from .simplify import (
    cst,
    divides,
    eq,
    ge,
    gt,
    if_then_else,
    intdiv,
    le,
    log,
    lt,
    max_,
    min_,
    mod,
    ne,
    pow_,
    simplify,
    xor,
)


def size_var(name: str) -> Var:
    """An array length: range [1, inf)."""
    return Var(name, 1, None)


def index_var(name: str, hi: "ArithExpr | int", lo: "ArithExpr | int" = 0) -> Var:
    """A thread id or loop counter: range [lo, hi)."""
    return Var(name, lo, hi)


__all__ = [
    "ArithError",
    "ArithExpr",
    "Cond",
    "Cst",
    "IfThenElse",
    "IntDiv",
    "Log",
    "Max",
    "Min",
    "Mod",
    "Pow",
    "Prod",
    "Sum",
    "Var",
    "Xor",
    "cst",
    "divides",
    "eq",
    "ge",
    "gt",
    "if_then_else",
    "index_var",
    "intdiv",
    "le",
    "log",
    "lt",
    "max_",
    "min_",
    "mod",
    "ne",
    "parse_arith",
    "pow_",
    "prove_eq",
    "prove_ge",
    "prove_gt",
    "prove_le",
    "prove_lt",
    "raw",
    "simplify",
    "size_var",
    "xor",
]
