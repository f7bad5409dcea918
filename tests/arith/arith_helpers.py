"""Shared helpers of the liftkit.arith tests: a variable universe with
ranges, random valuations, random expression *recipes* that are built both
raw and through the simplifying operators, and reference evaluators."""

from __future__ import annotations

import random
from typing import Any

from liftkit.arith import (
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
    if_then_else,
    index_var,
    log,
    max_,
    min_,
    raw,
    size_var,
)
from liftkit.arith.nodes import _compare

N = size_var("N")
M = size_var("M")
I = index_var("i", N)  # noqa: E741
J = index_var("j", M)
K = index_var("k", 4)
G = index_var("g", N * M)
T = index_var("t", I + 1)  # nested range: t in [0, i]
VARS = (N, M, I, J, K, G, T)
VAR_MAP = {v.name: v for v in VARS}
SIZES = (N, M)


def valuation(rng: random.Random) -> dict[str, int]:
    big = rng.random() < 0.2
    n = rng.randint(1, 40 if big else 8)
    m = rng.randint(1, 40 if big else 8)
    i = rng.randrange(n)
    return {
        "N": n,
        "M": m,
        "i": i,
        "j": rng.randrange(m),
        "k": rng.randrange(4),
        "g": rng.randrange(n * m),
        "t": rng.randint(0, i),
    }


# ---------------------------------------------------------------------------
# recipes: nested tuples built twice (raw and simplified)
# ---------------------------------------------------------------------------

_CMPS = ("<", "<=", ">", ">=", "==", "!=")


class RecipeGen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def leaf(self) -> tuple:
        r = self.rng
        if r.random() < 0.7:
            return ("var", r.choice(VARS))
        return ("cst", r.randint(-3, 9))

    def positive(self, depth: int) -> tuple:
        """A divisor that is usually positive."""
        r = self.rng
        x = r.random()
        if x < 0.35:
            return ("cst", r.choice((1, 2, 3, 4, 8, 16)))
        if x < 0.6:
            return ("var", r.choice(SIZES))
        if x < 0.75:
            return ("mul", ("cst", r.choice((2, 4))), ("var", r.choice(SIZES)))
        if x < 0.85:
            return ("mul", ("var", N), ("var", M))
        return self.expr(depth - 1)

    def expr(self, depth: int) -> tuple:
        r = self.rng
        if depth <= 0 or r.random() < 0.2:
            return self.leaf()
        d = depth - 1
        op = r.choices(
            ("add", "sub", "mul", "div", "mod", "min", "max", "pow", "ite", "neg", "log", "pattern"),
            (18, 12, 14, 13, 13, 4, 4, 3, 5, 2, 2, 14),
        )[0]
        if op in ("add", "sub", "mul", "min", "max"):
            return (op, self.expr(d), self.expr(d))
        if op in ("div", "mod"):
            return (op, self.expr(d), self.positive(d))
        if op == "pow":
            return ("pow", self.expr(d), ("cst", r.randint(0, 3)))
        if op == "neg":
            return ("neg", self.expr(d))
        if op == "log":
            return ("log", ("cst", r.choice((2, 2, 3))), self.expr(d))
        if op == "ite":
            return ("ite", r.choice(_CMPS), self.expr(d), self.expr(d), self.expr(d), self.expr(d))
        return self.pattern(d)

    def pattern(self, d: int) -> tuple:
        """Shapes that exercise the six rules, gcd, nesting and mod-of-mod."""
        r = self.rng
        x, y, z = self.expr(d), self.positive(d), self.expr(max(d - 1, 0))
        k = r.randrange(11)
        if k == 0:
            return ("div", ("add", ("mul", x, y), z), y)
        if k == 1:
            return ("mod", ("add", ("mul", x, y), z), y)
        if k == 2:
            return ("add", ("add", ("mul", ("div", x, y), y), ("mod", x, y)), z)
        if k == 3:
            return ("mod", ("mod", x, ("mul", y, ("cst", r.choice((2, 3, 4))))), y)
        if k == 4:
            return ("div", ("div", x, y), self.positive(d))
        if k == 5:
            c = ("cst", r.choice((2, 4, 6)))
            return ("div", ("mul", c, x), ("mul", c, y))
        if k == 6:  # transpose-like linearised index
            a, b = ("var", r.choice((I, G, T))), ("var", r.choice((J, K)))
            s = ("var", r.choice(SIZES))
            lin = ("add", ("mul", a, s), b)
            return r.choice((("div", lin, s), ("mod", lin, s), ("add", ("mul", ("div", lin, s), s), ("mod", lin, s))))
        if k == 7:
            return ("sub", ("sub", ("var", r.choice(SIZES)), ("cst", 1)), ("var", r.choice((I, J, K, T))))
        if k == 8:
            return ("mod", ("add", ("mod", x, y), ("mul", z, y)), y)
        if k == 9:
            return ("add", ("sub", x, ("mul", ("div", x, y), y)), z)  # x - (x/y)*y
        c = ("cst", r.choice((2, 4)))
        return ("mod", ("add", ("mod", x, ("mul", c, y)), z), y)  # (x % (c*y) + z) % y


