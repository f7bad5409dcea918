"""Value ranges and proofs.

Two layers, both sound over-approximations:

* :func:`const_bounds` -- numeric interval arithmetic (None = infinite).
  Cheap; decides the easy cases (``l_id < 4`` with ``l_id`` in [0, 4)).
* :func:`sym_lo` / :func:`sym_hi` -- symbolic bounds.  Bounded (index) variables are replaced
  by their symbolic range ends, recursively, until only unbounded (size)
  variables remain; those stay symbolic, which keeps the correlation that makes
  ``N - i >= 1`` provable for ``i`` in [0, N).  The resulting polynomial over
  size variables is then checked by :func:`poly_nonneg`: every atom is shifted
  to a fresh non-negative unknown (``N = 1 + t``) and all coefficients must be
  non-negative.

Divisions and modulos are bounded assuming C's well-defined domain
(numerator >= 0, denominator >= 1): simplification only has to preserve the
value there.  Both kinds of bounds are cached on the immutable nodes (a
pure function of the node), so shared sub-expressions are bounded once;
nothing is global.
"""

from __future__ import annotations

import math

from . import simplify as _S
from .nodes import (
    ONE,
    ZERO,
    ArithExpr,
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
    _ilog,
)
from .poly import add_into, make_term, poly_mul, term_list

Bound = tuple["int | None", "int | None"]
_INF = math.inf
_MAX_TERMS = 400


# ---------------------------------------------------------------------------
# numeric intervals
# ---------------------------------------------------------------------------


def _imul(a: Bound, b: Bound) -> Bound:
    xs = (-_INF if a[0] is None else a[0], _INF if a[1] is None else a[1])
    ys = (-_INF if b[0] is None else b[0], _INF if b[1] is None else b[1])
    cands = [0 if (x == 0 or y == 0) else x * y for x in xs for y in ys]
    lo, hi = min(cands), max(cands)
    return (None if lo == -_INF else int(lo), None if hi == _INF else int(hi))


def const_bounds(e: ArithExpr) -> Bound:
    """Inclusive numeric bounds of a (canonical or raw) expression."""
    r = e._cb
    if r is None:
        r = _cb(e)
        e._cb = r
    return r


