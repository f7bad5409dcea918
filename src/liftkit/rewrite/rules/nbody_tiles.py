"""Local-memory tiles of an all-pairs reduction (the N-Body shape of NVIDIA's SDK, `nbody_nvidia`).

A map over one array whose function folds over a *second* array that does not depend on the
element,

    map(λp. map(λa. g(p, a)) ∘ reduceSeq(λ(acc, q). f(acc, p, q), z))(ys))(xs)

reads all of `ys` once per element of `xs`. On a GPU the work-items of a work-group share those
reads: each group takes wg elements of xs, the group copies ys tile by tile (wg at a time) into
local memory, and every work-item folds over the tile in local memory, its accumulator in
private memory across tiles:

    split 1 ∘ join ∘ mapWrg(0)(λchunk. toGlobal(mapLcl(0)(λ(p, a). g(p, a)))(zip(chunk,
        join(reduceSeq(λ(accs, tile). (λlt. join(mapLcl(0)(λ(a, p).
                reduceSeq(λ(acc, q). f(acc, p, q), a)(lt))(zip(accs, chunk))))
            (toLocal(mapLcl(0)(id))(tile)), toPrivate(mapLcl(0)(id))([z]_wg))(split wg ys))))
    )(split wg xs)

It is one rule (a macro in effect: splitting, the interchange of the map with the fold over
tiles and the memory placement at once), because its intermediate forms are not programs the
other rules reach. Folding tile by tile is the same left fold over ys (reduceSeq's order is
kept), so the meaning is unchanged; it is soundness-tested in tests/rewrite/test_nbody_tiles.py.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit.arith import cst, divides
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, free_params, substitute
from liftkit.ir.userfuns import id_of
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import call, fresh, lam
from liftkit.types import ArrayType, ScalarType, TupleType, VectorType

Options = list[dict[str, Any]]
SOURCE = "liftkit extension (the NVIDIA SDK N-Body kernel; seed 000 §7's N-Body benchmark)"
WORK_GROUPS = (64, 128, 256)


def _shape(site: Site) -> Optional[tuple[Param, Lambda, Lambda, Literal, Expr]]:
    """(p, λa. g, λ(acc, q). f, z, ys) when the site has the shape in the module docstring."""
    if type(site.f) is not P.Map or len(site.call.args) != 1:
        return None
    fn = site.f.f  # type: ignore[attr-defined]
    if not (isinstance(fn, Lambda) and len(fn.params) == 1 and isinstance(fn.body, FunCall)):
        return None
    p, body = fn.params[0], fn.body
    if type(body.f) is not P.Map or len(body.args) != 1:
        return None
    g, inner = body.f.f, body.args[0]  # type: ignore[attr-defined]
    if not (isinstance(g, Lambda) and len(g.params) == 1 and isinstance(inner, FunCall)
            and type(inner.f) is P.ReduceSeq and len(inner.args) == 2):
        return None
    f = inner.f.f  # type: ignore[attr-defined]
    z, ys = inner.args
    if not (isinstance(f, Lambda) and len(f.params) == 2 and isinstance(z, Literal)):
        return None
    if p in free_params(ys):  # the second array must not depend on the element
        return None
    return p, g, f, z, ys


def _lanes(t: Any) -> bool:
    return isinstance(t, (ScalarType, VectorType))


def at_all_pairs(site: Site) -> bool:
    """The site has the rule's shape (a cheap test for the search's macro)."""
    return _shape(site) is not None


def _choices(site: Site) -> Options:
    found = _shape(site)
    if found is None or site.inside(P.ParallelMap, P.AbstractReduce, P.Iterate):
        return []
    xs_t = site.arg_types[0]
    ys_t = site.type_of(found[4])
    if not (isinstance(xs_t, ArrayType) and isinstance(ys_t, ArrayType) and _lanes(found[3].type)):
        return []
    return [{"wg": w} for w in WORK_GROUPS
            if divides(cst(w), xs_t.length) is not False and divides(cst(w), ys_t.length) is not False]


def _zeros(z: Literal, wg: int) -> Literal:
    t = z.type
    dtype = t.dtype if isinstance(t, ScalarType) else t.elem.dtype  # type: ignore[union-attr]
    return Literal(np.array([z.value] * wg, dtype=dtype), ArrayType(t, cst(wg)))


def _build(site: Site, wg: int) -> Expr:
    p, g, f, z, ys = _shape(site)  # type: ignore[misc]
    acc_t = z.type
    xs = site.call.args[0]
    ident = id_of(acc_t)
    q_t = site.type_of(ys).elem  # type: ignore[union-attr]

    def get(i: int, e: Expr) -> Expr:
        return call(P.Get(cst(i)), e)

    def tile_step(chunk: Param) -> Lambda:
        def step(accs: Param, tile: Param) -> Expr:
            def per_item(apv: Param) -> Expr:
                f2: Lambda = fresh(substitute(f, {p: get(1, apv)}))
                return call(P.ReduceSeq(f2), get(0, apv), lt)

            lt = Param("lt")
            body = call(P.Join(), call(P.MapLcl(lam(1, per_item, ("a_p",)), 0),
                                       call(P.Zip(2), accs, chunk)))
            return call(Lambda((lt,), body),
                        call(P.ToLocal(lam(1, lambda t: call(P.MapLcl(lam(1, lambda x: call(
                            id_of(q_t), x), ("q",)), 0), t), ("tile_",))), tile))

        return lam(2, step, ("accs", "tile"))

    def per_group(chunk: Param) -> Expr:
        init = call(P.ToPrivate(lam(1, lambda zs: call(P.MapLcl(lam(1, lambda x: call(ident, x), ("z",)), 0),
                                                             zs), ("zs",))),
                    _zeros(z, wg))
        accs = call(P.Join(), call(P.ReduceSeq(tile_step(chunk)), init,
                                   call(P.Split(cst(wg)), ys)))
        out = lam(1, lambda pa: substitute(g.body, {p: get(0, pa), g.params[0]: get(1, pa)}),
                  ("p_a",))
        return call(P.ToGlobal(lam(1, lambda v: call(P.MapLcl(out, 0), v), ("pairs",))),
                    call(P.Zip(2), chunk, accs))

    return call(P.Split(cst(1)), call(P.Join(), call(
        P.MapWrg(lam(1, per_group, ("chunk",)), 0), call(P.Split(cst(wg)), xs))))


NBODY_TILES = make_rule(
    "nbody-local-tiles",
    "map(λp. map(g p) ∘ reduceSeq(λ(acc, q). f(acc, p, q), z) ys) xs → split 1 ∘ join ∘ "
    "mapWrg(λchunk. toGlobal(mapLcl(g)) ∘ zip(chunk, join ∘ reduceSeq(λ(accs, tile). "
    "join ∘ mapLcl(λ(a, p). reduceSeq(f p, a)(toLocal(mapLcl id) tile)) ∘ zip(accs, chunk), "
    "toPrivate(mapLcl id) [z]_wg) ∘ split wg ys)) ∘ split wg xs   (wg divides both lengths)",
    SOURCE, _choices, _build, lowering=True, reshapes=True)

NBODY_RULES: tuple = (NBODY_TILES,)
