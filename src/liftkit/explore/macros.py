"""Macro rules for deriving GPU / CPU kernels of reductions and maps (seed 002 §6, seed 004 Fig. 9).

Each macro is a `MacroRule` with numeric parameters whose strategy is a fixed sequence of plain
rules (Fig. 6/7 rules of `liftkit.rewrite.rules` plus the few helper rules below), so a
derivation made through a macro is recorded step by step and replays without it.

The helper rules they use (reduce-split-partRed, partRed-columns, split-split, ...) are in
`liftkit.rewrite.rules.chunking`, soundness-tested with the other extra rules.

Macros (the parameters the search tries are in `GPU_PARAMS` / `CPU_PARAMS`):

* `fuse-partial` (n): reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ join ∘ map(reduceSeq(λ(a, x). a ⊕ f x,
  e)) ∘ split n   (seed 002 Fig. 10 in one step).
* `vectorize-fused` (w): reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ asScalar ∘ reduce(⊕<w>, e<w>) ∘
  map(mapVec f) ∘ asVector w   (the lanes are summed by the outer reduction).
* `to-workgroups` (L, k): reduce(⊕, z) [∘ map(f)] → reduce(⊕, z) ∘ join ∘ mapWrg(0)(
  iterate(log2 L)(join ∘ mapLcl(0)(reduceSeq(⊕, e)) ∘ split 2) ∘ join ∘ toLocal(mapLcl(0)(
  reduceSeq(λ(a, x). a ⊕ f x, e))) ∘ split k ∘ reorderStride L) ∘ split (k·L): L threads per
  group each reduce k elements read strided by L (coalesced; the reorder is only introduced
  where `order_insensitive` holds, through partRed-reorder and reorder-reorderStride), a tree
  in local memory, one result per group. `coalesce=0` keeps the contiguous chunks
  (reorder-id).
* `final-stage` (L): reduce(⊕, e) over the partial results → one work-group of L threads that
  sums them in parallel (to-workgroups with k·L the whole length), then reduce-single: the
  second kernel of a two-stage reduction.
* `to-groups-seq` (k): reduce(⊕, z) [∘ map(f)] → reduce(⊕, z) ∘ join ∘ mapWrg(0)(join ∘
  mapLcl(0)(reduceSeq(…)) ∘ split k) ∘ split k — one work-item per work-group, no local memory
  (seed 004 Fig. 9c, the CPU choice).
* `map-glb-vec` (w): map(f) → asScalar ∘ mapGlb(0)(mapVec f) ∘ asVector w (vectorize-map, then
  map-mapGlb): scal.
* `glb-private` : map(λp. reduce(⊕, z) ∘ map(f) $ xs) → one work-item per element (mapGlb), the
  loop a fused reduceSeq, the element's values read in it copied to private memory first
  (rules/private.py; MRI-Q's ComputeQ).
* `map-wrg` : map(f) → mapWrg(0)(f) for a map over rows whose body holds a reduction
  (gemv: one work-group per row, the per-row dot product then lowered with to-workgroups).
* `gpu-gemv-t` (c, r, w) and `gpu-gemv-rows` (L, w): CLBlast's GEMV kernels in one step each
  (rules/gemv/groups.py): Aᵀ·v in work-groups of r·c work-items per c·w columns, reading A's rows
  as coalesced w-vectors (ATAX's second product), and a work-group of L per row (A·x, and
  GESUMMV's α·A·x + β·B·x in one pass over both matrices); `gpu-gemvs` (c, r, L, w) both, at
  every such product of the program (outermost first), so ATAX's two kernels come in one move:
  a search scoring one half by random walks over the other misses the pair.
* `mm-tiles` (tm, tn, tk, rm, rn, w): matrix multiplication in the CLBlast/NVIDIA shape through
  `mm-tile-2d` (2D tiles, the K loop split by tk) and `mm-tiles-lower` (rules/mm.py: tiles in
  local memory, rm×rn register blocks, float4 (w = 4), double2 (w = 2) or scalar (w = 1, the
  only width of complex types), unrolled; any float, double or complex element type) — the kernel
  of the one-step rule `mm-local-tiles`; `mm-blocks` (rm, rn, wx, wy): the CLBlast/AMD shape through
  `mm-private-blocks` (register blocks, no local memory). The search's parameter families are
  the tile and block shapes of `GPU_PARAMS` / `CPU_PARAMS`.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from liftkit.ir import patterns as P
from liftkit.ir.nodes import FunCall
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.private import PRIVATE_COPY
from liftkit.rewrite.rules.nbody_tiles import at_all_pairs
from liftkit.rewrite.rules.gemv import GEMV_GROUP_RULES, GEMV_ROW_GROUPS, GEMV_T_GROUPS
from liftkit.rewrite.rules.mm import MM_TILE_2D, MM_TILES_LOWER, mm_parts
from liftkit.rewrite.rules.mm_blocks import MM_PRIVATE_BLOCKS
from liftkit.rewrite.rules.chunking import (
    CHUNKING_RULES,
    PARTRED_COLUMNS,
    REDUCE_SINGLE,
    REDUCE_SPLIT_PARTRED,
    REORDER_INTRO,
    SPLIT_JOIN_MAP,
    SPLIT_SPLIT,
    VECTORIZE_MAP_ZIP,
)
from liftkit.rewrite.strategies import (
    MacroRule,
    Strategy,
    at,
    bottomup,
    choice,
    id_,
    repeat,
    rule,
    seq,
    topdown,
    try_,
)

Options = list[dict[str, Any]]

HELPER_RULES: tuple[Rule, ...] = CHUNKING_RULES


# the cheap focus tests of the macros (MacroRule.where)
def _at_reduce(site: Site) -> bool:
    return isinstance(site.f, P.Reduce)


def _at_reduce_of_map(site: Site) -> bool:
    """reduce(⊕, z) ∘ map(f), possibly through the vectorisation's asScalar."""
    if not isinstance(site.f, P.Reduce):
        return False
    arg = site.call.args[1]
    return isinstance(arg, FunCall) and isinstance(arg.f, (P.Map, P.AsScalar))


