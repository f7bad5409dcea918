"""Derivations: printing, JSON round trip, replay with clear errors, verification against the
interpreter (catching a deliberately wrong step), and the seed derivations: seed 002 Fig. 10
(asum) step by step and GEMV down to a fused local-memory kernel run on PoCL."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from liftkit.arith import cst, divides
from liftkit.dsl import abs, float32, fun, map, neg, size
from liftkit.ir.nodes import FunCall, Lambda, Param
from liftkit.ir.patterns import Join, Map, Split
from liftkit.ir.printer import show
from liftkit.rewrite.core import Choice, Rule, Site
from liftkit.rewrite.derivation import (
    Derivation,
    ReplayError,
    Step,
    VerificationError,
    random_inputs,
)
from liftkit.rewrite.strategies import at, innermost, rule, topdown

N = size("N")


# ---------------------------------------------------------------------------------------------
# local rules: a correct split-join and two deliberately wrong rules


def _is(e: Any, cls: type) -> bool:
    return isinstance(e, FunCall) and type(e.f) is cls


def _sj_build(site: Site, n: int) -> FunCall:
    m, p = site.call, Param("xs")
    inner = Lambda((p,), FunCall(Map(m.f.f), (p,)))
    return FunCall(Join(), (FunCall(Map(inner), (FunCall(Split(cst(n)), m.args),)),))


SPLIT_JOIN = Rule(
    "splitJoin", "map f → join ∘ map (map f) ∘ split n",
    lambda s: [{"n": k} for k in (2, 4) if _is(s.call, Map)
               and divides(cst(k), s.arg_types[0].length) is not False],  # type: ignore[attr-defined]
    _sj_build)
# WRONG on purpose: drops a map whose function keeps the element type
DROP_MAP = Rule("dropMap", "map f → id (unsound)",
                lambda s: [{}] if _is(s.call, Map) and s.type == s.arg_types[0] else [],
                lambda s: s.call.args[0])
# WRONG on purpose, but only visibly so on some inputs: abs → neg (equal on non-positive values)
ABS_TO_NEG = Rule("absToNeg", "abs x → neg x (unsound)",
                  lambda s: [{}] if getattr(s.call.f, "name", "") == "abs" else [],
                  lambda s: FunCall(neg, s.call.args))
TOY = {r.name: r for r in (SPLIT_JOIN, DROP_MAP, ABS_TO_NEG)}


def toy() -> Lambda:
    return fun([float32[N]], lambda x: map(neg) << map(abs) << x)


def toy_derivation() -> Derivation:
    s = at("0", rule("splitJoin", n=4)) >> at("0.1.0.0.0", rule("splitJoin", n=2))
    return s.derive(toy(), rules=TOY, name=None)


# ---------------------------------------------------------------------------------------------
# printing


def test_prints_numbered_steps_in_the_papers_notation() -> None:
    d = toy_derivation()
    assert str(d).splitlines() == [
        "    map(neg) ∘ map(abs)",
        "(1) → join ∘ map(map(neg)) ∘ split 4 ∘ map(abs)    -- splitJoin(n=4) at 0",
        "(2) → join ∘ map(join ∘ map(map(neg)) ∘ split 2) ∘ split 4 ∘ map(abs)"
        "    -- splitJoin(n=2) at 0.1.0.0.0",
    ]
    assert "(2) → splitJoin(n=2) at 0.1.0.0.0" in d.pretty()
    assert "λ(x: [float]_N)" in d.pretty()


def test_multi_input_programs_print_with_their_parameters() -> None:
    from liftkit.programs import PROGRAMS

    d = Derivation.of_program("dot")
    assert d.lines()[0] == ("    dot = λ(x: [float]_N, y: [float]_N). "
                            "(reduce(add, 0.0f) ∘ map(mult))(zip(x, y))")
    assert len(d) == 0
    assert show(d.final) == show(Derivation(PROGRAMS["dot"].program).start)


# ---------------------------------------------------------------------------------------------
# JSON


def test_json_round_trip(tmp_path: Any) -> None:
    d = toy_derivation()
    data = d.to_json()
    assert data["start"] == "λ(x: [float]_N). (map(neg) ∘ map(abs))(x)"
    assert data["user_funs"] == ["abs", "neg"]
    assert data["steps"][0] == {"rule": "splitJoin", "path": [0], "params": {"n": 4},
                                "program": show(d.programs()[1])}
    text = d.dumps()
    assert json.loads(text) == data and len(text.splitlines()) == 10  # one line per step
    back = Derivation.loads(text, rules=TOY)
    assert back.to_json() == data
    assert [show(p) for p in back.replay()] == [show(p) for p in d.programs()]
    path = tmp_path / "toy.json"
    d.save(path)
    assert Derivation.load(path, rules=TOY).to_json() == data


def test_json_keeps_the_bundled_program_name_and_its_user_functions() -> None:
    from liftkit.dsl import int4
    from liftkit.programs.blas import mul3_4  # a non-standard user function

    start = fun([int4[N]], lambda x: map(mul3_4) << x)
    d = Derivation(start, name="vector_scal")
    back = Derivation.loads(d.dumps())  # mul3 found through the bundled program
    assert back.name == "vector_scal" and show(back.start) == show(d.start)
    anon = Derivation(start)
    with pytest.raises(ReplayError, match="user function.*mul3_v4"):
        Derivation.loads(anon.dumps())
    assert show(Derivation.loads(anon.dumps(), user_funs={"mul3_v4": mul3_4}).start) == show(d.start)


def test_json_rejects_unknown_format() -> None:
    data = toy_derivation().to_json() | {"format": "something/9"}
    with pytest.raises(ReplayError, match="unknown derivation format"):
        Derivation.from_json(data)


# ---------------------------------------------------------------------------------------------
# replay


def _tampered(d: Derivation, k: int, **change: Any) -> Derivation:
    data = d.to_json()
    data["steps"][k - 1].update(change)
    return Derivation.from_json(data, rules=TOY)


def test_replay_names_the_step_that_no_longer_applies() -> None:
    d = toy_derivation()
    bad = _tampered(d, 2, path=[0, 1, 0, 0, 0, 0])
    with pytest.raises(ReplayError, match=r"^step 2: splitJoin does not apply at 0\.1\.0\.0\.0\.0 \("):
        bad.replay()
    bad = _tampered(d, 2, params={"n": 3})
    with pytest.raises(ReplayError, match=r"step 2: splitJoin does not apply at 0\.1\.0\.0\.0 "
                                          r"with \{'n': 3\} \(the call there is map\(neg\)\(xs\); "
                                          r"applicable parameters there: \[\{'n': 2\}, \{'n': 4\}\]\)"):
        bad.replay()
    bad = _tampered(d, 1, path=[0, 0])
    with pytest.raises(ReplayError, match=r"step 1: splitJoin does not apply at 0\.0 \(no function"):
        bad.replay()
    bad = _tampered(d, 1, rule="splitJion")
    with pytest.raises(ReplayError, match="step 1: unknown rule 'splitJion'"):
        bad.replay()


def test_replay_checks_the_recorded_program_text() -> None:
    d = toy_derivation()
    bad = _tampered(d, 1, program=d.steps[0].program.replace("split 4", "split 8"))
    with pytest.raises(ReplayError, match="step 1: .* gives a different program than recorded"):
        bad.replay()
    assert len(bad.replay(check_text=False)) == 3


def test_derivation_extends_with_strategies() -> None:
    d = Derivation(toy(), rules=TOY).then(at("0.1", rule("splitJoin", n=2)))
    assert [str(s.choice) for s in d.steps] == ["splitJoin(n=2) at 0.1"]
    with pytest.raises(Exception, match="after step 1: topdown"):
        d.then(topdown("nothingLikeThis"))
    d2 = d.extended([Step(Choice("splitJoin", (0,), {"n": 4}))])
    assert len(d2.replay()) == 3 and d2.steps[-1].program is None


# ---------------------------------------------------------------------------------------------
# verification


def test_verification_accepts_sound_steps() -> None:
    d = toy_derivation()
    assert d.verify() == []
    assert d.default_sizes() == {"N": 8}  # twice the lcm of 4 and 2


def test_verification_catches_a_wrong_step() -> None:
    d = toy_derivation().then(topdown("dropMap"), rules=TOY)
    assert d.steps[-1].rule == "dropMap"
    with pytest.raises(VerificationError, match=r"step 3 \(dropMap at .*\): the result differs"):
        d.verify()
    problems = d.verify(raise_on_error=False)
    assert len(problems) == 1 and problems[0].startswith("step 3")


def test_verification_uses_random_inputs_that_expose_sign_errors() -> None:
    d = Derivation(toy(), rules=TOY).then(topdown("absToNeg"), rules=TOY)
    with pytest.raises(VerificationError, match="step 1 .absToNeg"):
        d.verify(trials=1)
    xs = random_inputs(d.start, {"N": 64}, np.random.default_rng(1))
    assert xs[0].dtype == np.float32 and np.all(xs[0] == np.round(xs[0]))
    assert (xs[0] > 0).any() and (xs[0] < 0).any()
    # with inputs where the wrong rule happens to agree, it would pass: the check is empirical
    assert d.verify(inputs=[-np.ones(8, np.float32)]) == []


def test_verification_reports_steps_that_fail_to_evaluate() -> None:
    d = toy_derivation()
    problems = d.verify(sizes={"N": 6}, raise_on_error=False)  # 4 does not divide 6
    assert problems and "evaluation failed" in problems[0]


def test_scalar_and_matrix_inputs() -> None:
    from liftkit.programs import PROGRAMS

    g = PROGRAMS["gemv"].program
    xs = random_inputs(g, {"N": 4, "M": 8}, np.random.default_rng(0))
    assert [np.shape(x) for x in xs] == [(4, 8), (8,), (4,), (), ()]
    assert xs[3] != 0 and xs[4] != 0


# ---------------------------------------------------------------------------------------------
# seed 002 Fig. 10: the asum derivation, step by step

rules_pkg = pytest.importorskip("liftkit.rewrite.rules")
I, J = 128, 32  # asum_{I×J}: the figure's sizes, N = I·J = 4096


def specialise(program: Lambda, **sizes: int) -> Lambda:
    """The program at fixed sizes (as the figure's asum_{I×J}): its printed form with each size
    variable replaced, read back."""
    from liftkit.ir.parser import parse_program

    text = show(program)
    for name, v in sizes.items():
        text = re.sub(rf"\]_{name}\b", f"]_{v}", text)
    return parse_program(text)


# the figure's lines (seed 002 Fig. 10, transcribed; line (1)'s "∘ J ∘" typo read as the rule
# says), with the rule labels printed over its arrows
FIG10 = [
    ("6d", "reduce (+) 0 ∘ reducePart (+) 0 J ∘ map abs"),
    ("6d", "reduce (+) 0 ∘ join ∘ map (reducePart (+) 0 1) ∘ split I ∘ map abs"),
    ("6c", "reduce (+) 0 ∘ join ∘ map (reducePart (+) 0 1) ∘ split I ∘ join ∘ map (map abs) "
           "∘ split I"),
    ("6e", "reduce (+) 0 ∘ join ∘ map (reducePart (+) 0 1) ∘ map (map abs) ∘ split I"),
    ("6f", "reduce (+) 0 ∘ join ∘ map (reducePart (+) 0 1 ∘ map abs) ∘ split I"),
    ("7a", "reduce (+) 0 ∘ join ∘ map (reducePart (+) 0 1 ∘ mapSeq abs) ∘ split I"),
    ("6d & 7b", "reduce (+) 0 ∘ join ∘ map (reduceSeq (+) 0 ∘ mapSeq abs) ∘ split I"),
    ("6f", "reduce (+) 0 ∘ join ∘ map (reduceSeq (λ(acc, a). acc + (abs a)) 0) ∘ split I"),
]
FIG10_STRATEGIES = [
    topdown(rule("reduce-partRed", m=J)),
    topdown(rule("partRed-split-join", j=1)),
    innermost(rule("split-join", n=I)),  # the map abs, not the map of partial reductions
    topdown("split-join-id"),
    topdown("map-fusion"),
    innermost("map-mapSeq"),
    topdown("partRed-reduceSeq"),  # a macro: partRed-reduce then reduce-reduceSeq
    topdown("reduceSeq-mapSeq-fusion"),
]


def paper_to_liftkit(line: str) -> str:
    """The figure's notation in liftkit's: (+) is add, 0 is 0.0f, reducePart is partRed with
    its size first, applications get parentheses, I and J the figure's sizes."""
    subs = [
        (r"reducePart \(\+\) 0 (\w)", r"partRed \1 (add, 0.0f)"),
        (r"reduceSeq \((λ\(\w+, \w+\)\. )(\w+) \+ \(abs (\w+)\)\) 0",
         r"reduceSeq(\1add(\2, abs(\3)), 0.0f)"),
        (r"(reduce|reduceSeq) \(\+\) 0", r"\1(add, 0.0f)"),
        (r"(map|mapSeq) abs", r"\1(abs)"),
        (r"map \(", "map("),
        (r"\bI\b", str(I)),
        (r"\bJ\b", str(J)),
    ]
    for pat, rep in subs:
        line = re.sub(pat, rep, line)
    return line


def canon(text: str) -> str:
    """Bound names renamed in order of binding (comparison up to naming)."""
    names: list[str] = []
    for m in re.finditer(r"λ\(([^)]*)\)\.|λ(\w+)\.", text):
        names += [n.strip() for n in (m.group(1) or m.group(2)).split(",")]
    for k, n in enumerate(dict.fromkeys(names)):
        text = re.sub(rf"\b{re.escape(n)}\b", f"v{k}", text)
    return text


def fig10() -> Derivation:
    from liftkit.programs import PROGRAMS

    d = Derivation(specialise(PROGRAMS["asum"].program, N=I * J), name="asum")
    for s in FIG10_STRATEGIES:
        d = d.then(s)
    return d


def test_fig10_asum_derivation_step_by_step() -> None:
    d = fig10()
    lines = d.lines()
    assert lines[0] == "    asum = reduce(add, 0.0f) ∘ map(abs)"
    # one figure line per strategy; the figure's "6d & 7b" is two recorded steps
    by_line: list[list[Step]] = []
    for step in d.steps:
        if step.macro and by_line and by_line[-1][-1].macro == step.macro:
            by_line[-1].append(step)
        else:
            by_line.append([step])
    assert len(by_line) == len(FIG10) == 8 and len(d) == 9
    progs = d.programs()
    k = 0
    for (label, paper), steps in zip(FIG10, by_line):
        k += len(steps)
        printed = lines[k].split(")", 1)[1].split("    -- ")[0].removeprefix(" → ")
        assert canon(printed) == canon(paper_to_liftkit(paper)), (label, printed)
        sources = [rules_pkg.RULES_BY_NAME[s.rule].source for s in steps]
        assert [src.removeprefix("seed 002 Fig. ") for src in sources] == label.split(" & ")
        assert show(progs[k]) == steps[-1].program
    assert [s.rule for s in d.steps] == [
        "reduce-partRed", "partRed-split-join", "split-join", "split-join-id", "map-fusion",
        "map-mapSeq", "partRed-reduce", "reduce-reduceSeq", "reduceSeq-mapSeq-fusion"]
    assert [s.macro for s in d.steps[6:8]] == ["partRed-reduceSeq"] * 2
    assert lines[-1] == ("(9) → reduce(add, 0.0f) ∘ join ∘ map(reduceSeq(λ(acc, x_2). "
                         "add(acc, abs(x_2)), 0.0f)) ∘ split 128    -- reduceSeq-mapSeq-fusion "
                         "at 0.2.1.0.0.0")


def test_fig10_saves_replays_and_verifies(tmp_path: Any) -> None:
    d = fig10()
    d.save(tmp_path / "asum.json")
    back = Derivation.load(tmp_path / "asum.json")
    assert back.name == "asum" and back.to_json() == d.to_json()
    assert [show(p) for p in back.replay()] == [show(p) for p in d.programs()]
    assert back.verify(trials=2) == []
    assert back.default_sizes() == {}  # every size is fixed


def test_fig10_fusion_macro_does_steps_6_to_8_at_once() -> None:
    d = fig10()
    five = Derivation(d.start, d.steps[:5], name="asum")
    fused = five.then(topdown("partRed-map-fusion"))
    assert show(fused.final) == show(d.final)
    assert [s.rule for s in fused.steps[5:]] == [s.rule for s in d.steps[5:]]
    assert {s.macro for s in fused.steps[5:]} == {"partRed-map-fusion",
                                                  "partRed-map-fusion/partRed-reduceSeq"}


def test_symbolic_sizes_verify_at_the_bundled_programs_sizes() -> None:
    d = Derivation.of_program("asum").then(topdown("reduce-map-fusion"))
    assert str(d).splitlines()[-1] == ("(3) → reduceSeq(λ(acc, x_1). add(acc, abs(x_1)), 0.0f)"
                                       "    -- reduceSeq-mapSeq-fusion at 0 [macro reduce-map-fusion]")
    assert d.default_sizes() == {"N": 4096} and d.verify() == []
    d = Derivation.of_program("asum").then(topdown(rule("split-join", n=8)))
    assert d.default_sizes() == {"N": 4096}
    d = d.then(innermost(rule("split-join", n=3)) | innermost(rule("split-join", n=16)))
    assert d.default_sizes() == {"N": 4096} and d.verify() == []


def test_fig10_with_a_symbolic_size() -> None:
    """With N symbolic, step 3 splits the map by N/J, the size partRed's split produced (split-join
    offers that symbolic factor), so step 4 can cancel the pair."""
    d = Derivation.of_program("asum")
    for s in (FIG10_STRATEGIES[:2] + [innermost(rule("split-join", n=f"N/{J}"))]
              + FIG10_STRATEGIES[3:]):
        d = d.then(s)
    assert "reduceSeq(λ(" in d.steps[-1].program and f"split (N/{J})" in d.steps[-1].program
    d.replay()
    d.verify()


# ---------------------------------------------------------------------------------------------
# GEMV: from the high-level program to one fused kernel with local memory
#
# LOCAL RULES, MISSING FROM THE RULES PACKAGE (defined here only to make progress): the bundled
# gemv combines two maps through `map(add) ∘ zip`, and Fig. 6/7 have no rule that moves a zip
# across a join or fuses the maps feeding a zip, so without these two the y-part and the final
# addition stay in kernels of their own.


def _call_of(e: Any, cls: type) -> Any:
    return e if isinstance(e, FunCall) and type(e.f) is cls else None


def _zip_join_choices(site: Site) -> list[dict[str, Any]]:
    from liftkit.ir import patterns as P
    from liftkit.types import ArrayType, int32, same_type

    if type(site.f) is not P.Zip:
        return []
    joins = [_call_of(a, P.Join) for a in site.call.args]
    if None in joins:
        return []
    ts = [site.type_of(j.args[0]) for j in joins]
    inner = [t.elem.length for t in ts if isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)]
    ok = len(inner) == len(ts) and all(same_type(ArrayType(int32, n), ArrayType(int32, inner[0]))
                                       for n in inner)
    return [{}] if ok else []


