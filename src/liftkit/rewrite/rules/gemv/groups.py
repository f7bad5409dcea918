"""GEMV in work-groups for GPUs: every element of A read once, coalesced (a warp's work-items
read one contiguous run of a row per step), by independent work-items whose partial sums meet in
local memory, as a bandwidth-bound kernel needs. Two directions, each as a bare product (the
search's rules, CLBlast's kernels for seed 000 Table 1's ATAX and GESUMMV) and in the BLAS form
with β·y (liftkit.blas's GPU codelets):

T, Aᵀ·v: a work-group owns a block of columns read as w-vectors along A's rows; its work-items
split the rows into row groups j, j+r, … (`every_rth_row`), their partials go to local memory.
  `gemv-t-groups` (c, r, w), the bare product:
    join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A
  → asScalar ∘ join ∘ mapWrg(0)(λcols.
        toGlobal(mapLcl(0)(id⟨w⟩)) ∘ iterate log2 r (tree step over row groups)
        ∘ join ∘ toLocal(mapLcl(0)(reduceSeq(λ(acc, (a, vi)). acc ⊕⟨w⟩ mapVec(λx. m(x, vi)) a, e⟨w⟩)))
        ∘ join ∘ map(λg. map(λcv. zip(cv, g.1)) ∘ transpose $ g.0)
        $ zip(transpose ∘ split r $ cols, transpose ∘ split r $ v))
      ∘ transpose ∘ map(split c ∘ asVector w) $ A
  r·c work-items per c·w columns; a tree over the r row groups finishes the block.
  `gemv-lane-columns` (lanes, g, w), codelet `column-groups`, the BLAS form: lanes·w columns per
  work-group of lanes×g work-items; the g partials per column ([g][lanes] in local memory) are
  summed in order by the work-items of row 0, which apply h, s, g.
  `gemv-lane-columns-split` (lanes, g, w, r), codelet `column-groups-split`: the same work-groups
  over r row chunks (rows ≡ j mod g·r), r times as many, their sums (no h, s, g) in an [r][N]
  intermediate; a second kernel's work-item per column sums its r partials in order (from z)
  and applies h, s, g. More work-groups in flight where a matrix has few column blocks.
  `gemv-lane-columns-last` (lanes, g, w, r), codelet `column-groups-last`: the split form's
  work-groups in one kernel, as the parts of `lastWrg` (ir/patterns/wrg.py): their sums in a
  global workspace, the last work-group of each column block (a counter per block) summing its
  r partials in order and applying h, s, g; no second launch, the same sums.
  b > 0 (`lastWrg b`): the kernel built for b resident work-groups per multiprocessor, all
  2048 work-item slots of an NVIDIA multiprocessor (a 32-register cap at 256 work-items): on
  the H100 the form took 34 registers, 6 groups of 256 a multiprocessor, so 1024 work-groups
  ran in 1.3 waves where the split form's first kernel (32 registers) ran in one.
  c = 1 (`lastWrg b 1`, r ≤ 8): a column block's r chunks as one thread-block cluster (CUDA,
  Hopper): the partials meet in distributed shared memory, no counter round trip through L2.
  `gemv-lane-columns-tree` (lanes, g, w, u), codelet `column-groups-tree`: `gemv-lane-columns`'
  work-groups, the g partials summed by a tree in local memory; u > 1: work-item (l, j) takes
  its rows u at a time, row k of its group into private accumulator k mod u
    reduceSeq(λ(accs, st). mapSeqUnroll(λ(acc, (a, xi)). acc ⊕⟨w⟩ m⟨w⟩(a, xi)) $ zip(accs, st),
              [e⟨w⟩]_u) ∘ split u,
  the u summed in order after the rows: u independent loads per step, issued back to back
  (the whole column block in one work-group and no sum across work-groups, as cuBLAS's
  float32 GEMV T at 4096² runs 128 blocks of 32 columns at 128 registers a thread).

N, A·x: lanes of a work-group sum the w-vectors t, t+L, … of a row, their partials in local
memory.
  `gemv-row-groups` (L, w), the bare product (and GESUMMV's α·A·x + β·B·x in one pass):
    join ∘ map(λrow. reduce(⊕, e) ∘ map(m) $ zip(row, x)) $ A
  → join ∘ mapWrg(0)(λrow. one group's sum of the terms $ zip(asVector w row, asVector w x)) $ A
    map(⊕) $ zip(map(s₁) ∘ join ∘ map(λr. reduce(⊕, e) ∘ map(m) $ zip(r, x)) $ A,
                  map(s₂) ∘ join ∘ map(λr. reduce(⊕, e) ∘ map(m) $ zip(r, x)) $ B)
  → join ∘ mapWrg(0)(λq. one group's sum of s₁⟨w⟩(m⟨w⟩(a, x)) ⊕⟨w⟩ s₂⟨w⟩(m⟨w⟩(b, x))
                         $ zip(asVector w q.0, asVector w q.1, asVector w x)) $ zip(A, B)
  a row per work-group of L work-items, its lanes summed into local memory, a tree there, one
  work-item writing the row's result. The GESUMMV form reads A's and B's rows once, in one kernel
  (otherwise three); it relies on s₁, s₂ distributing over ⊕, so it is offered only for the
  scalar types' own add as ⊕ and mult as m, each sᵢ multiplying by a value bound outside the
  rows (or absent).
  `gemv-lane-rows` (lanes, g, w), codelet `row-groups`, the BLAS form: g rows per work-group;
  work-item (l, j) sums the vectors l, l+lanes, … of row j, its partial goes to local memory as
  [lanes][g], and one work-item per row sums the row's lanes and applies h, s, g.

Sound where ⊕ is associative and commutative with an identity (lanes, row groups and trees
regroup the sum, as `vectorize-reduce` does); A (and B) are the program's input arrays (read as
vectors), of a real scalar type — the BLAS forms also of a complex one, one element per step
(w = 1: complex numbers have no vectors); the rows' length a multiple of the columns or lanes a
work-group reads at once, the rows' count of the row groups.
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, UserFun, free_params
from liftkit.ir.patterns.wrg import CAPPED_ITEMS as MAX_LOCAL, MAX_BOUND, MAX_CLUSTER
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.common import fresh, is_identity, operator
from liftkit.rewrite.rules.gemv.parts import (Gemv, alpha_beta, as_vectors, dot_rows, every_rth_row,
                                              fits, gemv_at, local_tree, real_matrix, site_rule,
                                              vector_ops, vector_widths)
from liftkit.types import ArrayType, ScalarType, bool_
from liftkit.types.core import vector

WIDTHS = (4, 2)  # of the bare products
ROW_GROUPS = (64, 128, 256)  # L of gemv-row-groups
# (c, r) of gemv-t-groups: r·c work-items per group, c vectors of columns
T_GROUPS = ((4, 64), (8, 32), (16, 16), (4, 32), (8, 16), (16, 8), (2, 64))
# the BLAS form's work-groups: lanes × g work-items, vectors of w (1: scalars)
LANES = (32, 16, 8)
# GEMV T's column blocks may be narrower (4 or 2 lanes of w-vectors, 8-16 columns): more
# work-groups over the same matrix, so more work-items and loads in flight where A has few
# columns per work-group's share (a 8192-column float32 A gives only 256 groups of 32 columns);
# each warp still reads whole 32-byte sectors (lanes·w ≥ 8 elements of 4 bytes)
T_LANES = (32, 16, 8, 4, 2)
GROUPS = (4, 8, 16, 32, 64, 128)  # (gemv-lane-columns-tree also 256: its tree is short)
GPU_WIDTHS = (4, 2, 1)
# GEMV T also reads float8 (two 16-byte loads per row step and work-item): on the H100 every
# float32 variant of 16 bytes per step stalled at 2.73 TB/s at 8192² while float64's 32-byte
# double4 steps reached 3.0 TB/s (results/issue15/cuda/run_final)
T_WIDTHS = (8, 4, 2, 1)
# row chunks of gemv-lane-columns-split: r times the work-groups (a 4096-column float32 A gives
# lane-columns only 128 groups of 32 columns on 132 SMs; float64's 8192² with 512 groups of
# 16 columns ran at cuBLAS's rate, results/issue15/gemv23)
SPLIT_PARTS = (2, 4, 8, 16)
# row chunks of gemv-lane-columns-last: no second kernel reads them, so 32 as well (float32
# 4096² gained from 8 to 16 chunks on the H100, results/issue15/gemv25 run 1)
LAST_PARTS = SPLIT_PARTS + (32,)
# rows per step of gemv-lane-columns-tree's work-items, each into its own private accumulator
# (u loads in flight per work-item: cuBLAS's float32 GEMV T at 4096² runs 128 blocks, the whole
# column in each, at 128 registers a thread, results/issue15/gemv25b run 2)
UNROLLS = (1, 2, 4, 8, 16)
# the fan-ins f of gemv-lane-columns-tree's tree over its g row groups (2: pairs, log₂ g steps
# each ending in a barrier; 4 or 8: fewer steps, each work-item summing more)
TREE_FAN_INS = (2, 4, 8)
# where gemv-lane-columns-tree reads its block of y: 0 at the end (after the tree), 1 or 2 into
# local memory before or after the rows, beside the partials
Y_COPIES = (0, 1, 2)
# the work-item slots of an NVIDIA multiprocessor (Volta to Hopper): gemv-lane-columns-last's
# b > 0 asks for all of them, 2048 / (lanes·g) resident work-groups (at most 32)
SM_THREADS = 2048


def _plain_dots(call: Any) -> Optional[tuple[UserFun, UserFun, Expr, Expr]]:
    """(⊕, m, rows, x) of a bare dot product per row whose reduction starts at ⊕'s identity."""
    d = dot_rows(call)
    if d is None or not is_identity(d.z, d.op):
        return None
    return d.op, d.m, d.rows, d.x