_RAW = {
    "add": raw.add,
    "sub": raw.sub,
    "mul": raw.mul,
    "div": raw.div,
    "mod": raw.mod,
    "min": raw.min_,
    "max": raw.max_,
    "pow": raw.pow_,
    "log": raw.log,
}
_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": min_,
    "max": max_,
    "pow": lambda a, b: a**b,
    "log": log,
}


def build_raw(rc: tuple) -> ArithExpr:
    tag = rc[0]
    if tag == "var":
        return rc[1]
    if tag == "cst":
        return Cst(rc[1])
    if tag == "neg":
        return raw.neg(build_raw(rc[1]))
    if tag == "ite":
        c = raw.cond(rc[1], build_raw(rc[2]), build_raw(rc[3]))
        return raw.if_then_else(c, build_raw(rc[4]), build_raw(rc[5]))
    return _RAW[tag](build_raw(rc[1]), build_raw(rc[2]))


def build_ops(rc: tuple) -> Any:
    """Same recipe through the operators (ints stay Python ints at leaves,
    exercising the reflected operators)."""
    tag = rc[0]
    if tag == "var":
        return rc[1]
    if tag == "cst":
        return rc[1]
    if tag == "neg":
        return -_as_expr(build_ops(rc[1]))
    if tag == "ite":
        c = Cond(rc[1], _as_expr(build_ops(rc[2])), _as_expr(build_ops(rc[3])))
        return if_then_else(c, build_ops(rc[4]), build_ops(rc[5]))
    a, b = build_ops(rc[1]), build_ops(rc[2])
    if isinstance(a, int) and isinstance(b, int):
        a = Cst(a)
    return _OPS[tag](a, b)


def _as_expr(x: Any) -> ArithExpr:
    return Cst(x) if isinstance(x, int) else x


# ---------------------------------------------------------------------------
# reference evaluators (eager, with C's domain check)
# ---------------------------------------------------------------------------


class OutOfDomain(Exception):
    pass


def _ilog(b: int, x: int) -> int:
    r = 0
    while x >= b:
        x //= b
        r += 1
    return r


def ref_eval(e: ArithExpr, env: dict[str, int], c_semantics: bool = False) -> int:
    """Evaluate every sub-expression (both branches too); raise OutOfDomain
    where C leaves the result undefined or implementation specific: a
    division/modulo with a negative numerator or a non-positive divisor, a
    negative exponent, a bad logarithm.  ``c_semantics`` truncates toward
    zero like C instead of flooring (identical on the domain)."""
    t = type(e)
    if t is Cst:
        return e.v
    if t is Var:
        return env[e.name]
    if t is Sum:
        return sum(ref_eval(x, env, c_semantics) for x in e._f)
    if t is Prod:
        p = 1
        for x in e._f:
            p *= ref_eval(x, env, c_semantics)
        return p
    if t is IfThenElse:
        c = _compare(e.cond.op, ref_eval(e.cond.lhs, env, c_semantics), ref_eval(e.cond.rhs, env, c_semantics))
        a, b = ref_eval(e.then, env, c_semantics), ref_eval(e.els, env, c_semantics)
        return a if c else b
    a, b = ref_eval(e.a, env, c_semantics), ref_eval(e.b, env, c_semantics)
    if t is IntDiv or t is Mod:
        if a < 0 or b <= 0:
            raise OutOfDomain
        if c_semantics:
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return q if t is IntDiv else a - q * b
        return a // b if t is IntDiv else a % b
    if t is Pow:
        if b < 0:
            raise OutOfDomain
        return a**b
    if t is Log:
        if a < 2 or b < 1:
            raise OutOfDomain
        return _ilog(a, b)
    if t is Min:
        return min(a, b)
    if t is Max:
        return max(a, b)
    raise TypeError(t)


def raw_copy(e: ArithExpr) -> ArithExpr:
    """A structurally identical tree flagged raw, to force re-simplification."""
    t = type(e)
    if t is Cst or t is Var:
        return e
    if t is Sum:
        return Sum(tuple(raw_copy(x) for x in e._f))
    if t is Prod:
        return Prod(tuple(raw_copy(x) for x in e._f))
    if t is IfThenElse:
        c = e.cond
        return IfThenElse(Cond(c.op, raw_copy(c.lhs), raw_copy(c.rhs)), raw_copy(e.then), raw_copy(e.els))
    return t(raw_copy(e.a), raw_copy(e.b))