def _at_map(site: Site) -> bool:
    return isinstance(site.f, P.Map)


def _at_rows(site: Site) -> bool:
    """map(h) ∘ zip(join ∘ map(…) $ A, map(g) $ y): gemv's shape."""
    if not isinstance(site.f, P.Map):
        return False
    z = site.call.args[0]
    if not (isinstance(z, FunCall) and isinstance(z.f, P.Zip) and len(z.args) == 2):
        return False
    a, b = z.args
    return (isinstance(a, FunCall) and isinstance(a.f, P.Join)
            and isinstance(b, FunCall) and isinstance(b.f, P.Map))


def _at_join(site: Site) -> bool:
    return isinstance(site.f, P.Join)


def _at_join_or_map(site: Site) -> bool:
    return isinstance(site.f, (P.Join, P.Map))


def _at_body(site: Site) -> bool:
    """The program's body: a macro that rewrites every nest of a kind in the program."""
    return site.path == (0,)


def _at_mm(site: Site) -> bool:
    """The matrix-multiplication nest the rules of rules/mm.py rewrite."""
    return isinstance(site.f, P.Map) and mm_parts(site) is not None


HELPERS_BY_NAME: dict[str, Rule] = {r.name: r for r in HELPER_RULES}


# ---------------------------------------------------------------------------------------------
# macros (positions are relative to the focus: the reduce, or the map, the macro rewrites)

_G = (2, 1, 0, 0, 0)  # the per-group function's body under reduce ∘ join ∘ map(λg. body) ∘ …


def _fuse_partial(n: int) -> Strategy:
    return seq(rule(REDUCE_SPLIT_PARTRED, n=n), at((2, 1, 1, 1), rule("split-join", n=n)),
               at((2, 1, 1), "split-join-id"), at((2, 1), "map-fusion"),
               at(_G, "partRed-map-fusion"))


