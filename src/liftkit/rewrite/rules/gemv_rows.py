"""Matrix-vector products blocked per work-item for CPUs (and, at the end of the file, in
work-groups of lanes for GPUs: `gemv-lane-rows`, `gemv-lane-columns`): r rows of A (rule
`gemv-row-blocks`, liftkit.blas's codelet `row-blocks`, GEMV N) or k·w columns of A (rule `gemv-column-blocks`,
codelet `column-blocks`, GEMV T: each row's segment read as k vectors of w into k private
accumulators, x's element broadcast; each column summed in the row order, so exact).

    map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y)
  → join ∘ mapGlb(0)(λblk.
        join ∘ mapSeq(λq. mapSeq(h) $ zip(mapSeq(s) ∘ reduceSeq(⊕, z) ∘ asScalar $ q.0,
                                         toPrivate(mapSeq(g)) $ q.1))
        $ zip(split 1 ∘ join ∘ reduceSeq(λ(acc, st). mapSeqUnroll(λp. p.0 ⊕⟨w⟩ m⟨w⟩(p.1, st.1))
                                             $ zip(acc, st.0), toPrivate(⟨e,…,e⟩ × r))
                  $ zip(transpose ∘ map(asVector w ∘ get 0) $ blk, asVector w $ x),
              split 1 ∘ map(get 1) $ blk))
      ∘ split r $ zip(A, y)

Each work-item owns r consecutive rows of A and walks their columns once, w at a time: one
vector of x per step serves all r rows, and the r accumulators are independent chains of vector
operations (a single row's dot product is a chain of dependent additions, which bounds a CPU core
at one vector per addition latency). The lanes of a row's accumulator are summed at the end.
Vectors of w = 16 (float16, double16: as wide as AVX-512 or wider) keep Intel's CPU OpenCL
compiler from packing neighbouring work-items into SIMD lanes, whose rows would be N apart.

Sound where ⊕ is associative and commutative with an identity e (the lanes and rows are summed
in another order, as `vectorize-reduce` does) and x does not depend on the row; A and x are the
program's input arrays (their rows read as vectors), of a real scalar type; M must be a multiple
of r and N of w.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit.arith import cst
from liftkit.arith.simplify import divides
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Param, free_params
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import assoc_comm, fresh, identity_literal, operator
from liftkit.types import ArrayType, ScalarType, bool_
from liftkit.types.core import vector

ROWS = (1, 2, 4, 8)
WIDTHS = (16, 8, 4)


def _parts(site: Site) -> Optional[tuple[Any, ...]]:
    """(h, s, op, m, z, A, x, g, y) when the site is gemv's high-level body (module docstring)."""
    return gemv_parts(site.f, site.call, transposed=False)


def gemv_parts(f: Any, call: FunCall, transposed: bool) -> Optional[tuple[Any, ...]]:
    """(h, s, op, m, z, A, x, g, y) when `call` (of f) is gemv's high-level body whose rows are
    A's (transposed=False) or transpose(A)'s (True), A and x program inputs."""
    if type(f) is not P.Map or not isinstance(f.f, Lambda):
        return None
    zp = call.args[0]
    if not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and len(zp.args) == 2):
        return None
    ax, gy = zp.args
    if not (isinstance(ax, FunCall) and type(ax.f) is P.Join and isinstance(ax.args[0], FunCall)):
        return None
    rows = ax.args[0]
    if not (type(rows.f) is P.Map and isinstance(rows.f.f, Lambda) and len(rows.f.f.params) == 1):
        return None
    if not (isinstance(gy, FunCall) and type(gy.f) is P.Map):
        return None
    a = rows.args[0]
    if transposed:
        if not (isinstance(a, FunCall) and type(a.f) is P.Transpose and len(a.args) == 1):
            return None
        a = a.args[0]
    row, body = rows.f.f.params[0], rows.f.f.body
    if not (isinstance(body, FunCall) and type(body.f) is P.Map):
        return None
    red = body.args[0]
    if not (isinstance(red, FunCall) and type(red.f) is P.Reduce):
        return None
    z, prods = red.args
    if not (isinstance(prods, FunCall) and type(prods.f) is P.Map):
        return None
    zr = prods.args[0]
    if not (isinstance(zr, FunCall) and type(zr.f) is P.Zip and len(zr.args) == 2
            and zr.args[0] is row and row not in free_params(zr.args[1])):
        return None
    if not (isinstance(a, Param) and isinstance(zr.args[1], Param)):
        return None  # rows and x read as vectors: the kernel's input arrays themselves
    op, m = assoc_comm(red.f.f), operator(prods.f.f)
    if op is None or m is None or m.arity != 2:
        return None
    return f.f, body.f.f, op, m, z, a, zr.args[1], gy.f.f, gy.args[0]