def _zip_join_build(site: Site) -> FunCall:
    from liftkit.ir import patterns as P

    k = len(site.call.args)
    c = Param("c")
    parts = tuple(FunCall(P.Get(cst(i)), (c,)) for i in range(k))
    per_chunk = Lambda((c,), FunCall(P.Zip(k), parts))
    inner = FunCall(P.Zip(k), tuple(j.args[0] for j in site.call.args))  # type: ignore[union-attr]
    return FunCall(P.Join(), (FunCall(P.Map(per_chunk), (inner,)),))


ZIP_JOIN = Rule(  # LOCAL RULE (missing from the rules package)
    "zip-join", "zip(join a, join b) → join ∘ map(λc. zip(get 0 c, get 1 c)) ∘ zip(a, b)   "
    "(equal inner lengths)", _zip_join_choices, _zip_join_build, "local (not in seed 002)")


def _map_zip_parts(site: Site) -> Any:
    from liftkit.ir import patterns as P

    h = getattr(site.f, "f", None)
    if type(site.f) is not P.Map or not isinstance(h, Lambda) or len(h.params) != 1:
        return None
    z = _call_of(site.call.args[0], P.Zip)
    maps = [_call_of(a, P.Map) for a in z.args] if z is not None else [None]
    if None in maps or not all(isinstance(m.f.f, Lambda) and len(m.f.f.params) == 1 for m in maps):
        return None
    return maps


