"""mm-tiles-lower (and so mm-local-tiles) in small rules, one per step (rules/mm.py builds
what they make in sequence, `lowered_tiles`; tests/rewrite/test_mm_rules.py checks both agree):

* `mm-tiles-stage-local` (wx, wy): mm-tile-2d's tiled product → one work-group of wx×wy
  work-items per tile of C, each tile pair copied into local memory cooperatively in rounds
  (scalars), the tile's product from the copies still high-level;
* `mm-tiles-vectorize` (w): those copies as float4/double2 vectors (and so, later, the block
  loads);
* `mm-tiles-blocks`: each work-item accumulates a (tm/wy)×(tn/wx) register block of the tile
  (the kernel `local_tiles` with its K steps a loop), in one step, or in two: `mm-tiles-work-items`, the blocks accumulated in place from the local
  copies (no register copies), then `mm-tiles-private`, the blocks and a K step's values of A and
  B copied to registers and the tile written back to global memory;
* `mm-tiles-unroll`: that loop unrolled (`reduceSeq` → `reduceSeqUnroll`).

The staged form is recognised as mm-tiles-lower recognises the tiled one: compared, up to
parameter names, with a rebuilt copy, so nothing a later rewrite changed is lowered.
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit import dsl as D
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, walk
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.rewrite.rules.mm import (BLOCKS, SOURCE, Options, _is_k_steps, _same, _tile_pieces,
                                     _tiles_ok, _zeros4, local_tiles, tiled_parts)
from liftkit.rewrite.rules.mm_match import ELEM_WIDTHS, FLOAT32, _NOT_AROUND, Elem, _funs, _product
from liftkit.types import ArrayType, ScalarType


def staged_local(a: Expr, b: Expr, tm: int, tn: int, tk: int, wx: int, wy: int, w: int = 4,
                 e: Elem = FLOAT32) -> Expr:
    """C = A·B tiled (mm-tile-2d's tm×tn×tk) with one work-group per tile of C and each tile
    pair copied into local memory cooperatively by the group's wx×wy work-items (float-w
    rounds); the tile's product from the local copies is still high-level (no register blocks)."""
    if tm % wy or tn % wx or not _tiles_ok(tm, tn, tk, tm // wy, tn // wx, w, e.widths):
        raise ValueError(f"inconsistent staging tm={tm} tn={tn} tk={tk} wx={wx} wy={wy} w={w} for {e.t}")
    idw = e.id(w)
    a_tiles, b_tiles, rounds = _tile_pieces(tm, tn, tk, wx, wy, w)
    scalars: tuple[Any, ...] = (D.map(D.asScalar),) if w > 1 else ()
    from_local = lambda row: D.compose(*scalars, D.split(row), D.join, D.map(D.join))  # noqa: E731

    def update(acc: Any, l_a: Any, l_b: Any) -> Any:
        return D.map(lambda acc_a: D.join << D.map(
            lambda acc_b: D.reduce(e.add, acc_b[0]) << D.map(e.mult) << D.zip(acc_a[1], acc_b[1]))
            << D.zip(acc_a[0], D.transpose << l_b)) << D.zip(acc, l_a)

    def step(acc: Any, tiles: Any) -> Any:
        copy = lambda: D.toLocal(D.mapSeqUnroll(D.mapLcl(1)(D.mapLcl(0)(idw))))  # noqa: E731
        return D.let(copy() << rounds(tiles[0]), copy() << rounds(tiles[1]), lambda lA, lB:
                     update(acc, from_local(tk // w)(lA), from_local(tn // w)(lB)))

    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose
                                  << D.mapWrg(0)(lambda b_col: D.join
                                                 << D.reduceSeq(step, _zeros4((tm, tn), 1, e))
                                                 << D.zip(a_row, b_col))
                                  << b_tiles(b)) << a_tiles(a))


def _chain_split(x: Any) -> Optional[tuple[int, Expr]]:
    """(n, X) for the outermost `split n $ X` along the first arguments of x's calls."""
    while isinstance(x, FunCall) and x.args:
        if type(x.f) is P.Split and const(x.f.n) is not None:
            return const(x.f.n), x.args[0]  # type: ignore[return-value]
        x = x.args[0]
    return None


def _tile_nest(site: Site) -> Optional[tuple[list[Any], Any, Any]]:
    """(the nodes of the work-group body, A's and B's tile splits) when the site is
    `join ∘ mapWrg(1)(λ… mapWrg(0) …)` over split rows of A, the shape every tiled step makes."""
    if type(site.f) is not P.Join or site.inside(*_NOT_AROUND):
        return None
    m = site.call.args[0]
    if not (isinstance(m, FunCall) and type(m.f) is P.MapWrg and isinstance(m.f.f, Lambda)):
        return None
    body = list(walk(m.f.f))
    wrg0 = [n for n in body if isinstance(n, FunCall) and type(n.f) is P.MapWrg]
    if len(wrg0) != 1:
        return None
    return body, _chain_split(m.args[0]), _chain_split(wrg0[0].args[0])


def staged_parts(site: Site) -> Optional[tuple[Expr, Expr, int, int, int, int, int, int, Elem]]:
    """(A, B, tm, tn, tk, wx, wy, w, elem) when the site is exactly what mm-tiles-stage-local
    makes (compared up to parameter names with a rebuilt copy)."""
    from liftkit.rewrite.core import normalize

    nest = _tile_nest(site)
    if nest is None or not any(isinstance(n, P.ToLocal) for n in nest[0]):
        return None
    body, ta, tb = nest
    zeros = [n for n in body if isinstance(n, Literal) and isinstance(n.type, ArrayType)
             and isinstance(n.type.elem, ArrayType) and isinstance(n.type.elem.elem, ScalarType)]
    if ta is None or tb is None or len(zeros) != 1:
        return None
    (tm, a), (tk, b) = ta, tb
    tn = const(zeros[0].type.elem.length)  # type: ignore[union-attr]
    a_t = site.type_of(a)
    et = a_t.elem.elem if isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType) else None
    if tn is None or not isinstance(et, ScalarType) or et not in ELEM_WIDTHS:
        return None
    mults = {u for n in body if isinstance(n, P.Map) for u in [_product(et, n.f)] if u is not None}
    if len(mults) != 1:
        return None
    e = Elem(et, mults.pop())
    vws = {const(n.n) for n in body if isinstance(n, P.AsVector)}
    splits = {const(n.n) for n in body if isinstance(n, P.Split)} - {None}
    w = vws.pop() if len(vws) == 1 else 1
    # the rounds split by wx and by wx·wy (the work-group size)
    groups = sorted((wx, g // wx) for wx in splits for g in splits  # type: ignore[operator]
                    if g % wx == 0 and tn % wx == 0 and tm % (g // wx) == 0)  # type: ignore[operator]
    for wx, wy in groups:
        if not _tiles_ok(tm, tn, tk, tm // wy, tn // wx, w, e.widths):
            continue
        try:
            want = normalize(D.fun([a_t, site.type_of(b)],  # type: ignore[list-item]
                                   lambda x, y: staged_local(x, y, tm, tn, tk, wx, wy, w, e)))
        except Exception:  # noqa: BLE001 - no such staging of these arguments
            continue
        sub = {want.params[0].uid: a, want.params[1].uid: b}  # type: ignore[union-attr]
        if _same(want.body, site.call, sub):  # type: ignore[union-attr]
            return a, b, tm, tn, tk, wx, wy, w, e  # type: ignore[return-value]
    return None


def _choices_stage(site: Site) -> Options:
    parts = tiled_parts(site)
    if parts is None:
        return []
    _, _, tm, tn, tk, e = parts
    return [dict(c) for c in dict.fromkeys(
        (("wx", tn // rn), ("wy", tm // rm)) for w in e.widths for rm, rn in BLOCKS
        if _tiles_ok(tm, tn, tk, rm, rn, w, e.widths))]


def _build_stage(site: Site, wx: int, wy: int) -> Expr:
    parts = tiled_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, e = parts
    return staged_local(fresh(a), fresh(b), tm, tn, tk, wx, wy, 1, e)


MM_TILES_STAGE_LOCAL = make_rule(
    "mm-tiles-stage-local",
    "join ∘ map(λaRows. map(join) ∘ transpose ∘ map(λbCols. tm×tn dot products of K/tk partial "
    "sums) ∘ split tn ∘ transpose $ B) ∘ split tm $ A → join ∘ mapWrg(1)(λaRow. map(join) ∘ "
    "transpose ∘ mapWrg(0)(λbCol. join ∘ reduceSeq(λ(acc, (a, b)). let lA = toLocal(copy rounds "
    "a), lB = toLocal(copy rounds b) in acc + lA·lB, 0) $ zip(aRow, bCol)) ∘ tiles(tk, tn) $ B) "
    "∘ tiles(tm, tk) $ A   (scalar copies by wx×wy work-items in rounds)",
    SOURCE + ": local-memory tiles with cooperative copies (the tile product still high-level)",
    _choices_stage, _build_stage, lowering=True, reshapes=True, opaque=False)


def _choices_vectorize(site: Site) -> Options:
    parts = staged_parts(site)
    if parts is None or parts[7] != 1:
        return []
    _, _, tm, tn, tk, wx, wy, _, e = parts
    return [{"w": w} for w in e.widths if w > 1 and _tiles_ok(tm, tn, tk, tm // wy, tn // wx, w, e.widths)]


def _build_vectorize(site: Site, w: int) -> Expr:
    parts = staged_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, wx, wy, _, e = parts
    return staged_local(fresh(a), fresh(b), tm, tn, tk, wx, wy, w, e)


MM_TILES_VECTORIZE = make_rule(
    "mm-tiles-vectorize",
    "the staged form of mm-tiles-stage-local with scalar copies → the same with the tiles' rows "
    "copied as w-wide vectors (toLocal(mapSeqUnroll(mapLcl(1)(mapLcl(0)(id4)))) ∘ … ∘ "
    "map(asVector w), read back through asScalar); mm-tiles-blocks then loads vectors too",
    SOURCE + ": vectorised (float4, double2) tile copies and block loads", _choices_vectorize,
    _build_vectorize, lowering=True, reshapes=True, opaque=False)


def _choices_blocks_of_tiles(site: Site) -> Options:
    return [] if staged_parts(site) is None else [{}]


def _build_blocks_of_tiles(site: Site) -> Expr:
    parts = staged_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, wx, wy, w, e = parts
    return local_tiles(fresh(a), fresh(b), tm, tn, tk, tm // wy, tn // wx, 0, w, e)


MM_TILES_BLOCKS = make_rule(
    "mm-tiles-blocks",
    "the staged form of mm-tiles-stage-local → mapLcl(1)(mapLcl(0)(each of the wx×wy work-items "
    "accumulates a (tm/wy)×(tn/wx) block of the tile in private memory (float-w register blocks, "
    "the K steps a loop)))",
    SOURCE + ": 1D/2D register blocking over local-memory tiles", _choices_blocks_of_tiles,
    _build_blocks_of_tiles, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# mm-tiles-blocks in two steps: the work-items' blocks (accumulated in place), then registers


def _build_work_items(site: Site) -> Expr:
    parts = staged_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, wx, wy, w, e = parts
    return local_tiles(fresh(a), fresh(b), tm, tn, tk, tm // wy, tn // wx, 0, w, e, private=False)


MM_TILES_WORK_ITEMS = make_rule(
    "mm-tiles-work-items",
    "the staged form of mm-tiles-stage-local → mapLcl(1)(mapLcl(0)(each of the wx×wy work-items "
    "accumulates a (tm/wy)×(tn/wx) block of the tile from the local copies (float-w loads and "
    "blocks, the K steps a loop), in place: no register copies yet))",
    SOURCE + ": 1D/2D blocking of a local-memory tile over its work-items", _choices_blocks_of_tiles,
    _build_work_items, lowering=True, reshapes=True, opaque=False)


def _dims(t: Any, depth: int) -> Optional[list[int]]:
    """The constant lengths of t's depth outer array dimensions."""
    out = []
    for _ in range(depth):
        n = const(t.length) if isinstance(t, ArrayType) else None
        if n is None:
            return None
        out.append(n)
        t = t.elem
    return out


def blocked_parts(site: Site) -> Optional[tuple[Expr, Expr, int, int, int, int, int, int, Elem]]:
    """(A, B, tm, tn, tk, rm, rn, w, elem) when the site is exactly what mm-tiles-work-items
    makes (compared up to parameter names with a rebuilt copy; the product is the type's `mult`
    or, for complex types, `multConj`)."""
    from liftkit.rewrite.core import normalize

    nest = _tile_nest(site)
    if nest is None or any(isinstance(n, (P.ToPrivate, P.ToGlobal)) for n in nest[0]):
        return None
    body, ta, tb = nest
    zeros = [d for n in body if isinstance(n, Literal) for d in [_dims(n.type, 4)] if d is not None]
    if ta is None or tb is None or len(zeros) != 1:
        return None
    (tm, a), (tk, b) = ta, tb
    wy, wx, rm, rnw = zeros[0]
    a_t = site.type_of(a)
    et = a_t.elem.elem if isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType) else None
    if not isinstance(et, ScalarType) or et not in ELEM_WIDTHS or tm != wy * rm:
        return None
    vws = {const(n.n) for n in body if isinstance(n, P.AsVector)}
    w = vws.pop() if len(vws) == 1 else 1
    rn = rnw * w
    funs = _funs(et)
    for mult in dict.fromkeys([funs.mult] + ([funs.multConj] if et.is_complex else [])):
        e = Elem(et, mult)
        if not _tiles_ok(tm, wx * rn, tk, rm, rn, w, e.widths):
            continue
        try:
            want = normalize(D.fun([a_t, site.type_of(b)],  # type: ignore[list-item]
                                   lambda x, y: local_tiles(x, y, tm, wx * rn, tk, rm, rn, 0, w, e,
                                                            private=False)))
        except Exception:  # noqa: BLE001 - no such blocking of these arguments
            continue
        sub = {want.params[0].uid: a, want.params[1].uid: b}  # type: ignore[union-attr]
        if _same(want.body, site.call, sub):  # type: ignore[union-attr]
            return a, b, tm, wx * rn, tk, rm, rn, w, e  # type: ignore[return-value]
    return None


def _choices_private(site: Site) -> Options:
    return [] if blocked_parts(site) is None else [{}]


def _build_private(site: Site) -> Expr:
    parts = blocked_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, rm, rn, w, e = parts
    return local_tiles(fresh(a), fresh(b), tm, tn, tk, rm, rn, 0, w, e)


MM_TILES_PRIVATE = make_rule(
    "mm-tiles-private",
    "the work-items' blocks of mm-tiles-work-items → the same with each block accumulated in "
    "registers (toPrivate(mapLcl(1)(mapLcl(0)(copy))) of the start, toPrivate copies of a K "
    "step's values of A and B, the tile written back by toGlobal(mapLcl(1)(mapLcl(0)(copy))))",
    SOURCE + ": register blocks in private memory", _choices_private, _build_private,
    lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# mm-tiles-unroll: the unrolling step of mm-local-tiles / mm-tiles-lower as a rule of its own

MAX_UNROLL = 64  # the most K steps (tk/w) of a tile unrolled


def _choices_unroll(site: Site) -> Options:
    if not _is_k_steps(site.f, site.call.args[0], site.inside(P.MapLcl)):
        return []
    xs = site.arg_types[1] if len(site.arg_types) > 1 else None
    n = const(xs.length) if isinstance(xs, ArrayType) else None
    return [{}] if n is not None and n <= MAX_UNROLL else []


def _build_unroll(site: Site) -> Expr:
    return FunCall(P.ReduceSeqUnroll(site.f.f), site.call.args)  # type: ignore[attr-defined]


MM_TILES_UNROLL = make_rule(
    "mm-tiles-unroll",
    "mapLcl(… reduceSeq(λ(regs, (a, b)). register block += a·b, toPrivate(copy) acc) $ K steps "
    "of a tile …) → mapLcl(… reduceSeqUnroll(…) …)   (a constant number of K steps)",
    SOURCE + ": unrolling the K steps of a tile (the register blocks stay registers)",
    _choices_unroll, _build_unroll, lowering=True)


MM_STEP_RULES: tuple[Rule, ...] = (MM_TILES_STAGE_LOCAL, MM_TILES_VECTORIZE, MM_TILES_BLOCKS, MM_TILES_UNROLL,
                                   MM_TILES_WORK_ITEMS, MM_TILES_PRIVATE)
"""The steps in the order they apply (mm-tiles-blocks is mm-tiles-work-items then mm-tiles-private
in one step; rules/__init__.py puts them in `MM_RULES` between `mm-tiles-lower` and
`mm-private-blocks`)."""