def _to_workgroups(L: int, coalesce: int = 1) -> Strategy:
    levels = int(math.log2(L))
    if 2 ** levels != L or levels < 1:
        raise TypeError(f"L={L} is not a power of two")
    strided = seq(at((2, 1, 1), rule(SPLIT_SPLIT)), at((2, 1), "map-fusion"),
                  at(_G + (2, 1, 1), rule(REORDER_INTRO)),
                  at(_G + (2, 1, 1, 1), rule("reorder-reorderStride", s=L))) if coalesce else id_
    return seq(rule(REDUCE_SPLIT_PARTRED, n=L), at((2, 1, 1), rule(SPLIT_JOIN_MAP)),
               at((2, 1), "map-fusion"), strided,
               at(_G, rule("partRed-iterate", factor=2, count=levels)),
               at((2, 1), rule("map-mapWrg", dim=0)),
               at(_G + (1, 1), rule("map-mapLcl", dim=0)), at(_G + (1, 1), "mapLcl-toLocal"),
               at(_G + (0, 0, 0, 1), rule("map-mapLcl", dim=0)),
               at(_G + (0, 0, 0, 1, 0, 0, 0), "partRed-reduceSeq"))


def _to_groups_seq() -> Strategy:
    """One work-item per chunk, no local memory (the CPU choice)."""
    return at((2, 1), rule("map-mapGlb", dim=0))


def _vectorize_fused(w: int) -> Strategy:
    vec_map = choice(rule("vectorize-map", w=w), rule(VECTORIZE_MAP_ZIP, w=w))
    return seq(rule("vectorize-reduce", w=w), at((2, 1, 2, 1), vec_map),
               at((2, 1, 2), "asVector-asScalar-id"))


def _group_reduce(L: int, wrg: int = 1) -> Strategy:
    """One work-group of L threads reduces the whole array: thread l sums column l of
    transpose ∘ split L (elements l, l+L, …: consecutive threads read consecutive addresses),
    then a tree in local memory. wrg=1: the group is a mapWrg of its own (the second kernel of
    a two-stage reduction); wrg=0: the chunk map becomes a one-iteration mapSeq, for a reduction
    inside an enclosing mapWrg (a row of gemv)."""
    levels = int(math.log2(L))
    if 2 ** levels != L or levels < 1:
        raise TypeError(f"L={L} is not a power of two")
    fuse_map = seq(at((2, 1, 1), "split-map-commute"), at((2, 1), "map-fusion"),
                   at(_G, rule(PARTRED_COLUMNS, L=L, map=1)))
    columns = choice(fuse_map, at(_G, rule(PARTRED_COLUMNS, L=L)))
    column = choice(at(_G + (1, 1, 0, 0, 0), "partRed-map-fusion"),
                    at(_G + (1, 1, 0, 0, 0), "partRed-reduceSeq"))
    group = rule("map-mapWrg", dim=0) if wrg else rule("map-mapSeq")
    return seq(rule(REDUCE_SPLIT_PARTRED, whole=1), columns,
               at(_G, rule("partRed-iterate", factor=2, count=levels)), column,
               at((2, 1), group),
               at(_G + (1, 1), rule("map-mapLcl", dim=0)), at(_G + (1, 1), "mapLcl-toLocal"),
               at(_G + (0, 0, 0, 1), rule("map-mapLcl", dim=0)),
               at(_G + (0, 0, 0, 1, 0, 0, 0), "partRed-reduceSeq"),
               rule(REDUCE_SINGLE))


def _fuse_rows() -> Strategy:
    """gemv's two halves in one map over rows: the row results (a join of one-element maps)
    zipped with the elementwise map over y become one map over zip(A, split 1 y)."""
    return seq(at((1, 2), rule("split-join", n=1)), at((1,), "zip-join"), "map-join-commute",
               at((1,), "map-fusion"), at((1,), "map-zip-fusion"),
               at((1, 0, 0, 0), "map-zip-fusion"))


def _gpu_reduction(n: int, L: int, w: int = 4, final: int = 256) -> Strategy:
    """The two-kernel GPU reduction in one move: vectorise by w (w=1: not), n elements per
    thread, L threads per group, a second one-group stage of `final` threads; the scalar sum
    of the last vector's lanes stays sequential."""
    stages = seq(rule(FUSE_PARTIAL, n=n), rule(TO_WORKGROUPS, L=L),
                 rule(GROUP_REDUCE, L=final, wrg=1))
    if w == 1:
        return stages
    return seq(rule(VECTORIZE_FUSED, w=w), at((2, 1), stages), "reduce-reduceSeq")


