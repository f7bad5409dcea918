"""Strategies: the laws of the combinators, traversal order, failure as a value, bounded
repetition, macro rules, and that every success records a replayable trace.

The rules here are small local ones (map fusion, split-join, cancellation, map → mapSeq) so the
laws are tested independently of the rules package."""

from __future__ import annotations

from typing import Any

import pytest

from liftkit.arith import cst, divides
from liftkit.dsl import abs, add, float32, fun, join, map, neg, reduce, size, split
from liftkit.ir.nodes import FunCall, Lambda, Param
from liftkit.ir.patterns import Join, Map, MapSeq, Split
from liftkit.ir.printer import show
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.derivation import Derivation
from liftkit.rewrite.strategies import (
    REPEAT_LIMIT,
    Failure,
    MacroRule,
    Success,
    all_,
    applications,
    at,
    bottomup,
    calls,
    choice,
    everywhere,
    fail,
    id_,
    innermost,
    normalize_with,
    not_,
    one,
    outermost,
    repeat,
    rule,
    seq,
    some,
    where,
    topdown,
    try_,
)

N = size("N")


# ---------------------------------------------------------------------------------------------
# local rules (in rewrite normal form: every pattern function a lambda)


def _is(e: Any, cls: type) -> bool:
    return isinstance(e, FunCall) and type(e.f) is cls


def _compose(f: Lambda, g: Lambda) -> Lambda:
    p = Param("x")
    return Lambda((p,), FunCall(f, (FunCall(g, (p,)),)))


def _fusion_build(site: Site) -> FunCall:
    outer, inner = site.call, site.call.args[0]
    return FunCall(Map(_compose(outer.f.f, inner.f.f)), inner.args)


def _sj_choices(site: Site) -> list[dict[str, int]]:
    if not _is(site.call, Map):
        return []
    n = site.arg_types[0].length  # type: ignore[attr-defined]
    return [{"n": k} for k in (2, 4) if divides(cst(k), n) is not False]


def _sj_build(site: Site, n: int) -> FunCall:
    m, p = site.call, Param("xs")
    inner = Lambda((p,), FunCall(Map(m.f.f), (p,)))
    return FunCall(Join(), (FunCall(Map(inner), (FunCall(Split(cst(n)), m.args),)),))


def _cancel_choices(site: Site) -> list[dict[str, Any]]:
    c = site.call
    if _is(c, Join) and _is(c.args[0], Split):
        return [{}]
    if _is(c, Split) and _is(c.args[0], Join):
        t = site.type_of(c.args[0].args[0])
        return [{}] if t.elem.length == c.f.n else []  # type: ignore[attr-defined]
    return []


MAP_FUSION = Rule("mapFusion", "map f ∘ map g → map (f ∘ g)",
                  lambda s: [{}] if _is(s.call, Map) and _is(s.call.args[0], Map) else [],
                  _fusion_build)
SPLIT_JOIN = Rule("splitJoin", "map f → join ∘ map (map f) ∘ split n", _sj_choices, _sj_build)
CANCEL = Rule("cancel", "join ∘ split n → id; split n ∘ join → id", _cancel_choices,
              lambda s: s.call.args[0].args[0])
TO_SEQ = Rule("mapToMapSeq", "map f → mapSeq f", lambda s: [{}] if _is(s.call, Map) else [],
              lambda s: FunCall(MapSeq(s.call.f.f), s.call.args))
RULES = {r.name: r for r in (MAP_FUSION, SPLIT_JOIN, CANCEL, TO_SEQ)}


def three_maps() -> Lambda:
    return fun([float32[N]], lambda x: map(neg) << map(abs) << map(neg) << x)


def text(r: Any) -> str:
    assert isinstance(r, Success), r
    return show(r.program)


def run(s: Any, p: Lambda | None = None, focus: Any = ()) -> Any:
    return s.apply(p if p is not None else three_maps(), focus, rules=RULES)