def _elem(site: Site, a: Expr, x: Expr) -> Optional[tuple[ScalarType, Any, Any]]:
    """(element type, M, N) where A is a matrix and x a vector of one scalar type."""
    at, xt = site.type_of(a), site.type_of(x)
    if not (isinstance(at, ArrayType) and isinstance(at.elem, ArrayType)
            and isinstance(xt, ArrayType)):
        return None
    t = at.elem.elem
    if not (isinstance(t, ScalarType) and t != bool_ and not t.is_complex and xt.elem == t):
        return None
    return t, at.length, at.elem.length


def _fits(n: Any, k: int) -> bool:
    return divides(cst(k), n) is not False


def _choices(site: Site) -> list[dict[str, Any]]:
    if site.enclosing:
        return []
    parts = _parts(site)
    if parts is None:
        return []
    h, s, op, m, z, a, x, g, y = parts
    found = _elem(site, a, x)
    if found is None:
        return []
    t, rows, cols = found
    out = []
    for w in WIDTHS:
        vop = op.vectorize(w)
        if not _fits(cols, w) or identity_literal(vop, vop.out_type) is None:
            continue
        try:
            m.vectorize(w)
        except Exception:  # noqa: BLE001 - a product with no vector form
            continue
        out += [{"r": r, "w": w} for r in ROWS if _fits(rows, r)]
    return out


def row_blocks(parts: tuple[Any, ...], t: ScalarType, r: int, w: int) -> Expr:
    """The blocked form of gemv's body (see the module docstring)."""
    from liftkit import dsl as D

    h, s, op, m, z, a, x, g, y = parts
    vop, vm = op.vectorize(w), m.vectorize(w)
    e = identity_literal(op, t)
    assert e is not None
    tw = vector(t, w)
    zeros = D.lit(np.full((r, w), e.value, t.dtype), tw[r])
    init = D.toPrivate(D.mapSeqUnroll(D.id_of(tw))) << zeros

    def step(acc: Any, st: Any) -> Any:
        return D.mapSeqUnroll(lambda p: vop(p[0], vm(p[1], st[1]))) << D.zip(acc, st[0])

    def block(blk: Any) -> Any:
        steps = D.zip(D.transpose << D.map(lambda q: D.asVector(w) << D.get(0)(q)) << blk,
                      D.asVector(w) << fresh(x))
        sums = D.split(1) << D.join << D.reduceSeq(step, init) << steps
        ys = D.split(1) << D.map(D.get(1)) << blk
        return D.join << D.mapSeq(lambda q: D.mapSeq(fresh(h)) << D.zip(
            D.mapSeq(fresh(s)) << D.reduceSeq(op, fresh(z)) << D.asScalar << q[0],
            D.toPrivate(D.mapSeq(fresh(g))) << q[1])) << D.zip(sums, ys)

    return D.join << D.mapGlb(0)(block) << D.split(r) << D.zip(fresh(a), fresh(y))


def _build(site: Site, r: int, w: int) -> Expr:
    parts = _parts(site)
    assert parts is not None
    found = _elem(site, parts[5], parts[6])
    assert found is not None
    return row_blocks(parts, found[0], r, w)


GEMV_ROW_BLOCKS = make_rule(
    "gemv-row-blocks",
    "map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y) "
    "→ join ∘ mapGlb(0)(λblk. r rows' lane sums, then h, s, g per row $ reduceSeq(r private "
    "vector accumulators += m⟨w⟩(column vectors of blk, vector of x)) ∘ split r $ zip(A, y)",
    "liftkit.blas CPU GEMV (issue 15): register blocking of rows, wide vectors",
    _choices, _build, lowering=True, reshapes=True, opaque=False)

