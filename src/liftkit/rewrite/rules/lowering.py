"""The OpenCL-specific (lowering) rules of seed 002 Fig. 7 (seed 004 Fig. 4), each a `Rule`.

Map lowering offers only choices that keep the program legal for OpenCL's thread hierarchy, both
towards the enclosing patterns and towards the parallel maps already inside the map's function:
mapLcl only inside a mapWrg (and never around a mapWrg or mapGlb); mapWrg and mapGlb never inside
a parallel map of the other kinds or of their own dimension, and never inside a sequential
pattern (mapSeq, a reduction's operator, mapVec: a thread runs those alone) or an iterate (its
iterations would need a barrier across work-groups; inside a mapWrg, mapLcl iterations
synchronise with local barriers). A mapSeq is not offered around a mapWrg or mapGlb. Dimensions
0 and 1 are offered.
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst, divides
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Node, Param, UserFun, walk
from liftkit.ir.typecheck import layout_only
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import (
    ARRAY_MAPS,
    DIMS,
    VECTOR_WIDTHS,
    array_arg,
    assoc_comm,
    call,
    const,
    fresh,
    factor_choices,
    identity_literal,
    inner_call,
    lam,
    operator,
    wrapped_by,
)
from liftkit.rewrite.rules.order import order_insensitive
from liftkit.types import ScalarType, bool_

Options = list[dict[str, Any]]

# patterns whose function one thread runs by itself
_SEQUENTIAL = (P.MapSeq, P.MapSeqUnroll, P.AbstractReduce, P.MapVec)
# what a kernel-level parallel map (mapGlb, mapWrg) may not be nested in
_NOT_AROUND_KERNEL_MAPS = _SEQUENTIAL + (P.Iterate,)


def _parallel_inside(f: Node) -> list[P.ParallelMap]:
    return [n for n in walk(f) if isinstance(n, P.ParallelMap)]


def _map_site(site: Site) -> bool:
    """A map that does work: a map of a layout-only function (pad, slide, transpose, split,
    join, … and maps of them) stays a view through lowering, as the code generator compiles
    it; lowered to a mapGlb or mapSeq it would be refused."""
    return (isinstance(site.f, P.Map) and array_arg(site) is not None
            and not layout_only(site.f.f))


# ---------------------------------------------------------------------------------------------
# (a) maps


def _glb_choices(site: Site) -> Options:
    if not _map_site(site) or site.inside(P.MapWrg, P.MapLcl, *_NOT_AROUND_KERNEL_MAPS):
        return []
    inner = _parallel_inside(site.f.f)  # type: ignore[attr-defined]
    if any(isinstance(p, (P.MapWrg, P.MapLcl)) for p in inner) or any(
            isinstance(n, P.ToLocal) for n in walk(site.f)):
        return []
    taken = {p.dim for p in site.enclosing + tuple(inner) if isinstance(p, P.MapGlb)}
    return [{"dim": d} for d in DIMS if d not in taken]


def _wrg_choices(site: Site) -> Options:
    if not _map_site(site) or site.inside(P.MapGlb, P.MapLcl, *_NOT_AROUND_KERNEL_MAPS):
        return []
    inner = _parallel_inside(site.f.f)  # type: ignore[attr-defined]
    if any(isinstance(p, P.MapGlb) for p in inner):
        return []
    taken = {p.dim for p in site.enclosing + tuple(inner) if isinstance(p, P.MapWrg)}
    return [{"dim": d} for d in DIMS if d not in taken]


def _lcl_choices(site: Site) -> Options:
    if not _map_site(site) or not site.inside(P.MapWrg) or site.inside(P.MapGlb):
        return []
    inner = _parallel_inside(site.f.f)  # type: ignore[attr-defined]
    if any(isinstance(p, (P.MapGlb, P.MapWrg)) for p in inner):
        return []
    taken = {p.dim for p in site.enclosing + tuple(inner) if isinstance(p, P.MapLcl)}
    return [{"dim": d} for d in DIMS if d not in taken]


def _seq_choices(site: Site) -> Options:
    if not _map_site(site):
        return []
    if any(isinstance(p, (P.MapGlb, P.MapWrg)) for p in _parallel_inside(site.f.f)):  # type: ignore[attr-defined]
        return []
    return [{}]


def _lower_map(kind: type[P.ParallelMap]):  # type: ignore[no-untyped-def]
    def build(site: Site, dim: int) -> Expr:
        return call(kind(site.f.f, dim), *site.call.args)  # type: ignore[attr-defined, call-arg]

    return build


def _seq_build(site: Site) -> Expr:
    return call(P.MapSeq(site.f.f), *site.call.args)  # type: ignore[attr-defined]


MAP_TO_WRG = make_rule("map-mapWrg", "map(f) → mapWrg(d)(f)", "seed 002 Fig. 7a",
                       _wrg_choices, _lower_map(P.MapWrg), lowering=True)
MAP_TO_LCL = make_rule("map-mapLcl", "map(f) → mapLcl(d)(f)   (inside a mapWrg)", "seed 002 Fig. 7a",
                       _lcl_choices, _lower_map(P.MapLcl), lowering=True)
MAP_TO_GLB = make_rule("map-mapGlb", "map(f) → mapGlb(d)(f)", "seed 002 Fig. 7a",
                       _glb_choices, _lower_map(P.MapGlb), lowering=True)
MAP_TO_SEQ = make_rule("map-mapSeq", "map(f) → mapSeq(f)", "seed 002 Fig. 7a",
                       _seq_choices, _seq_build, lowering=True)


# ---------------------------------------------------------------------------------------------
# (b) reduce


def _reduce_seq_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.Reduce) else []


def _reduce_seq_build(site: Site) -> Expr:
    return call(P.ReduceSeq(site.f.f), *site.call.args)  # type: ignore[attr-defined]


REDUCE_TO_SEQ = make_rule("reduce-reduceSeq", "reduce(⊕, z) → reduceSeq(⊕, z)", "seed 002 Fig. 7b",
                          _reduce_seq_choices, _reduce_seq_build, lowering=True)


# ---------------------------------------------------------------------------------------------
# (c) reorder


def _stride_choices(site: Site) -> Options:
    xs = array_arg(site)
    if not isinstance(site.f, P.Reorder) or xs is None:
        return []
    strides = factor_choices(xs.length, trivial=False)
    if not strides or not order_insensitive(site.program, site.path):
        return []
    return [{"s": s} for s in strides]


def _stride_build(site: Site, s: int) -> Expr:
    return call(P.ReorderStride(cst(s)), site.call.args[0])


def _reorder_id_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.Reorder) else []


def _reorder_id_build(site: Site) -> Expr:
    return site.call.args[0]


REORDER_TO_STRIDE = make_rule(
    "reorder-reorderStride",
    "reorder → reorderStride s   (where the consumer cannot observe the order)",
    "seed 002 Fig. 7c", _stride_choices, _stride_build, lowering=True)
REORDER_TO_ID = make_rule("reorder-id", "reorder → id", "seed 002 Fig. 7c",
                          _reorder_id_choices, _reorder_id_build, lowering=True)


# ---------------------------------------------------------------------------------------------
# (d) local / global memory


def _space_choices(site: Site) -> Options:
    ok = (isinstance(site.f, P.MapLcl) and site.inside(P.MapWrg) and wrapped_by(site) is None
          and len(site.call.args) == 1)
    return [{}] if ok else []


def _wrap(kind: type[P.AddressSpaceWrapper]):  # type: ignore[no-untyped-def]
    def build(site: Site) -> Expr:
        f = site.f
        return call(kind(lam(1, lambda x: call(f, x))), site.call.args[0])

    return build


MAPLCL_TO_GLOBAL = make_rule("mapLcl-toGlobal", "mapLcl(d)(f) → toGlobal(mapLcl(d)(f))",
                             "seed 002 Fig. 7d", _space_choices, _wrap(P.ToGlobal), lowering=True)
MAPLCL_TO_LOCAL = make_rule("mapLcl-toLocal", "mapLcl(d)(f) → toLocal(mapLcl(d)(f))",
                            "seed 002 Fig. 7d", _space_choices, _wrap(P.ToLocal), lowering=True)


# ---------------------------------------------------------------------------------------------
# (e) vectorisation


def _scalar(t: object) -> bool:
    return isinstance(t, ScalarType) and t != bool_


def _widths(length: object) -> list[int]:
    n = const(length)  # type: ignore[arg-type]
    if n is not None:
        return [w for w in VECTOR_WIDTHS if n % w == 0]
    return [w for w in VECTOR_WIDTHS if divides(cst(w), length) is not False]  # type: ignore[arg-type]


def _lane_function(f: object) -> Optional[object]:
    """The scalar function a vectorised map applies per lane: a scalar user function, or a
    lambda λx. g(…, x, …) whose other arguments are scalars bound outside it (scal's λv. a·v);
    mapVec broadcasts those over the lanes."""
    op = operator(f)  # type: ignore[arg-type]
    if op is not None:
        ok = op.arity == 1 and _scalar(op.param_types[0]) and _scalar(op.out_type)
        return op if ok else None
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)):
        return None
    g, args = f.body.f, f.body.args
    if not (isinstance(g, UserFun) and _scalar(g.out_type) and all(_scalar(t) for t in g.param_types)):
        return None
    x = f.params[0]
    lanes = [a for a in args if a is x]
    others = [a for a in args if a is not x]
    if len(lanes) != 1 or len(args) != g.arity:
        return None
    if not all(isinstance(a, Literal) or (isinstance(a, Param) and a is not x) for a in others):
        return None
    return f


def _vec_map_choices(site: Site) -> Options:
    xs = array_arg(site)
    if not isinstance(site.f, ARRAY_MAPS) or xs is None or not _scalar(xs.elem):
        return []  # not a map over scalars (e.g. already vectorised: its elements are vectors)
    if _lane_function(site.f.f) is None:
        return []
    return [{"w": w} for w in _widths(xs.length)]


def _vec_map_build(site: Site, w: int) -> Expr:
    lane = _lane_function(site.f.f)  # type: ignore[attr-defined]
    assert lane is not None
    if isinstance(lane, UserFun):
        vec = lam(1, lambda v: call(P.MapVec(lam(1, lambda x: call(lane, x))), v), ("v",))
    else:
        vec = lam(1, lambda v: call(P.MapVec(fresh(lane)), v), ("v",))
    return call(P.AsScalar(), call(site.f.with_functions([vec]),  # type: ignore[attr-defined]
                                   call(P.AsVector(cst(w)), site.call.args[0])))


VECTORIZE_MAP = make_rule(
    "vectorize-map", "map(f) → asScalar ∘ map(mapVec(f)) ∘ asVector n   (f scalar, once per map)",
    "seed 002 Fig. 7e", _vec_map_choices, _vec_map_build, lowering=True, reshapes=True)


def _vec_reduce_choices(site: Site) -> Options:
    xs = array_arg(site, 1)
    if not isinstance(site.f, P.Reduce) or xs is None or not _scalar(xs.elem):
        return []
    if inner_call(site, 1, P.AsScalar) is not None:
        return []  # the outer reduce of an already vectorised reduction
    op = assoc_comm(site.f.f)
    if op is None or op.arity != 2 or not all(_scalar(t) for t in op.param_types + (op.out_type,)):
        return []
    out = []
    for w in _widths(xs.length):
        vop = op.vectorize(w)
        if identity_literal(vop, vop.out_type) is not None:
            out.append({"w": w})
    return out


def _vec_reduce_build(site: Site, w: int) -> Expr:
    red: P.Reduce = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    op = assoc_comm(red.f)
    assert op is not None
    vop = op.vectorize(w)
    e = identity_literal(vop, vop.out_type)
    vred = P.Reduce(lam(2, lambda a, b: call(vop, a, b), ("acc", "x")))
    return call(red, z, call(P.AsScalar(), call(vred, e, call(P.AsVector(cst(w)), xs))))  # type: ignore[arg-type]


VECTORIZE_REDUCE = make_rule(
    "vectorize-reduce",
    "reduce(⊕, z) → reduce(⊕, z) ∘ asScalar ∘ reduce(⊕<n>, <e,..,e>) ∘ asVector n   "
    "(e the identity of ⊕; lane-wise partial results, then a scalar reduction)",
    "extension of seed 002 Fig. 7e to reductions", _vec_reduce_choices, _vec_reduce_build,
    lowering=True, reshapes=True)


LOWERING_RULES: tuple[Rule, ...] = (
    MAP_TO_WRG, MAP_TO_LCL, MAP_TO_GLB, MAP_TO_SEQ, REDUCE_TO_SEQ, REORDER_TO_STRIDE, REORDER_TO_ID,
    MAPLCL_TO_GLOBAL, MAPLCL_TO_LOCAL, VECTORIZE_MAP, VECTORIZE_REDUCE,
)
