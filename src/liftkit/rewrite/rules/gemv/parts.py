"""What every GEMV rule shares: the dot-row shape it matches, the real matrix it reads, the
vector widths it may use, the local-memory tree that finishes a work-group's sum, and the
rule factory (each rule reads its site once for its choices and once for its build)."""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional, Sequence

from liftkit.arith import cst
from liftkit.arith.simplify import divides
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, UserFun, free_params
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import assoc_comm, fresh, identity_literal, operator
from liftkit.types import ArrayType, ScalarType, bool_


def fits(n: Any, k: int) -> bool:
    return divides(cst(k), n) is not False


def real_matrix(site: Site, a: Expr, complex_ok: bool = False
                ) -> Optional[tuple[ScalarType, Any, Any]]:
    """(element type, rows, row length) of a matrix of a real scalar type (or a complex one,
    `complex_ok`)."""
    at = site.type_of(a)
    if not (isinstance(at, ArrayType) and isinstance(at.elem, ArrayType)):
        return None
    t = at.elem.elem
    if not (isinstance(t, ScalarType) and t != bool_ and (complex_ok or not t.is_complex)):
        return None
    return t, at.length, at.elem.length


class Dots(NamedTuple):
    """join ∘ map(λrow. [map(s) ∘] reduce(op, z) ∘ map(m) $ zip(row, x)) $ rows."""

    s: Optional[Any]
    op: UserFun
    m: UserFun
    z: Expr
    rows: Expr
    x: Expr


def dot_rows(call: Any, scaled: bool = False) -> Optional[Dots]:
    """The dot product of every row with x, when `call` is one: ⊕ associative and commutative,
    m a binary user function, x not depending on the row; `scaled`: each row's sum mapped by s
    (gemv's α·), else none."""
    if not (isinstance(call, FunCall) and type(call.f) is P.Join and isinstance(call.args[0], FunCall)):
        return None
    rows = call.args[0]
    if not (type(rows.f) is P.Map and isinstance(rows.f.f, Lambda) and len(rows.f.f.params) == 1):
        return None
    row, red = rows.f.f.params[0], rows.f.f.body
    s = None
    if scaled:
        if not (isinstance(red, FunCall) and type(red.f) is P.Map):
            return None
        s, red = red.f.f, red.args[0]
    if not (isinstance(red, FunCall) and type(red.f) is P.Reduce):
        return None
    z, prods = red.args
    if not (isinstance(prods, FunCall) and type(prods.f) is P.Map):
        return None
    zr = prods.args[0]
    if not (isinstance(zr, FunCall) and type(zr.f) is P.Zip and len(zr.args) == 2
            and zr.args[0] is row and row not in free_params(zr.args[1])):
        return None
    op, m = assoc_comm(red.f.f), operator(prods.f.f)
    if op is None or m is None or m.arity != 2:
        return None
    return Dots(s, op, m, z, rows.args[0], zr.args[1])


class Gemv(NamedTuple):
    """map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(op, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y):
    the BLAS form, α·op(A)·x + β·y (h the sum, s the α·, g the β·)."""

    h: Any
    s: Any
    op: UserFun
    m: UserFun
    z: Expr
    a: Expr
    x: Expr
    g: Any
    y: Expr


def gemv_parts(f: Any, call: FunCall, transposed: bool) -> Optional[Gemv]:
    """gemv's high-level body when `call` (of f) is one whose rows are A's (transposed=False)
    or transpose(A)'s (True), A and x program inputs."""
    if type(f) is not P.Map or not isinstance(f.f, Lambda):
        return None
    zp = call.args[0]
    if not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and len(zp.args) == 2):
        return None
    ax, gy = zp.args
    if not (isinstance(gy, FunCall) and type(gy.f) is P.Map):
        return None
    d = dot_rows(ax, scaled=True)
    if d is None:
        return None
    a = d.rows
    if transposed:
        if not (isinstance(a, FunCall) and type(a.f) is P.Transpose and len(a.args) == 1):
            return None
        a = a.args[0]
    if not (isinstance(a, Param) and isinstance(d.x, Param)):
        return None  # rows and x read as vectors: the kernel's input arrays themselves
    return Gemv(f.f, d.s, d.op, d.m, d.z, a, d.x, gy.f.f, gy.args[0])