def _lane_offers(parts: Gemv, t: ScalarType, rows: Any, cols: Any,
                 lanes_: tuple[int, ...] = LANES, widths: tuple[int, ...] = GPU_WIDTHS,
                 groups: tuple[int, ...] = GROUPS) -> list[dict[str, Any]]:
    """The BLAS form's work-groups (both directions): lanes × g ≤ 1024 work-items, each
    warp's run of a row at least 8 elements (a 32-byte sector of float32); complex elements
    one at a time (they have no vectors)."""
    return [{"lanes": lanes, "g": grp, "w": w}
            for w in ((1,) if t.is_complex else vector_widths(parts.op, parts.m, widths, True))
            for lanes in lanes_ for grp in groups
            if fits(rows, grp) and fits(cols, lanes * w) and lanes * grp <= 1024
            and lanes * w >= 8]


def _finish(parts: Gemv, vop: Any, ev: Any, w: int, sums: Any, ys: Any, one: bool) -> Any:
    """mapSeq(h) $ zip(mapSeq(s) ∘ reduceSeq(⊕, z) of Σ⊕⟨w⟩ sums, mapSeq(g) $ ys): the vector's
    lanes summed into one result (`one`: a row of GEMV N) or each its own (GEMV T's columns)."""
    from liftkit import dsl as D

    op, z = parts.op, parts.z
    tot = D.reduceSeq(vop, ev) << sums
    lanes = D.asScalar << tot if w > 1 else tot
    red = D.reduceSeq(op, fresh(z)) << lanes if one else \
        D.join << D.mapSeq(D.reduceSeq(op, fresh(z))) << D.split(1) << lanes
    return alpha_beta(parts, red, ys)