def _cb(e: ArithExpr) -> Bound:
    t = type(e)
    if t is Var:
        lo = const_bounds(e.lo)[0]  # type: ignore[attr-defined]
        if e.hi is None:  # type: ignore[attr-defined]
            return (lo, None)
        h = const_bounds(e.hi)[1]  # type: ignore[attr-defined]
        return (lo, None if h is None else h - 1)
    if t is Sum:
        lo: int | None = 0
        hi: int | None = 0
        for term in e._f:
            a, b = const_bounds(term)
            lo = None if lo is None or a is None else lo + a
            hi = None if hi is None or b is None else hi + b
        return (lo, hi)
    if t is Prod:
        acc: Bound = (1, 1)
        for f in e._f:
            acc = _imul(acc, const_bounds(f))
        return acc
    if t is IntDiv or t is Mod:
        xl, xh = const_bounds(e.a)  # type: ignore[attr-defined]
        yl, yh = const_bounds(e.b)  # type: ignore[attr-defined]
        if yh is not None and yh < 1:  # only ever outside C's domain
            return (None, None)
        xl = 0 if xl is None or xl < 0 else xl
        yl = 1 if yl is None or yl < 1 else yl
        if t is IntDiv:
            return (0 if yh is None else xl // yh, None if xh is None else max(xh, 0) // yl)
        cands = [v for v in (None if yh is None else yh - 1, None if xh is None else max(xh, 0)) if v is not None]
        return (0, min(cands) if cands else None)
    if t is Pow:
        bl, bh = const_bounds(e.a)  # type: ignore[attr-defined]
        el, eh = const_bounds(e.b)  # type: ignore[attr-defined]
        if bl is None or bl < 0:
            return (None, None)
        el = 0 if el is None or el < 0 else el
        lo = bl ** min(el, 64) if bl >= 1 else 0
        if bh is not None and bh <= 1:
            return (lo, 1)
        if bh is None or eh is None or eh > 256:
            return (lo, None)
        return (lo, max(bh**eh, 1))
    if t is Log:
        bl, bh = const_bounds(e.a)  # type: ignore[attr-defined]
        xl, xh = const_bounds(e.b)  # type: ignore[attr-defined]
        lo = _ilog(bh, xl) if (bh is not None and bh >= 2 and xl is not None and xl >= 1) else 0
        hi = _ilog(max(bl or 2, 2), max(xh, 1)) if xh is not None else None
        return (lo, hi)
    if t is Min or t is Max or t is IfThenElse:
        if t is IfThenElse:
            (al, ah), (bl, bh) = const_bounds(e.then), const_bounds(e.els)  # type: ignore[attr-defined]
            return (None if al is None or bl is None else min(al, bl), None if ah is None or bh is None else max(ah, bh))
        (al, ah), (bl, bh) = const_bounds(e.a), const_bounds(e.b)  # type: ignore[attr-defined]
        if t is Min:
            return (
                None if al is None or bl is None else min(al, bl),
                bh if ah is None else (ah if bh is None else min(ah, bh)),
            )
        return (
            bl if al is None else (al if bl is None else max(al, bl)),
            None if ah is None or bh is None else max(ah, bh),
        )
    if t is Xor:  # C's domain: both operands >= 0; below the next power of two of either,
        # without the low bits both lack (2*x ^ 10 is even)
        ah, bh = const_bounds(e.a)[1], const_bounds(e.b)[1]  # type: ignore[attr-defined]
        if ah is None or bh is None:
            return (0, None)
        low = (1 << min(_S._twos(e.a), _S._twos(e.b))) - 1  # type: ignore[attr-defined]
        return (0, ((1 << max(ah, bh, 0).bit_length()) - 1) & ~low)
    raise TypeError(f"no bounds for {t.__name__}")  # pragma: no cover


def _ge(e: ArithExpr, k: int) -> bool:
    """Numeric check e >= k."""
    lo = const_bounds(e)[0]
    return lo is not None and lo >= k


# ---------------------------------------------------------------------------
# symbolic bounds
# ---------------------------------------------------------------------------


_UNSET = object()


def sym_lo(e: ArithExpr) -> ArithExpr | None:
    """Inclusive lower bound of canonical e over unbounded variables (None: unknown)."""
    return _bound(e, False)


def sym_hi(e: ArithExpr) -> ArithExpr | None:
    """Inclusive upper bound of canonical e over unbounded variables (None: unknown)."""
    return _bound(e, True)


def _bound(e: ArithExpr, upper: bool) -> ArithExpr | None:
    # Cached on the (immutable) node: each node is bounded once, so bounds of
    # shared sub-expressions never make the recursion exponential.
    if not e._bnd:
        return e
    sb = e._sb
    if sb is not None and sb[upper] is not _UNSET:
        return sb[upper]
    t = type(e)
    if t is Sum or t is Prod:
        res = _poly_bound(e, upper)
    else:
        res = _atom_bound(e, upper)
    if e._sb is None:
        e._sb = [_UNSET, _UNSET]
    e._sb[upper] = res
    return res


def _poly_bound(e: ArithExpr, upper: bool) -> ArithExpr | None:
    acc: dict = {}
    for m, c in term_list(e):
        b = _mono_bound(m, upper if c > 0 else not upper)
        if b is None:
            return None
        add_into(acc, term_list(b), c)
    return _S.build(acc)


def _mono_bound(m: tuple, upper: bool) -> ArithExpr | None:
    if len(m) == 1:
        return _bound(m[0], upper)
    if not any(a._bnd for a in m):
        return make_term(m, 1)
    cbs = [const_bounds(a) for a in m]
    if all(lo is not None and lo >= 0 for lo, _ in cbs):
        acc: dict = {(): 1}
        for a in m:
            b = _bound(a, upper)
            if b is None:
                return None
            if not upper and not _ge(b, 0):
                b = ZERO  # the atom is >= 0 anyway; keeps the product monotone
            acc = poly_mul(acc.items(), term_list(b))
            if len(acc) > _MAX_TERMS:
                return None
        return _S.build(acc)
    acc_b: Bound = (1, 1)
    for cb in cbs:
        acc_b = _imul(acc_b, cb)
    v = acc_b[1] if upper else acc_b[0]
    return None if v is None else Cst(v)


def _atom_bound(a: ArithExpr, upper: bool) -> ArithExpr | None:
    t = type(a)
    if t is Var:
        if upper:
            return sym_hi(_S.add(a.hi, -1))  # type: ignore[attr-defined]
        return sym_lo(a.lo)  # type: ignore[attr-defined]
    if t is IntDiv:  # C's domain: x >= 0, y >= 1
        x, y = a.a, a.b  # type: ignore[attr-defined]
        if not upper:
            lx, hy = sym_lo(x), sym_hi(y)
            if lx is None or hy is None or not _ge(hy, 1) or not nonneg(lx):
                return ZERO
            return _S.intdiv(lx, hy)
        hx = sym_hi(x)
        if hx is None:
            return None
        ly = sym_lo(y)
        if ly is not None and _ge(ly, 1):
            return _S.intdiv(hx, ly)
        return hx
    if t is Mod:
        if not upper:
            return ZERO
        hy, hx = sym_hi(a.b), sym_hi(a.a)  # type: ignore[attr-defined]
        if hy is None:
            return hx
        hy = _S.add(hy, -1)
        return hy if hx is None else _S.min_(hx, hy)
    if t is Pow:  # monotone for base >= 1, exponent >= 0
        if not _ge(a.a, 1) or not _ge(a.b, 0):  # type: ignore[attr-defined]
            return None if upper else (ZERO if _ge(a.a, 0) else None)  # type: ignore[attr-defined]
        b = _bound(a.a, upper)  # type: ignore[attr-defined]
        x = _bound(a.b, upper)  # type: ignore[attr-defined]
        if b is None or x is None:
            return None if upper else ONE
        if not upper and (not _ge(b, 1) or not _ge(x, 0)):
            return ONE
        return _S.pow_(b, x)
    if t is Log:
        if not upper:
            return ZERO
        lb, hx = sym_lo(a.a), sym_hi(a.b)  # type: ignore[attr-defined]
        if hx is None:
            return None
        if lb is not None and _ge(lb, 2) and _ge(hx, 1):
            return _S.log(lb, hx)
        return hx
    if t is Min or t is Max or t is IfThenElse:
        x, y = (a.then, a.els) if t is IfThenElse else (a.a, a.b)  # type: ignore[attr-defined]
        bx, by = _bound(x, upper), _bound(y, upper)
        take_min = (t is Min) or (t is IfThenElse and not upper)
        if bx is None or by is None:
            # min is bounded above by either side, max below by either side
            if (t is Min and upper) or (t is Max and not upper):
                return bx if by is None else by
            return None
        return _S.min_(bx, by) if take_min else _S.max_(bx, by)
    if t is Xor:  # operands >= 0: 0 <= a ^ b <= min(a + b, the numeric bound)
        if not upper:
            return ZERO
        hi = const_bounds(a)[1]
        if hi is not None:
            return Cst(hi)
        ha, hb = sym_hi(a.a), sym_hi(a.b)  # type: ignore[attr-defined]
        return None if ha is None or hb is None else _S.add(ha, hb)
    return None  # pragma: no cover


# ---------------------------------------------------------------------------
# positivity of polynomials over unbounded variables
# ---------------------------------------------------------------------------


def poly_nonneg(e: ArithExpr) -> bool:
    """Sufficient test for e >= 0 where e mentions no bounded variable.

    Each atom a with numeric bounds [L, U] is rewritten as L + t or U - t
    (t >= 0 a fresh unknown, represented by the atom itself) or kept when
    L == 0; after expansion every coefficient must be >= 0.
    """
    terms = list(term_list(e))
    atoms: dict = {}
    for m, c in terms:
        for a in m:
            s = atoms.get(a)
            atoms[a] = (c < 0) if s is None else (s and c < 0)  # True: only in negative terms
    if not atoms:
        return all(c >= 0 for _, c in terms)
    subst: dict = {}
    for a, neg_only in atoms.items():
        lo, hi = const_bounds(a)
        if neg_only and hi is not None:
            subst[a] = (((a,), -1), ((), hi))
        elif lo == 0:
            continue
        elif lo is not None:
            subst[a] = (((a,), 1), ((), lo))
        elif hi is not None:
            subst[a] = (((a,), -1), ((), hi))
        else:
            return False
    if not subst:
        return all(c >= 0 for _, c in terms)
    total: dict = {}
    for m, c in terms:
        acc: dict = {(): c}
        kept = []
        for a in m:
            s = subst.get(a)
            if s is None:
                kept.append(a)
            else:
                acc = poly_mul(acc.items(), s)
        if kept:
            acc = poly_mul(acc.items(), ((tuple(kept), 1),))
        add_into(total, acc.items())
        if len(total) > _MAX_TERMS:
            return False
    return all(c >= 0 for c in total.values())


def nonneg(e: ArithExpr) -> bool:
    """True only if e >= 0 for every in-range valuation (C's domain assumed)."""
    if type(e) is Cst:
        return e.v >= 0  # type: ignore[attr-defined]
    lo, hi = const_bounds(e)
    if lo is not None and lo >= 0:
        return True
    if hi is not None and hi < 0:
        return False
    if e._bnd:
        low = sym_lo(e)
        if low is None:
            return False
        if type(low) is Cst:
            return low.v >= 0  # type: ignore[attr-defined]
        return poly_nonneg(low)
    return poly_nonneg(e)


# ---------------------------------------------------------------------------
# public proof API
# ---------------------------------------------------------------------------


def _diff(b: object, a: object, k: int) -> ArithExpr:
    """b - a - k, canonical, in one pass."""
    p = dict(term_list(_S.to_expr(b)))
    add_into(p, term_list(_S.to_expr(a)), -1)
    if k:
        p[()] = p.get((), 0) - k
    return _S.build(p)


def prove_le(a: object, b: object) -> bool:
    """True only if a <= b for every in-range valuation."""
    return nonneg(_diff(b, a, 0))


def prove_lt(a: object, b: object) -> bool:
    """True only if a < b for every in-range valuation."""
    return nonneg(_diff(b, a, 1))


def prove_ge(a: object, b: object) -> bool:
    return prove_le(b, a)


def prove_gt(a: object, b: object) -> bool:
    return prove_lt(b, a)


def prove_eq(a: object, b: object) -> bool:
    """True only if a == b for every in-range valuation."""
    d = _diff(a, b, 0)
    if type(d) is Cst:
        return d.v == 0  # type: ignore[attr-defined]
    return nonneg(d) and nonneg(_S.neg(d))


def lower_bound(e: ArithExpr) -> ArithExpr | None:
    e = _S.to_expr(e)
    r = sym_lo(e)
    if r is None:
        lo = const_bounds(e)[0]
        return None if lo is None else Cst(lo)
    return r


def upper_bound(e: ArithExpr) -> ArithExpr | None:
    e = _S.to_expr(e)
    r = sym_hi(e)
    if r is None:
        hi = const_bounds(e)[1]
        return None if hi is None else Cst(hi)
    return r


__all__ = [
    "const_bounds",
    "lower_bound",
    "nonneg",
    "poly_nonneg",
    "prove_eq",
    "prove_ge",
    "prove_gt",
    "prove_le",
    "prove_lt",
    "upper_bound",
]