# ---------------------------------------------------------------------------------------------
# basic strategies


def test_rule_applies_at_focus_and_records_choice() -> None:
    r = run(rule("mapFusion"), focus=(0,))
    assert text(r) == "λ(x: [float]_N). (map(neg ∘ abs) ∘ map(neg))(x)"
    assert [str(s.choice) for s in r.steps] == ["mapFusion at 0"]
    assert r.steps[0].program == show(r.program) and r.steps[0].result is r.program


def test_rule_failure_is_a_value_with_reason() -> None:
    r = run(rule("mapFusion"), focus=(0, 1, 1))  # map(neg)(x): no map inside
    assert isinstance(r, Failure) and not r
    assert "mapFusion does not apply at 0.1.1" in r.reason
    assert "no function call there" in run(rule("mapFusion"), focus=()).reason
    assert "outside the program" in run(rule("mapFusion"), focus=(7, 7)).reason
    assert "unknown rule 'nope'" in run(rule("nope"), focus=(0,)).reason


def test_rule_parameters_given_first_offered_or_refused() -> None:
    assert run(rule("splitJoin"), focus=(0,)).steps[0].choice.params == {"n": 2}
    assert run(rule("splitJoin", n=4), focus=(0,)).steps[0].choice.params == {"n": 4}
    r = run(rule("splitJoin", n=3), focus=(0,))
    assert not r and "with {'n': 3}" in r.reason and "{'n': 2}" in r.reason


def test_rule_object_needs_no_registry_and_its_trace_replays() -> None:
    r = topdown(SPLIT_JOIN).apply(three_maps())  # no rules= at all
    assert r and r.rules["splitJoin"] is SPLIT_JOIN
    d = Derivation(three_maps(), r.steps, rules=r.rules)
    assert show(d.replay()[-1]) == show(r.program)


def test_at_is_relative_to_the_focus() -> None:
    assert text(run(at((1,), rule("mapFusion")), focus=(0,))) == text(run(at("0.1", "mapFusion")))
    assert run(at("0.1", "mapFusion")).steps[0].choice.path == (0, 1)


def test_id_and_fail() -> None:
    p = three_maps()
    assert text(run(id_, p)) == show(p) and run(id_, p).steps == ()
    assert isinstance(run(fail), Failure)


def test_failure_never_raises_even_on_an_ill_typed_program() -> None:
    from liftkit.dsl import int32

    bad = fun([int32[N]], lambda x: map(neg) << x)  # neg takes floats
    for s in (rule("mapFusion"), topdown("mapFusion"), normalize_with("mapToMapSeq"), one("cancel")):
        r = run(s, bad)
        assert isinstance(r, (Failure, Success))
    r = run(topdown("mapToMapSeq"), bad)
    assert not r and "does not type-check" in r.reason


# ---------------------------------------------------------------------------------------------
# combinator laws

STRATS = {
    "fuse@0": at("0", "mapFusion"),
    "fuse@0.1": at("0.1", "mapFusion"),
    "split@0": at("0", rule("splitJoin", n=4)),
    "fail": fail,
    "id": id_,
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Failure) or isinstance(b, Failure):
        return isinstance(a, Failure) and isinstance(b, Failure)
    return show(a.program) == show(b.program) and [s.choice for s in a.steps] == [
        s.choice for s in b.steps]


@pytest.mark.parametrize("name", list(STRATS))
def test_identity_laws(name: str) -> None:
    s = STRATS[name]
    assert _same(run(seq(id_, s)), run(s))
    assert _same(run(seq(s, id_)), run(s))
    assert _same(run(choice(fail, s)), run(s))
    assert _same(run(choice(s, fail)), run(s))
    assert isinstance(run(seq(fail, s)), Failure)
    assert _same(run(try_(s)), run(choice(s, id_)))