# ---------------------------------------------------------------------------------------------
# T: Aᵀ·v


def _t_at(site: Site) -> Optional[tuple[UserFun, UserFun, Expr, Expr, ScalarType, Any, Any]]:
    """(⊕, m, A, v, t, M, N) at join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A."""
    if site.enclosing or type(site.f) is not P.Join:
        return None
    found = _plain_dots(site.call)
    if found is None:
        return None
    op, m, cols, v = found
    if not (isinstance(cols, FunCall) and type(cols.f) is P.Transpose
            and isinstance(cols.args[0], Param)):
        return None
    a = cols.args[0]
    shape = real_matrix(site, a)
    if shape is None or site.type_of(v) != ArrayType(shape[0], shape[1]):
        return None
    if any(t != shape[0] for t in m.param_types + (m.out_type, op.out_type)):
        return None
    return op, m, a, v, shape[0], shape[1], shape[2]


def t_groups(op: UserFun, m: UserFun, a: Expr, v: Expr, t: ScalarType, c: int, r: int,
             w: int) -> Expr:
    """Aᵀ·v in work-groups of r·c work-items per c·w columns (see the module docstring)."""
    from liftkit import dsl as D

    vop, _, e = vector_ops(op, None, t, w)
    tw = vector(t, w)

    def acc(s: Any, av: Any) -> Any:
        return D.let(D.get(1) << av, lambda vi: vop(s, D.mapVec(lambda x: m(x, vi)) << (D.get(0) << av)))

    def block(cols: Any) -> Any:  # [[t<w>]_c]_M: the block's vectors of every row
        groups = every_rth_row(cols, fresh(v), r)
        seqs = D.join << D.map(lambda g: D.map(lambda cv: D.zip(cv, D.get(1) << g))
                               << D.transpose << (D.get(0) << g)) << groups
        partial = D.join << D.toLocal(D.mapLcl(0)(D.reduceSeq(acc, e))) << seqs
        tree = local_tree(vop, e, r, c)
        return D.toGlobal(D.mapLcl(0)(D.id_of(tw))) << tree << partial

    return (D.asScalar << D.join << D.mapWrg(0)(block) << D.transpose
            << D.map(lambda row: D.split(c) << D.asVector(w) << row) << a)


def lane_columns(parts: Gemv, t: ScalarType, lanes: int, g: int, w: int) -> Expr:
    """gemv T's body as work-groups of lanes·w columns × g row groups (see above)."""
    from liftkit import dsl as D

    op, m, a, x, y = parts.op, parts.m, parts.a, parts.x, parts.y
    vop, vm, ev = vector_ops(op, m, t, w)
    c = lanes * w

    def block(b: Any) -> Any:
        partial = _column_partials(vop, m, ev, w, every_rth_row(b[0], fresh(x), g))

        return D.let(partial, lambda ps: _lane_totals(
            parts, vop, ev, w, lanes, D.transpose << D.map(D.join) << ps, b[1]))

    cols = D.transpose << D.map(D.split(c)) << fresh(a)
    return D.join << D.mapWrg(0)(block) << D.zip(cols, D.split(c) << fresh(y))


def _lane_totals(parts: Gemv, vop: Any, ev: Any, w: int, lanes: int, sums: Any, ys: Any) -> Any:
    """Each lane's column sums (`sums`: [[v]_g']_lanes, g' row groups left) finished into its w
    elements of y (α·sum + β·y), one work-item per lane."""
    from liftkit import dsl as D

    per_lane = D.zip(sums, D.split(w) << ys)
    return D.join << D.join << D.mapLcl(1)(lambda one: D.mapLcl(0)(
        lambda q: _finish(parts, vop, ev, w, q[0], q[1], False)) << one) \
        << D.split(lanes) << per_lane


def _log(g: int, f: int) -> int:
    """n with fⁿ = g (g a power of f)."""
    n = 0
    while g > 1:
        g, n = g // f, n + 1
    return n


def _fan_ins(g: int) -> tuple[int, ...]:
    """The tree's fan-ins f whose powers reach g (2, 4, 8)."""
    return tuple(f for f in TREE_FAN_INS if f <= g and f ** _log(g, f) == g)