def _gpu_rows(L: int, w: int = 4) -> Strategy:
    """gemv in one move: fuse-rows, one work-group of L threads per row (a group-reduce of the
    row's vectorised dot product), the row's result computed by one thread."""
    vec = topdown(rule(VECTORIZE_FUSED, w=w)) if w > 1 else id_
    return seq(rule(FUSE_ROWS), vec, at((1,), rule("map-mapWrg", dim=0)),
               bottomup(rule(GROUP_REDUCE, L=L, wrg=0)), try_(topdown("reduce-reduceSeq")),
               at((1, 0, 0, 0), rule("map-mapLcl", dim=0)))


def _cpu_rows(w: int = 8) -> Strategy:
    """gemv for CPUs: fuse-rows, one work-item per row (mapGlb) summing its vectorised dot
    product sequentially (no local memory, no tree), the lanes summed at the end."""
    vec = topdown(rule(VECTORIZE_FUSED, w=w)) if w > 1 else id_
    return seq(rule(FUSE_ROWS), vec, at((1,), rule("map-mapGlb", dim=0)),
               bottomup("reduce-map-fusion"), try_(topdown("reduce-reduceSeq")),
               at((1, 0, 0, 0), "map-mapSeq"))


def _at_map_of_reduce(site: Site) -> bool:
    """map(λp. reduce(⊕, z) ∘ map(f) $ xs): a per-element loop over other data (MRI-Q, N-Body)."""
    f = getattr(site.f, "f", None) if isinstance(site.f, P.Map) else None
    body = getattr(f, "body", None)
    return (isinstance(body, FunCall) and isinstance(body.f, P.Reduce)
            and isinstance(body.args[1], FunCall) and isinstance(body.args[1].f, P.Map))


def _glb_private() -> Strategy:
    """One work-item per element (mapGlb), its loop a fused reduceSeq, the element's values
    read in the loop copied to private memory first (Parboil's ComputeQ shape)."""
    loop = seq("reduce-reduceSeq", at((2,), "map-mapSeq"), "reduceSeq-mapSeq-fusion")
    return seq(rule("map-mapGlb", dim=0), at((0, 0, 0), loop), rule(PRIVATE_COPY))


def _map_glb_vec(w: int) -> Strategy:
    return seq(rule("vectorize-map", w=w), at((1,), rule("map-mapGlb", dim=0)))


def _mm_tiles(tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
              w: Optional[int] = None) -> Strategy:
    """2D tiling and the K split (mm-tile-2d), then local memory, register blocks, vectors and
    unrolling (mm-tiles-lower): mm-local-tiles's kernel in two recorded steps. The tile shape
    must be among those mm-tile-2d offers (rules/mm.py SYMBOLIC_TILES). `w`: the vector width
    of the copies and blocks; None: the widest the element type allows (float4, double2,
    scalars for complex), so one parameter set serves every element type."""
    lower = {"rm": rm, "rn": rn, "unroll": unroll} | ({} if w is None else {"w": w})
    return seq(rule(MM_TILE_2D, tm=tm, tn=tn, tk=tk), rule(MM_TILES_LOWER, **lower))


def _mm_blocks(rm: int, rn: int, wx: int, wy: int) -> Strategy:
    return rule(MM_PRIVATE_BLOCKS, rm=rm, rn=rn, wx=wx, wy=wy)


FUSE_PARTIAL = MacroRule(
    "fuse-partial", _fuse_partial,
    "reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ join ∘ map(reduceSeq(λ(a, x). a ⊕ f x, e)) ∘ split n",
    "seed 002 Fig. 10 in one step",
    where=_at_reduce_of_map)
