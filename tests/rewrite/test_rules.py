"""The rewrite rules one by one: what each does to a small program, in the papers' notation, and
where each side condition refuses."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import pytest

from liftkit.arith import cst
from liftkit.dsl import *  # noqa: F403
from liftkit.dsl import abs, fun, map, max, reduce, zip  # noqa: A004 - the papers' names
from liftkit.ir import patterns as P
from liftkit.ir.nodes import FunCall, Lambda, Param, user_fun
from liftkit.ir.printer import show
from liftkit.rewrite import Choice, Site, apply_choice, enumerate_choices, normalize, typed_sites
from liftkit.rewrite.rules import (
    ALGORITHMIC_RULES,
    ALL_RULES,
    LOWERING_RULES,
    RULES_BY_NAME,
    normal_form,
    order_insensitive,
)
from liftkit.rewrite.rules.corpus import addNoId, bundled_cases, random_case, same_result, specialize
from liftkit.semantics.interpreter import interpret
from liftkit.types import ArrayType, float32

# ruff: noqa: F405

N = size("N")


def prog(build: Callable[[], Any]) -> Lambda:
    return normal_form(build())  # type: ignore[return-value]


def choices(p: Lambda, name: str) -> list[Choice]:
    return enumerate_choices(p, [RULES_BY_NAME[name]])


def params_of(p: Lambda, name: str, at: Optional[str] = None) -> list[dict[str, Any]]:
    return [dict(c.params) for c in choices(p, name)
            if at is None or ".".join(map_str(c.path)) == at]


def map_str(path: tuple[int, ...]) -> list[str]:
    return [str(i) for i in path]


def rewrite(p: Lambda, name: str, at: Optional[str] = None, **params: Any) -> Lambda:
    """Apply the one choice of the rule with these parameters (at the given path)."""
    cs = [c for c in choices(p, name) if dict(c.params) == params
          and (at is None or ".".join(map_str(c.path)) == at)]
    assert len(cs) == 1, f"{name} {params} at {at}: {cs}"
    return apply_choice(p, cs[0], RULES_BY_NAME)


# ---------------------------------------------------------------------------------------------
# the rule set


def test_rule_set() -> None:
    from liftkit.rewrite.rules import (EXTRA_RULES, GEMV_GROUP_RULES, HINT_RULES, MM_RULES,
                                       NBODY_RULES, PAPER_RULES, SEARCH_RULES)

    assert PAPER_RULES == ALGORITHMIC_RULES + LOWERING_RULES and len(PAPER_RULES) == 26
    # the extra rules are tested in test_extra_rules.py, the MM rules in test_mm_rules.py, the
    # N-Body tiles in test_nbody_tiles.py, the GEMV work-groups in test_gemv_groups.py, the load
    # hints in tests/blas/test_gemv_streamed.py (not searched: they change no value)
    assert ALL_RULES == PAPER_RULES + EXTRA_RULES + MM_RULES + NBODY_RULES + GEMV_GROUP_RULES \
        + HINT_RULES
    assert not set(HINT_RULES) & set(SEARCH_RULES)
    assert len(RULES_BY_NAME) == len(ALL_RULES)
    for r in ALGORITHMIC_RULES:
        assert not r.lowering and "Fig. 6" in r.source and "→" in r.fact
    for r in LOWERING_RULES:
        assert r.lowering and "Fig. 7" in r.source and "→" in r.fact


# ---------------------------------------------------------------------------------------------
# each rule on a small example: (rule, params, path or None, program, before, after)

X16 = [float32[16]]
EXAMPLES: list[tuple[str, dict[str, Any], Optional[str], Callable[[], Any], str, str]] = [
    ("iterate-decomposition", {"m": 1}, None,
     lambda: fun(X16, lambda x: iterate(3, lambda a: map(abs) << a) << x),
     "λ(x: [float]_16). (iterate 3 (map(abs)))(x)",
     "λ(x: [float]_16). (iterate 1 (map(abs)) ∘ iterate 2 (map(abs)))(x)"),
    ("map-reorder-commute", {}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << map(abs) << reorder << x),
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ map(abs) ∘ reorder)(x)",
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ reorder ∘ map(abs))(x)"),
    ("reorder-map-commute", {}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << reorder << map(abs) << x),
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ reorder ∘ map(abs))(x)",
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ map(abs) ∘ reorder)(x)"),
    ("split-join", {"n": 4}, None,
     lambda: fun(X16, lambda x: map(abs) << x),
     "λ(x: [float]_16). map(abs)(x)",
     "λ(x: [float]_16). (join ∘ map(map(abs)) ∘ split 4)(x)"),
    ("reduce-partRed", {"m": 4}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << x),
     "λ(x: [float]_16). reduce(add, 0.0f)(x)",
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ partRed 4 (add, 0.0f))(x)"),
    # an initial value that is not the identity stays with the full reduction; the chunks start
    # from the identity
    ("reduce-partRed", {"m": 4}, None,
     lambda: fun(X16, lambda x: reduce(max, 2.0) << x),
     "λ(x: [float]_16). reduce(max, 2.0f)(x)",
     "λ(x: [float]_16). (reduce(max, 2.0f) ∘ partRed 4 (max, -inff))(x)"),
    ("partRed-reduce", {}, None,
     lambda: fun(X16, lambda x: partRed(add, 0.0, 1) << x),
     "λ(x: [float]_16). (partRed 1 (add, 0.0f))(x)",
     "λ(x: [float]_16). reduce(add, 0.0f)(x)"),
    ("partRed-reorder", {}, None,
     lambda: fun(X16, lambda x: partRed(add, 0.0, 4) << x),
     "λ(x: [float]_16). (partRed 4 (add, 0.0f))(x)",
     "λ(x: [float]_16). (partRed 4 (add, 0.0f) ∘ reorder)(x)"),
    ("partRed-iterate", {"factor": 2, "count": 2}, None,
     lambda: fun(X16, lambda x: partRed(add, 0.0, 4) << x),
     "λ(x: [float]_16). (partRed 4 (add, 0.0f))(x)",
     "λ(x: [float]_16). (iterate 2 (join ∘ map(partRed 1 (add, 0.0f)) ∘ split 2))(x)"),
    ("partRed-split-join", {"j": 1}, None,
     lambda: fun(X16, lambda x: partRed(add, 0.0, 4) << x),
     "λ(x: [float]_16). (partRed 4 (add, 0.0f))(x)",
     "λ(x: [float]_16). (join ∘ map(partRed 1 (add, 0.0f)) ∘ split 4)(x)"),
    ("partRed-split-join", {"j": 2}, None,
     lambda: fun(X16, lambda x: partRed(add, 0.0, 4) << x),
     "λ(x: [float]_16). (partRed 4 (add, 0.0f))(x)",
     "λ(x: [float]_16). (join ∘ map(partRed 2 (add, 0.0f)) ∘ split 8)(x)"),
    ("join-split-id", {}, None,
     lambda: fun(X16, lambda x: map(abs) << join << split(4) << x),
     "λ(x: [float]_16). (map(abs) ∘ join ∘ split 4)(x)",
     "λ(x: [float]_16). map(abs)(x)"),
    ("split-join-id", {}, None,
     lambda: fun([float32[4][8]], lambda x: map(map(abs)) << split(4) << join << x),
     "λ(x: [[float]_4]_8). (map(map(abs)) ∘ split 4 ∘ join)(x)",
     "λ(x: [[float]_4]_8). map(map(abs))(x)"),
    ("asScalar-asVector-id", {}, None,
     lambda: fun(X16, lambda x: asScalar << asVector(4) << x),
     "λ(x: [float]_16). (asScalar ∘ asVector 4)(x)",
     "λ(x: [float]_16). x"),
    ("asVector-asScalar-id", {}, None,
     lambda: fun([float4[8]], lambda x: asVector(4) << asScalar << x),
     "λ(x: [float4]_8). (asVector 4 ∘ asScalar)(x)",
     "λ(x: [float4]_8). x"),
    ("map-fusion", {}, None,
     lambda: fun(X16, lambda x: map(neg) << map(abs) << x),
     "λ(x: [float]_16). (map(neg) ∘ map(abs))(x)",
     "λ(x: [float]_16). map(neg ∘ abs)(x)"),
    ("reduceSeq-mapSeq-fusion", {}, None,
     lambda: fun(X16, lambda x: reduceSeq(add, 0.0) << mapSeq(abs) << x),
     "λ(x: [float]_16). (reduceSeq(add, 0.0f) ∘ mapSeq(abs))(x)",
     "λ(x: [float]_16). reduceSeq(λ(acc, x_1). add(acc, abs(x_1)), 0.0f)(x)"),
    ("map-mapWrg", {"dim": 0}, "0",
     lambda: fun([float32[4][8]], lambda x: map(map(abs)) << x),
     "λ(x: [[float]_4]_8). map(map(abs))(x)",
     "λ(x: [[float]_4]_8). mapWrg(0)(map(abs))(x)"),
    ("map-mapLcl", {"dim": 0}, None,
     lambda: fun([float32[4][8]], lambda x: mapWrg(0)(map(abs)) << x),
     "λ(x: [[float]_4]_8). mapWrg(0)(map(abs))(x)",
     "λ(x: [[float]_4]_8). mapWrg(0)(mapLcl(0)(abs))(x)"),
    ("map-mapGlb", {"dim": 1}, None,
     lambda: fun([float32[4][8]], lambda x: map(mapGlb(0)(abs)) << x),
     "λ(x: [[float]_4]_8). map(mapGlb(0)(abs))(x)",
     "λ(x: [[float]_4]_8). mapGlb(1)(mapGlb(0)(abs))(x)"),
    ("map-mapSeq", {}, None,
     lambda: fun(X16, lambda x: map(abs) << x),
     "λ(x: [float]_16). map(abs)(x)",
     "λ(x: [float]_16). mapSeq(abs)(x)"),
    ("reduce-reduceSeq", {}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << x),
     "λ(x: [float]_16). reduce(add, 0.0f)(x)",
     "λ(x: [float]_16). reduceSeq(add, 0.0f)(x)"),
    ("reorder-reorderStride", {"s": 4}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << reorder << x),
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ reorder)(x)",
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ reorderStride 4)(x)"),
    ("reorder-id", {}, None,
     lambda: fun(X16, lambda x: map(abs) << reorder << x),
     "λ(x: [float]_16). (map(abs) ∘ reorder)(x)",
     "λ(x: [float]_16). map(abs)(x)"),
    ("mapLcl-toGlobal", {}, None,
     lambda: fun([float32[4][8]], lambda x: mapWrg(0)(mapLcl(0)(abs)) << x),
     "λ(x: [[float]_4]_8). mapWrg(0)(mapLcl(0)(abs))(x)",
     "λ(x: [[float]_4]_8). mapWrg(0)(toGlobal(mapLcl(0)(abs)))(x)"),
    ("mapLcl-toLocal", {}, None,
     lambda: fun([float32[4][8]], lambda x: mapWrg(0)(mapLcl(0)(abs)) << x),
     "λ(x: [[float]_4]_8). mapWrg(0)(mapLcl(0)(abs))(x)",
     "λ(x: [[float]_4]_8). mapWrg(0)(toLocal(mapLcl(0)(abs)))(x)"),
    ("vectorize-map", {"w": 4}, None,
     lambda: fun(X16, lambda x: map(abs) << x),
     "λ(x: [float]_16). map(abs)(x)",
     "λ(x: [float]_16). (asScalar ∘ map(mapVec(abs)) ∘ asVector 4)(x)"),
    ("vectorize-reduce", {"w": 4}, None,
     lambda: fun(X16, lambda x: reduce(add, 0.0) << x),
     "λ(x: [float]_16). reduce(add, 0.0f)(x)",
     "λ(x: [float]_16). (reduce(add, 0.0f) ∘ asScalar ∘ reduce(add4, float4(0.0f, 0.0f, 0.0f, "
     "0.0f)) ∘ asVector 4)(x)"),
]


@pytest.mark.parametrize("name, params, at, build, before, after", EXAMPLES,
                         ids=[f"{e[0]}-{k}" for k, e in enumerate(EXAMPLES)])
def test_rule_example(name: str, params: dict[str, Any], at: Optional[str],
                      build: Callable[[], Any], before: str, after: str) -> None:
    p = prog(build)
    assert show(p) == before
    q = rewrite(p, name, at, **params)
    assert show(q) == after
    # and it means the same on integer-valued data
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-3, 4, _shape(x.type)).astype(np.float32) for x in p.params]
    assert same_result(interpret(q, *inputs), interpret(p, *inputs))


def _shape(t: Any) -> tuple[int, ...]:
    out = []
    while isinstance(t, ArrayType):
        out.append(t.length.value)
        t = t.elem
    if isinstance(t, VectorType):
        out.append(t.width)
    return tuple(out)


def test_every_rule_has_an_example() -> None:
    from liftkit.rewrite.rules import PAPER_RULES

    assert {e[0] for e in EXAMPLES} == {r.name for r in PAPER_RULES}  # extras: test_extra_rules.py


def test_the_fused_asum_derivation_of_fig10() -> None:
    """Seed 002 Fig. 10, step by step with the rules (lengths 16 = 4 · 4)."""
    p = prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << map(abs) << x))
    p = rewrite(p, "reduce-partRed", m=4)                                  # (1)
    p = rewrite(p, "partRed-split-join", j=1)                             # (2)
    p = rewrite(p, "split-join", at="0.2.1.1.1", n=4)                    # (3)
    assert show(p) == ("λ(x: [float]_16). (reduce(add, 0.0f) ∘ join ∘ map(partRed 1 (add, 0.0f)) "
                       "∘ split 4 ∘ join ∘ map(map(abs)) ∘ split 4)(x)")
    p = rewrite(p, "split-join-id")                                       # (4)
    p = rewrite(p, "map-fusion")                                          # (5)
    p = rewrite(p, "map-mapSeq", at="0.2.1.0.0.0.2")                      # (6)
    p = rewrite(p, "partRed-reduce")                                      # (7)
    p = rewrite(p, "reduce-reduceSeq", at="0.2.1.0.0.0")
    p = rewrite(p, "reduceSeq-mapSeq-fusion")                             # (8)
    assert show(p) == ("λ(x: [float]_16). (reduce(add, 0.0f) ∘ join ∘ map(reduceSeq(λ(acc, x_2). "
                       "add(acc, abs(x_2)), 0.0f)) ∘ split 4)(x)")
    data = np.arange(-8, 8, dtype=np.float32)
    assert interpret(p, data)[0] == np.abs(data).sum()


# ---------------------------------------------------------------------------------------------
# side conditions: reductions


sub_assoc = user_fun("catl", [("x", float32), ("y", float32)], float32, "return x;",
                     lambda x, y: x, associative=True)  # associative, not commutative


def _site(call: FunCall, *arg_types: Any, result: Any) -> Site:
    program = Lambda((), call)
    return Site(program, (0,), call, result, tuple(arg_types), ())


def test_reduce_rules_need_a_commutative_operator() -> None:
    """A reduce over an operator that is not declared commutative does not even type-check; the
    rules check the facts themselves as well."""
    xs = Param("xs", float32[16])
    op = Lambda((a := Param("a"), b := Param("b")), FunCall(sub_assoc, (a, b)))
    for pat, name in [(P.Reduce(op), "reduce-partRed"), (P.Reduce(op), "vectorize-reduce"),
                      (P.PartRed(op, cst(4)), "partRed-reorder"),
                      (P.PartRed(op, cst(4)), "partRed-split-join"),
                      (P.PartRed(op, cst(4)), "partRed-iterate")]:
        call = FunCall(pat, (lit(0.0), xs))
        site = _site(call, float32, float32[16], result=float32[4])
        assert RULES_BY_NAME[name].choices(site) == [], name
    p = prog(lambda: fun(X16, lambda x: reduceSeq(sub, 0.0) << reorder << x))
    assert params_of(p, "reorder-reorderStride") == []
    assert params_of(p, "reorder-id") == [{}]


def test_partial_reductions_need_an_identity() -> None:
    # addNoId is associative and commutative but declares no identity element
    p = prog(lambda: fun(X16, lambda x: reduce(addNoId, 0.0) << x))
    assert params_of(p, "reduce-partRed") == []
    assert params_of(p, "vectorize-reduce") == []
    assert params_of(p, "reduce-reduceSeq") == [{}]
    # iterating a partial reduction restarts every chunk from its initial value: only the
    # identity may be used; splitting it keeps one initial value per result and is fine
    p = prog(lambda: fun(X16, lambda x: partRed(add, 1.0, 4) << x))
    assert params_of(p, "partRed-iterate") == []
    assert params_of(p, "partRed-split-join") == [{"j": 1}, {"j": 2}, {"j": 4}]
    p = prog(lambda: fun(X16, lambda x: partRed(add, 0.0, 4) << x))
    assert params_of(p, "partRed-iterate") == [{"factor": 2, "count": 2}, {"factor": 4, "count": 1}]
    assert params_of(p, "partRed-reduce") == []  # only partRed 1 is a reduction


def test_why_the_identity_matters() -> None:
    """Ignoring the condition is unsound: partRed 4 (add, 1.0f) counts the 1 four times."""
    x = np.arange(16, dtype=np.float32)
    good = prog(lambda: fun(X16, lambda v: reduce(add, 1.0) << v))
    bad = prog(lambda: fun(X16, lambda v: reduce(add, 1.0) << partRed(add, 1.0, 4) << v))
    assert interpret(good, x)[0] == 121 and interpret(bad, x)[0] == 125
    assert interpret(rewrite(good, "reduce-partRed", m=4), x)[0] == 121


def test_reduce_partred_factors() -> None:
    p = prog(lambda: fun([float32[12]], lambda x: reduce(add, 0.0) << x))
    assert [c["m"] for c in params_of(p, "reduce-partRed")] == [1, 2, 3, 4, 6, 12]
    sym = prog(lambda: fun([float32[N]], lambda x: reduce(add, 0.0) << x))
    assert [c["m"] for c in params_of(sym, "reduce-partRed")] == [2 ** k for k in range(1, 13)]
    assert [c["m"] for c in params_of(prog(lambda: fun([float32[N * 6]], lambda x: reduce(
        add, 0.0) << x)), "reduce-partRed")] == [2 ** k for k in range(1, 13)]


# ---------------------------------------------------------------------------------------------
# side conditions: reorder


def test_reorder_stride_only_where_the_order_cannot_be_seen() -> None:
    visible = prog(lambda: fun(X16, lambda x: map(abs) << reorder << x))
    assert params_of(visible, "reorder-reorderStride") == []
    zipped = prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << map(add) << zip(reorder << x, x)))
    assert params_of(zipped, "reorder-reorderStride") == []
    summed = prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << map(abs) << reorder << x))
    assert params_of(summed, "reorder-reorderStride") == [{"s": 2}, {"s": 4}, {"s": 8}]
    # through split, partial reductions by the same operator, join and a final reduction
    chunks = prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << join << map(partRed(add, 0.0, 1))
                              << split(4) << reorder << x))
    assert len(params_of(chunks, "reorder-reorderStride")) == 3
    # ... but not when the chunks are combined by another operator
    mixed = prog(lambda: fun(X16, lambda x: reduce(max, -1.0e9) << join << map(
        partRed(add, 0.0, 1)) << split(4) << reorder << x))
    assert params_of(mixed, "reorder-reorderStride") == []
    # a fused sequential reduction acc ⊕ g(x) does not depend on the order either
    fused = prog(lambda: fun(X16, lambda x: reduceSeq(lambda acc, v: add(acc, abs(v)), 0.0)
                             << reorder << x))
    assert len(params_of(fused, "reorder-reorderStride")) == 3


def test_why_the_order_matters() -> None:
    x = np.arange(16, dtype=np.float32)
    p = prog(lambda: fun(X16, lambda x: map(abs) << reorder << x))
    strided = prog(lambda: fun(X16, lambda x: map(abs) << reorderStride(4) << x))
    assert not same_result(interpret(p, x), interpret(strided, x))
    assert show(rewrite(p, "reorder-id")) == "λ(x: [float]_16). map(abs)(x)"


def test_order_analysis_follows_lets_and_wrappers() -> None:
    p = prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << let(reorder << x, lambda r: map(abs) << r)))
    [site] = [s for s in typed_sites(p) if isinstance(s.f, P.Reorder)]
    assert order_insensitive(p, site.path)
    q = prog(lambda: fun(X16, lambda x: let(reorder << x, lambda r: map(abs) << r)))
    [site] = [s for s in typed_sites(q) if isinstance(s.f, P.Reorder)]
    assert not order_insensitive(q, site.path)


# ---------------------------------------------------------------------------------------------
# side conditions: maps and the thread hierarchy


def test_maplcl_only_inside_mapwrg() -> None:
    top = prog(lambda: fun([float32[4][8]], lambda x: map(map(abs)) << x))
    assert params_of(top, "map-mapLcl") == []
    glb = prog(lambda: fun([float32[4][8]], lambda x: mapGlb(0)(map(abs)) << x))
    assert params_of(glb, "map-mapLcl") == []
    wrg = prog(lambda: fun([float32[4][8]], lambda x: mapWrg(0)(map(abs)) << x))
    assert params_of(wrg, "map-mapLcl") == [{"dim": 0}, {"dim": 1}]
    lcl = prog(lambda: fun([float32[4][2][8]], lambda x: mapWrg(0)(mapLcl(1)(map(abs))) << x))
    assert params_of(lcl, "map-mapLcl") == [{"dim": 0}]


def test_mapwrg_and_mapglb_respect_the_hierarchy() -> None:
    wrg = prog(lambda: fun([float32[4][8]], lambda x: mapWrg(0)(map(abs)) << x))
    assert params_of(wrg, "map-mapGlb") == []
    assert params_of(wrg, "map-mapWrg") == [{"dim": 1}]  # not inside mapWrg(0) again
    # an enclosing map must not become a mapGlb around a mapWrg, or a mapWrg around a mapGlb
    inner_wrg = prog(lambda: fun([float32[4][8]], lambda x: map(mapWrg(0)(abs)) << x))
    assert params_of(inner_wrg, "map-mapGlb") == []
    assert params_of(inner_wrg, "map-mapWrg") == [{"dim": 1}]
    inner_glb = prog(lambda: fun([float32[4][8]], lambda x: map(mapGlb(0)(abs)) << x))
    assert params_of(inner_glb, "map-mapWrg") == []
    assert params_of(inner_glb, "map-mapGlb") == [{"dim": 1}]
    # a sequential map never encloses a kernel-level parallel map, and one thread's work
    # (mapSeq, a reduction's operator) never contains one
    assert params_of(inner_glb, "map-mapSeq") == []
    seq = prog(lambda: fun([float32[4][8]], lambda x: mapSeq(map(abs)) << x))
    assert params_of(seq, "map-mapGlb") == [] and params_of(seq, "map-mapWrg") == []
    assert params_of(seq, "map-mapSeq") == [{}]
    # nor an iterate: its iterations would need a barrier across work-groups; inside a mapWrg a
    # mapLcl may iterate (local barriers)
    it = prog(lambda: fun(X16, lambda x: iterate(2, lambda a: join << map(reduce(add, 0.0))
                                                 << split(2) << a) << x))
    assert params_of(it, "map-mapGlb") == [] and params_of(it, "map-mapWrg") == []
    wit = prog(lambda: fun([float32[4][16]], lambda x: mapWrg(0)(iterate(2, lambda a: join << map(
        reduce(add, 0.0)) << split(2) << a)) << x))
    assert params_of(wit, "map-mapLcl") == [{"dim": 0}, {"dim": 1}]


def test_local_and_global_memory() -> None:
    p = prog(lambda: fun([float32[4][8]], lambda x: mapWrg(0)(mapLcl(0)(abs)) << x))
    local = rewrite(p, "mapLcl-toLocal")
    assert params_of(local, "mapLcl-toLocal") == [] and params_of(local, "mapLcl-toGlobal") == []
    assert params_of(prog(lambda: fun([float32[4][8]], lambda x: mapGlb(0)(mapGlb(1)(abs)) << x)),
                     "mapLcl-toLocal") == []


# ---------------------------------------------------------------------------------------------
# side conditions: vectorisation


def test_vectorisation_refuses_vectors_and_non_user_functions() -> None:
    vec = prog(lambda: fun([float4[8]], lambda x: map(abs4) << x))
    assert params_of(vec, "vectorize-map") == []
    once = rewrite(prog(lambda: fun(X16, lambda x: map(abs) << x)), "vectorize-map", w=4)
    assert params_of(once, "vectorize-map") == []  # once per map: its elements are vectors now
    pairs = prog(lambda: fun([float32[16], float32[16]], lambda x, y: map(add) << zip(x, y)))
    assert params_of(pairs, "vectorize-map") == []
    closure = prog(lambda: fun([float32, float32[16]], lambda a, x: map(lambda v: mult(a, v)) << x))
    assert params_of(closure, "vectorize-map") == [{"w": w} for w in (2, 4, 8, 16)]  # a broadcast
    square = prog(lambda: fun([float32[16]], lambda x: map(lambda v: mult(v, v)) << x))
    assert params_of(square, "vectorize-map") == []  # the lane used twice
    odd = prog(lambda: fun([float32[12]], lambda x: map(abs) << x))
    assert params_of(odd, "vectorize-map") == [{"w": 2}, {"w": 4}]
    twice = rewrite(prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << x)), "vectorize-reduce", w=4)
    assert params_of(twice, "vectorize-reduce", at="0") == []


# ---------------------------------------------------------------------------------------------
# side conditions: cancellation and fusion


def test_cancellation_needs_matching_sizes() -> None:
    p = prog(lambda: fun([float32[4][8]], lambda x: split(2) << join << x))
    assert params_of(p, "split-join-id") == []
    q = prog(lambda: fun([float4[8]], lambda x: asVector(2) << asScalar << x))
    assert params_of(q, "asVector-asScalar-id") == []


def test_fusion_needs_the_same_kind_of_map() -> None:
    assert params_of(prog(lambda: fun(X16, lambda x: mapSeq(neg) << map(abs) << x)), "map-fusion") == []
    assert params_of(prog(lambda: fun([float32[4][8]], lambda x: mapGlb(0)(map(neg)) << mapGlb(1)(
        map(abs)) << x)), "map-fusion") == []
    assert params_of(prog(lambda: fun(X16, lambda x: mapSeq(neg) << mapSeq(abs) << x)),
                     "map-fusion") == [{}]
    assert params_of(prog(lambda: fun(X16, lambda x: reduce(add, 0.0) << map(abs) << x)),
                     "reduceSeq-mapSeq-fusion") == []
    assert params_of(prog(lambda: fun(X16, lambda x: iterate(1, map(abs)) << x)),
                     "iterate-decomposition") == []


def test_fusion_keeps_a_parameter_used_twice_as_a_let() -> None:
    p = prog(lambda: fun(X16, lambda x: map(lambda v: add(v, v)) << map(abs) << x))
    q = rewrite(p, "map-fusion")
    x = np.arange(-8, 8, dtype=np.float32)
    assert same_result(interpret(q, x), 2 * np.abs(x))


# ---------------------------------------------------------------------------------------------
# symbolic lengths


def test_symbolic_lengths_offer_powers_of_two() -> None:
    p = prog(lambda: fun([float32[N]], lambda x: map(abs) << x))
    assert [c["n"] for c in params_of(p, "split-join")] == [1] + [2 ** k for k in range(1, 13)]
    assert [c["w"] for c in params_of(p, "vectorize-map")] == [2, 4, 8, 16]


def test_symbolic_split_join_offers_the_size_of_a_consuming_split() -> None:
    """Fig. 10 with a symbolic N: the chunks of partRed-split-join are N/4 long, and split-join
    offers exactly that size (printed, as a string parameter) so that split-join-id cancels."""
    p = prog(lambda: fun([float32[N]], lambda x: reduce(add, 0.0) << map(abs) << x))
    p = rewrite(p, "reduce-partRed", m=4)
    p = rewrite(p, "partRed-split-join", j=1)
    assert params_of(p, "split-join", at="0.2.1.1.1")[-1] == {"n": "N/4"}
    p = rewrite(p, "split-join", at="0.2.1.1.1", n="N/4")
    p = rewrite(p, "split-join-id")
    p = rewrite(p, "map-fusion")
    assert show(p) == ("λ(x: [float]_N). (reduce(add, 0.0f) ∘ join ∘ map(partRed 1 (add, 0.0f) ∘ "
                       "map(abs)) ∘ split (N/4))(x)")
    x = np.arange(-20, 44, dtype=np.float32)
    assert interpret(p, x)[0] == np.abs(x).sum()


def test_symbolic_split_join_refused_where_a_zip_needs_the_exact_length() -> None:
    """join ∘ split 2 over N has length 2*(N/2), which the arithmetic cannot equate with N: a
    zip with an array of length N would no longer type-check, so no choice is offered there."""
    p = prog(lambda: fun([float32[N], float32[N]], lambda x, y: map(add) << zip(map(abs) << x, y)))
    assert params_of(p, "split-join", at="0.1.1") == [{"n": 1}]  # 1*(N/1) is N
    q = prog(lambda: fun([float32[64], float32[64]], lambda x, y: map(add) << zip(map(abs) << x, y)))
    assert len(params_of(q, "split-join", at="0.1.1")) == 7


# ---------------------------------------------------------------------------------------------
# iterate: a site inside an iterate sees only the last iteration's types


def test_rules_inside_iterate_hold_for_every_iteration() -> None:
    step = lambda a: join << map(reduce(add, 0.0)) << split(2) << map(abs) << a  # noqa: E731
    p = prog(lambda: fun(X16, lambda x: iterate(2, step) << x))
    # the map(abs) sees 16 elements, then 8: split 16 would fit the first iteration only
    assert [c["n"] for c in params_of(p, "split-join", at="0.0.0.0.1.1.1")] == [1, 2, 4, 8]
    for c in choices(p, "split-join") + choices(p, "iterate-decomposition"):
        apply_choice(p, c, RULES_BY_NAME)  # every offered choice type-checks


# ---------------------------------------------------------------------------------------------
# normal form and the corpus


def test_normal_form_gives_maps_over_pairs_one_parameter() -> None:
    for norm in (normal_form, normalize):
        p = norm(fun([float32[N], float32[N]], lambda x, y: reduce(add, 0.0) << map(mult)
                     << zip(x, y)))
        mf = [s for s in typed_sites(p) if isinstance(s.f, P.Map)][0].f  # type: ignore[arg-type]
        assert isinstance(mf.f, Lambda) and len(mf.f.params) == 1


def test_corpus_is_deterministic_and_runs() -> None:
    a, b = random_case(7), random_case(7)
    assert show(a.program) == show(b.program) and same_result(a.expected, b.expected)
    names = {c.origin for c in bundled_cases()}
    assert {"bundled:asum", "bundled:gemv(const)", "bundled:mm"} <= names


def test_specialize() -> None:
    from liftkit.programs.blas import gemv

    p = specialize(gemv(), {"N": 4, "M": 8})
    assert show(p).startswith("λ(A: [[float]_8]_4, x: [float]_8, y: [float]_4")