def lane_columns_tree(parts: Gemv, t: ScalarType, lanes: int, g: int, w: int, u: int = 1,
                      k: int = 0, a: int = 0, f: int = 2, p: int = 0) -> Expr:
    """gemv T's body as `lane_columns`, the g partials per column summed by a tree in local
    memory (log₂ g steps, each halving the row groups with every lane at work), not in order
    by the lanes of row 0 (g sequential steps by lanes work-items: the long tail of a
    work-group whose main loop is short). u > 1: each work-item's rows u at a time into u
    private accumulators (`_column_partials`): the whole column block's rows in one
    work-group, with u loads in flight per work-item (cuBLAS's float32 GEMV T at 4096²: 128
    blocks of 32 columns, no sum across blocks, deep unrolled loads). k = 1: the lanes×g
    work-items as one work-group beyond the code generator's 256 (`wrgItems lanes·g`, CUDA
    `__launch_bounds__(lanes·g, 1)`: cuBLAS's 512 threads a block). a = 1: each step's u rows
    read a step ahead (`_column_partials`). f: the tree's fan-in (log_f g steps, each summing f
    row groups per lane: fewer barriers than pairs). p = 1 (2): the block's lanes·w elements
    of y copied into local memory by row 0's work-items before (after) the rows, beside the
    partials (a let's arguments: one barrier for both), so that y's read from global memory is
    not left to the end, after the tree, where nothing hides its latency."""
    from liftkit import dsl as D

    op, m, a_, x, y = parts.op, parts.m, parts.a, parts.x, parts.y
    vop, vm, ev = vector_ops(op, m, t, w)
    c = lanes * w

    def fold(ps: Any) -> Any:  # [n·lanes] → [n/f·lanes]: f row groups at a time, per lane
        return D.join << D.mapLcl(1)(lambda group: D.join << D.mapLcl(0)(
            D.reduceSeq(vop, fresh(ev))) << D.transpose << D.split(lanes) << group) \
            << D.split(f * lanes) << ps

    def finish(partial: Any, ys: Any) -> Any:
        # (flat: iterate's buffers are 1-D) [g][lanes][1] → [g·lanes] → [lanes]
        tree = D.iterate(_log(g, f), fold) << D.join << D.map(D.join) << partial

        return D.let(tree, lambda ps: _lane_totals(parts, vop, ev, w, lanes, D.split(1) << ps,
                                                   ys))

    def block(b: Any) -> Any:
        partial = _column_partials(vop, m, ev, w, every_rth_row(b[0], fresh(x), g), u, a)
        if not p:
            return finish(partial, b[1])
        # [1][lanes][w]: row 0's work-item l copies lane l's w elements of y
        ycopy = D.toLocal(D.mapLcl(1)(D.mapLcl(0)(D.mapSeq(D.id_of(t))))) \
            << D.split(lanes) << D.split(w) << b[1]
        if p == 1:
            return D.let(ycopy, partial, lambda yl, ps: finish(ps, D.join << D.join << yl))
        return D.let(partial, ycopy, lambda ps, yl: finish(ps, D.join << D.join << yl))

    cols = D.transpose << D.map(D.split(c)) << fresh(a_)
    groups = D.mapWrg(0)(block)
    return D.join << (D.wrgItems(lanes * g, groups) if k else groups) \
        << D.zip(cols, D.split(c) << fresh(y))


def _column_partials(vop: Any, m: UserFun, ev: Any, w: int, groups: Any, u: int = 1,
                     ahead: int = 0) -> Any:
    """toLocal [g][lanes][1]: work-item (l, j) sums ⊕⟨w⟩ m(a, x_i) over row group j's w-vectors
    of lane l (`groups`: [g] pairs of a block's rows [·][lanes·w] and their x elements). u > 1:
    the group's rows taken u at a time into u private accumulators (row k of the group into
    accumulator k mod u, unrolled: u independent loads and chains per step, as many loads in
    flight per work-item: NVRTC's ptxas issues a step's loads back to back only as far as
    there are independent chains to feed, so fewer accumulators than loads would not keep
    more in flight), the u summed in order at the end. ahead = 1: software-pipelined, each
    step's u rows (and x elements) read into registers a step ahead,
      let (A₀, X₀) = step 0's rows in (λ(A, X, S). S ⊕ m(A, X)) ∘ at 0 ∘
        reduceSeq(λ((A, X, S), [_, next]). let (A', X') = copies of (A, X) in
                  (next's rows, next's x, S ⊕ m(A', X')), (A₀, X₀, [e]ᵤ)) ∘ slide 2 1 $ steps,
    so the next step's loads are issued before this step's sums wait on theirs (ptxas does not
    pipeline across a loop's iterations): the same accumulators, the same order of sums. (slide
    needs two steps at least: the rule offers it where the rows are a multiple of 2·g·u.)"""
    from liftkit import dsl as D

    def term(acc: Any, a: Any, xi: Any) -> Any:
        if w == 1:
            return vop(acc, m(a, xi))
        return D.let(xi, lambda x1: vop(acc, D.mapVec(lambda v: m(v, x1)) << a))

    def step(acc: Any, st: Any) -> Any:
        return term(acc, st[0], st[1])

    t_a, t_x = ev.type, m.param_types[1]

    def regs(t: Any) -> Any:  # a copy into registers, unrolled
        return D.toPrivate(D.mapSeqUnroll(D.id_of(t)))

    def sums(s: Any, ra: Any, rx: Any, where: Any = lambda f: f) -> Any:
        """S ⊕ m(A, X), accumulator by accumulator (`where`: toPrivate, or in place)."""
        return where(D.mapSeqUnroll(lambda q: term(q[0], q[1], q[2]))) << D.zip(s, ra, rx)

    def loads(st: Any) -> tuple[Any, Any]:  # a step's u rows and x elements into registers
        return regs(t_a) << D.map(D.get(0)) << st, regs(t_x) << D.map(D.get(1)) << st

    def pipelined(acc: Any, window: Any) -> Any:
        nxt_a, nxt_x = loads(D.at(window, 1))
        return D.let(regs(t_a) << acc[0], regs(t_x) << acc[1], lambda ra, rx: D.tuple_(
            nxt_a, nxt_x, sums(acc[2], ra, rx)))

    def lane(colv: Any, xs: Any) -> Any:
        pairs = D.zip(colv, xs)
        if u == 1 and not ahead:
            return D.reduceSeq(step, ev) << pairs
        if not ahead:
            return _unrolled_sum(vop, ev, u, step, pairs)
        steps = D.split(u) << pairs
        first_a, first_x = loads(D.at(steps, 0))
        start = D.tuple_(first_a, first_x, _private_identities(ev, u))
        last = D.at(D.reduceSeq(pipelined, start) << D.slide(2, 1) << steps, 0)
        return D.let(last, lambda fin: D.reduceSeq(vop, fresh(ev))
                     << sums(fin[2], fin[0], fin[1], D.toPrivate))

    return D.toLocal(D.mapLcl(1)(lambda rx: D.mapLcl(0)(lambda colv: lane(colv, rx[1]))
                                 << D.transpose << D.map(as_vectors(w)) << rx[0])) << groups