TO_WORKGROUPS = MacroRule(
    "to-workgroups", _to_workgroups,
    "reduce(⊕, z) ∘ join ∘ map(g) ∘ split k → reduce(⊕, z) ∘ join ∘ mapWrg(0)(iterate log2 L "
    "(join ∘ mapLcl(0)(reduceSeq(⊕, e)) ∘ split 2) ∘ join ∘ toLocal(mapLcl(0)(g)) ∘ split k ∘ "
    "reorderStride L) ∘ split (k·L)   (coalesce=0: no reorderStride)",
    "seed 004 Fig. 9a (to-workgroups + coalesce + local-tree)",
    where=_at_reduce)
TO_GROUPS_SEQ = MacroRule(
    "to-groups-seq", _to_groups_seq,
    "reduce(⊕, z) ∘ join ∘ map(g) ∘ split k → reduce(⊕, z) ∘ join ∘ mapGlb(0)(g) ∘ split k",
    "seed 004 Fig. 9c (one work-item per chunk, no local memory; mapGlb for mapWrg∘mapLcl)",
    where=_at_reduce)
VECTORIZE_FUSED = MacroRule(
    "vectorize-fused", _vectorize_fused,
    "reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ asScalar ∘ reduce(⊕<w>, e) ∘ map(mapVec f) ∘ "
    "asVector w", "seed 004 Fig. 9b (vectorize-reduce + vectorize-map + cancellation)",
    where=_at_reduce_of_map)
GLB_PRIVATE = MacroRule(
    "glb-private", _glb_private,
    "map(λp. reduce(⊕, z) ∘ map(f) $ xs) → mapGlb(0)(λp. (λs. reduceSeq(λ(a, x). a ⊕ f' x, z) $ xs)"
    "(toPrivate(id)(get i p)…))   (f' reads the private copies s of p's components)",
    "map-mapGlb, reduce lowering and fusion, private-copy (rules/private.py)", where=_at_map_of_reduce)
MAP_GLB_VEC = MacroRule(
    "map-glb-vec", _map_glb_vec, "map(f) → asScalar ∘ mapGlb(0)(mapVec f) ∘ asVector w",
    "seed 002 Fig. 7a + 7e",
    where=_at_map)

GROUP_REDUCE = MacroRule(
    "group-reduce", _group_reduce,
    "reduce(⊕, e) [∘ map(f)] → join ∘ mapWrg(0)(iterate log2 L (join ∘ mapLcl(0)(reduceSeq(⊕, e)) "
    "∘ split 2) ∘ join ∘ toLocal(mapLcl(0)(reduceSeq(λ(a, x). a ⊕ f x, e))) ∘ transpose ∘ "
    "split L) ∘ split N   (wrg=0: mapSeq for the one chunk)",
    "seed 004 Fig. 9a's tree with strided columns (a two-stage reduction's second stage)",
    where=_at_reduce)
FUSE_ROWS = MacroRule(
    "fuse-rows", _fuse_rows,
    "map(h) ∘ zip(join ∘ map(f) $ A, map(g) $ y) → join ∘ map(λq. map(λp. h(p.0, g(p.1))) ∘ "
    "zip(f(q.0), q.1)) ∘ zip(A, split 1 y)   (f yields one-element arrays)",
    "split-join, zip-join, map-join-commute, map fusion and map-zip fusion (seed 002 §6.1)",
    where=_at_rows)
GPU_REDUCTION = MacroRule(
    "gpu-reduction", _gpu_reduction,
    "reduce(⊕, z) ∘ map(f) → vectorize-fused w; fuse-partial n; to-workgroups L; group-reduce "
    "(final) on the partial results; reduceSeq for what is left",
    "seed 004 Fig. 9a/b with a parallel second stage (the macros above in sequence)",
    where=_at_reduce_of_map)
GPU_ROWS = MacroRule(
    "gpu-rows", _gpu_rows,
    "map(h) ∘ zip(join ∘ map(reduce(⊕, e) ∘ map(f) ∘ …) $ A, map(g) $ y) → join ∘ mapWrg(0)(one "
    "row: group-reduce L of its vectorised reduction, then h by one thread) ∘ zip(A, split 1 y)",
    "CLBlast-style gemv (seed 000 Table 1) from fuse-rows, vectorize-fused and group-reduce",
    where=_at_rows)