def _map_zip_fusion_build(site: Site) -> FunCall:
    """map(λc. B)(zip(map(f1)(a1), ..)) → map(λq. B[get i c := fi(get i q), c := tuple(..)])
    (zip(a1, ..)): each projection of c becomes the function applied to the projection of q."""
    from liftkit.ir import patterns as P
    from liftkit.ir.nodes import apply
    from liftkit.rewrite.rules.common import fresh

    maps = _map_zip_parts(site)
    h: Lambda = site.f.f  # type: ignore[attr-defined]
    c, q, uses = h.params[0], Param("q"), [0]

    def comp(i: int) -> Any:
        f = maps[i].f.f if uses[0] == 0 else fresh(maps[i].f.f)
        return apply(f, [FunCall(P.Get(cst(i)), (q,))])

    def go(n: Any) -> Any:
        if isinstance(n, FunCall) and type(n.f) is P.Get and n.args == (c,):
            return comp(n.f.index())
        if n is c:
            return FunCall(P.Tuple(len(maps)), tuple(comp(i) for i in range(len(maps))))
        if isinstance(n, FunCall):
            return FunCall(go(n.f), tuple(go(a) for a in n.args))
        if isinstance(n, Lambda):
            return Lambda(n.params, go(n.body))
        if isinstance(n, P.Pattern) and n.functions():
            return n.with_functions([go(f) for f in n.functions()])
        return n

    zipped = FunCall(P.Zip(len(maps)), tuple(m.args[0] for m in maps))
    return FunCall(P.Map(Lambda((q,), go(h.body))), (zipped,))