GEMV_RULES: dict[str, Rule] = {GEMV_ROW_BLOCKS.name: GEMV_ROW_BLOCKS}



# ---------------------------------------------------------------------------------------------
# GEMV T: a block of c = k·w columns per work-item

COLUMN_VECTORS = (1, 2, 4, 8)  # k


def _choices_t(site: Site) -> list[dict[str, Any]]:
    if site.enclosing:
        return []
    parts = gemv_parts(site.f, site.call, transposed=True)
    if parts is None:
        return []
    h, s, op, m, z, a, x, g, y = parts
    found = _elem(site, a, x)
    if found is None:
        return []
    t, rows, cols = found
    out = []
    for w in WIDTHS:
        vop = op.vectorize(w)
        if identity_literal(vop, vop.out_type) is None:
            continue
        out += [{"k": k, "w": w} for k in COLUMN_VECTORS if _fits(cols, k * w)]
    return out


def column_blocks(parts: tuple[Any, ...], t: ScalarType, k: int, w: int) -> Expr:
    """gemv T's body with k·w columns of A per work-item (see GEMV_COLUMN_BLOCKS)."""
    from liftkit import dsl as D

    h, s, op, m, z, a, x, g, y = parts
    vop, c = op.vectorize(w), k * w
    e = identity_literal(op, t)
    assert e is not None
    tw = vector(t, w)
    zeros = D.lit(np.full((k, w), e.value, t.dtype), tw[k])
    init = D.toPrivate(D.mapSeqUnroll(D.id_of(tw))) << zeros

    def step(acc: Any, st: Any) -> Any:
        return D.let(st[1], lambda xi: D.mapSeqUnroll(
            lambda p: vop(p[0], D.mapVec(lambda v: m(v, xi)) << p[1]))
            << D.zip(acc, D.asVector(w) << st[0]))

    def block(b: Any) -> Any:
        sums = D.asScalar << D.join << D.reduceSeq(step, init) << D.zip(b[0], fresh(x))
        return D.mapSeq(fresh(h)) << D.zip(D.toPrivate(D.mapSeq(fresh(s))) << sums,
                                           D.toPrivate(D.mapSeq(fresh(g))) << b[1])

    cols = D.transpose << D.map(D.split(c)) << fresh(a)
    return D.join << D.mapGlb(0)(block) << D.zip(cols, D.split(c) << fresh(y))


def _build_t(site: Site, k: int, w: int) -> Expr:
    parts = gemv_parts(site.f, site.call, transposed=True)
    assert parts is not None
    found = _elem(site, parts[5], parts[6])
    assert found is not None
    return column_blocks(parts, found[0], k, w)


GEMV_COLUMN_BLOCKS = make_rule(
    "gemv-column-blocks",
    "map(h) $ zip(join ∘ map(λcol. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(col, x)) ∘ transpose $ A, "
    "map(g) $ y) → join ∘ mapGlb(0)(λb. mapSeq(h) $ zip(mapSeq(s) ∘ asScalar ∘ join ∘ "
    "reduceSeq(k private vectors of w += m⟨w⟩(A's row segment, x_i broadcast)) $ zip(b.0, x), "
    "mapSeq(g) $ b.1)) $ zip(transpose ∘ map(split k·w) $ A, split k·w $ y)",
    "liftkit.blas CPU GEMV T (issue 15): column blocks read as vectors along A's rows",
    _choices_t, _build_t, lowering=True, reshapes=True, opaque=False)

GEMV_RULES[GEMV_COLUMN_BLOCKS.name] = GEMV_COLUMN_BLOCKS


# ---------------------------------------------------------------------------------------------
# GPUs: a work-group of lanes × g work-items, partial sums in local memory
#
# GEMV N (`gemv-lane-rows`, codelet `row-groups`): a work-group owns g rows; work-item
# (l, j) sums the vectors l, l + lanes, ... of row j (a warp's lanes read one contiguous run of
# the row per step), its partial goes to local memory as [lanes][g], and one work-item per row
# sums the row's lanes (consecutive rows: consecutive words) and applies h, s, g.
#
# GEMV T (`gemv-lane-columns`, codelet `column-groups`): a work-group owns c = lanes·w
# columns; work-item (l, j) sums the rows j, j + g, ... of its w columns (a warp's lanes read
# one contiguous run of a row of A per step, x's element broadcast); the g partials per column
# go to local memory as [g][lanes] and the work-items of row 0 sum them in order. Both read every element of A once, coalesced,
# with independent work-items, as a bandwidth-bound kernel needs; sound where ⊕ is associative
# and commutative with an identity (lanes and partial sums regroup the sum).

