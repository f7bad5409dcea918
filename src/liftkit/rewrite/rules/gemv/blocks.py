"""GEMV blocked per work-item for CPUs (liftkit.blas's CPU codelets): r rows of A (rule
`gemv-row-blocks`, codelet `row-blocks`, GEMV N) or k·w columns of A (rule `gemv-column-blocks`,
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

Where ⊕ is the float type's `add` and m its `mult`, a step is one fused multiply-add per
vector (OpenCL's `fma`, the interpreter's acc + a·b): Intel's CPU compiler does not contract the
separate user functions. Kernel alone on the CPU device: float64 2048² 281 vs 333 µs, float32
2048² 86 vs 89 µs, 1024² (read-bound) within 3 % (results/issue15/cpu-final/README.md, "where the
43 µs kernel went"). Column blocks fuse the same way, x's element broadcast over the vector
(`fma(a, (floatw)(b), acc)`).

Sound where ⊕ is associative and commutative with an identity e (the lanes and rows are summed
in another order, as `vectorize-reduce` does) and x does not depend on the row; A and x are the
program's input arrays (their rows read as vectors), of a real scalar type; M must be a multiple
of r and N of w.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit.ir.nodes import Expr
from liftkit.ir.userfuns import scalar_funs
from liftkit.rewrite.rules.common import fresh, identity_literal
from liftkit.rewrite.rules.gemv.parts import Gemv, alpha_beta, fits, gemv_at, site_rule, vector_widths
from liftkit.types import ScalarType
from liftkit.types.core import vector

ROWS = (1, 2, 4, 8)
WIDTHS = (16, 8, 4)
COLUMN_VECTORS = (1, 2, 4, 8)  # k


def _private_zeros(op: Any, t: ScalarType, n: int, w: int) -> Any:
    """n private accumulators, vectors of w holding ⊕'s identity."""
    from liftkit import dsl as D

    e = identity_literal(op, t)
    assert e is not None
    tw = vector(t, w)
    return D.toPrivate(D.mapSeqUnroll(D.id_of(tw))) << D.lit(np.full((n, w), e.value, t.dtype), tw[n])


def fused(op: Any, m: Any, t: ScalarType, w: int) -> Optional[Any]:
    """acc + a·b on vectors of w as one `fma` where ⊕ and m are t's own add and mult (floating
    point); None otherwise (the step keeps m then ⊕)."""
    from liftkit import dsl as D

    if not t.is_float:
        return None
    funs = scalar_funs(t)
    if op != funs.add or m != funs.mult:
        return None
    tw = vector(t, w) if w > 1 else t
    return D.user_fun(f"fmaAcc{w}_{t}", [("acc", tw), ("a", tw), ("b", tw)], tw,
                      "return fma(a, b, acc);", lambda acc, a, b: acc + a * b)


def fused_broadcast(op: Any, m: Any, t: ScalarType, w: int) -> Optional[Any]:
    """acc + a·b for a vector a of w and a scalar b broadcast over its lanes, as one `fma`
    (GEMV T's step: a row segment of A times x's element), where `fused` applies."""
    from liftkit import dsl as D

    if fused(op, m, t, w) is None or w == 1:
        return None
    tw = vector(t, w)
    return D.user_fun(f"fmaAccB{w}_{t}", [("acc", tw), ("a", tw), ("b", t)], tw,
                      f"return fma(a, ({tw})(b), acc);",
                      lambda acc, a, b: acc + a * (np.asarray(b)[..., None] if np.ndim(b) else b))


def row_blocks(parts: Gemv, t: ScalarType, r: int, w: int, L: Optional[int] = None) -> Expr:
    """The blocked form of gemv's body (see the module docstring); with L, the row blocks in
    work-groups of L work-items (GEMV_ROW_BLOCK_GROUPS)."""
    from liftkit import dsl as D

    _, _, op, m, z, a, x, _, y = parts
    vop, vm = op.vectorize(w), m.vectorize(w)
    init = _private_zeros(op, t, r, w)
    fma = fused(op, m, t, w)

    def step(acc: Any, st: Any) -> Any:
        if fma is not None:
            return D.mapSeqUnroll(lambda p: fma(p[0], p[1], st[1])) << D.zip(acc, st[0])
        return D.mapSeqUnroll(lambda p: vop(p[0], vm(p[1], st[1]))) << D.zip(acc, st[0])

    def block(blk: Any) -> Any:
        steps = D.zip(D.transpose << D.map(lambda q: D.asVector(w) << D.get(0)(q)) << blk,
                      D.asVector(w) << fresh(x))
        sums = D.split(1) << D.join << D.reduceSeq(step, init) << steps
        ys = D.split(1) << D.map(D.get(1)) << blk
        return D.join << D.mapSeq(lambda q: alpha_beta(
            parts, D.reduceSeq(op, fresh(z)) << D.asScalar << q[0], q[1], private_s=False)) \
            << D.zip(sums, ys)

    blocks = D.split(r) << D.zip(fresh(a), fresh(y))
    if L is None:
        return D.join << D.mapGlb(0)(block) << blocks
    return D.join << D.join << D.mapWrg(0)(D.mapLcl(0)(block)) << D.split(L) << blocks