MAP_ZIP_FUSION = Rule(  # LOCAL RULE (missing from the rules package)
    "map-zip-fusion", "map(h) ∘ zip(map(f) a, map(g) b) → map(λq. h(f(get 0 q), g(get 1 q))) ∘ "
    "zip(a, b)", lambda s: [{}] if _map_zip_parts(s) else [], _map_zip_fusion_build,
    "local (not in seed 002)")
GEMV_EXTRA = {r.name: r for r in (ZIP_JOIN, MAP_ZIP_FUSION)}

GEMV_STRATEGIES = [
    # fuse the three data-parallel parts into one map over the rows zipped with y
    at("0.1.2", rule("split-join", n=1)),        # map(β·) y → join ∘ map(map(β·)) ∘ split 1
    topdown("zip-join"),                          # LOCAL rule: zip of joins → join of zips
    at("0", rule("split-join", n=1)),            # the outer map(add)
    topdown("split-join-id"),                     # split 1 ∘ join → id
    topdown("map-zip-fusion"),                    # LOCAL
    topdown("map-fusion"),
    topdown("map-zip-fusion"),                    # LOCAL: α·dot + β·y inside the row function
    # one work-group per row; the row's dot product: 4 threads, 32 elements each, in local memory
    topdown(rule("map-mapWrg", dim=0)),
    topdown(rule("reduce-partRed", m=4)),
    topdown(rule("partRed-split-join", j=1)),
    topdown(rule("split-join", n=32)),
    topdown("split-join-id"),
    topdown("map-fusion"),
    topdown(rule("map-mapLcl", dim=0)),           # the final α·s + β·y map
    topdown(rule("map-mapLcl", dim=0)),           # the partial sums
    topdown("partRed-map-fusion"),                # macro: partRed 1 ∘ map f → reduceSeq(..)
    innermost("mapLcl-toLocal"),                  # the partial sums to local memory
    topdown("reduce-reduceSeq"),                  # the sum of the 4 partial sums
]