LANES = (32, 16, 8)
GROUPS = (4, 8, 16, 32, 64, 128)
GPU_WIDTHS = (4, 2, 1)


def _vec_parts(op: Any, m: Any, t: ScalarType, w: int) -> tuple[Any, Any, Any, Any]:
    """(⊕⟨w⟩, m⟨w⟩, the vector identity, asVector w or nothing) for width w (1: scalars)."""
    from liftkit import dsl as D

    e = identity_literal(op, t)
    assert e is not None
    if w == 1:
        return op, m, e, lambda v: v
    return (op.vectorize(w), m.vectorize(w), D.lit(np.full(w, e.value, t.dtype), vector(t, w)),
            lambda v: D.asVector(w) << v)


def _finish(parts: tuple[Any, ...], vop: Any, ev: Any, w: int, sums: Any, ys: Any,
            one: bool) -> Any:
    """mapSeq(h) $ zip(mapSeq(s) ∘ reduceSeq(⊕, z) of Σ⊕⟨w⟩ sums, mapSeq(g) $ ys): the vector's
    lanes summed into one result (`one`: a row of GEMV N) or each its own (GEMV T's columns)."""
    from liftkit import dsl as D

    h, s, op, m, z, a, x, g, y = parts
    tot = D.reduceSeq(vop, ev) << sums
    lanes = D.asScalar << tot if w > 1 else tot
    red = D.reduceSeq(op, fresh(z)) << lanes if one else \
        D.join << D.mapSeq(D.reduceSeq(op, fresh(z))) << D.split(1) << lanes
    return D.mapSeq(fresh(h)) << D.zip(D.toPrivate(D.mapSeq(fresh(s))) << red,
                                       D.toPrivate(D.mapSeq(fresh(g))) << ys)


def row_groups(parts: tuple[Any, ...], t: ScalarType, lanes: int, g: int, w: int) -> Expr:
    """gemv N's body as work-groups of g rows × lanes work-items (see above)."""
    from liftkit import dsl as D

    h, s, op, m, z, a, x, gf, y = parts
    vop, vm, ev, vec = _vec_parts(op, m, t, w)

    def spread(v: Any) -> Any:  # [lanes][n/(lanes·w)]: lane l takes vectors l, l + lanes, ...
        return D.transpose << D.split(lanes) << vec(v)

    def block(blk: Any) -> Any:
        rows = D.transpose << D.map(lambda q: spread(D.get(0)(q))) << blk  # [lanes][g][…]
        partial = D.toLocal(D.mapLcl(0)(lambda p: D.mapLcl(1)(
            lambda rl: D.reduceSeq(lambda acc, st: vop(acc, vm(st[0], st[1])), ev)
            << D.zip(rl, p[1])) << p[0])) << D.zip(rows, spread(fresh(x)))

        def total(ps: Any) -> Any:
            per_row = D.zip(D.transpose << D.map(D.join) << ps,
                            D.split(1) << D.map(D.get(1)) << blk)
            return D.join << D.mapLcl(1)(lambda one: D.join << D.mapLcl(0)(
                lambda q: _finish(parts, vop, ev, w, q[0], q[1], True)) << one) << D.split(1) << per_row

        return D.let(partial, total)

    return D.join << D.mapWrg(0)(block) << D.split(g) << D.zip(fresh(a), fresh(y))