CPU_ROWS = MacroRule(
    "cpu-rows", _cpu_rows,
    "map(h) ∘ zip(join ∘ map(reduce(⊕, e) ∘ map(f) ∘ …) $ A, map(g) $ y) → join ∘ mapGlb(0)(one "
    "row: reduceSeq of its vectorised products, then h) ∘ zip(A, split 1 y)",
    "seed 004 Fig. 9c's CPU shape applied per row (fuse-rows, vectorize-fused, reduce-map-fusion)",
    where=_at_rows)
MM_TILES = MacroRule(
    "mm-tiles", _mm_tiles,
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ tm×tn tiles of C per work-group, A and B tiles of depth tk in local memory, rm×rn float4 "
    "register blocks per work-item (mm-tile-2d, then mm-tiles-lower)",
    "seed 001's MM fragments, CLBlast for NVIDIA (seed 000 Table 1)", where=_at_mm)
MM_BLOCKS = MacroRule(
    "mm-blocks", _mm_blocks,
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ wx×wy work-items per group, each an rm×rn float4 register block of C, no local memory "
    "(mm-private-blocks)",
    "seed 001's MM fragments, CLBlast for AMD (seed 000 Table 1)", where=_at_mm)
NBODY_TILES = MacroRule(
    "nbody-tiles", lambda wg: rule("nbody-local-tiles", wg=wg),
    "map(λp. map(g p) ∘ reduceSeq(f p, z) ys) xs → work-groups of wg elements, ys copied tile by "
    "tile into local memory, each work-item's accumulator private (nbody-local-tiles)",
    "the NVIDIA SDK N-Body kernel (nbody_nvidia)", where=at_all_pairs)
GPU_GEMV_T = MacroRule(
    "gpu-gemv-t", lambda c, r, w=4: rule(GEMV_T_GROUPS, c=c, r=r, w=w),
    "join ∘ map(λcol. reduce(⊕, e) ∘ map(m) $ zip(col, v)) ∘ transpose $ A → a work-group of r·c "
    "work-items per c·w columns, coalesced w-vectors, a tree over row groups (gemv-t-groups)",
    "CLBlast's transposed GEMV (ATAX's second kernel)", where=_at_join)
GPU_GEMV_ROWS = MacroRule(
    "gpu-gemv-rows", lambda L, w=4: rule(GEMV_ROW_GROUPS, L=L, w=w),
    "join ∘ map(λrow. reduce(⊕, e) ∘ map(m) $ zip(row, x)) $ A (or GESUMMV's α·A·x + β·B·x) → a "
    "work-group of L work-items per row, w-vectors, a tree in local memory (gemv-row-groups)",
    "CLBlast's row GEMV (ATAX's first kernel, GESUMMV fused)", where=_at_join_or_map)
GPU_GEMVS = MacroRule(
    "gpu-gemvs", lambda c, r, L, w=4: repeat(topdown(choice(rule(GEMV_T_GROUPS, c=c, r=r, w=w),
                                                            rule(GEMV_ROW_GROUPS, L=L, w=w)))),
    "every matrix-vector product of the program, outermost first, in CLBlast's work-group kernels "
    "(gemv-t-groups c, r; gemv-row-groups L; vectors of w)",
    "CLBlast's ATAX and GESUMMV (seed 000 Table 1): one move to the OpenCL level, so a search "
    "times the whole shape instead of each half beside random lowerings of the other",
    where=_at_body)
MACROS: tuple[MacroRule, ...] = (NBODY_TILES, GPU_GEMVS, GPU_GEMV_T, GPU_GEMV_ROWS, GPU_REDUCTION, GPU_ROWS, CPU_ROWS, FUSE_PARTIAL, TO_WORKGROUPS,
                                 GROUP_REDUCE, FUSE_ROWS,
                                 TO_GROUPS_SEQ, VECTORIZE_FUSED,
                                 MAP_GLB_VEC, GLB_PRIVATE, MM_TILES, MM_BLOCKS)
MACROS_BY_NAME: dict[str, MacroRule] = {m.name: m for m in MACROS}

