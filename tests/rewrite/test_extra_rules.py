"""The extra rules (`rewrite.rules.extra`): before/after in the printed notation, and soundness
(interpreter before == after, bit for bit, on integer-valued inputs) over the random corpus, the
bundled programs and small stencil programs, walked with enabling rules. Each rule gets at
least TARGET interpreter-checked applications per run.

Test-only enablers (not exported: they only grow programs) create the shapes some rules look
for: transpose ∘ transpose, gather(f) ∘ scatter(f), join ∘ split k, split k → slide(k, k)."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest

from liftkit.arith import cst
from liftkit.dsl import fun, join, map, reduce, slide, split, transpose, zip  # noqa: A004
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, Lambda, Param
from liftkit.ir.patterns.base import index_fun
from liftkit.ir.printer import show
from liftkit.ir.userfuns import FLOAT
from liftkit.rewrite import Rule, Site, apply_choice, enumerate_choices
from liftkit.rewrite.rules import ALL_RULES, normal_form
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.ir.nodes import apply
from liftkit.rewrite.rules.common import call, const, factor_choices, fresh, lam
from liftkit.rewrite.rules.corpus import Case, bundled_cases, random_case, run, same_result
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError
from liftkit.rewrite.rules import EXTRA_RULES
from liftkit.rewrite.rules.extra import extra_macros, macro_choices
from liftkit.rewrite.strategies import rule as srule
from liftkit.types import ArrayType, float32

SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "20150"))
TARGET = int(os.environ.get("LIFTKIT_EXTRA_APPS", "1000"))
PER_STEP = 4
WALK = 10
MAX_NODES = 1500
MAX_BASES = 3000

# ---------------------------------------------------------------------------------------------
# test-only enablers


def _arr(site: Site, dims: int) -> bool:
    t = site.type
    for _ in range(dims):
        if not isinstance(t, ArrayType):
            return False
        t = t.elem
    return not isinstance(t, ArrayType) or dims == 2


T_TRANSPOSE = make_rule("t-transpose-intro", "x → transpose ∘ transpose $ x", "test",
                        lambda s: [{}] if _arr(s, 2) and type(s.f) is not P.Transpose else [],
                        lambda s: call(P.Transpose(), call(P.Transpose(), s.call)))


def _perm_choices(s: Site) -> list[dict[str, Any]]:
    t = s.type
    ok = isinstance(t, ArrayType) and type(s.f) not in (P.Gather, P.Scatter)
    return [{"k": 0}, {"k": 1}] if ok else []


def _perm_build(s: Site, k: int) -> Expr:
    f1 = index_fun(lambda i, n: n - 1 - i)
    f2 = index_fun(lambda i, n: n - 1 - i)  # an equal function built separately
    a, b = (P.Gather, P.Scatter) if k == 0 else (P.Scatter, P.Gather)
    return call(a(f1), call(b(f2), s.call))


T_PERMUTE = make_rule("t-permute-intro", "x → gather(f) ∘ scatter(f) $ x (and swapped)", "test",
                      _perm_choices, _perm_build)


def _js_choices(s: Site) -> list[dict[str, Any]]:
    t = s.type
    if not isinstance(t, ArrayType) or const(t.length) is None or type(s.f) in (P.Split, P.Join):
        return []
    return [{"k": k} for k in factor_choices(t.length, trivial=False)[:3]]


T_JOIN_SPLIT = make_rule("t-join-split-intro", "x → join ∘ split k $ x", "test", _js_choices,
                         lambda s, k: call(P.Join(), call(P.Split(cst(k)), s.call)), reshapes=True,
                         opaque=False)


def _jj_choices(s: Site) -> list[dict[str, Any]]:
    if type(s.f) is not P.Join:
        return []
    t = s.arg_types[0]
    if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)) or const(t.elem.length) is None:
        return []
    return [{"k": k} for k in factor_choices(t.elem.length, trivial=False)[:2]]


T_JOIN_JOIN = make_rule(
    "t-join-join-intro", "join $ x → join ∘ map(join) ∘ map(split k) $ x", "test", _jj_choices,
    lambda s, k: call(P.Join(), call(P.Map(lam(1, lambda y: call(P.Join(), y))), call(
        P.Map(lam(1, lambda r: call(P.Split(cst(k)), r))), s.call.args[0]))), reshapes=True,
    opaque=False)
T_SPLIT_SLIDE = make_rule(
    "t-split-slide", "split k → slide(k, k)   (k divides the length)", "test",
    lambda s: [{}] if type(s.f) is P.Split and const(s.f.n) is not None
    and isinstance(s.arg_types[0], ArrayType) and const(s.arg_types[0].length) is not None else [],
    lambda s: call(P.Slide(s.f.n, s.f.n), s.call.args[0]), reshapes=True, opaque=False)

def _zip_choices(s: Site) -> list[dict[str, Any]]:
    t = s.arg_types[0] if s.arg_types else None
    ok = (type(s.f) is P.Map and isinstance(t, ArrayType) and t.elem == float32
          and const(t.length) is not None)
    return ([{"k": 0}] + [{"k": k} for k in factor_choices(t.length, trivial=False)[:2]]) if ok else []


def _zip_build(s: Site, k: int) -> Expr:
    xs = s.call.args[0]
    a1 = call(P.Map(lam(1, lambda y: call(FLOAT.id, y))), xs)
    a2 = call(P.Map(lam(1, lambda y: call(FLOAT.abs, y))), fresh(xs))
    if k:
        a1, a2 = (call(P.Join(), call(P.Split(cst(k)), a)) for a in (a1, a2))
    return call(P.Map(lam(1, lambda p: apply(fresh(s.f.f), [call(P.Get(cst(0)), p)]), ("p",))),
                call(P.Zip(2), a1, a2))


T_ZIP = make_rule("t-zip-intro", "map(f) xs → map(f ∘ get 0) (zip(map(id) xs, map(abs) xs)) "
                  "(or of join ∘ split k of both)", "test", _zip_choices, _zip_build,
                  reshapes=True, opaque=False)

T_ITERATE_ZERO = make_rule(
    "t-iterate-zero-intro", "x → iterate 0 (map(abs)) $ x", "test",
    lambda s: [{}] if isinstance(s.type, ArrayType) and s.type.elem == float32
    and type(s.f) is not P.Iterate else [],
    lambda s: call(P.Iterate(cst(0), lam(1, lambda y: call(P.Map(lam(1, lambda v: call(
        FLOAT.abs, v))), y))), s.call), reshapes=True, opaque=False)

TEST_RULES = (T_ITERATE_ZERO, T_ZIP, T_TRANSPOSE, T_PERMUTE, T_JOIN_SPLIT, T_JOIN_JOIN, T_SPLIT_SLIDE)
RULES: dict[str, Rule] = {r.name: r for r in (*ALL_RULES, *EXTRA_RULES, *TEST_RULES)}
EXTRA_NAMES = {r.name for r in EXTRA_RULES}
# walking rules (copy-insertion is left out of walks: it applies everywhere)
WALKERS = [r for r in RULES.values() if r.name != "copy-insertion"]

ENABLERS: dict[str, tuple[str, ...]] = {
    "map-fission": ("map-fusion", "map-zip-fusion"),
    "map-zip-fusion": ("t-zip-intro",),
    "zip-join": ("t-zip-intro",),
    "map-map-interchange": ("split-join", "map-join-commute"),
    "transpose-transpose-id": ("t-transpose-intro", "map-map-interchange"),
    "gather-scatter-id": ("t-permute-intro",),
    "scatter-gather-id": ("t-permute-intro",),
    "map-join-commute": ("t-join-split-intro", "split-join"),
    "split-map-commute": ("t-join-split-intro", "map-fission"),
    "join-mapJoin": ("t-join-join-intro", "map-fission"),
    "copy-insertion": ("split-join",),
    "slide-tiling": ("t-split-slide", "split-join", "slide-tiling"),
    "slide-tiling-2d": ("map-fusion", "slide-tiling"),
    # rules/chunking.py
    "reduce-split-partRed": ("split-join", "map-fusion"),
    "reduce-single": ("reduce-split-partRed",),
    "partRed-columns": ("reduce-split-partRed", "reduce-partRed", "partRed-columns"),
    "split-join-map": ("split-join", "reduce-split-partRed"),
    "split-split": ("split-join", "reduce-split-partRed", "t-join-split-intro"),
    "split-reorder": ("split-join",),
    "vectorize-map-zip": ("map-zip-fusion", "split-join"),
    "vectorize-partRed": ("reduce-split-partRed", "reduce-partRed", "split-join"),
    "map-reduce-interchange": ("split-join", "reduce-split-partRed"),
    # rules/iterate.py
    "iterate-zero": ("t-iterate-zero-intro",),
    "iterate-one": ("reduce-partRed", "partRed-iterate", "iterate-decomposition"),
    # rules/stencil.py
    "stencil-local-1d": ("t-split-slide", "split-join"),
    "stencil-local-2d": ("map-fusion",),
    # rules/private.py
    "private-copy": ("map-mapSeq", "map-mapGlb", "reduce-reduceSeq", "map-mapSeq"),
}


# ---------------------------------------------------------------------------------------------
# base programs: random corpus, bundled programs, small stencils


def stencil2d_case(seed: int) -> Case:
    """A 2D stencil: a window function over slide2D(n, s) of a small matrix."""
    from liftkit.dsl import slide2D

    rng = random.Random(seed)
    n, s = rng.choice(((2, 1), (3, 1), (3, 2), (2, 2)))
    rows, cols = rng.choice((10, 14, 18)), rng.choice((10, 14, 18))
    X = ArrayType(ArrayType(float32, cst(cols)), cst(rows))
    if rng.random() < 0.5:
        prog = fun([X], lambda m: map(map(lambda w: reduce(FLOAT.add, 0.0) << join << w))
                   << slide2D(n, s) << m)
    else:
        prog = fun([X], lambda m: map(map(lambda w: map(map(FLOAT.abs)) << w)) << slide2D(n, s) << m)
    prog = normal_form(prog)
    inputs = [np.random.default_rng(seed).integers(-3, 4, (rows, cols)).astype(np.float32)]
    return Case(prog, inputs, run(prog, inputs), seed, "stencil2d")  # type: ignore[arg-type]


def stencil_case(seed: int) -> Case:
    rng = random.Random(seed)
    n, s = rng.choice((2, 3, 4, 5)), rng.choice((1, 1, 2, 3))
    length = rng.choice((12, 16, 24, 25, 30, 33))
    xs = Param("xs", ArrayType(float32, cst(length)))
    f = rng.choice((FLOAT.abs, FLOAT.neg, FLOAT.id))
    if rng.random() < 0.5:
        win = lam(1, lambda w: call(P.Reduce(lam(2, lambda a, b: call(FLOAT.add, a, b))),
                                    _zero(), w), ("w",))
        body = call(P.Join(), call(P.Map(win), call(P.Slide(cst(n), cst(s)), xs)))
    else:
        win = lam(1, lambda w: call(P.Map(lam(1, lambda x: call(f, x))), w), ("w",))
        body = call(P.Join(), call(P.Map(win), call(P.Slide(cst(n), cst(s)), xs)))
    prog = normal_form(Lambda((xs,), body))
    inputs = [np.random.default_rng(seed).integers(-3, 4, length).astype(np.float32)]
    return Case(prog, inputs, run(prog, inputs), seed, "stencil")  # type: ignore[arg-type]


def loop_case(seed: int) -> Case:
    """A per-element loop (MRI-Q's, N-Body's shape): each element of xs (a scalar, or a tuple of
    2–3 zipped scalars) combined with every element of ys in a reduce or an inner map."""
    from liftkit.dsl import fun as dfun

    rng = random.Random(seed)
    n, m, arity = rng.choice((4, 6, 8)), rng.choice((3, 5, 8)), rng.choice((1, 2, 3))
    ops = [rng.choice((FLOAT.add, FLOAT.mult, FLOAT.sub, FLOAT.max)) for _ in range(arity)]

    def term(p: Any, k: Any) -> Any:
        vals = [p] if arity == 1 else [p[i] for i in range(arity)]
        acc = k
        for i, v in enumerate(vals):
            acc = ops[i](acc, v)
        return acc

    reduce_it = rng.random() < 0.6
    body = ((lambda p, ys: reduce(FLOAT.add, 0.0) << map(lambda k: term(p, k)) << ys) if reduce_it
            else (lambda p, ys: map(lambda k: term(p, k)) << ys))
    types = [float32[n]] * arity + [float32[m]]
    if arity == 1:
        prog = dfun(types, lambda a, ys: map(lambda p: body(p, ys)) << a)
    elif arity == 2:
        prog = dfun(types, lambda a, b, ys: map(lambda p: body(p, ys)) << zip(a, b))
    else:
        prog = dfun(types, lambda a, b, c, ys: map(lambda p: body(p, ys)) << zip(a, b, c))
    prog = normal_form(prog)
    g = np.random.default_rng(seed)
    inputs = [g.integers(-3, 4, n).astype(np.float32) for _ in range(arity)]
    inputs.append(g.integers(-3, 4, m).astype(np.float32))
    return Case(prog, inputs, run(prog, inputs), seed, "loop")  # type: ignore[arg-type]


def _zero() -> Any:
    from liftkit.ir.nodes import Literal
    return Literal(0.0, float32)


_bundled: list[Case] = []
_bases: dict[int, Case] = {}


def base_case(i: int) -> Case:
    if i not in _bases:
        if i % 4 == 3:
            _bases[i] = stencil_case(SEED * 7 + i)
        elif i % 4 == 1:
            if not _bundled:
                _bundled.extend(bundled_cases(SEED))
            _bases[i] = _bundled[(i // 4) % len(_bundled)]
        else:
            _bases[i] = random_case(SEED * 100_003 + i)
    return _bases[i]


# ---------------------------------------------------------------------------------------------
# soundness: the shared harness (rules.soundness), with these bases, enablers and walkers


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    order = [RULES[n] for n in ENABLERS[rule.name]] if rng.random() < 0.7 else []
    rng.shuffle(order)
    return order + rng.sample(WALKERS, 8)


HARNESS = Soundness(RULES, base_case, lambda r: [RULES[n] for n in ENABLERS[r.name]], _walk_order,
                    SEED, per_step=PER_STEP, walk=WALK, max_nodes=MAX_NODES, max_bases=MAX_BASES,
                    patience=3)


# 2D slide tiling needs 2D stencils as bases (the walks keep their windows: slide-tiling of
# the inner slides, fusion, split-join)
HARNESS_2D = Soundness(RULES, lambda i: stencil2d_case(SEED * 31 + i),
                       lambda r: [RULES[n] for n in ENABLERS[r.name]], _walk_order,
                       SEED, per_step=PER_STEP, walk=WALK, max_nodes=MAX_NODES,
                       max_bases=2 * MAX_BASES, patience=3)


# private copies need per-element loops: the random corpus has few, so half the bases are loops
HARNESS_LOOPS = Soundness(RULES, lambda i: loop_case(SEED * 13 + i) if i % 2 == 0 else base_case(i),
                          lambda r: [RULES[n] for n in ENABLERS[r.name]], _walk_order,
                          SEED, per_step=PER_STEP, walk=WALK, max_nodes=MAX_NODES,
                          max_bases=MAX_BASES, patience=3)


def exercise(r: Rule, target: int) -> dict[str, Any]:
    harness = HARNESS_2D if r.name in ("slide-tiling-2d", "stencil-local-2d") else HARNESS
    harness = HARNESS_LOOPS if r.name == "private-copy" else harness
    try:
        return harness.exercise(r, target)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.mark.parametrize("rule", EXTRA_RULES, ids=[r.name for r in EXTRA_RULES])
def test_extra_rule_is_sound(rule: Rule) -> None:
    stats = exercise(rule, TARGET)
    print(f"\n{rule.name}: {stats}")
    assert stats["applications"] >= TARGET


def test_every_extra_rule_has_enablers_and_a_fact() -> None:
    assert set(ENABLERS) == EXTRA_NAMES
    for r in EXTRA_RULES:
        assert r.fact and r.source and "→" in r.fact


def test_extra_rules_are_exported() -> None:
    from liftkit.rewrite.rules import RULES_BY_NAME

    for r in EXTRA_RULES:
        assert RULES_BY_NAME.get(r.name) is r


# ---------------------------------------------------------------------------------------------
# before / after in the printed notation

X = Param("X")


def one(p: Any, name: str, **params: Any) -> str:
    p = normal_form(p)
    cs = [c for c in enumerate_choices(p, [RULES[name]]) if dict(c.params) == params]
    assert cs, f"{name} does not apply to {show(p)}"
    return show(apply_choice(p, cs[0], RULES))


def test_map_fission() -> None:
    p = fun([float32[16]], lambda x: map(lambda v: FLOAT.neg(FLOAT.abs(v))) << x)
    assert show(normal_form(p)) == "λ(x: [float]_16). map(neg ∘ abs)(x)"
    assert one(p, "map-fission") == "λ(x: [float]_16). (map(neg) ∘ map(abs))(x)"


def test_map_fission_refuses_when_the_outer_function_uses_the_parameter() -> None:
    p = normal_form(fun([float32[16]], lambda x: map(lambda v: FLOAT.add(v, FLOAT.abs(v))) << x))
    assert enumerate_choices(p, [RULES["map-fission"]]) == []


def test_map_zip_fusion_and_zip_join() -> None:
    p = fun([float32[16], float32[16]], lambda a, b: map(FLOAT.add) << zip(
        map(FLOAT.abs) << a, map(FLOAT.neg) << b))
    assert one(p, "map-zip-fusion") == (
        "λ(a: [float]_16, b: [float]_16). "
        "map(λq. add(tuple((abs ∘ get 0)(q), (neg ∘ get 1)(q))))(zip(a, b))")
    q = fun([float32[4][4], float32[4][4]], lambda a, b: zip(join << a, join << b))
    assert one(q, "zip-join") == ("λ(a: [[float]_4]_4, b: [[float]_4]_4). "
                                  "(join ∘ map(λc. zip((get 0)(c), (get 1)(c))))(zip(a, b))")


def test_interchange_and_transpose_cancellation() -> None:
    p = fun([float32[4][8]], lambda a: map(map(FLOAT.abs)) << a)
    after = one(p, "map-map-interchange")
    assert after == "λ(a: [[float]_4]_8). (transpose ∘ map(map(abs)) ∘ transpose)(a)"
    q = fun([float32[4][8]], lambda a: transpose << (transpose << a))
    assert one(q, "transpose-transpose-id") == "λ(a: [[float]_4]_8). a"


def test_movement_rules() -> None:
    p = fun([float32[4][8]], lambda a: map(FLOAT.abs) << (join << a))
    assert one(p, "map-join-commute") == "λ(a: [[float]_4]_8). (join ∘ map(map(abs)))(a)"
    q = fun([float32[32]], lambda a: split(4) << (map(FLOAT.abs) << a))
    assert one(q, "split-map-commute") == "λ(a: [float]_32). (map(map(abs)) ∘ split 4)(a)"
    r = fun([float32[2][4][8]], lambda a: join << (map(join) << a))
    assert one(r, "join-mapJoin") == "λ(a: [[[float]_2]_4]_8). (join ∘ join)(a)"


def test_gather_scatter_cancellation() -> None:
    from liftkit.dsl import gather, scatter

    p = fun([float32[16]], lambda a: gather(lambda i, n: n - 1 - i) << (scatter(lambda i, n: n - 1 - i) << a))
    assert one(p, "gather-scatter-id") == "λ(a: [float]_16). a"
    q = fun([float32[16]], lambda a: scatter(lambda i, n: n - 1 - i) << (gather(lambda i, n: n - 1 - i) << a))
    assert one(q, "scatter-gather-id") == "λ(a: [float]_16). a"
    r = normal_form(fun([float32[16]], lambda a: gather(lambda i, n: i) << (scatter(lambda i, n: n - 1 - i) << a)))
    assert enumerate_choices(r, [RULES["gather-scatter-id"]]) == []


def test_copy_insertion() -> None:
    p = fun([float32[16]], lambda a: map(FLOAT.abs) << a)
    assert one(p, "copy-insertion") == "λ(a: [float]_16). (map(id) ∘ map(abs))(a)"
    once = normal_form(apply_choice(normal_form(p), enumerate_choices(normal_form(p), [RULES["copy-insertion"]])[0], RULES))
    # no copy of a copy
    assert all(c.path != (0,) for c in enumerate_choices(once, [RULES["copy-insertion"]]))


def test_slide_tiling() -> None:
    p = fun([float32[18]], lambda a: map(reduce(FLOAT.add, 0.0)) << slide(3, 1) << a)
    assert [dict(c.params) for c in enumerate_choices(normal_form(p), [RULES["slide-tiling"]])] == [
        {"u": 4, "v": 2}, {"u": 6, "v": 4}, {"u": 10, "v": 8}]
    assert one(p, "slide-tiling", u=6, v=4) == (
        "λ(a: [float]_18). (join ∘ map(map(reduce(add, 0.0f)) ∘ slide 3 1) ∘ slide 6 4)(a)")


def test_private_copy() -> None:
    """The components of a mapGlb's element read inside its loop are copied to private memory
    once (mriq_low's shape); components read only outside loops are left alone."""
    from liftkit.programs.parboil import mriq

    steps = [("map-mapGlb", {"dim": 0}, (0, 1)), ("reduce-reduceSeq", {}, (0, 1, 0, 0, 0)),
             ("map-mapSeq", {}, (0, 1, 0, 0, 0, 2)), ("reduceSeq-mapSeq-fusion", {}, (0, 1, 0, 0, 0))]
    p = normal_form(mriq())
    for name, params, path in steps:
        c = [c for c in enumerate_choices(p, [RULES[name]]) if c.path == path and dict(c.params) == params]
        p = apply_choice(p, c[0], RULES)
    after = one(p, "private-copy")
    assert "λp. (λ(s0, s1, s2). reduceSeq(λ(acc, k). add2(acc, qTerm(s0, s1, s2, k))" in after
    assert "((toPrivate(id) ∘ get 0)(p), (toPrivate(id) ∘ get 1)(p), (toPrivate(id) ∘ get 2)(p))" in after
    done = normal_form(apply_choice(p, enumerate_choices(p, [RULES["private-copy"]])[0], RULES))
    assert enumerate_choices(done, [RULES["private-copy"]]) == []  # nothing left to copy
    flat = normal_form(fun([float32[16]], lambda a: map(FLOAT.abs) << a))
    flat = apply_choice(flat, enumerate_choices(flat, [RULES["map-mapGlb"]])[0], RULES)
    assert enumerate_choices(flat, [RULES["private-copy"]]) == []  # no loop: no copy


# ---------------------------------------------------------------------------------------------
# macro rules on the bundled matrix multiplication


def test_tiling_and_register_blocking_macros_keep_mm_results() -> None:
    ms = extra_macros()
    case = [c for c in bundled_cases(SEED) if c.origin == "bundled:mm(const)"][0]
    applied = 0
    for name, m in ms.items():
        opts = macro_choices(case.program, name)
        assert opts, name
        for ps in opts:
            r = srule(m, **ps).apply(case.program, rules=ms)
            assert r, (name, ps, r)
            assert same_result(run(r.program, case.inputs, case.sizes), case.expected), (name, ps)
            applied += 1
    assert applied >= 18
    r = srule(ms["tile-2d"], r=4, c=2).apply(case.program, rules=ms)
    assert "split 2 ∘ transpose" in show(r.program) and "split 4" in show(r.program)


def test_map_reduce_interchange() -> None:
    """Row sums become a sequential fold over the columns (each step adds a column to the
    vector of partial sums); refused where repeating the input would repeat a computation."""
    from liftkit.semantics import interpret

    X = ArrayType(ArrayType(float32, cst(5)), cst(3))
    rows = fun([X], lambda m: map(lambda r: reduce(FLOAT.add, 0.0) << r) << m)
    text = one(rows, "map-reduce-interchange")
    assert text.startswith("λ(m: [[float]_5]_3). transpose(reduceSeq(λ(acc, col). map(")
    assert "map(λrow. 0.0f)(m), transpose(m)" in text
    p = normal_form(rows)
    after = apply_choice(p, enumerate_choices(p, [RULES["map-reduce-interchange"]])[0], RULES)
    m = np.arange(15, dtype=np.float32).reshape(3, 5)
    assert np.array_equal(np.ravel(interpret(after, m)), m.sum(axis=1))
    computed = fun([X], lambda m: map(lambda r: reduce(FLOAT.add, 0.0) << r) << map(map(FLOAT.abs)) << m)
    assert enumerate_choices(normal_form(computed), [RULES["map-reduce-interchange"]]) == []


def test_partial_reduce_vectorisation() -> None:
    p = fun([ArrayType(float32, cst(16))], lambda x: reduce(FLOAT.add, 0.0) << x)
    p = normal_form(p)
    split = apply_choice(p, [c for c in enumerate_choices(p, [RULES["reduce-split-partRed"]])
                             if dict(c.params) == {"whole": 1}][0], RULES)
    cs = [c for c in enumerate_choices(split, [RULES["vectorize-partRed"]]) if c.params["w"] == 4]
    text = show(apply_choice(split, cs[0], RULES))
    assert "partRed 1 (add, 0.0f) ∘ asScalar ∘ partRed 1 (add4, float4(0.0f, 0.0f, 0.0f, 0.0f)) ∘ " \
           "asVector 4" in text


def test_slide_tiling_2d() -> None:
    """The convolution's 2D tiles (seed 000 §7.2): overlapping u×u tiles taken every v, the
    stencil inside each, and the tiles' outputs put back together (untile)."""
    from liftkit.dsl import slide2D
    from liftkit.semantics import interpret

    X = ArrayType(ArrayType(float32, cst(10)), cst(14))
    p = fun([X], lambda m: map(map(lambda w: reduce(FLOAT.add, 0.0) << join << w)) << slide2D(3, 1) << m)
    cs = [dict(c.params) for c in enumerate_choices(normal_form(p), [RULES["slide-tiling-2d"]])]
    assert cs == [{"u": 4, "v": 2}, {"u": 6, "v": 4}]  # k = 2, 4 divide 12 and 8 windows
    text = one(p, "slide-tiling-2d", u=6, v=4)
    assert text.endswith("∘ map(transpose) ∘ slide 3 1 ∘ map(slide 3 1))) ∘ map(transpose) ∘ "
                         "slide 6 4 ∘ map(slide 6 4))(m)")
    assert text.startswith("λ(m: [[float]_10]_14). (join ∘ map(map(join) ∘ transpose ∘ map(")
    img = np.random.default_rng(1).integers(-3, 4, (14, 10)).astype(np.float32)
    q = normal_form(p)
    after = apply_choice(q, enumerate_choices(q, [RULES["slide-tiling-2d"]])[1], RULES)
    assert np.array_equal(interpret(after, img), interpret(q, img))