def column_groups(parts: tuple[Any, ...], t: ScalarType, lanes: int, g: int, w: int) -> Expr:
    """gemv T's body as work-groups of lanes·w columns × g row groups (see above)."""
    from liftkit import dsl as D

    h, s, op, m, z, a, x, gf, y = parts
    vop, vm, ev, vec = _vec_parts(op, m, t, w)
    c = lanes * w

    def step(acc: Any, st: Any) -> Any:
        if w == 1:
            return vop(acc, m(st[0], st[1]))
        return D.let(st[1], lambda xi: vop(acc, D.mapVec(lambda v: m(v, xi)) << st[0]))

    def block(b: Any) -> Any:
        groups = D.zip(D.transpose << D.split(g) << b[0], D.transpose << D.split(g) << fresh(x))
        partial = D.toLocal(D.mapLcl(1)(lambda rx: D.mapLcl(0)(
            lambda colv: D.reduceSeq(step, ev) << D.zip(colv, rx[1]))
            << D.transpose << D.map(vec) << rx[0])) << groups  # [g][lanes][1]

        def total(ps: Any) -> Any:
            per_lane = D.zip(D.transpose << D.map(D.join) << ps, D.split(w) << b[1])
            return D.join << D.join << D.mapLcl(1)(lambda one: D.mapLcl(0)(
                lambda q: _finish(parts, vop, ev, w, q[0], q[1], False)) << one) \
                << D.split(lanes) << per_lane

        return D.let(partial, total)

    cols = D.transpose << D.map(D.split(c)) << fresh(a)
    return D.join << D.mapWrg(0)(block) << D.zip(cols, D.split(c) << fresh(y))


def _group_choices(site: Site, transposed: bool) -> list[dict[str, Any]]:
    if site.enclosing:
        return []
    parts = gemv_parts(site.f, site.call, transposed=transposed)
    if parts is None:
        return []
    h, s, op, m, z, a, x, g, y = parts
    found = _elem(site, a, x)
    if found is None:
        return []
    t, rows, cols = found
    out = []
    for w in GPU_WIDTHS:
        if w > 1:
            vop = op.vectorize(w)
            if identity_literal(vop, vop.out_type) is None:
                continue
            try:
                m.vectorize(w)
            except Exception:  # noqa: BLE001 - a product with no vector form
                continue
        for lanes in LANES:
            for grp in GROUPS:
                if _fits(rows, grp) and _fits(cols, lanes * w) and lanes * grp <= 1024:
                    out.append({"lanes": lanes, "g": grp, "w": w})
    return out


def _build_groups(transposed: bool) -> Any:
    def build(site: Site, lanes: int, g: int, w: int) -> Expr:
        parts = gemv_parts(site.f, site.call, transposed=transposed)
        assert parts is not None
        found = _elem(site, parts[5], parts[6])
        assert found is not None
        return (column_groups if transposed else row_groups)(parts, found[0], lanes, g, w)
    return build


GEMV_LANE_ROWS = make_rule(
    "gemv-lane-rows",
    "map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y) "
    "→ join ∘ mapWrg(0)(λblk. let P = toLocal(mapLcl(0)(mapLcl(1)(reduceSeq(⊕⟨w⟩ m⟨w⟩))) "
    "(lane l of each of blk's g rows: its vectors l, l+lanes, …) in one work-item per row: h, s, "
    "g of Σ over the lanes of P) ∘ split g $ zip(A, y)",
    "liftkit.blas GPU GEMV N (issue 15): a row per g work-items' warp, partials in local memory",
    lambda site: _group_choices(site, False), _build_groups(False), lowering=True,
    reshapes=True, opaque=False)
GEMV_LANE_COLUMNS = make_rule(
    "gemv-lane-columns",
    "map(h) $ zip(join ∘ map(λcol. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(col, x)) ∘ transpose $ A, "
    "map(g) $ y) → join ∘ mapWrg(0)(λb. let P = toLocal(mapLcl(1)(mapLcl(0)(reduceSeq(⊕⟨w⟩ "
    "m⟨w⟩(A's row segment, x_i))))(row groups j, j+g, … of b's lanes·w columns) in h, s, g of Σ "
    "over the groups of P) $ zip(transpose ∘ map(split lanes·w) $ A, split lanes·w $ y)",
    "liftkit.blas GPU GEMV T (issue 15): a split reduction over row groups, coalesced rows",
    lambda site: _group_choices(site, True), _build_groups(True), lowering=True,
    reshapes=True, opaque=False)
GEMV_RULES[GEMV_LANE_ROWS.name] = GEMV_LANE_ROWS
GEMV_RULES[GEMV_LANE_COLUMNS.name] = GEMV_LANE_COLUMNS
