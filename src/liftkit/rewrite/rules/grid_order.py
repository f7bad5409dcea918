"""The order in which a GPU runs a tile grid's work-groups (issue 15: DGEMM 8192³ on the H100).

A two-dimensional grid of work-groups, mapWrg(1) over A's row tiles and mapWrg(0) over B's
column tiles, is started in the order of its linear id (dimension 0 fastest): the groups resident
at once cover one or two rows of tiles and every column tile, so each k-slice of the whole of B
goes through the L2 cache once per row of tiles. Started in groups of `g` row tiles instead (the
rows of a group fastest, then the columns, then the groups: CUTLASS's and Triton's grouped
"swizzle"), the resident groups cover g rows × (resident / g) columns, and B's columns are read
from memory Mt / g times instead of about Mt / 2.

- `wrg-row-groups` (g):
  `mapWrg(1)(λr. K ∘ mapWrg(0)(λc. f(r, c)) $ Ys) $ Xs`
  `→ join ∘ mapWrg(2)(λgrp. map(K) ∘ transpose ∘ mapWrg(1)(λc. mapWrg(0)(λr. f(r, c)) $ grp) $ Ys) ∘ split(g) $ Xs`
  where K and Ys do not use r: the two maps interchanged over groups of g of Xs's elements
  (map interchange and split-join), so the result is the same array, element for element; only
  which work-group computes which element changes. Xs's length must be a multiple of g (split's
  type rule states it, and liftkit.blas's multiples follow). Nothing here is specific to the
  matrix product: any two nested work-group maps of that shape may take it (the DMMA tiles of
  mm-tensor-cores, the FFMA tiles of mm-local-tiles / mm-tiles-async).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Param, free_params, walk
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import call, factor_choices, fresh

Options = list[dict[str, Any]]

GROUPS = (8, 4, 16, 2)  # row tiles per group offered, the H100's best guess first


def _parts(site: Site) -> Optional[tuple[Param, list[Any], FunCall, Lambda]]:
    """(r, the functions K applies outermost first, mapWrg(0)'s call, its λc. f(r, c)) where
    the site is mapWrg(1)(λr. K ∘ mapWrg(0)(λc. f) $ Ys) $ Xs with K and Ys free of r, outside
    every work-group map and with no third grid dimension in use."""
    f = site.f
    if not (isinstance(f, P.MapWrg) and f.dim == 1 and isinstance(f.f, Lambda) and len(f.f.params) == 1):
        return None
    if site.inside(P.MapWrg, P.MapGlb, P.MapLcl) or len(site.call.args) != 1:
        return None
    if any(isinstance(n, P.ParallelMap) and n.dim >= 2 for n in walk(site.program)):
        return None
    r, e, ks = f.f.params[0], f.f.body, []
    while isinstance(e, FunCall) and len(e.args) == 1 and not (
            isinstance(e.f, P.MapWrg) and e.f.dim == 0):
        if r in free_params(e.f):
            return None
        ks.append(e.f)
        e = e.args[0]
    if not (isinstance(e, FunCall) and isinstance(e.f, P.MapWrg) and e.f.dim == 0
            and isinstance(e.f.f, Lambda) and len(e.f.f.params) == 1 and len(e.args) == 1):
        return None
    if r in free_params(e.args[0]):
        return None
    inner = e.f.f
    if any(isinstance(n, P.MapWrg) for n in walk(inner.body)):
        return None
    return r, ks, e, inner


def _choices(site: Site) -> Options:
    found = _parts(site)
    if found is None:
        return []
    length = site.arg_types[0].length  # type: ignore[attr-defined]
    ok = set(factor_choices(length))
    return [{"g": g} for g in GROUPS if g in ok]


def _build(site: Site, g: int) -> Expr:
    from liftkit import dsl as D

    r, ks, wrg0, inner = _parts(site)  # type: ignore[misc]
    c = inner.params[0]
    grp = Param("grp")
    rows = call(P.MapWrg(Lambda((r,), inner.body), 0), grp)  # λr. f(r, c) over the group
    grid = call(P.MapWrg(Lambda((c,), rows), 1), wrg0.args[0])  # [Nt][g] …
    v = Param("v")
    k_body: Expr = v
    for k in reversed(ks):
        k_body = call(k, k_body)
    per_group = call(D.map(Lambda((v,), k_body)), call(D.transpose, grid))
    groups = call(P.MapWrg(Lambda((grp,), per_group), 2), call(D.split(g), site.call.args[0]))
    return fresh(call(D.join, groups))


WRG_ROW_GROUPS = make_rule(
    "wrg-row-groups",
    "mapWrg(1)(λr. K ∘ mapWrg(0)(λc. f) $ Ys) $ Xs → join ∘ mapWrg(2)(λgrp. map(K) ∘ transpose ∘ "
    "mapWrg(1)(λc. mapWrg(0)(λr. f) $ grp) $ Ys) ∘ split g $ Xs   (K, Ys free of r: the "
    "work-groups started g rows of the grid at a time, rows fastest)",
    "issue 15 (L2 reuse of a tile grid: grouped block order)", _choices, _build, reshapes=True,
    opaque=False)

GRID_ORDER_RULES: tuple[Rule, ...] = (WRG_ROW_GROUPS,)