@pytest.mark.parametrize("a", list(STRATS))
@pytest.mark.parametrize("b", list(STRATS))
def test_seq_is_associative_and_choice_left_biased(a: str, b: str) -> None:
    s, t, u = STRATS[a], STRATS[b], STRATS["fuse@0"]
    assert _same(run(seq(seq(s, t), u)), run(seq(s, seq(t, u))))
    assert _same(run(s >> t), run(seq(s, t)))
    first = run(s)
    assert _same(run(s | t), first if first else run(t))


def test_seq_failure_propagates_reason_and_drops_partial_steps() -> None:
    r = run(seq("mapFusion", at("0", "mapFusion"), at("0", "mapFusion")), focus=())
    assert not r  # the first one already fails at the root (a lambda)
    r = run(at("0", "mapFusion") >> at("0", "mapFusion") >> at("0", "mapFusion"))
    assert isinstance(r, Failure) and "mapFusion does not apply at 0" in r.reason


def test_choice_reports_every_alternative() -> None:
    r = run(choice(at("9", "mapFusion"), at("0.1.1", "mapFusion")))
    assert not r and "outside the program" in r.reason and "0.1.1" in r.reason


def test_try_never_fails() -> None:
    assert text(run(try_(fail))) == show(three_maps())
    assert len(run(try_(at("0", "mapFusion"))).steps) == 1


def test_where_and_not_keep_the_program() -> None:
    p = three_maps()
    assert text(run(where(at("0", "mapFusion")), p)) == show(p)
    assert run(where(at("0", "mapFusion")), p).steps == ()
    assert isinstance(run(not_(at("0", "mapFusion")), p), Failure)
    assert run(not_(at("0", "cancel")), p)


def test_repeat_stops_when_it_fails_and_is_bounded() -> None:
    r = run(repeat(at("0", "mapFusion")))
    assert text(r) == "λ(x: [float]_N). map(neg ∘ abs ∘ neg)(x)" and len(r.steps) == 2
    assert run(repeat(fail)).steps == ()  # zero iterations is a success
    assert run(repeat(id_)).steps == ()  # no progress: stops instead of looping
    r = run(repeat(topdown("splitJoin"), limit=5))  # split-join always applies again
    assert isinstance(r, Failure) and "after 5 applications" in r.reason and "limit" in r.reason
    assert REPEAT_LIMIT >= 10


# ---------------------------------------------------------------------------------------------
# traversals


def test_one_all_some_on_children() -> None:
    # focus 0 is map(neg)(...): children are the map pattern (0) and its argument (1)
    r = run(one("mapFusion"), focus=(0,))
    assert [s.choice.path for s in r.steps] == [(0, 1)]
    assert not run(all_("mapFusion"), focus=(0,))  # child 0 (a pattern) is no call
    assert run(all_(fail), p=None, focus=(0, 1, 1, 1)).steps == ()  # a leaf: vacuously true
    r = run(some(try_("mapToMapSeq")), focus=(0,))
    assert [s.choice.path for s in r.steps] == [(0, 1)]
    assert isinstance(run(some("cancel"), focus=(0,)), Failure)
    assert isinstance(run(one("cancel"), focus=(0,)), Failure)


def test_topdown_is_outermost_bottomup_innermost() -> None:
    assert [s.choice.path for s in run(topdown("mapFusion")).steps] == [(0,)]
    assert [s.choice.path for s in run(bottomup("mapFusion")).steps] == [(0, 1)]
    assert text(run(topdown("mapFusion"))) == "λ(x: [float]_N). (map(neg ∘ abs) ∘ map(neg))(x)"
    assert text(run(bottomup("mapFusion"))) == "λ(x: [float]_N). (map(neg) ∘ map(abs ∘ neg))(x)"
    r = run(topdown("cancel"))
    assert not r and "applies nowhere under root" in r.reason


