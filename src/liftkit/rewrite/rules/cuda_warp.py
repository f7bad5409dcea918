"""Warp reductions: the rules that turn a work-group's tree reduction into warp shuffles.

- `tree-chunks-32`: five levels of a pairwise tree reduction in a work-group (the papers'
  `iterate k (join ∘ mapLcl(reduceSeq(⊕, z)) ∘ split 2)`) are one level over runs of 32:
  `iterate (k-5) (…) ∘ join ∘ mapLcl(0)(reduceSeq(⊕, z)) ∘ split 32`, for an associative and
  commutative ⊕ with identity z. Legal in OpenCL too; it makes the warp-sized shape below.
- `reduceWarp`: `join ∘ mapLcl(0)(reduceSeq(⊕, z)) ∘ split 32 → reduceWarp(⊕, z)` for an
  associative and commutative ⊕ on shuffle-able scalars (dimension 0: warps are runs of 32
  consecutive thread ids along it).

Both change the order of the reduction (exact on the integer-valued inputs of the soundness
tests, reassociated rounding on floats, as every reduce rule).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal
from liftkit.ir.patterns.cuda import SHUFFLE_TYPES, WARP
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import assoc_comm, call, const, fresh, is_identity, lam, type_checks
from liftkit.types import ArrayType, ScalarType

Options = list[dict[str, Any]]
TREE_LEVELS = 5  # log2 of the warp size: the tree levels one warp replaces


def _chunk_reduce(e: Expr, arg: Optional[Expr] = None) -> Optional[tuple[P.MapLcl, FunDecl, Literal, int, Expr]]:
    """(the mapLcl, ⊕ as written, z, n, xs) when e is `join(mapLcl(λc. reduceSeq(⊕)(z, c))(split n xs))`
    (xs must be `arg` when given) with ⊕ associative and commutative and z a literal."""
    if not (isinstance(e, FunCall) and isinstance(e.f, P.Join) and len(e.args) == 1):
        return None
    m = e.args[0]
    if not (isinstance(m, FunCall) and isinstance(m.f, P.MapLcl) and len(m.args) == 1):
        return None
    s = m.args[0]
    if not (isinstance(s, FunCall) and isinstance(s.f, P.Split) and len(s.args) == 1
            and const(s.f.n) is not None and (arg is None or s.args[0] is arg)):
        return None
    g = m.f.f
    if not (isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall)):
        return None
    r = g.body
    if not (type(r.f) is P.ReduceSeq and len(r.args) == 2 and isinstance(r.args[0], Literal)
            and r.args[1] is g.params[0] and assoc_comm(r.f.f) is not None):
        return None
    return m.f, r.f.f, r.args[0], const(s.f.n), s.args[0]  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# tree levels to runs of 32


def _tree_choices(site: Site) -> Options:
    it = site.f
    if not (isinstance(it, P.Iterate) and isinstance(it.f, Lambda) and len(it.f.params) == 1):
        return []
    k = const(it.n)
    found = _chunk_reduce(it.f.body, it.f.params[0])
    if k is None or k < TREE_LEVELS or found is None:
        return []
    _, op, z, n, _ = found
    if n != 2 or not is_identity(z, assoc_comm(op)):  # type: ignore[arg-type]
        return []
    return [{}] if type_checks(site, _tree_build(site)) else []


def _tree_build(site: Site) -> Expr:
    it: P.Iterate = site.f  # type: ignore[assignment]
    mlcl, op, z, _, _ = _chunk_reduce(it.f.body, it.f.params[0])  # type: ignore[attr-defined, misc]
    chunks = lam(1, lambda xs: call(P.Join(), call(
        P.MapLcl(lam(1, lambda c: call(P.ReduceSeq(fresh(op)), z, c)), mlcl.dim),
        call(P.Split(cst(2 ** TREE_LEVELS)), xs))))
    rest = const(it.n) - TREE_LEVELS  # type: ignore[operator]
    return call(P.Iterate(cst(rest), fresh(it.f)), call(chunks, site.call.args[0]))


TREE_CHUNKS_32 = make_rule(
    "tree-chunks-32",
    "iterate k (join ∘ mapLcl(d)(reduceSeq(⊕, z)) ∘ split 2) → iterate (k-5) (…) ∘ "
    "join ∘ mapLcl(d)(reduceSeq(⊕, z)) ∘ split 32   (⊕ assoc., comm., z its identity)",
    "issue 12 (warp reduction)", _tree_choices, _tree_build, lowering=True)


# ---------------------------------------------------------------------------------------------
# runs of 32 to warp shuffles


def _warp_choices(site: Site) -> Options:
    found = _chunk_reduce(site.call)
    if found is None:
        return []
    mlcl, _, z, n, _ = found
    elem = site.type.elem if isinstance(site.type, ArrayType) else None
    if (n != WARP or mlcl.dim != 0 or not isinstance(elem, ScalarType)
            or elem.name not in SHUFFLE_TYPES):
        return []
    return [{}] if type_checks(site, _warp_build(site)) else []


def _warp_build(site: Site) -> Expr:
    _, op, z, _, xs = _chunk_reduce(site.call)  # type: ignore[misc]
    return call(P.ReduceWarp(fresh(op)), z, xs)


REDUCE_WARP = make_rule(
    "reduceWarp", "join ∘ mapLcl(0)(reduceSeq(⊕, z)) ∘ split 32 → reduceWarp(⊕, z)   (⊕ assoc., comm.)",
    "issue 12 (warp reduction)", _warp_choices, _warp_build, lowering=True)


__all__ = ["REDUCE_WARP", "TREE_CHUNKS_32", "TREE_LEVELS"]