def gemv_derivation() -> Derivation:
    from liftkit.programs import PROGRAMS

    spec = PROGRAMS["gemv"]
    d = Derivation(specialise(spec.program, **spec.sizes), name="gemv", rules=GEMV_EXTRA)
    for s in GEMV_STRATEGIES:
        d = d.then(s)
    return d


def test_gemv_derivation_ends_in_a_fused_local_memory_kernel() -> None:
    from liftkit.ir import patterns as P
    from liftkit.ir.nodes import walk
    from liftkit.ir.typecheck import is_low_level

    d = gemv_derivation()
    final = d.final
    assert is_low_level(final)
    text = show(final)
    assert text == (
        "λ(A: [[float]_128]_64, x: [float]_128, y: [float]_64, alpha: float, beta: float). "
        "(join ∘ mapWrg(0)(λq. mapLcl(0)(λq_1. add(tuple(mult(alpha, (get 0)(q_1)), "
        "mult(beta, (get 1)(q_1)))))(zip((reduceSeq(add, 0.0f) ∘ join ∘ toLocal(mapLcl(0)("
        "reduceSeq(λ(acc, x_3). add(acc, mult(x_3)), 0.0f))) ∘ split 32)(zip((get 0)(q), x)), "
        "(get 1)(q)))))(zip(A, (split 1)(y)))")
    kinds = {type(n) for n in walk(final)}
    assert {P.MapWrg, P.MapLcl, P.ToLocal, P.ReduceSeq} <= kinds
    assert not kinds & {P.Map, P.Reduce, P.PartRed}
    assert sum(1 for s in d.steps if s.rule in GEMV_EXTRA) == 3
    assert d.verify() == []