def test_everywhere_is_one_pass() -> None:
    r = run(everywhere("mapToMapSeq"))
    assert text(r) == "λ(x: [float]_N). (mapSeq(neg) ∘ mapSeq(abs) ∘ mapSeq(neg))(x)"
    assert len(r.steps) == 3
    r = run(everywhere(rule("splitJoin", n=2)))  # expanding, but each map once per pass
    assert len(r.steps) == 3 and show(r.program).count("split 2") == 3
    assert run(everywhere("cancel")).steps == ()  # applies nowhere: success, no steps


def test_normalize_with_reaches_a_fixpoint() -> None:
    p = fun([float32[N]], lambda x: map(neg) << map(abs) << map(neg) << map(abs) << x)
    r = run(normalize_with("mapFusion"), p)
    assert text(r) == "λ(x: [float]_N). map(neg ∘ abs ∘ neg ∘ abs)(x)"
    assert run(normalize_with("mapFusion"), r.program).steps == ()  # idempotent
    r = run(normalize_with(rule("splitJoin", n=2), limit=3))
    assert isinstance(r, Failure) and "limit" in r.reason


def test_outermost_and_innermost_with_predicates() -> None:
    p = fun([float32[N]], lambda x: join << map(map(neg)) << split(4) << map(abs) << x)
    r = run(outermost(calls("map"), "mapToMapSeq"), p)
    assert text(r) == "λ(x: [float]_N). (join ∘ mapSeq(map(neg)) ∘ split 4 ∘ map(abs))(x)"
    r = run(innermost("mapToMapSeq"), p)
    assert text(r) == "λ(x: [float]_N). (join ∘ map(mapSeq(neg)) ∘ split 4 ∘ map(abs))(x)"
    r = run(innermost("mapToMapSeq", calls("map")), p)
    assert r.steps[0].choice.path == (0, 1, 0, 0, 0)
    assert not run(outermost(calls("reduce"), "mapToMapSeq"), p)
    r = run(outermost(lambda n: isinstance(n, FunCall) and _is(n.args[0], Split), "mapToMapSeq"), p)
    assert r.steps[0].choice.path == (0, 1)


def test_traces_replay_to_the_same_program() -> None:
    p = fun([float32[N]], lambda x: join << map(map(neg)) << split(4) << map(abs) << map(neg) << x)
    for s in (normalize_with("mapFusion") >> everywhere("mapToMapSeq"),
              at("0.1.1.1", rule("splitJoin", n=4)) >> topdown("cancel") >> normalize_with("mapFusion"),
              repeat(bottomup("mapFusion"))):
        d = s.derive(p, rules=RULES)
        assert show(d.replay(RULES)[-1]) == show(d.final)
        d.verify()


def test_strategies_preserve_meaning_split_cancel_fuse() -> None:
    p = fun([float32[N]], lambda x: reduce(add, 0.0) << map(abs) << map(neg) << x)
    s = (at("0.2", rule("splitJoin", n=4)) >> at("0.2.1.1.1", rule("splitJoin", n=4))
         >> topdown("cancel") >> normalize_with("mapFusion"))
    d = s.derive(p, rules=RULES)
    assert "split 4" in show(d.final) and len(d) == 4
    d.verify(sizes={"N": 64})


# ---------------------------------------------------------------------------------------------
# macro rules


FUSE_ALL = MacroRule("fuseAllMaps", normalize_with("mapFusion"),
                     "map f ∘ ... ∘ map g → map(f ∘ ... ∘ g)")
SPLIT_SEQ = MacroRule("splitToSeq", lambda n=2: rule("splitJoin", n=n) >> at("1.0.0.0", "mapToMapSeq"),
                      "map f → join ∘ map(mapSeq f) ∘ split n")