def gemv_at(site: Site, transposed: bool, complex_ok: bool = False
            ) -> Optional[tuple[Gemv, ScalarType, Any, Any]]:
    """(parts, element type, M, N) where the site is gemv's body outside any other map, A a
    matrix and x a vector of one real scalar type (or complex, `complex_ok`)."""
    if site.enclosing:
        return None
    parts = gemv_parts(site.f, site.call, transposed)
    if parts is None:
        return None
    shape = real_matrix(site, parts.a, complex_ok)
    xt = site.type_of(parts.x)
    if shape is None or not (isinstance(xt, ArrayType) and xt.elem == shape[0]):
        return None
    return (parts, *shape)


def alpha_beta(parts: Gemv, sums: Any, ys: Any, private_s: bool = True) -> Any:
    """mapSeq(h) $ zip(mapSeq(s) $ sums, mapSeq(g) $ ys): the BLAS form's α·(A·x) + β·y of a
    work-item's sums and elements of y (α·'s and β·'s results in private memory)."""
    from liftkit import dsl as D

    h, s = D.mapSeq(fresh(parts.h)), D.mapSeq(fresh(parts.s))
    return h << D.zip((D.toPrivate(s) if private_s else s) << sums,
                      D.toPrivate(D.mapSeq(fresh(parts.g))) << ys)


def vector_widths(op: UserFun, m: UserFun, widths: Sequence[int], vector_m: bool) -> list[int]:
    """The widths whose vector ⊕ has an identity (and, `vector_m`, whose m has a vector form);
    1 (scalars) always."""
    out = []
    for w in widths:
        if w > 1:
            vop = op.vectorize(w)
            if identity_literal(vop, vop.out_type) is None:
                continue
            if vector_m:
                try:
                    m.vectorize(w)
                except Exception:  # noqa: BLE001 - a product with no vector form
                    continue
        out.append(w)
    return out


def vector_ops(op: UserFun, m: Optional[UserFun], t: ScalarType, w: int) -> tuple[Any, Any, Literal]:
    """(⊕⟨w⟩, m⟨w⟩ (None without m), ⊕⟨w⟩'s identity) for width w; for w = 1 the scalar ones."""
    vop = op.vectorize(w) if w > 1 else op
    e = identity_literal(vop, vop.out_type if w > 1 else t)
    assert e is not None
    return vop, None if m is None else m.vectorize(w) if w > 1 else m, e


def as_vectors(w: int) -> Callable[[Any], Any]:
    """asVector w, or nothing for w = 1 (scalars)."""
    from liftkit import dsl as D

    return (lambda v: D.asVector(w) << v) if w > 1 else (lambda v: v)


def every_rth_row(cols: Any, v: Any, r: int) -> Any:
    """[r][M/r] pairs (rows j, j+r, … of a block of columns; v's elements j, j+r, …): the r row
    groups of a split reduction over the rows, each walking A's rows in order (coalesced)."""
    from liftkit import dsl as D

    return D.zip(D.transpose << D.split(r) << cols, D.transpose << D.split(r) << v)


def local_tree(op: Any, e: Any, n: int, c: int = 1) -> Any:
    """iterate log₂ n (pairwise ⊕ in local memory): n partials (of each of c values, laid out
    as [n][c]) summed to one per value by a tree."""
    from liftkit import dsl as D

    assert 2 ** int(math.log2(n)) == n
    red = D.join << D.mapLcl(0)(D.reduceSeq(op, e))
    step = red << D.split(2) if c == 1 else \
        red << D.join << D.map(lambda p: D.transpose << D.split(c) << p) << D.split(2 * c)
    return D.iterate(int(math.log2(n)), step)


def site_rule(name: str, fact: str, source: str, at: Callable[[Site], Optional[tuple[Any, ...]]],
              offers: Callable[..., list[dict[str, Any]]], build: Callable[..., Expr]) -> Rule:
    """A lowering rule whose site `at` reads (None: not here): `offers(*found)` lists its
    parameters, `build(*found, **params)` is its rewrite."""

    def choices(site: Site) -> list[dict[str, Any]]:
        found = at(site)
        return [] if found is None else offers(*found)

    def rebuild(site: Site, **params: Any) -> Expr:
        found = at(site)
        assert found is not None
        return build(*found, **params)

    return make_rule(name, fact, source, choices, rebuild, lowering=True, reshapes=True, opaque=False)