# the parameters the search tries
GPU_PARAMS: dict[str, list[dict[str, Any]]] = {
    # atax_low's and gesummv_low's shape (gpu-gemv-t and gpu-gemv-rows try neighbours); first,
    # so a step's first jobs measure it
    "gpu-gemvs": [{"c": 4, "r": 64, "L": 128}],
    "fuse-partial": [{"n": n} for n in (16, 32, 64, 128)],
    "to-workgroups": [{"L": L, "coalesce": 1} for L in (128, 256)],
    "group-reduce": [{"L": L, "wrg": g} for g in (1, 0) for L in (128, 256)],
    "gpu-reduction": [{"n": n, "L": L} for n in (16, 32, 64, 128) for L in (128, 256)],
    "gpu-rows": [{"L": L} for L in (64, 128, 256)],
    "fuse-rows": [{}],
    "vectorize-fused": [{"w": 4}],
    "map-glb-vec": [{"w": 4}],
    "glb-private": [{}],
    "nbody-tiles": [{"wg": wg} for wg in (64, 128, 256)],
    # atax_low's transposed kernel (16 columns, 64 row groups) and neighbours
    "gpu-gemv-t": [{"c": c, "r": r} for c, r in ((4, 64), (8, 32))],
    "gpu-gemv-rows": [{"L": L} for L in (128, 256)],
    # the fastest tile shapes of benchmarks/mm_sweep.py on an H100 (docs/perf.md) and neighbours
    "mm-tiles": [{"tm": tm, "tn": tn, "tk": tk, "rm": 8, "rn": 8}
                 for tm, tn, tk in ((64, 64, 16), (64, 128, 16), (128, 64, 16), (64, 64, 32),
                                    (64, 128, 32))],
}
CPU_PARAMS: dict[str, list[dict[str, Any]]] = {
    "cpu-rows": [{"w": w} for w in (4, 8, 16)],
    "fuse-partial": [{"n": n} for n in (1024, 2048, 4096)],
    "to-groups-seq": [{}],
    "vectorize-fused": [{"w": 4}, {"w": 8}],
    "map-glb-vec": [{"w": 4}, {"w": 8}],
    "glb-private": [{}],
    # scalar (w = 1) tiles with small register blocks suit CPU OpenCL compilers, which
    # vectorise across work-items themselves (benchmarks/mm_search.py on the CPU device)
    "mm-tiles": [{"tm": tm, "tn": tn, "tk": tk, "rm": rm, "rn": rn, "w": w}
                 for tm, tn, tk, rm, rn, w in ((64, 64, 16, 4, 4, 1), (32, 32, 16, 2, 2, 1),
                                               (16, 16, 16, 1, 1, 1), (64, 64, 32, 8, 8, 4),
                                               (64, 64, 16, 8, 8, 4))],
    "mm-blocks": [{"rm": rm, "rn": rn, "wx": wx, "wy": wy}
                  for rm, rn, wx, wy in ((4, 4, 8, 8), (4, 8, 8, 8))],
}


# whole GPU kernels (work-groups with local-memory trees): the CPU rule set leaves them out, so
# its searches walk the space they walked before (the `default` set keeps them, for replays)
GPU_ONLY_RULES: tuple[Rule, ...] = GEMV_GROUP_RULES


def rule_space(kind: str = "gpu") -> Any:
    """The rules package's search rules (the chunking rules among them; for "cpu", without
    GPU_ONLY_RULES) and the macros with the parameters of `kind` ("gpu" or "cpu")."""
    from liftkit.explore.space import MacroMove, RuleSpace
    from liftkit.rewrite import rules as pkg
    from liftkit.rewrite.strategies import STANDARD_MACROS

    params = GPU_PARAMS if kind == "gpu" else CPU_PARAMS
    moves = [MacroMove(MACROS_BY_NAME[name], ps) for name, ps in params.items()]
    std = [m for m in STANDARD_MACROS.values()]
    rules = [r for r in pkg.SEARCH_RULES if kind == "gpu" or r not in GPU_ONLY_RULES]
    return RuleSpace(rules, moves + std, kind, getattr(pkg, "normal_form", None))
