"""Matrix-vector products in work-groups for GPUs: CLBlast's GEMV kernels (seed 000 Table 1's
ATAX and GESUMMV) as one rewrite each, so a search reaches them from the high-level programs.

`gemv-t-groups` (Aᵀ·v, the second half of ATAX), parameters c, r, w:

    join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A
  → asScalar ∘ join ∘ mapWrg(0)(λcols.
        toGlobal(mapLcl(0)(id⟨w⟩)) ∘ iterate log2 r (tree step over row groups)
        ∘ join ∘ toLocal(mapLcl(0)(reduceSeq(λ(acc, (a, vi)). acc ⊕⟨w⟩ mapVec(λx. m(x, vi)) a, e⟨w⟩)))
        ∘ join ∘ map(λg. map(λcv. zip(cv, g.1)) ∘ transpose $ g.0)
        $ zip(transpose ∘ split r $ cols, transpose ∘ split r $ v))
      ∘ transpose ∘ map(split c ∘ asVector w) $ A

A work-group of r·c work-items owns c·w adjacent columns: work-item (i, k) sums the vector of
w columns k over the rows i, i+r, i+2r, … (the c work-items of a row group read c·w adjacent
elements of a row: coalesced, where a work-item per column reads a column N elements apart),
a tree over the r row groups in local memory finishes the block, c work-items write it.

`gemv-row-groups` (A·x, and GESUMMV's α·A·x + β·B·x in one pass), parameters L, w:

    join ∘ map(λrow. reduce(⊕, e) ∘ map(m) $ zip(row, x)) $ A
  → join ∘ mapWrg(0)(λrow. one group's sum of the terms $ zip(asVector w row, asVector w x)) $ A
    map(⊕) $ zip(map(s₁) ∘ join ∘ map(λr. reduce(⊕, e) ∘ map(m) $ zip(r, x)) $ A,
                  map(s₂) ∘ join ∘ map(λr. reduce(⊕, e) ∘ map(m) $ zip(r, x)) $ B)
  → join ∘ mapWrg(0)(λq. one group's sum of s₁⟨w⟩(m⟨w⟩(a, x)) ⊕⟨w⟩ s₂⟨w⟩(m⟨w⟩(b, x))
                         $ zip(asVector w q.0, asVector w q.1, asVector w x)) $ zip(A, B)

one group's sum: L work-items, work-item t accumulating the w-vectors t, t+L, t+2L, … of the
row (coalesced) in a private vector, its lanes summed into local memory, a tree there, one
work-item writing the row's result. The second form reads A's and B's rows once, in one kernel
(the two products and their sum are otherwise three kernels); it relies on s₁, s₂ distributing
over ⊕ (s(u ⊕ u') = s(u) ⊕ s(u'), s(e) = e), so it is offered only for the scalar types' own
add as ⊕ and mult as m, each sᵢ multiplying by a value bound outside the rows (or absent).

Sound where ⊕ is associative and commutative and e its identity (the terms are summed in
another order, as `vectorize-reduce` and the work-group trees do); A (and B) are the program's
input arrays (read as vectors), of a real scalar type; N (the rows' length) a multiple of L·w
resp. c·w, M of r.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from liftkit.arith import cst
from liftkit.arith.simplify import divides
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, UserFun, free_params
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import assoc_comm, fresh, identity_literal, is_identity, operator
from liftkit.types import ArrayType, ScalarType, bool_
from liftkit.types.core import vector

WIDTHS = (4, 2)
ROW_GROUPS = (64, 128, 256)  # L of gemv-row-groups
# (c, r) of gemv-t-groups: r·c work-items per group, c vectors of columns
T_GROUPS = ((4, 64), (8, 32), (16, 16), (4, 32), (8, 16), (16, 8), (2, 64))


def _fits(n: Any, k: int) -> bool:
    return divides(cst(k), n) is not False


def _real(site: Site, a: Expr) -> Optional[tuple[ScalarType, Any, Any]]:
    """(element type, rows, row length) of a matrix of a real scalar type."""
    at = site.type_of(a)
    if not (isinstance(at, ArrayType) and isinstance(at.elem, ArrayType)):
        return None
    t = at.elem.elem
    if not (isinstance(t, ScalarType) and t != bool_ and not t.is_complex):
        return None
    return t, at.length, at.elem.length


def dot_rows(call: Any) -> Optional[tuple[UserFun, UserFun, Expr, Expr, Expr]]:
    """(⊕, m, e, rows, x) when `call` is join ∘ map(λr. reduce(⊕, e) ∘ map(m) $ zip(r, x)) $ rows
    with ⊕ associative and commutative, e its identity, m a binary user function and x not
    depending on the row."""
    if not (isinstance(call, FunCall) and type(call.f) is P.Join and isinstance(call.args[0], FunCall)):
        return None
    rows = call.args[0]
    if not (type(rows.f) is P.Map and isinstance(rows.f.f, Lambda) and len(rows.f.f.params) == 1):
        return None
    row, red = rows.f.f.params[0], rows.f.f.body
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
    if op is None or m is None or m.arity != 2 or not is_identity(z, op):
        return None
    return op, m, z, rows.args[0], zr.args[1]


# ---------------------------------------------------------------------------------------------
# gemv-t-groups


def _t_parts(site: Site) -> Optional[tuple[UserFun, UserFun, Expr, Expr, ScalarType, Any, Any]]:
    """(⊕, m, A, v, t, M, N) at join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A."""
    if site.enclosing or type(site.f) is not P.Join:
        return None
    found = dot_rows(site.call)
    if found is None:
        return None
    op, m, _z, cols, v = found
    if not (isinstance(cols, FunCall) and type(cols.f) is P.Transpose
            and isinstance(cols.args[0], Param)):
        return None
    a = cols.args[0]
    shape = _real(site, a)
    if shape is None or site.type_of(v) != ArrayType(shape[0], shape[1]):
        return None
    if any(t != shape[0] for t in m.param_types + (m.out_type, op.out_type)):
        return None
    return op, m, a, v, shape[0], shape[1], shape[2]


def _t_choices(site: Site) -> list[dict[str, Any]]:
    parts = _t_parts(site)
    if parts is None:
        return []
    op, m, a, v, t, rows, cols = parts
    out = []
    for w in WIDTHS:
        vop = op.vectorize(w)
        if identity_literal(vop, vop.out_type) is None:
            continue
        out += [{"c": c, "r": r, "w": w} for c, r in T_GROUPS
                if _fits(cols, c * w) and _fits(rows, r)]
    return out


def t_groups(op: UserFun, m: UserFun, a: Expr, v: Expr, t: ScalarType, c: int, r: int,
             w: int) -> Expr:
    """Aᵀ·v in work-groups of r·c work-items per c·w columns (see the module docstring)."""
    from liftkit import dsl as D

    vop = op.vectorize(w)
    e = identity_literal(vop, vop.out_type)
    assert e is not None and 2 ** int(math.log2(r)) == r
    tw = vector(t, w)

    def acc(s: Any, av: Any) -> Any:
        return D.let(D.get(1) << av, lambda vi: vop(s, D.mapVec(lambda x: m(x, vi)) << (D.get(0) << av)))

    def block(cols: Any) -> Any:  # [[t<w>]_c]_M: the block's vectors of every row
        groups = D.zip(D.transpose << D.split(r) << cols, D.transpose << D.split(r) << fresh(v))
        seqs = D.join << D.map(lambda g: D.map(lambda cv: D.zip(cv, D.get(1) << g))
                               << D.transpose << (D.get(0) << g)) << groups
        partial = D.join << D.toLocal(D.mapLcl(0)(D.reduceSeq(acc, e))) << seqs
        step = (D.join << D.mapLcl(0)(D.reduceSeq(vop, e)) << D.join
                << D.map(lambda p: D.transpose << D.split(c) << p) << D.split(2 * c))
        return D.toGlobal(D.mapLcl(0)(D.id_of(tw))) << D.iterate(int(math.log2(r)), step) << partial

    return (D.asScalar << D.join << D.mapWrg(0)(block) << D.transpose
            << D.map(lambda row: D.split(c) << D.asVector(w) << row) << a)


def _t_build(site: Site, c: int, r: int, w: int) -> Expr:
    parts = _t_parts(site)
    assert parts is not None
    op, m, a, v, t, _rows, _cols = parts
    return t_groups(op, m, a, v, t, c, r, w)


GEMV_T_GROUPS = make_rule(
    "gemv-t-groups",
    "join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A → asScalar ∘ join ∘ "
    "mapWrg(0)(c·w columns: r·c work-items sum a w-vector of columns over every r-th row, a "
    "tree over the r row groups in local memory) ∘ transpose ∘ map(split c ∘ asVector w) $ A",
    "CLBlast's transposed GEMV (seed 000 Table 1, ATAX): coalesced column blocks",
    _t_choices, _t_build, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# gemv-row-groups


def _scale(f: Any, mult: UserFun) -> Optional[tuple[()] | tuple[Expr]]:
    """() for λv. v, (c,) for λv. mult(c, v) or λv. mult(v, c) with c bound outside."""
    if not (isinstance(f, Lambda) and len(f.params) == 1):
        return None
    x, body = f.params[0], f.body
    if body is x:
        return ()
    if not (isinstance(body, FunCall) and body.f is mult and len(body.args) == 2):
        return None
    a, b = body.args
    c = b if a is x else a if b is x else None
    return (c,) if isinstance(c, (Param, Literal)) and x not in free_params(c) else None


def _row_parts(site: Site) -> Optional[tuple[Any, ...]]:
    """(⊕, m, [A] or [A, B], x, [scales], t, M, N) at the two forms of the module docstring."""
    if site.enclosing:
        return None
    if type(site.f) is P.Join:
        found = dot_rows(site.call)
        if found is None:
            return None
        op, m, _z, a, x = found
        mats, scales = [a], [()]
    elif type(site.f) is P.Map:
        found2 = _sum_of_two(site)
        if found2 is None:
            return None
        op, m, mats, x, scales = found2
    else:
        return None
    if not (all(isinstance(a, Param) for a in mats) and isinstance(x, Param)):
        return None  # rows and x read as vectors: the kernel's input arrays themselves
    shape = _real(site, mats[0])
    if shape is None or any(site.type_of(b) != site.type_of(mats[0]) for b in mats[1:]):
        return None
    t = shape[0]
    if site.type_of(x) != ArrayType(t, shape[2]):
        return None
    if any(s != t for s in m.param_types + (m.out_type, op.out_type)):
        return None
    return op, m, mats, x, scales, t, shape[1], shape[2]


def _sum_of_two(site: Site) -> Optional[tuple[Any, ...]]:
    """map(⊕) $ zip(map(s₁) ∘ dot rows of A, map(s₂) ∘ dot rows of B), ⊕ the add and m the mult
    of one scalar type, both rows against the same x."""
    from liftkit.ir.userfuns import scalar_funs

    h = operator(site.f.f)
    zp = site.call.args[0]
    if h is None or not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and len(zp.args) == 2):
        return None
    halves = []
    for arg in zp.args:
        if not (isinstance(arg, FunCall) and type(arg.f) is P.Map):
            return None
        found = dot_rows(arg.args[0])
        if found is None:
            return None
        halves.append((arg.f.f, found))
    (s1, (op, m, _z, a, x)), (s2, (op2, m2, _z2, b, x2)) = halves
    t = op.out_type
    if not (isinstance(t, ScalarType) and not t.is_complex and t != bool_):
        return None
    funs = scalar_funs(t)
    if not (op is funs.add and op2 is op and h is op and m is funs.mult and m2 is m and x2 is x):
        return None
    scales = [_scale(s, m) for s in (s1, s2)]
    if any(s is None for s in scales):
        return None
    return op, m, [a, b], x, scales


def _row_choices(site: Site) -> list[dict[str, Any]]:
    parts = _row_parts(site)
    if parts is None:
        return []
    op, m, mats, x, scales, t, rows, cols = parts
    out = []
    for w in WIDTHS:
        vop = op.vectorize(w)
        if identity_literal(vop, vop.out_type) is None:
            continue
        out += [{"L": L, "w": w} for L in ROW_GROUPS if _fits(cols, L * w)]
    return out


def row_groups(op: UserFun, m: UserFun, mats: list[Expr], x: Expr, scales: list[Any],
               t: ScalarType, L: int, w: int) -> Expr:
    """A row per work-group of L work-items (see the module docstring)."""
    from liftkit import dsl as D

    vop, vm = op.vectorize(w), m.vectorize(w)
    ew, e = identity_literal(vop, vop.out_type), identity_literal(op, t)
    assert ew is not None and e is not None and 2 ** int(math.log2(L)) == L
    k = len(mats)

    def term(q: Any, i: int) -> Any:
        prod = vm(D.get(i) << q, D.get(k) << q)
        if not scales[i]:
            return prod
        c = fresh(scales[i][0])
        return D.mapVec(lambda y: m(c, y)) << prod

    def step(s: Any, q: Any) -> Any:
        total = term(q, 0)
        for i in range(1, k):
            total = vop(total, term(q, i))
        return vop(s, total)

    def group(row: Any) -> Any:
        parts = [D.asVector(w) << (D.get(i) << row if k > 1 else row) for i in range(k)]
        terms = D.zip(*parts, D.asVector(w) << fresh(x))
        partial = (D.join << D.toLocal(D.mapLcl(0)(
            lambda col: D.reduceSeq(op, e) << D.asScalar << D.reduceSeq(step, ew) << col))
            << D.transpose << D.split(L) << terms)
        total = D.iterate(int(math.log2(L)), D.join << D.mapLcl(0)(D.reduceSeq(op, e)) << D.split(2)) << partial
        return D.join << D.toGlobal(D.mapLcl(0)(D.mapSeq(D.id_of(t)))) << D.split(1) << total

    rows = fresh(mats[0]) if k == 1 else D.zip(*[fresh(a) for a in mats])
    return D.join << D.mapWrg(0)(group) << rows


def _row_build(site: Site, L: int, w: int) -> Expr:
    parts = _row_parts(site)
    assert parts is not None
    op, m, mats, x, scales, t, _rows, _cols = parts
    return row_groups(op, m, mats, x, scales, t, L, w)


GEMV_ROW_GROUPS = make_rule(
    "gemv-row-groups",
    "join ∘ map(λrow. reduce(⊕, e) ∘ map(m) $ zip(row, x)) $ A → join ∘ mapWrg(0)(L work-items "
    "sum the row's w-vectors t, t+L, … of m⟨w⟩(row, x), a tree in local memory) $ A; "
    "map(add) $ zip(map(s₁) ∘ (A·x), map(s₂) ∘ (B·x)) → the same over zip(A, B) with the terms "
    "s₁(a·x) + s₂(b·x) (one pass over both matrices)",
    "CLBlast's row GEMV (seed 000 Table 1, ATAX and GESUMMV): a work-group per row",
    _row_choices, _row_build, lowering=True, reshapes=True, opaque=False)

GEMV_GROUP_RULES: tuple[Rule, ...] = (GEMV_T_GROUPS, GEMV_ROW_GROUPS)