def test_macro_is_usable_wherever_a_rule_is() -> None:
    rules = {**RULES, FUSE_ALL.name: FUSE_ALL, SPLIT_SEQ.name: SPLIT_SEQ}
    r = topdown("fuseAllMaps").apply(three_maps(), rules=rules)  # by name
    assert text(r) == "λ(x: [float]_N). map(neg ∘ abs ∘ neg)(x)"
    assert [s.macro for s in r.steps] == ["fuseAllMaps", "fuseAllMaps"]
    r2 = topdown(FUSE_ALL).apply(three_maps(), rules=RULES)  # as an object
    assert text(r2) == text(r)
    r3 = rule(SPLIT_SEQ, n=4).apply(r.program, "0", rules=RULES)  # with parameters
    assert text(r3) == "λ(x: [float]_N). (join ∘ map(mapSeq(neg ∘ abs ∘ neg)) ∘ split 4)(x)"
    assert [(s.rule, s.macro) for s in r3.steps] == [("splitJoin", "splitToSeq"),
                                                     ("mapToMapSeq", "splitToSeq")]
    assert not rule(SPLIT_SEQ, bogus=1).apply(r.program, "0", rules=RULES)


def test_macro_trace_replays_step_by_step_without_the_macro() -> None:
    outer = MacroRule("fuseThenSplit", seq(FUSE_ALL, rule(SPLIT_SEQ, n=2)), "nested macros")
    d = topdown(outer).derive(three_maps(), rules=RULES, name="three")
    assert [s.macro for s in d.steps] == ["fuseThenSplit/fuseAllMaps"] * 2 + [
        "fuseThenSplit/splitToSeq"] * 2
    loaded = Derivation.loads(d.dumps(), rules=RULES)  # no macro given: replays rule by rule
    assert [show(p) for p in loaded.replay()] == [show(p) for p in d.programs()]
    assert "[macro fuseThenSplit/splitToSeq]" in str(d)


def test_macro_failure_names_the_macro() -> None:
    r = rule(FUSE_ALL).apply(three_maps(), "0.1.1", rules=RULES)
    assert r  # normalize_with always succeeds (no steps)
    r = rule(SPLIT_SEQ).apply(three_maps(), "0.1.1.1", rules=RULES)
    assert not r and r.reason.startswith("splitToSeq does not apply at 0.1.1.1")


def test_applications_lists_rules_and_macros() -> None:
    apps = applications(three_maps(), [MAP_FUSION, SPLIT_SEQ], rules=RULES)
    assert ("mapFusion", (0,)) in apps and ("mapFusion", (0, 1)) in apps
    assert sum(1 for n, _ in apps if n == "splitToSeq") == 3


def test_a_rule_with_named_parameters_checks_only_the_offers_agreeing_with_them() -> None:
    """Applying a rule with its parameters builds (to check) only the offers agreeing with them,
    not every offer, and picks what filtering the whole list picks; parameters it does not offer
    still fail with the list of offers."""
    from liftkit.rewrite.core import typed_sites
    from liftkit.rewrite.rules.algorithmic import _split_join_build, _split_join_choices, make_rule

    built: list[Any] = []

    def build(site: Site, n: Any) -> Any:
        built.append(n)
        return _split_join_build(site, n)

    counted = make_rule("split-join-counted", "split-join", "test", _split_join_choices, build,
                        reshapes=True)
    prog = fun([float32[64]], lambda x: map(abs) << x)
    rules = {counted.name: counted}
    d = Derivation(prog).then(rule(counted, n=8), (0,), rules=rules)
    assert built == [8, 8]  # the check of n=8 and the rewrite, no other offer built
    site = next(s for s in typed_sites(prog) if isinstance(s.f, Map))
    offers = counted.choices(site)
    assert len(offers) > 2 and {"n": 8} in offers
    built.clear()
    first = Derivation(prog).then(rule(counted), (0,), rules=rules)
    assert dict(first.steps[0].choice.params) == offers[0]
    assert d.replay() and show(d.final) != show(first.final)
    with pytest.raises(Exception, match="it offers"):
        Derivation(prog).then(rule(counted, n=5), (0,), rules=rules)