def column_blocks(parts: Gemv, t: ScalarType, k: int, w: int) -> Expr:
    """gemv T's body with k·w columns of A per work-item (see GEMV_COLUMN_BLOCKS)."""
    from liftkit import dsl as D

    _, _, op, m, z, a, x, _, y = parts
    vop, c = op.vectorize(w), k * w
    init = _private_zeros(op, t, k, w)
    fma = fused_broadcast(op, m, t, w)

    def step(acc: Any, st: Any) -> Any:
        if fma is not None:
            return D.let(st[1], lambda xi: D.mapSeqUnroll(lambda p: fma(p[0], p[1], xi))
                         << D.zip(acc, D.asVector(w) << st[0]))
        return D.let(st[1], lambda xi: D.mapSeqUnroll(
            lambda p: vop(p[0], D.mapVec(lambda v: m(v, xi)) << p[1]))
            << D.zip(acc, D.asVector(w) << st[0]))

    def block(b: Any) -> Any:
        sums = D.asScalar << D.join << D.reduceSeq(step, init) << D.zip(b[0], fresh(x))
        return alpha_beta(parts, sums, b[1])

    cols = D.transpose << D.map(D.split(c)) << fresh(a)
    return D.join << D.mapGlb(0)(block) << D.zip(cols, D.split(c) << fresh(y))


GEMV_ROW_BLOCKS = site_rule(
    "gemv-row-blocks",
    "map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y) "
    "→ join ∘ mapGlb(0)(λblk. r rows' lane sums, then h, s, g per row $ reduceSeq(r private "
    "vector accumulators += m⟨w⟩(column vectors of blk, vector of x)) ∘ split r $ zip(A, y)",
    "liftkit.blas CPU GEMV (issue 15): register blocking of rows, wide vectors",
    lambda site: gemv_at(site, False),
    lambda parts, t, rows, cols: [{"r": r, "w": w}
                                  for w in vector_widths(parts.op, parts.m, WIDTHS, True)
                                  if fits(cols, w) for r in ROWS if fits(rows, r)],
    lambda parts, t, rows, cols, r, w: row_blocks(parts, t, r, w))

# work-items per work-group of GEMV_ROW_BLOCK_GROUPS: on the CPU device fewer, larger groups than
# the runtime's own choice for the mapGlb form gained 3-4 % per call at 1024² float32, one group
# for the whole matrix ran on one thread (results/issue15/cpu23, local_sizes.py)
GROUP_SIZES = (32, 64, 128)

GEMV_ROW_BLOCK_GROUPS = site_rule(
    "gemv-row-block-groups",
    "map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y) "
    "→ join ∘ join ∘ mapWrg(0)(mapLcl(0)(λblk. gemv-row-blocks' block)) ∘ split L ∘ split r "
    "$ zip(A, y)",
    "liftkit.blas CPU GEMV (issue 15): gemv-row-blocks with the work-group size chosen, L "
    "row blocks per group",
    lambda site: gemv_at(site, False),
    lambda parts, t, rows, cols: [{"r": r, "w": w, "L": L}
                                  for w in vector_widths(parts.op, parts.m, WIDTHS, True)
                                  if fits(cols, w) for r in ROWS for L in GROUP_SIZES
                                  if fits(rows, r * L)],
    lambda parts, t, rows, cols, r, w, L: row_blocks(parts, t, r, w, L))

GEMV_COLUMN_BLOCKS = site_rule(
    "gemv-column-blocks",
    "map(h) $ zip(join ∘ map(λcol. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(col, x)) ∘ transpose $ A, "
    "map(g) $ y) → join ∘ mapGlb(0)(λb. mapSeq(h) $ zip(mapSeq(s) ∘ asScalar ∘ join ∘ "
    "reduceSeq(k private vectors of w += m⟨w⟩(A's row segment, x_i broadcast)) $ zip(b.0, x), "
    "mapSeq(g) $ b.1)) $ zip(transpose ∘ map(split k·w) $ A, split k·w $ y)",
    "liftkit.blas CPU GEMV T (issue 15): column blocks read as vectors along A's rows",
    lambda site: gemv_at(site, True),
    lambda parts, t, rows, cols: [{"k": k, "w": w}
                                  for w in vector_widths(parts.op, parts.m, WIDTHS, False)
                                  for k in COLUMN_VECTORS if fits(cols, k * w)],
    lambda parts, t, rows, cols, k, w: column_blocks(parts, t, k, w))