def _unrolled_sum(vop: Any, ev: Any, u: int, step: Any, pairs: Any) -> Any:
    """[Σ step over pairs] with the pairs taken u at a time into u private accumulators (pair
    k into accumulator k mod u, the step unrolled: u independent loads and chains), the u
    summed in order at the end: the same sum regrouped."""
    from liftkit import dsl as D

    steps = D.reduceSeq(lambda accs, st: D.mapSeqUnroll(lambda p: step(p[0], p[1]))
                        << D.zip(accs, st), _private_identities(ev, u)) << D.split(u) << pairs
    return D.reduceSeq(vop, fresh(ev)) << D.join << steps


def _private_identities(ev: Literal, u: int) -> Any:
    """u private accumulators holding ⊕⟨w⟩'s identity `ev` (a scalar or a vector literal)."""
    import numpy as np

    from liftkit import dsl as D

    t = ev.type
    return D.toPrivate(D.mapSeqUnroll(D.id_of(t))) << D.lit(
        np.stack([np.asarray(ev.value)] * u), ArrayType(t, u))


def _chunk_sums(vop: Any, m: UserFun, ev: Any, t: ScalarType, w: int, lanes: int, cols: Any,
                xs: Any, u: int = 1) -> Any:
    """[lanes·w] sums of one work-group (lanes×g work-items) over a block of columns `cols`
    [g][·][lanes·w] against `xs` [g][·] (no h, s, g): the g row groups' partials in local
    memory (u > 1: u private accumulators a work-item, `_column_partials`), each lane's w
    columns summed over them in order by row 0's work-items."""
    from liftkit import dsl as D

    partial = _column_partials(vop, m, ev, w, D.zip(cols, xs), u)

    def total(ps: Any) -> Any:  # one work-item per lane: Σ over the g groups, w columns
        per_lane = D.transpose << D.map(D.join) << ps  # [lanes][g]

        def lane(q: Any) -> Any:
            tot = D.reduceSeq(vop, ev) << q
            return D.mapSeq(D.id_of(t)) << (D.asScalar << tot if w > 1 else tot)

        return D.join << D.join << D.mapLcl(1)(lambda one: D.mapLcl(0)(lane) << one) \
            << D.split(lanes) << per_lane

    return D.let(partial, total)


def lane_columns_split(parts: Gemv, t: ScalarType, lanes: int, g: int, w: int, r: int) -> Expr:
    """gemv T's body in two kernels: work-groups of lanes×g work-items over lanes·w columns ×
    one of r row chunks (rows ≡ j mod g·r in chunk ⌊j/g⌋ mod r: r times the work-groups of
    `lane_columns`, each reading a run of lanes·w columns of a row), whose sums over their g
    row groups go to an [r][N] intermediate; then one work-item per column sums its r partials
    in order and applies h, s, g."""
    from liftkit import dsl as D

    op, m, a, x, y = parts.op, parts.m, parts.a, parts.x, parts.y
    vop, vm, ev = vector_ops(op, m, t, w)
    c, big = lanes * w, g * r

    def chunk(ch: Any) -> Any:  # this chunk's g row groups of A and x
        strips = D.transpose << D.map(D.transpose) << D.map(D.map(D.split(c))) << ch[0]
        return D.join << D.mapWrg(0)(lambda cols: _chunk_sums(vop, m, ev, t, w, lanes, cols, ch[1])) \
            << strips

    rows = D.split(g) << D.transpose << D.split(big) << fresh(a)  # [r][g][M/(g·r)][N]
    xs = D.split(g) << D.transpose << D.split(big) << fresh(x)
    partials = D.mapWrg(1)(chunk) << D.zip(rows, xs)  # [r][N]
    return D.join << D.mapGlb(0)(lambda q: alpha_beta(parts, D.reduceSeq(parts.op, fresh(parts.z))
                                                      << q[0], q[1])) \
        << D.zip(D.transpose << partials, D.split(1) << D.join << D.split(c) << fresh(y))


