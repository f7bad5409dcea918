"""Property tests: parse/print round trips, idempotence of the canonical
form, numpy evaluation, and a hypothesis-driven differential check."""

from __future__ import annotations

import random

import numpy as np
import pytest
from arith_helpers import (
    SIZES,
    VAR_MAP,
    VARS,
    OutOfDomain,
    RecipeGen,
    build_raw,
    raw_copy,
    ref_eval,
    valuation,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from liftkit.arith import ArithError, parse_arith, simplify


def _random_simplified(seed: int, count: int) -> list:
    rng = random.Random(seed)
    gen = RecipeGen(rng)
    out = []
    while len(out) < count:
        try:
            out.append(simplify(build_raw(gen.expr(rng.choice((2, 3, 4))))))
        except ArithError:
            pass
    return out


@pytest.mark.parametrize("seed", [11, 12])
def test_parse_str_round_trip(seed: int) -> None:
    for e in _random_simplified(seed, 1500):
        assert parse_arith(str(e), VAR_MAP) == e, f"[seed {seed}] {e}"
        assert parse_arith(e.to_c(), VAR_MAP) == e, f"[seed {seed}] {e.to_c()}"


@pytest.mark.parametrize("seed", [21, 22])
def test_canonical_form_is_idempotent(seed: int) -> None:
    for e in _random_simplified(seed, 1500):
        again = simplify(raw_copy(e))
        assert again == e, f"[seed {seed}] {e} re-simplified to {again}"
        assert hash(again) == hash(e)


def test_eval_numpy_matches_eval() -> None:
    rng = random.Random(31)
    envs = [valuation(rng) for _ in range(64)]
    arrays = {name: np.array([env[name] for env in envs]) for name in envs[0]}
    compared = 0
    for e in _random_simplified(31, 1500):
        try:
            want = [e.eval(env) for env in envs]
            got = e.eval_numpy(arrays)
        except ArithError:
            continue
        if any(abs(w) > 2**62 for w in want):
            continue
        assert list(np.broadcast_to(got, (len(envs),))) == want, str(e)
        compared += 1
    assert compared > 1000


# -- hypothesis ----------------------------------------------------------------

_leaf = st.one_of(
    st.sampled_from(VARS).map(lambda v: ("var", v)),
    st.integers(-4, 9).map(lambda c: ("cst", c)),
)
_divisor = st.one_of(
    st.sampled_from((1, 2, 3, 4, 8)).map(lambda c: ("cst", c)),
    st.sampled_from(SIZES).map(lambda v: ("var", v)),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.sampled_from(("add", "sub", "mul", "min", "max")), children, children),
        st.tuples(st.sampled_from(("div", "mod")), children, st.one_of(_divisor, children)),
        st.tuples(st.just("neg"), children),
        st.tuples(st.just("pow"), children, st.integers(0, 3).map(lambda c: ("cst", c))),
        st.tuples(
            st.just("ite"), st.sampled_from(("<", "<=", ">", ">=", "==", "!=")), children, children, children, children
        ),
        # (x*y + z) / y and % y shapes
        st.tuples(st.sampled_from(("div", "mod")), children, _divisor, children).map(
            lambda t: (t[0], ("add", ("mul", t[1], t[2]), t[3]), t[2])
        ),
    )


_recipes = st.recursive(_leaf, _extend, max_leaves=12)
_envs = st.randoms(use_true_random=False).map(lambda r: [valuation(r) for _ in range(6)])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_recipes, _envs)
def test_hypothesis_simplification_preserves_value(recipe: tuple, envs: list) -> None:
    raw_e = build_raw(recipe)
    try:
        simp = simplify(raw_e)
    except ArithError:
        for env in envs:
            with pytest.raises((OutOfDomain, ArithError)):
                ref_eval(raw_e, env)
        return
    assert parse_arith(str(simp), VAR_MAP) == simp
    for env in envs:
        try:
            want = ref_eval(raw_e, env)
        except OutOfDomain:
            continue
        assert simp.eval(env) == want, f"raw {raw_e} -> {simp} at {env}"
        assert ref_eval(simp, env, c_semantics=True) == want, f"raw {raw_e} -> {simp} at {env}"
