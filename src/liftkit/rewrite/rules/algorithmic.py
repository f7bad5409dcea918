"""The algorithmic rules of seed 002 Fig. 6 (seed 004 Fig. 3), each a small named `Rule`.

Every rule looks at one FunCall (the *site*): for a composition `f ∘ g` that is the call of f
whose argument is the call of g. Side conditions come from the types at the site and from the
user functions' declared facts (associative, commutative, identity); the type checker re-checks
every result. Where a rule needs an operator's identity element it reads `UserFun.identity`:
a partial reduction starts every chunk from its initial value, so it is exact only when that
value is the operator's identity.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from liftkit.arith import cst, divides, prove_eq
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Param, apply
from liftkit.rewrite.core import Rule, Site, agrees
from liftkit.rewrite.rules.common import (
    ARRAY_MAPS,
    array_arg,
    assoc_comm,
    call,
    checked,
    const,
    divisors,
    factor_choices,
    fresh,
    identity_literal,
    inner_call,
    is_identity,
    lam,
    consumer_split,
    reduction,
    same_len,
    size_param,
)
from liftkit.types import ArrayType, VectorType

Options = list[dict[str, Any]]


def make_rule(name: str, fact: str, source: str, choices: Callable[[Site], Sequence[dict[str, Any]]],
              build: Callable[..., Expr], lowering: bool = False, reshapes: bool = False,
              opaque: bool = True) -> Rule:
    """A Rule whose choices are re-checked where the site's recorded types cannot vouch for the
    result (see `common.checked`): inside an iterate, and for rules that reshape arrays."""

    def guarded(site: Site) -> Options:
        return checked(site, build, choices(site), reshapes, opaque)

    def pick(site: Site, params: Any) -> Any:  # the same answer, checking only agreeing offers
        return next((o for o in choices(site)
                     if agrees(o, params) and checked(site, build, [o], reshapes, opaque)), None)

    guarded.__name__ = f"choices_{name}"
    return Rule(name, fact, guarded, build, source, lowering, pick)


# ---------------------------------------------------------------------------------------------
# (a) iterate decomposition


def _iterate_split_choices(site: Site) -> Options:
    f = site.f
    if not isinstance(f, P.Iterate):
        return []
    c = const(f.n)
    return [] if c is None else [{"m": m} for m in range(1, c)]


def _iterate_split_build(site: Site, m: int) -> Expr:
    it: P.Iterate = site.f  # type: ignore[assignment]
    n = const(it.n) - m  # type: ignore[operator]
    inner = call(P.Iterate(cst(n), it.f), site.call.args[0])
    return call(P.Iterate(cst(m), fresh(it.f)), inner)


ITERATE_DECOMPOSITION = make_rule(
    "iterate-decomposition", "iterate (m+n) f → iterate m f ∘ iterate n f", "seed 002 Fig. 6a",
    _iterate_split_choices, _iterate_split_build, reshapes=True)


# ---------------------------------------------------------------------------------------------
# (b) reorder commutativity


def _map_of_reorder_choices(site: Site) -> Options:
    ok = isinstance(site.f, ARRAY_MAPS) and inner_call(site, 0, P.Reorder) is not None
    return [{}] if ok else []


def _map_of_reorder_build(site: Site) -> Expr:
    r = inner_call(site, 0, P.Reorder)
    assert r is not None
    return call(P.Reorder(), call(site.f, r.args[0]))


def _reorder_of_map_choices(site: Site) -> Options:
    ok = isinstance(site.f, P.Reorder) and inner_call(site, 0, ARRAY_MAPS) is not None
    return [{}] if ok else []


def _reorder_of_map_build(site: Site) -> Expr:
    m = inner_call(site, 0, ARRAY_MAPS)
    assert m is not None
    return call(m.f, call(P.Reorder(), m.args[0]))


MAP_REORDER_COMMUTE = make_rule(
    "map-reorder-commute", "map(f) ∘ reorder → reorder ∘ map(f)", "seed 002 Fig. 6b",
    _map_of_reorder_choices, _map_of_reorder_build)
REORDER_MAP_COMMUTE = make_rule(
    "reorder-map-commute", "reorder ∘ map(f) → map(f) ∘ reorder", "seed 002 Fig. 6b",
    _reorder_of_map_choices, _reorder_of_map_build)


# ---------------------------------------------------------------------------------------------
# (c) split-join


def _split_join_choices(site: Site) -> Options:
    xs = array_arg(site)
    if not isinstance(site.f, P.Map) or xs is None:
        return []
    out: Options = [{"n": n} for n in factor_choices(xs.length)]
    if const(xs.length) is None:
        out.insert(0, {"n": 1})  # chunks of one: to zip a map's result with a join's (gemv)
        # a symbolic length: also the symbolic size of a split that consumes the map's result (as
        # in Fig. 10, where the chunks of a partial reduction of N elements are N/J long), given
        # as its printed form
        s = consumer_split(site)
        if s is not None and const(s) is None and divides(s, xs.length) is not False:
            out.append({"n": str(s)})
    return out


def _split_join_build(site: Site, n: int | str) -> Expr:
    inner = site.f
    return call(P.Join(), call(P.Map(lam(1, lambda c: call(inner, c), ("chunk",))),
                               call(P.Split(size_param(n)), site.call.args[0])))


SPLIT_JOIN = make_rule(
    "split-join", "map(f) → join ∘ map(map(f)) ∘ split n   (n divides the length)", "seed 002 Fig. 6c",
    _split_join_choices, _split_join_build, reshapes=True)


# ---------------------------------------------------------------------------------------------
# (d) reductions


def _reduce_partred_choices(site: Site) -> Options:
    red = reduction(site)
    if red is None or identity_literal(red[0], site.arg_types[0]) is None:
        return []
    return [{"m": m} for m in factor_choices(red[1].length)]


def _reduce_partred_build(site: Site, m: int) -> Expr:
    red: P.Reduce = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    op = assoc_comm(red.f)
    e = identity_literal(op, site.arg_types[0])  # type: ignore[arg-type]
    assert e is not None
    return call(red, z, call(P.PartRed(fresh(red.f), cst(m)), e, xs))


REDUCE_PARTRED = make_rule(
    "reduce-partRed",
    "reduce(⊕, z) → reduce(⊕, z) ∘ partRed(⊕, e) m   (e the identity of ⊕; the paper's z = e)",
    "seed 002 Fig. 6d", _reduce_partred_choices, _reduce_partred_build, reshapes=True)


def _partred(site: Site) -> P.PartRed | None:
    """The site's partRed, if its operator is declared associative and commutative (the type
    rule demands it; the rules check again rather than rely on it)."""
    f = site.f
    ok = isinstance(f, P.PartRed) and len(site.call.args) == 2 and assoc_comm(f.f) is not None
    return f if ok else None  # type: ignore[return-value]


def _partred_reduce_choices(site: Site) -> Options:
    pr = _partred(site)
    return [{}] if pr is not None and prove_eq(pr.m, cst(1)) else []


def _partred_reduce_build(site: Site) -> Expr:
    return call(P.Reduce(site.f.f), *site.call.args)  # type: ignore[attr-defined]


PARTRED_REDUCE = make_rule(
    "partRed-reduce", "partRed(⊕, z) 1 → reduce(⊕, z)", "seed 002 Fig. 6d",
    _partred_reduce_choices, _partred_reduce_build)


def _partred_reorder_choices(site: Site) -> Options:
    pr = _partred(site)
    if pr is None or inner_call(site, 1, (P.Reorder, P.ReorderStride)) is not None:
        return []
    return [{}]


def _partred_reorder_build(site: Site) -> Expr:
    z, xs = site.call.args
    return call(site.f, z, call(P.Reorder(), xs))


PARTRED_REORDER = make_rule(
    "partRed-reorder", "partRed(⊕, z) m → partRed(⊕, z) m ∘ reorder", "seed 002 Fig. 6d",
    _partred_reorder_choices, _partred_reorder_build)


def _partred_iterate_choices(site: Site) -> Options:
    pr = _partred(site)
    xs = array_arg(site, 1)
    if pr is None or xs is None:
        return []
    op = assoc_comm(pr.f)
    if op is None or not is_identity(site.call.args[0], op):
        return []  # every iteration starts each chunk from z again: z must be the identity
    ratio = xs.length // pr.m
    r = const(ratio)
    if r is None or r < 2 or not prove_eq(ratio * pr.m, xs.length):
        return []
    out = []
    for i in divisors(r):
        if i < 2:
            continue
        k, q = 0, 1
        while q < r:
            q, k = q * i, k + 1
        if q == r:
            out.append({"factor": i, "count": k})
    return out


def _partred_iterate_build(site: Site, factor: int, count: int) -> Expr:
    pr: P.PartRed = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    step = lam(1, lambda a: call(P.Join(), call(
        P.Map(lam(1, lambda c: call(P.PartRed(fresh(pr.f), cst(1)), z, c), ("chunk",))),
        call(P.Split(cst(factor)), a))), ("a",))
    return call(P.Iterate(cst(count), step), xs)


PARTRED_ITERATE = make_rule(
    "partRed-iterate",
    "partRed(⊕, e) m → iterate K (join ∘ map(partRed(⊕, e) 1) ∘ split I)   "
    "(input length m·I^K, e the identity of ⊕)",
    "seed 002 Fig. 6d", _partred_iterate_choices, _partred_iterate_build, reshapes=True)


def _partred_split_choices(site: Site) -> Options:
    pr = _partred(site)
    xs = array_arg(site, 1)
    m = const(pr.m) if pr is not None else None
    if pr is None or xs is None or m is None or m < 1:
        return []
    n = const(xs.length)
    if n is not None and n % m:
        return []
    return [{"j": j} for j in divisors(m)]


def _partred_split_build(site: Site, j: int) -> Expr:
    pr: P.PartRed = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    m = const(pr.m)
    n = site.arg_types[1].length  # type: ignore[attr-defined]
    chunk = cst(const(n) * j // m) if const(n) is not None else (n // cst(m)) * cst(j)  # type: ignore[operator]
    return call(P.Join(), call(P.Map(lam(1, lambda c: call(P.PartRed(pr.f, cst(j)), z, c), ("chunk",))),
                               call(P.Split(chunk), xs)))


PARTRED_SPLIT_JOIN = make_rule(
    "partRed-split-join",
    "partRed(⊕, z) (J·K) → join ∘ map(partRed(⊕, z) J) ∘ split (I·J)   (input length I·J·K)",
    "seed 002 Fig. 6d", _partred_split_choices, _partred_split_build, reshapes=True)


# ---------------------------------------------------------------------------------------------
# (e) cancellation


def _join_split_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.Join) and inner_call(site, 0, P.Split) else []


def _split_join_cancel_choices(site: Site) -> Options:
    if not isinstance(site.f, P.Split):
        return []
    j = inner_call(site, 0, P.Join)
    if j is None:
        return []
    t = site.type_of(j.args[0])
    ok = isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and same_len(t.elem.length, site.f.n)
    return [{}] if ok else []


def _as_scalar_vector_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.AsScalar) and inner_call(site, 0, P.AsVector) else []


def _as_vector_scalar_choices(site: Site) -> Options:
    if not isinstance(site.f, P.AsVector):
        return []
    s = inner_call(site, 0, P.AsScalar)
    if s is None:
        return []
    t = site.type_of(s.args[0])
    ok = (isinstance(t, ArrayType) and isinstance(t.elem, VectorType)
          and const(site.f.n) == t.elem.width)
    return [{}] if ok else []


def _cancel_build(site: Site) -> Expr:
    inner = site.call.args[0]
    assert isinstance(inner, FunCall)
    return inner.args[0]


JOIN_SPLIT = make_rule("join-split-id", "join ∘ split n → id", "seed 002 Fig. 6e",
                       _join_split_choices, _cancel_build, reshapes=True, opaque=False)
SPLIT_JOIN_ID = make_rule("split-join-id", "split n ∘ join → id   (inner length n)",
                          "seed 002 Fig. 6e", _split_join_cancel_choices, _cancel_build,
                          reshapes=True, opaque=False)
ASSCALAR_ASVECTOR = make_rule("asScalar-asVector-id", "asScalar ∘ asVector n → id",
                              "seed 002 Fig. 6e (joinVec ∘ splitVec n)",
                              _as_scalar_vector_choices, _cancel_build, reshapes=True, opaque=False)
ASVECTOR_ASSCALAR = make_rule("asVector-asScalar-id", "asVector n ∘ asScalar → id   (width n)",
                              "seed 002 Fig. 6e (splitVec n ∘ joinVec)",
                              _as_vector_scalar_choices, _cancel_build, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# (f) fusion


def _fusable(site: Site) -> FunCall | None:
    f = site.f
    if not isinstance(f, ARRAY_MAPS):
        return None
    g = inner_call(site, 0, type(f))
    if g is None or g.f.static_params() != f.static_params():  # type: ignore[attr-defined]
        return None
    if not (isinstance(f.f, Lambda) and isinstance(g.f.f, Lambda)):  # type: ignore[attr-defined]
        return None
    return g


def _map_fusion_choices(site: Site) -> Options:
    return [{}] if _fusable(site) is not None else []


def _map_fusion_build(site: Site) -> Expr:
    g = _fusable(site)
    assert g is not None
    f_fun: Lambda = site.f.f  # type: ignore[attr-defined]
    g_fun: Lambda = g.f.f  # type: ignore[attr-defined]
    fused = Lambda(g_fun.params, apply(f_fun, [g_fun.body]))
    return call(site.f.with_functions([fused]), g.args[0])  # type: ignore[attr-defined]


MAP_FUSION = make_rule(
    "map-fusion", "map(f) ∘ map(g) → map(f ∘ g)", "seed 002 Fig. 6f",
    _map_fusion_choices, _map_fusion_build)


def _reduce_map_choices(site: Site) -> Options:
    m = inner_call(site, 1, P.MapSeq)
    ok = (isinstance(site.f, P.ReduceSeq) and isinstance(site.f.f, Lambda) and len(site.f.f.params) == 2
          and m is not None and isinstance(m.f.f, Lambda) and len(m.f.f.params) == 1)  # type: ignore[attr-defined]
    return [{}] if ok else []


def _reduce_map_build(site: Site) -> Expr:
    m = inner_call(site, 1, P.MapSeq)
    assert m is not None
    f_fun: Lambda = site.f.f  # type: ignore[attr-defined]
    g_fun: Lambda = m.f.f  # type: ignore[attr-defined]
    acc = Param("acc")
    op = Lambda((acc,) + g_fun.params, apply(f_fun, [acc, g_fun.body]))
    return call(P.ReduceSeq(op), site.call.args[0], m.args[0])


REDUCESEQ_MAPSEQ_FUSION = make_rule(
    "reduceSeq-mapSeq-fusion",
    "reduceSeq(f, z) ∘ mapSeq(g) → reduceSeq(λ(acc, x). f(acc, g(x)), z)", "seed 002 Fig. 6f",
    _reduce_map_choices, _reduce_map_build)


ALGORITHMIC_RULES: tuple[Rule, ...] = (
    ITERATE_DECOMPOSITION, MAP_REORDER_COMMUTE, REORDER_MAP_COMMUTE, SPLIT_JOIN, REDUCE_PARTRED,
    PARTRED_REDUCE, PARTRED_REORDER, PARTRED_ITERATE, PARTRED_SPLIT_JOIN, JOIN_SPLIT,
    SPLIT_JOIN_ID, ASSCALAR_ASVECTOR, ASVECTOR_ASSCALAR, MAP_FUSION, REDUCESEQ_MAPSEQ_FUSION,
)