def lane_columns_last(parts: Gemv, t: ScalarType, lanes: int, g: int, w: int, r: int,
                      b: int = 0, c: int = 0, u: int = 1) -> Expr:
    """gemv T's body in one kernel: `lane_columns_split`'s work-groups (lanes·w columns × one
    of r row chunks) as lastWrg's parts, each block of columns' r sums in a global workspace,
    the block's last work-group summing them in order (one work-item per column) and applying
    h, s, g: the split form's r times the work-groups without its second kernel. b > 0: built
    for b resident work-groups per multiprocessor; c = 1: a column block's r ≤ 8 chunks as one
    thread-block cluster, their sums met in distributed shared memory (CUDA); u > 1: each
    work-item's rows u at a time into u private accumulators (`_column_partials`)."""
    from liftkit import dsl as D

    op, m, a, x, y = parts.op, parts.m, parts.a, parts.x, parts.y
    vop, vm, ev = vector_ops(op, m, t, w)
    cols, big = lanes * w, g * r
    xs = D.split(g) << D.transpose << D.split(big) << fresh(x)  # [r][g][M/(g·r)]
    rows = D.split(g) << D.transpose << D.split(big) << fresh(a)  # [r][g][M/(g·r)][N]
    # [N/cols][r][g][M/(g·r)][cols]: block b's r chunks, each paired with its x elements
    strips = D.transpose << D.map(D.transpose) << D.map(D.map(D.transpose)) \
        << D.map(D.map(D.map(D.split(cols)))) << rows
    blocks = D.map(lambda b: D.zip(b, xs)) << strips

    def finish(ps: Any, ys: Any) -> Any:  # ps [r][cols], ys [cols]: a work-item per column
        each = D.zip(D.transpose << ps, D.split(1) << ys)
        return D.join << D.join << D.mapLcl(1)(lambda row: D.mapLcl(0)(
            lambda q: alpha_beta(parts, D.reduceSeq(op, fresh(parts.z)) << q[0], q[1])) << row) \
            << D.split(lanes) << each

    return D.join << D.lastWrg(lambda q: _chunk_sums(vop, m, ev, t, w, lanes, q[0], q[1], u),
                               finish, b, c)(blocks, D.split(cols) << fresh(y))


GEMV_T_GROUPS = site_rule(
    "gemv-t-groups",
    "join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A → asScalar ∘ join ∘ "
    "mapWrg(0)(c·w columns: r·c work-items sum a w-vector of columns over every r-th row, a "
    "tree over the r row groups in local memory) ∘ transpose ∘ map(split c ∘ asVector w) $ A",
    "CLBlast's transposed GEMV (seed 000 Table 1, ATAX): coalesced column blocks",
    _t_at,
    lambda op, m, a, v, t, rows, cols: [{"c": c, "r": r, "w": w}
                                        for w in vector_widths(op, m, WIDTHS, False)
                                        for c, r in T_GROUPS if fits(cols, c * w) and fits(rows, r)],
    lambda op, m, a, v, t, rows, cols, c, r, w: t_groups(op, m, a, v, t, c, r, w))

GEMV_LANE_COLUMNS = site_rule(
    "gemv-lane-columns",
    "map(h) $ zip(join ∘ map(λcol. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(col, x)) ∘ transpose $ A, "
    "map(g) $ y) → join ∘ mapWrg(0)(λb. let P = toLocal(mapLcl(1)(mapLcl(0)(reduceSeq(⊕⟨w⟩ "
    "m⟨w⟩(A's row segment, x_i))))(row groups j, j+g, … of b's lanes·w columns) in h, s, g of Σ "
    "over the groups of P) $ zip(transpose ∘ map(split lanes·w) $ A, split lanes·w $ y)",
    "liftkit.blas GPU GEMV T (issue 15): a split reduction over row groups, coalesced rows",
    lambda site: gemv_at(site, True, complex_ok=True),
    lambda parts, t, rows, cols: _lane_offers(parts, t, rows, cols, T_LANES, T_WIDTHS),
    lambda parts, t, rows, cols, lanes, g, w: lane_columns(parts, t, lanes, g, w))


