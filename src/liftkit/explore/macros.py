"""Macro rules for deriving GPU / CPU kernels of reductions and maps (seed 002 §6, seed 004 Fig. 9).

Each macro is a `MacroRule` with numeric parameters whose strategy is a fixed sequence of plain
rules (Fig. 6/7 rules of `liftkit.rewrite.rules` plus the few helper rules below), so a
derivation made through a macro is recorded step by step and replays without it.

Helper rules (not in the rules package; each is one small, sound equation):

* `reduce-split-partRed` (n):  reduce(⊕, z) → reduce(⊕, z) ∘ join ∘ map(partRed(⊕, e) 1) ∘ split n
  (e the identity of ⊕; n divides the length; n may be the whole, symbolic, length). The
  Fig. 6d rules only reach a *constant number* of chunks (reduce-partRed m, then
  partRed-split-join gives chunks of N/m); a GPU kernel wants chunks of a constant size.
* `partRed-partRed` (m):  partRed(⊕, e) 1 → partRed(⊕, e) 1 ∘ partRed(⊕, e) m  (e the identity;
  m divides the length): reduce-partRed for a partial reduction to one element.
* `reduce-single`:  reduce(⊕, e) xs → xs  (xs provably one element long, e the identity): drops
  the reduction of the one partial result a one-work-group final stage leaves.

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
* `map-wrg` : map(f) → mapWrg(0)(f) for a map over rows whose body holds a reduction
  (gemv: one work-group per row, the per-row dot product then lowered with to-workgroups).
"""

from __future__ import annotations

import math
from typing import Any, Optional

from liftkit.arith import cst, prove_eq
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import (
    array_arg,
    assoc_comm,
    call,
    const,
    factor_choices,
    fresh,
    identity_literal,
    inner_call,
    is_identity,
    lam,
    size_param,
)
from liftkit.rewrite.strategies import (
    MacroRule,
    Strategy,
    at,
    id_,
    rule,
    seq,
)

Options = list[dict[str, Any]]

# ---------------------------------------------------------------------------------------------
# helper rules


def _reduce_split_choices(site: Site) -> Options:
    xs = array_arg(site, 1)
    if not isinstance(site.f, P.Reduce) or xs is None:
        return []
    op = assoc_comm(site.f.f)
    if op is None or identity_literal(op, site.arg_types[0]) is None:
        return []
    out: Options = [{"n": n} for n in factor_choices(xs.length) if n > 1]
    if const(xs.length) is None:
        out.append({"n": str(xs.length)})  # one chunk: the whole (symbolic) length
    return out


def _reduce_split_build(site: Site, n: int | str) -> Expr:
    red: P.Reduce = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    op = assoc_comm(red.f)
    e = identity_literal(op, site.arg_types[0])  # type: ignore[arg-type]
    assert e is not None
    body = lam(1, lambda c: call(P.PartRed(fresh(red.f), cst(1)), e, c), ("chunk",))
    return call(red, z, call(P.Join(), call(P.Map(body), call(P.Split(size_param(n)), xs))))


REDUCE_SPLIT_PARTRED = make_rule(
    "reduce-split-partRed",
    "reduce(⊕, z) → reduce(⊕, z) ∘ join ∘ map(partRed(⊕, e) 1) ∘ split n   (e the identity of ⊕)",
    "liftkit helper (reduce-partRed + partRed-split-join with a constant chunk size)",
    _reduce_split_choices, _reduce_split_build, reshapes=True)


def _reduce_single_choices(site: Site) -> Options:
    xs = array_arg(site, 1)
    if not isinstance(site.f, P.Reduce) or xs is None:
        return []
    op = assoc_comm(site.f.f)
    if op is None or not is_identity(site.call.args[0], op):
        return []
    return [{}] if prove_eq(xs.length, cst(1)) else []


def _reduce_single_build(site: Site) -> Expr:
    return site.call.args[1]


REDUCE_SINGLE = make_rule(
    "reduce-single", "reduce(⊕, e) xs → xs   (xs of length 1, e the identity of ⊕)",
    "liftkit helper", _reduce_single_choices, _reduce_single_build, reshapes=True, opaque=False)



def _split_split_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.Split) and inner_call(site, 0, P.Split) else []


def _split_split_build(site: Site) -> Expr:
    m = site.f.n  # type: ignore[attr-defined]
    inner = site.call.args[0]
    assert isinstance(inner, FunCall)
    k = inner.f.n  # type: ignore[attr-defined]
    body = lam(1, lambda c: call(P.Split(k), c), ("chunk",))
    return call(P.Map(body), call(P.Split(k * m), inner.args[0]))


SPLIT_SPLIT = make_rule(
    "split-split", "split m ∘ split k → map(split k) ∘ split (k·m)", "liftkit helper (layout)",
    _split_split_choices, _split_split_build, reshapes=True, opaque=False)


def _reorder_intro_choices(site: Site) -> Options:
    ok = (isinstance(site.f, P.Split) and array_arg(site) is not None
          and inner_call(site, 0, (P.Reorder, P.ReorderStride)) is None)
    return [{}] if ok else []


def _reorder_intro_build(site: Site) -> Expr:
    return call(site.f, call(P.Reorder(), site.call.args[0]))


REORDER_INTRO = make_rule(
    "split-reorder", "split k → split k ∘ reorder   (reorder: some permutation; the interpreter's "
    "is the identity, and only reorder-reorderStride checks that the order is unobservable)",
    "liftkit helper (seed 002 Fig. 6d partRed-reorder, for the chunks of a split)",
    _reorder_intro_choices, _reorder_intro_build)



