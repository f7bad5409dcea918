"""Vectorised evaluation with numpy (used by interpreters to evaluate index
functions over ``np.arange``).  Python ints in, Python int out; any array
argument makes the result an array.  Division/modulo floor like Python, which
is C's semantics on the non-negative domain."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import ArithError
from .nodes import (ArithExpr, Cond, Cst, IfThenElse, IntDiv, Log, Max, Min, Mod, Pow, Prod, Sum, Var, Xor,
                    _compare, _ilog)


def _is_int(x: Any) -> bool:
    return isinstance(x, int)


def _ev_cond(c: Cond, env: Mapping[str, Any]) -> Any:
    return _compare(c.op, eval_numpy(c.lhs, env), eval_numpy(c.rhs, env))


def _log(b: Any, x: Any, e: ArithExpr) -> Any:
    if _is_int(b) and _is_int(x):
        if b < 2 or x < 1:
            raise ArithError(f"logarithm undefined in {e} (base {b}, argument {x})")
        return _ilog(b, x)
    b, x = np.broadcast_arrays(np.asarray(b, dtype=np.int64), np.asarray(x, dtype=np.int64))
    if np.any(b < 2) or np.any(x < 1):
        raise ArithError(f"logarithm undefined in {e}")
    r = np.zeros(x.shape, dtype=np.int64)
    p = b.copy()
    while True:
        step = p <= x
        if not np.any(step):
            return r
        r += step
        p = np.where(step, p * b, p)


def eval_numpy(e: ArithExpr, env: Mapping[str, Any]) -> Any:
    t = type(e)
    if t is Cst:
        return e.v  # type: ignore[attr-defined]
    if t is Var:
        try:
            v = env[e.name]  # type: ignore[attr-defined]
        except KeyError:
            raise ArithError(f"unbound {e.kind} variable {e.name}") from None  # type: ignore[attr-defined]
        return int(v) if isinstance(v, (int, np.integer)) else np.asarray(v)
    if t is Sum:
        acc: Any = 0
        for term in e._f:
            acc = acc + eval_numpy(term, env)
        return acc
    if t is Prod:
        acc = 1
        for f in e._f:
            acc = acc * eval_numpy(f, env)
        return acc
    if t is IfThenElse:
        c = _ev_cond(e.cond, env)  # type: ignore[attr-defined]
        if isinstance(c, (bool, np.bool_)):
            return eval_numpy(e.then if c else e.els, env)  # type: ignore[attr-defined]
        return np.where(c, eval_numpy(e.then, env), eval_numpy(e.els, env))  # type: ignore[attr-defined]
    a, b = eval_numpy(e.a, env), eval_numpy(e.b, env)  # type: ignore[attr-defined]
    scalar = _is_int(a) and _is_int(b)
    if t is IntDiv or t is Mod:
        if (b == 0) if scalar else np.any(np.asarray(b) == 0):
            raise ArithError(f"division by zero in {e}")
        if scalar:
            return a // b if t is IntDiv else a % b
        return np.floor_divide(a, b) if t is IntDiv else np.mod(a, b)
    if t is Pow:
        if (b < 0) if scalar else np.any(np.asarray(b) < 0):
            raise ArithError(f"negative exponent in {e}")
        return a**b if scalar else np.power(a, b)
    if t is Log:
        return _log(a, b, e)
    if t is Min:
        return min(a, b) if scalar else np.minimum(a, b)
    if t is Max:
        return max(a, b) if scalar else np.maximum(a, b)
    if t is Xor:
        return a ^ b if scalar else np.bitwise_xor(a, b)
    raise TypeError(f"cannot evaluate {t.__name__}")  # pragma: no cover