GEMV_LANE_COLUMNS_TREE = site_rule(
    "gemv-lane-columns-tree",
    "gemv-lane-columns' site → the same work-groups, the g row groups' partials of each lane "
    "summed by a tree in local memory (iterate log₂ g (mapLcl(1)(mapLcl(0)(reduceSeq(⊕⟨w⟩)) ∘ "
    "transpose) ∘ split 2)) before h, s, g; u > 1: each work-item's rows u at a time, "
    "reduceSeq(λ(accs, st). mapSeqUnroll(acc ⊕⟨w⟩ m⟨w⟩(a, x_i)) $ zip(accs, st), u private "
    "identities) ∘ split u, the u accumulators summed in order",
    "liftkit.blas GPU GEMV T (issue 15): a split reduction over row groups, coalesced rows, "
    "finished by a tree (CLBlast's and CUDA's block reductions); u loads in flight per "
    "work-item (cuBLAS's gemvx)",
    lambda site: gemv_at(site, True, complex_ok=True),
    lambda parts, t, rows, cols: [dict(o, u=u, k=k, a=a, f=f, p=p)
                                  for o in _lane_offers(parts, t, rows, cols, T_LANES, T_WIDTHS,
                                                        GROUPS + (256,))
                                  for u in UNROLLS if fits(rows, o["g"] * u)
                                  for k in ((0, 1) if o["lanes"] * o["g"] > MAX_LOCAL else (0,))
                                  for a in ((0, 1) if u > 1 and fits(rows, o["g"] * u * 2)
                                            else (0,))
                                  for f in _fan_ins(o["g"]) for p in Y_COPIES],
    lambda parts, t, rows, cols, lanes, g, w, u=1, k=0, a=0, f=2, p=0: lane_columns_tree(
        parts, t, lanes, g, w, u, k, a, f, p))