def _sjm_parts(site: Site) -> Optional[tuple[FunCall, FunCall, int]]:
    if not isinstance(site.f, P.Split):
        return None
    j = inner_call(site, 0, P.Join)
    if j is None or not (isinstance(j.args[0], FunCall) and isinstance(j.args[0].f, P.Map)):
        return None
    m = j.args[0]
    t = site.type_of(m)
    c = const(t.elem.length) if hasattr(t, "elem") and hasattr(t.elem, "length") else None
    n = const(site.f.n)  # type: ignore[attr-defined]
    if c is None or n is None or c < 1 or n % c:
        return None
    return j, m, n // c


def _sjm_choices(site: Site) -> Options:
    return [{}] if _sjm_parts(site) is not None else []


def _sjm_build(site: Site) -> Expr:
    parts = _sjm_parts(site)
    assert parts is not None
    _, m, q = parts
    body = lam(1, lambda g: call(P.Join(), call(m.f, g)), ("g",))
    return call(P.Map(body), call(P.Split(cst(q)), m.args[0]))


SPLIT_JOIN_MAP = make_rule(
    "split-join-map", "split (q·c) ∘ join ∘ map(f) → map(join ∘ map(f)) ∘ split q   "
    "(f yields arrays of constant length c)", "liftkit helper (layout)",
    _sjm_choices, _sjm_build, reshapes=True, opaque=False)

HELPER_RULES: tuple[Rule, ...] = (REDUCE_SPLIT_PARTRED, REDUCE_SINGLE, SPLIT_JOIN_MAP, SPLIT_SPLIT,
                                  REORDER_INTRO)
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
    return seq(rule("vectorize-reduce", w=w), at((2, 1, 2, 1), rule("vectorize-map", w=w)),
               at((2, 1, 2), "asVector-asScalar-id"))


def _map_glb_vec(w: int) -> Strategy:
    return seq(rule("vectorize-map", w=w), at((1,), rule("map-mapGlb", dim=0)))


FUSE_PARTIAL = MacroRule(
    "fuse-partial", _fuse_partial,
    "reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ join ∘ map(reduceSeq(λ(a, x). a ⊕ f x, e)) ∘ split n",
    "seed 002 Fig. 10 in one step")
TO_WORKGROUPS = MacroRule(
    "to-workgroups", _to_workgroups,
    "reduce(⊕, z) ∘ join ∘ map(g) ∘ split k → reduce(⊕, z) ∘ join ∘ mapWrg(0)(iterate log2 L "
    "(join ∘ mapLcl(0)(reduceSeq(⊕, e)) ∘ split 2) ∘ join ∘ toLocal(mapLcl(0)(g)) ∘ split k ∘ "
    "reorderStride L) ∘ split (k·L)   (coalesce=0: no reorderStride)",
    "seed 004 Fig. 9a (to-workgroups + coalesce + local-tree)")
TO_GROUPS_SEQ = MacroRule(
    "to-groups-seq", _to_groups_seq,
    "reduce(⊕, z) ∘ join ∘ map(g) ∘ split k → reduce(⊕, z) ∘ join ∘ mapGlb(0)(g) ∘ split k",
    "seed 004 Fig. 9c (one work-item per chunk, no local memory; mapGlb for mapWrg∘mapLcl)")
VECTORIZE_FUSED = MacroRule(
    "vectorize-fused", _vectorize_fused,
    "reduce(⊕, z) ∘ map(f) → reduce(⊕, z) ∘ asScalar ∘ reduce(⊕<w>, e) ∘ map(mapVec f) ∘ "
    "asVector w", "seed 004 Fig. 9b (vectorize-reduce + vectorize-map + cancellation)")
MAP_GLB_VEC = MacroRule(
    "map-glb-vec", _map_glb_vec, "map(f) → asScalar ∘ mapGlb(0)(mapVec f) ∘ asVector w",
    "seed 002 Fig. 7a + 7e")

MACROS: tuple[MacroRule, ...] = (FUSE_PARTIAL, TO_WORKGROUPS, TO_GROUPS_SEQ, VECTORIZE_FUSED,
                                 MAP_GLB_VEC)
MACROS_BY_NAME: dict[str, MacroRule] = {m.name: m for m in MACROS}

# the parameters the search tries
GPU_PARAMS: dict[str, list[dict[str, Any]]] = {
    "fuse-partial": [{"n": n} for n in (16, 32, 64, 128, 256)],
    "to-workgroups": [{"L": L, "coalesce": 1} for L in (64, 128, 256, 512)],
    "vectorize-fused": [{"w": 4}],
    "map-glb-vec": [{"w": 4}],
}
CPU_PARAMS: dict[str, list[dict[str, Any]]] = {
    "fuse-partial": [{"n": n} for n in (1024, 2048, 4096)],
    "to-groups-seq": [{}],
    "vectorize-fused": [{"w": 4}, {"w": 8}],
    "map-glb-vec": [{"w": 4}, {"w": 8}],
}


def rule_space(kind: str = "gpu") -> Any:
    """The rules package's rules, the helper rules above (for replay) and the macros with the
    parameters of `kind` ("gpu" or "cpu")."""
    from liftkit.explore.space import MacroMove, RuleSpace
    from liftkit.rewrite import rules as pkg
    from liftkit.rewrite.strategies import STANDARD_MACROS

    params = GPU_PARAMS if kind == "gpu" else CPU_PARAMS
    moves = [MacroMove(MACROS_BY_NAME[name], ps) for name, ps in params.items()]
    std = [m for m in STANDARD_MACROS.values()]
    return RuleSpace(list(pkg.SEARCH_RULES) + list(HELPER_RULES), moves + std, kind,
                     getattr(pkg, "normal_form", None))