def test_gemv_replays_from_json() -> None:
    """zip-join and map-zip-fusion are package rules now (rules/extra.py): the saved derivation
    replays with the default rules."""
    d = gemv_derivation()
    back = Derivation.loads(d.dumps())
    assert show(back.replay()[-1]) == show(d.final)


def test_gemv_compiles_to_one_kernel_and_runs_on_pocl() -> None:
    from liftkit.codegen import compile_program
    from liftkit.programs import PROGRAMS
    from liftkit.semantics import interpret

    final = gemv_derivation().final
    compiled = compile_program(final)
    assert len(compiled.kernels) == 1
    src = compiled.kernels[0].source
    assert "local float" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    try:
        from liftkit.backends.opencl import list_devices, run_opencl

        if not any(dev.type == "cpu" for dev in list_devices()):
            pytest.skip("no CPU OpenCL device (PoCL)")
    except Exception as err:  # pyopencl or the ICD loader missing
        pytest.skip(f"no OpenCL: {err}")
    spec = PROGRAMS["gemv"]
    for seed in (0, 1):
        xs = spec.inputs(seed=seed)
        got = run_opencl(final, *xs, device="cpu")
        np.testing.assert_allclose(got, interpret(final, *xs), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, spec.reference(*xs), rtol=spec.rtol, atol=spec.atol)
