"""Polynomial view of canonical expressions.

A canonical expression is a polynomial with integer coefficients over
*atoms* (variables, divisions, modulos, ...).  A monomial is a tuple of atoms
sorted by key (repeats encode powers); a polynomial is a ``dict`` monomial ->
coefficient.  Working on dicts keeps the smart constructors linear (plus one
sort) in the number of terms.
"""

from __future__ import annotations

from math import gcd
from typing import Iterable

from .nodes import ZERO, ArithExpr, Cst, Prod, Sum

Mono = tuple
Poly = dict
Terms = Iterable[tuple[Mono, int]]


def keyof(a: ArithExpr) -> tuple:
    k = a._k
    return k if k is not None else a._key()


def _mono_key(m: Mono) -> tuple:
    # constant term last; otherwise lexicographic by atom keys
    if not m:
        return (1,)
    return (0,) + tuple(keyof(a) for a in m)


def term_list(e: ArithExpr) -> Terms:
    """(monomial, coefficient) pairs of a canonical expression."""
    t = type(e)
    if t is Cst:
        return (((), e.v),) if e.v else ()  # type: ignore[attr-defined]
    if t is Sum:
        tl = e._tl  # type: ignore[attr-defined]
        if tl is None:  # pragma: no cover - raw sums are simplified before use
            raise AssertionError("term_list on a raw sum")
        return tl
    if t is Prod:
        f = e._f
        if type(f[0]) is Cst:
            return ((f[1:], f[0].v),)
        return ((f, 1),)
    return (((e,), 1),)


def poly_of(e: ArithExpr) -> Poly:
    return dict(term_list(e))


def add_into(p: Poly, terms: Terms, scale: int = 1) -> Poly:
    for m, c in terms:
        p[m] = p.get(m, 0) + c * scale
    return p


def make_term(m: Mono, c: int) -> ArithExpr:
    if not m:
        return Cst(c)
    if c == 1:
        return m[0] if len(m) == 1 else Prod(m, True)
    return Prod((Cst(c),) + m, True)


def assemble(p: Poly) -> ArithExpr:
    """Canonical node of a polynomial (no further rewriting)."""
    items = [(m, c) for m, c in p.items() if c]
    if not items:
        return ZERO
    if len(items) == 1:
        return make_term(*items[0])
    items.sort(key=lambda mc: _mono_key(mc[0]))
    return Sum(tuple(make_term(m, c) for m, c in items), True, tuple(items))


def mono_mul(m1: Mono, m2: Mono) -> Mono:
    if not m1:
        return m2
    if not m2:
        return m1
    return tuple(sorted(m1 + m2, key=keyof))


def poly_mul(p: Terms, q: Terms) -> Poly:
    q = list(q)
    r: Poly = {}
    for m1, c1 in p:
        for m2, c2 in q:
            m = mono_mul(m1, m2)
            r[m] = r.get(m, 0) + c1 * c2
    return r


def mono_div(m: Mono, d: Mono) -> Mono | None:
    """m / d as a monomial if d divides m (multiset inclusion), else None."""
    if not d:
        return m
    if len(d) > len(m):
        return None
    rest = list(m)
    for a in d:
        try:
            rest.remove(a)
        except ValueError:
            return None
    return tuple(rest)


def mono_common(m1: Mono, m2: Mono) -> Mono:
    """Multiset intersection of two monomials."""
    rest = list(m2)
    out = []
    for a in m1:
        if a in rest:
            rest.remove(a)
            out.append(a)
    return tuple(out)


def content(p: Poly) -> tuple[int, Mono]:
    """gcd of the coefficients and the monomial common to all terms."""
    g = 0
    common: Mono | None = None
    for m, c in p.items():
        g = gcd(g, c)
        common = m if common is None else mono_common(common, m)
    return g, common or ()


def _trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero (b > 0): keeps remainder coefficients' signs."""
    return a // b if a >= 0 else -((-a) // b)


def split(p: Poly, d: ArithExpr) -> tuple[Poly, Poly]:
    """Write p = q*d + r taking out of p every multiple of d that is visible
    term by term.  Coefficients are reduced toward zero, so r keeps the signs
    of p's terms.  q is empty when nothing could be taken out."""
    dt = list(term_list(d))
    q: Poly = {}
    r: Poly = {}
    if len(dt) == 1:
        dm, dc = dt[0]
        if dc <= 0:
            return q, dict(p)
        for m, c in p.items():
            rest = mono_div(m, dm)
            if rest is None:
                r[m] = r.get(m, 0) + c
                continue
            qa = _trunc_div(c, dc)
            if qa:
                q[rest] = q.get(rest, 0) + qa
            if c - qa * dc:
                r[m] = r.get(m, 0) + c - qa * dc
        return q, r
    # divisor with several terms: greedy exact division on matching terms
    r = dict(p)
    if len(dt) > 4 or len(p) > 16:
        return q, r
    lead_m, lead_c = max(dt, key=lambda mc: (len(mc[0]), _mono_key(mc[0])))
    if not lead_m:
        return q, r
    for m in list(p):
        c = r.get(m, 0)
        if not c or c % lead_c:
            continue
        rest = mono_div(m, lead_m)
        if rest is None:
            continue
        k = c // lead_c
        need = {mono_mul(rest, dm): k * dc for dm, dc in dt}
        if all(r.get(mm, 0) * v > 0 and abs(r[mm]) >= abs(v) for mm, v in need.items()):
            for mm, v in need.items():
                r[mm] -= v
            q[rest] = q.get(rest, 0) + k
    return q, {m: c for m, c in r.items() if c}


__all__ = [
    "Mono",
    "Poly",
    "add_into",
    "assemble",
    "content",
    "keyof",
    "make_term",
    "mono_common",
    "mono_div",
    "mono_mul",
    "poly_mul",
    "poly_of",
    "split",
    "term_list",
]
