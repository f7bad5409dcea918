"""Differential test: random raw expressions vs. their simplified forms.

For every random recipe the raw tree (liftkit.arith.raw) is evaluated
directly with Python ints on random in-range valuations; valuations where the
raw tree leaves C's well-defined domain are skipped.  The simplified tree
(``simplify(raw)``, which must equal the tree built through the operators)
must give the same value under both flooring and C's truncating semantics and
must itself stay inside the domain.

Seeds: ``LIFTKIT_ARITH_SEED`` overrides the base seed; every failure message
names the seed of its chunk and the failing raw expression.
"""

from __future__ import annotations

import os
import random

import pytest
from arith_helpers import VAR_MAP, OutOfDomain, RecipeGen, build_ops, build_raw, ref_eval, valuation

from liftkit.arith import ArithError, parse_arith, simplify

BASE_SEED = int(os.environ.get("LIFTKIT_ARITH_SEED", "1871"))
CHUNKS = 10
PER_CHUNK = 10_000  # 10 chunks x 10,000 = 100,000 expressions per run
VALUATIONS = 4


def _fail(seed: int, raw_e: object, msg: str) -> str:
    return f"[seed {seed}] {msg}\n  raw expression: {raw_e}"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_differential(chunk: int) -> None:
    seed = BASE_SEED * 1000 + chunk
    rng = random.Random(seed)
    gen = RecipeGen(rng)
    checked = 0
    expressions_checked = 0
    for n in range(PER_CHUNK):
        recipe = gen.expr(rng.choice((2, 3, 3, 4)))
        raw_e = build_raw(recipe)
        envs = [valuation(rng) for _ in range(VALUATIONS)]
        try:
            simp = simplify(raw_e)
        except ArithError:
            # only legitimate when the raw expression is never in the domain
            for env in envs:
                try:
                    ref_eval(raw_e, env)
                except (OutOfDomain, ArithError):
                    continue
                raise AssertionError(_fail(seed, raw_e, f"simplify raised ArithError but raw is defined at {env}"))
            with pytest.raises(ArithError):
                build_ops(recipe)
            continue
        built = build_ops(recipe)
        assert built == simp, _fail(seed, raw_e, f"operators gave {built}, simplify gave {simp}")
        any_ok = False
        for env in envs:
            try:
                want = ref_eval(raw_e, env)
            except OutOfDomain:
                continue
            any_ok = True
            checked += 1
            got = simp.eval(env)
            assert got == want, _fail(seed, raw_e, f"simplified {simp} = {got}, raw = {want} at {env}")
            try:
                got_c = ref_eval(simp, env, c_semantics=True)
            except OutOfDomain:
                raise AssertionError(_fail(seed, raw_e, f"simplified {simp} leaves C's domain at {env}")) from None
            assert got_c == want, _fail(seed, raw_e, f"C semantics: {simp} = {got_c}, raw = {want} at {env}")
        expressions_checked += any_ok
        if n % 50 == 0:
            back = parse_arith(str(simp), VAR_MAP)
            assert back == simp, _fail(seed, raw_e, f"parse(str) gave {back} for {simp}")
            back_c = parse_arith(simp.to_c(), VAR_MAP)
            assert back_c == simp, _fail(seed, raw_e, f"parse(to_c) gave {back_c} for {simp}")
    # the generator must keep most expressions meaningful
    assert expressions_checked > PER_CHUNK // 3, (expressions_checked, checked)