GEMV_LANE_COLUMNS_LAST = site_rule(
    "gemv-lane-columns-last",
    "gemv-lane-columns-split's site → join ∘ lastWrg b (λ(cols, xs). the g row groups' sums of "
    "lanes·w columns of one row chunk, λ(P, ys). join ∘ mapLcl(1)(mapLcl(0)(λ(p, yj). h(s("
    "reduce(⊕, z) $ p), g(yj)))) ∘ split lanes $ zip(transpose $ P, split 1 $ ys)) $ (blocks of "
    "lanes·w columns × r chunks of rows ≡ j mod g·r, split lanes·w $ y); b = 0 or every "
    "work-item slot of a multiprocessor; c = 1: a block's r ≤ 8 chunks as one thread-block "
    "cluster; u > 1: each work-item's rows u at a time into u private accumulators",
    "liftkit.blas GPU GEMV T (issue 15): the split reduction over r·g row groups in one kernel, "
    "the last work-group of a column block summing its r partials (CUDA's threadFenceReduction)",
    lambda site: gemv_at(site, True, complex_ok=True),
    lambda parts, t, rows, cols: [dict(o, r=r, b=b, c=c, u=u)
                                  for o in _lane_offers(parts, t, rows, cols, T_LANES, T_WIDTHS)
                                  for r in LAST_PARTS if fits(rows, o["g"] * r)
                                  for b in (0, min(MAX_BOUND, SM_THREADS // (o["lanes"] * o["g"])))
                                  for c in ((0, 1) if r <= MAX_CLUSTER else (0,))
                                  for u in UNROLLS[:4] if fits(rows, o["g"] * r * u)],
    lambda parts, t, rows, cols, lanes, g, w, r, b=0, c=0, u=1: lane_columns_last(
        parts, t, lanes, g, w, r, b, c, u))


GEMV_LANE_COLUMNS_SPLIT = site_rule(
    "gemv-lane-columns-split",
    "map(h) $ zip(join ∘ map(λcol. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(col, x)) ∘ transpose $ A, "
    "map(g) $ y) → join ∘ mapGlb(0)(λ(p, yj). h(s(reduce(⊕, z) $ p), g(yj))) $ zip(transpose $ P, "
    "split 1 $ y) where P = mapWrg(1)(λchunk. join ∘ mapWrg(0)(the g row groups' sums of lanes·w "
    "columns, as gemv-lane-columns, without h, s, g)) over r chunks of rows ≡ j mod g·r",
    "liftkit.blas GPU GEMV T (issue 15): the split reduction over r·g row groups in two passes, "
    "r times the work-groups of gemv-lane-columns (CUDA's split-k GEMV)",
    lambda site: gemv_at(site, True, complex_ok=True),
    lambda parts, t, rows, cols: [dict(o, r=r) for o in _lane_offers(parts, t, rows, cols, T_LANES,
                                                                      T_WIDTHS)
                                  for r in SPLIT_PARTS if fits(rows, o["g"] * r)],
    lambda parts, t, rows, cols, lanes, g, w, r: lane_columns_split(parts, t, lanes, g, w, r))


# ---------------------------------------------------------------------------------------------
# N: A·x (and GESUMMV's two products)


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
        found = _plain_dots(arg.args[0])
        if found is None:
            return None
        halves.append((arg.f.f, found))
    (s1, (op, m, a, x)), (s2, (op2, m2, b, x2)) = halves
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


def _row_at(site: Site) -> Optional[tuple[Any, ...]]:
    """(⊕, m, [A] or [A, B], x, [scales], t, M, N) at the two forms of gemv-row-groups."""
    if site.enclosing:
        return None
    if type(site.f) is P.Join:
        found = _plain_dots(site.call)
        if found is None:
            return None
        op, m, a, x = found
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
    shape = real_matrix(site, mats[0])
    if shape is None or any(site.type_of(b) != site.type_of(mats[0]) for b in mats[1:]):
        return None
    t = shape[0]
    if site.type_of(x) != ArrayType(t, shape[2]):
        return None
    if any(s != t for s in m.param_types + (m.out_type, op.out_type)):
        return None
    return op, m, mats, x, scales, t, shape[1], shape[2]


def row_groups(op: UserFun, m: UserFun, mats: list[Expr], x: Expr, scales: list[Any],
               t: ScalarType, L: int, w: int) -> Expr:
    """A row per work-group of L work-items (see the module docstring)."""
    from liftkit import dsl as D

    vop, vm, ew = vector_ops(op, m, t, w)
    e = vector_ops(op, None, t, 1)[2]  # the scalar identity
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
        vec = as_vectors(w)
        parts = [vec(D.get(i) << row if k > 1 else row) for i in range(k)]
        terms = D.zip(*parts, vec(fresh(x)))
        partial = (D.join << D.toLocal(D.mapLcl(0)(
            lambda col: D.reduceSeq(op, e) << D.asScalar << D.reduceSeq(step, ew) << col))
            << D.transpose << D.split(L) << terms)
        total = local_tree(op, e, L) << partial
        return D.join << D.toGlobal(D.mapLcl(0)(D.mapSeq(D.id_of(t)))) << D.split(1) << total

    rows = fresh(mats[0]) if k == 1 else D.zip(*[fresh(a) for a in mats])
    return D.join << D.mapWrg(0)(group) << rows


def lane_rows(parts: Gemv, t: ScalarType, lanes: int, g: int, w: int, u: int = 1) -> Expr:
    """gemv N's body as work-groups of g rows × lanes work-items (see above); u > 1: each
    work-item's vectors of its row u at a time into u private accumulators (`_unrolled_sum`:
    u loads in flight a work-item)."""
    from liftkit import dsl as D

    op, m, a, x, y = parts.op, parts.m, parts.a, parts.x, parts.y
    vop, vm, ev = vector_ops(op, m, t, w)

    def spread(v: Any) -> Any:  # [lanes][n/(lanes·w)]: lane l takes vectors l, l + lanes, ...
        return D.transpose << D.split(lanes) << as_vectors(w)(v)

    def block(blk: Any) -> Any:
        rows = D.transpose << D.map(lambda q: spread(D.get(0)(q))) << blk  # [lanes][g][…]
        def lane(rl: Any, xs: Any) -> Any:
            if u == 1:
                return D.reduceSeq(lambda acc, st: vop(acc, vm(st[0], st[1])), ev) << D.zip(rl, xs)
            return _unrolled_sum(vop, ev, u, lambda acc, st: vop(acc, vm(st[0], st[1])),
                                 D.zip(rl, xs))

        partial = D.toLocal(D.mapLcl(0)(lambda p: D.mapLcl(1)(
            lambda rl: lane(rl, p[1])) << p[0])) << D.zip(rows, spread(fresh(x)))

        def total(ps: Any) -> Any:
            per_row = D.zip(D.transpose << D.map(D.join) << ps,
                            D.split(1) << D.map(D.get(1)) << blk)
            return D.join << D.mapLcl(1)(lambda one: D.join << D.mapLcl(0)(
                lambda q: _finish(parts, vop, ev, w, q[0], q[1], True)) << one) << D.split(1) << per_row

        return D.let(partial, total)

    return D.join << D.mapWrg(0)(block) << D.split(g) << D.zip(fresh(a), fresh(y))


GEMV_ROW_GROUPS = site_rule(
    "gemv-row-groups",
    "join ∘ map(λrow. reduce(⊕, e) ∘ map(m) $ zip(row, x)) $ A → join ∘ mapWrg(0)(L work-items "
    "sum the row's w-vectors t, t+L, … of m⟨w⟩(row, x), a tree in local memory) $ A; "
    "map(add) $ zip(map(s₁) ∘ (A·x), map(s₂) ∘ (B·x)) → the same over zip(A, B) with the terms "
    "s₁(a·x) + s₂(b·x) (one pass over both matrices)",
    "CLBlast's row GEMV (seed 000 Table 1, ATAX and GESUMMV): a work-group per row",
    _row_at,
    lambda op, m, mats, x, scales, t, rows, cols: [
        {"L": L, "w": w} for w in vector_widths(op, m, WIDTHS, False)
        for L in ROW_GROUPS if fits(cols, L * w)],
    lambda op, m, mats, x, scales, t, rows, cols, L, w: row_groups(op, m, mats, x, scales, t, L, w))

GEMV_LANE_ROWS = site_rule(
    "gemv-lane-rows",
    "map(h) $ zip(join ∘ map(λrow. map(s) ∘ reduce(⊕, z) ∘ map(m) $ zip(row, x)) $ A, map(g) $ y) "
    "→ join ∘ mapWrg(0)(λblk. let P = toLocal(mapLcl(0)(mapLcl(1)(reduceSeq(⊕⟨w⟩ m⟨w⟩))) "
    "(lane l of each of blk's g rows: its vectors l, l+lanes, …) in one work-item per row: h, s, "
    "g of Σ over the lanes of P) ∘ split g $ zip(A, y); u > 1: each work-item's vectors u at a "
    "time into u private accumulators",
    "liftkit.blas GPU GEMV N (issue 15): a row per g work-items' warp, partials in local memory",
    lambda site: gemv_at(site, False, complex_ok=True),
    lambda parts, t, rows, cols: [dict(o, u=u) for o in _lane_offers(parts, t, rows, cols)
                                  for u in UNROLLS if fits(cols, o["lanes"] * o["w"] * u)],
    lambda parts, t, rows, cols, lanes, g, w, u=1: lane_rows(parts, t, lanes, g, w, u))

GEMV_GROUP_RULES: tuple[Rule, ...] = (GEMV_T_GROUPS, GEMV_ROW_GROUPS)
