"""gemv-t-groups and gemv-row-groups (rules/gemv/groups.py): CLBlast's GPU GEMV kernels (a
work-group per block of columns of Aᵀ·v, a work-group per row of A·x and of GESUMMV's
α·A·x + β·B·x in one pass) as one rewrite each.

Sound in the interpreter: with integer-valued inputs every sum is exact, so the rewritten
program's result equals the high-level one's bit for bit whatever the order of the terms; the
harness applies each rule along random walks of the other rules (tests/rewrite/test_mm_rules.py
does the same for MM). Refused where the algebra does not hold (a sum that is not the type's add
for the fused GESUMMV, a reduction that does not start at its identity, two different vectors,
complex numbers). The derived kernels run on the CPU device; the GPU rule space offers both as
macro rules."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from liftkit.dsl import DOUBLE, FLOAT, float32, float64, fun, join, map, reduce, size, transpose, zip
from liftkit.explore.macros import GPU_GEMV_ROWS, GPU_GEMV_T, GPU_GEMVS
from liftkit.ir.typecheck import is_low_level
from liftkit.programs import PROGRAMS
from liftkit.rewrite.core import Choice, Rule, apply_choice, typed_sites
from liftkit.rewrite.rules import ALL_RULES, RULES_BY_NAME, SEARCH_RULES, normal_form
from liftkit.rewrite.rules.corpus import Case, run, same_result
from liftkit.rewrite.rules.gemv import GEMV_GROUP_RULES, GEMV_ROW_GROUPS, GEMV_T_GROUPS
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

M, N = size("M"), size("N")
SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "7"))
TARGET = 16


def _dot_rows(A, x, funs):  # type: ignore[no-untyped-def]
    return join << map(lambda r: reduce(funs.add, 0.0) << map(funs.mult) << zip(r, x)) << A


def _transposed(t, funs):  # type: ignore[no-untyped-def]
    """Aᵀ·v alone, A: [[t]_N]_M, v: [t]_M."""
    return fun([t[N][M], t[M]], lambda A, v: _dot_rows(transpose << A, v, funs))


def _two_products(t, funs, sum_fun, same_x: bool = True):  # type: ignore[no-untyped-def]
    """α·A·x ⊕ β·B·y (y = x when same_x) with ⊕ = sum_fun."""
    return fun([t[N][M], t[N][M], t[N], t[N], t, t], lambda A, B, x, y, alpha, beta:
               map(sum_fun) << zip(map(lambda v: funs.mult(alpha, v)) << _dot_rows(A, x, funs),
                                   map(lambda v: funs.mult(beta, v)) << _dot_rows(B, x if same_x else y, funs)))


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dt: str) -> np.ndarray:
    return rng.integers(-4, 5, shape).astype(dt)


def _case(seed: int) -> Case:
    """atax, gesummv (float) and Aᵀ·v, α·A·x + β·B·x over double; integer-valued inputs."""
    rng = np.random.default_rng(seed)
    m, n = random.Random(seed).choice(((64, 256), (128, 512), (32, 1024)))
    kind = seed % 4
    dt = "float64" if kind >= 2 else "float32"
    A, B = _ints(rng, (m, n), dt), _ints(rng, (m, n), dt)
    if kind == 0:
        prog, inputs, origin = PROGRAMS["atax"].build(), [A, _ints(rng, (n,), dt)], "atax"
    elif kind == 1:
        prog, origin = PROGRAMS["gesummv"].build(), "gesummv"
        inputs = [A, B, _ints(rng, (n,), dt), np.float32(2), np.float32(-3)]
    elif kind == 2:
        prog, inputs, origin = _transposed(float64, DOUBLE), [A, _ints(rng, (m,), dt)], "Aᵀv double"
    else:
        prog, origin = _two_products(float64, DOUBLE, DOUBLE.add), "αAx + βBx double"
        inputs = [A, B, _ints(rng, (n,), dt), _ints(rng, (n,), dt), np.float64(2), np.float64(-1)]
    p = normal_form(prog)
    sizes = {"M": m, "N": n}
    return Case(p, inputs, run(p, inputs, sizes), seed, origin, sizes)  # type: ignore[arg-type]


WALKERS = [r for r in ALL_RULES if r.name != "copy-insertion" and r not in GEMV_GROUP_RULES]


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    return rng.sample(WALKERS, len(WALKERS))


HARNESS = Soundness(RULES_BY_NAME, _case, lambda r: [], _walk_order, SEED, per_step=3, walk=4,
                    max_bases=60, patience=1)


@pytest.mark.parametrize("rule", GEMV_GROUP_RULES, ids=[r.name for r in GEMV_GROUP_RULES])
def test_gemv_group_rule_is_sound(rule: Rule) -> None:
    try:
        stats = HARNESS.exercise(rule, TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    print(f"\n{rule.name}: {stats}")
    assert stats["applications"] >= TARGET


def _offers(prog, rule: Rule) -> list[dict]:  # type: ignore[no-untyped-def]
    return [p for s in typed_sites(normal_form(prog)) for p in rule.choices(s)]


def test_the_hand_written_shapes_are_offered_and_sound_with_real_inputs() -> None:
    """atax_low's transposed kernel (16 columns as float4, 64 row groups) and its row kernel
    (128 work-items, float4) are among the choices; random reals agree within rounding."""
    assert {"c": 4, "r": 64, "w": 4} in _offers(PROGRAMS["atax"].build(), GEMV_T_GROUPS)
    assert {"L": 128, "w": 4} in _offers(PROGRAMS["atax"].build(), GEMV_ROW_GROUPS)
    assert {"L": 128, "w": 4} in _offers(PROGRAMS["gesummv"].build(), GEMV_ROW_GROUPS)
    sizes = {"M": 64, "N": 512}
    for name, steps in (("atax", [(GEMV_T_GROUPS, {"c": 4, "r": 64, "w": 4}),
                                  (GEMV_ROW_GROUPS, {"L": 128, "w": 4})]),
                        ("gesummv", [(GEMV_ROW_GROUPS, {"L": 64, "w": 2})])):
        spec = PROGRAMS[name]
        p = q = normal_form(spec.build())
        for rule, params in steps:
            q = _apply(q, rule, params)
        assert is_low_level(q)
        inputs = spec.inputs(sizes, 5)
        np.testing.assert_allclose(run(q, inputs, sizes), run(p, inputs, sizes), rtol=1e-4, atol=1e-4)


def _apply(p, rule: Rule, params: dict):  # type: ignore[no-untyped-def]
    site = next(s for s in typed_sites(p) if params in rule.choices(s))
    return apply_choice(p, Choice(rule.name, site.path, params), RULES_BY_NAME)


def _offers_at(prog, rule: Rule, path: tuple) -> list[dict]:  # type: ignore[no-untyped-def]
    return [p for s in typed_sites(normal_form(prog)) if s.path == path for p in rule.choices(s)]


def test_refused_where_the_algebra_does_not_hold() -> None:
    from liftkit.ir.userfuns import complex_funs
    from liftkit.types import SCALARS

    # GESUMMV fused (at the sum of the two products) needs the type's add, which the scalings
    # distribute over, and one vector for both products
    assert _offers_at(_two_products(float32, FLOAT, FLOAT.add), GEMV_ROW_GROUPS, (0,))
    assert not _offers_at(_two_products(float32, FLOAT, FLOAT.sub), GEMV_ROW_GROUPS, (0,))
    assert not _offers_at(_two_products(float32, FLOAT, FLOAT.add, same_x=False), GEMV_ROW_GROUPS, (0,))
    # a reduction not starting at its identity
    shifted = fun([float32[N][M], float32[M]], lambda A, v:
                  join << map(lambda c: reduce(FLOAT.add, 1.0) << map(FLOAT.mult) << zip(c, v))
                  << transpose << A)
    assert _offers(_transposed(float32, FLOAT), GEMV_T_GROUPS) and not _offers(shifted, GEMV_T_GROUPS)
    # A's own rows are no transposed product; complex numbers have no vectors
    assert not _offers(fun([float32[N][M], float32[N]], lambda A, x: _dot_rows(A, x, FLOAT)),
                       GEMV_T_GROUPS)
    ct = SCALARS["cfloat"]
    assert not _offers(_transposed(ct, complex_funs(ct)), GEMV_T_GROUPS)
    assert not _offers(fun([ct[N][M], ct[N]], lambda A, x: _dot_rows(A, x, complex_funs(ct))),
                       GEMV_ROW_GROUPS)


def test_the_derived_kernels_run_on_the_cpu_device_and_the_gpu_search_offers_them() -> None:
    from liftkit.backends.opencl import run_opencl
    from liftkit.explore.macros import rule_space

    sizes = {"M": 128, "N": 512}
    for name, steps in (("atax", [(GEMV_T_GROUPS, {"c": 8, "r": 16, "w": 4}),
                                  (GEMV_ROW_GROUPS, {"L": 64, "w": 4})]),
                        ("gesummv", [(GEMV_ROW_GROUPS, {"L": 128, "w": 4})])):
        spec = PROGRAMS[name]
        q = normal_form(spec.build())
        for rule, params in steps:
            q = _apply(q, rule, params)
        inputs = spec.inputs(sizes, 2)
        np.testing.assert_allclose(run_opencl(q, *inputs, device="cpu"), spec.reference(*inputs),
                                   rtol=1e-4, atol=1e-3)
    assert set(GEMV_GROUP_RULES) <= set(SEARCH_RULES)
    assert not set(GEMV_GROUP_RULES) & set(rule_space("cpu").rules)  # GPU kernels only
    space = rule_space("gpu")
    for name, macros in (("atax", {GPU_GEMV_T.name, GPU_GEMV_ROWS.name, GPU_GEMVS.name}),
                         ("gesummv", {GPU_GEMV_ROWS.name, GPU_GEMVS.name})):
        offered = {c.rule for c in space.choices(space.prepare(PROGRAMS[name].build()))}
        assert macros <= offered, name


def test_gpu_gemvs_reaches_the_hand_written_kernels_in_one_move() -> None:
    """The macro at the program's body lowers both of ATAX's products (and GESUMMV's fused sum)
    to the OpenCL level in one move, with the hand-written programs' launch geometry; its steps
    replay with the plain rules."""
    from liftkit.codegen import compile_program
    from liftkit.explore.macros import rule_space

    space = rule_space("gpu")
    for name, low, rules in (("atax", "atax_low", ["gemv-t-groups", "gemv-row-groups"]),
                             ("gesummv", "gesummv_low", ["gemv-row-groups"])):
        p = space.prepare(PROGRAMS[name].build())
        choice = Choice(GPU_GEMVS.name, (0,), {"c": 4, "r": 64, "L": 128})
        assert choice in space.choices(p)
        q, steps = space.apply_steps(p, choice)
        assert is_low_level(q) and [c.rule for c in steps] == rules
        derived = compile_program(space.replay(PROGRAMS[name].build(), steps)).kernels
        hand = compile_program(PROGRAMS[low].build()).kernels
        assert [k.ndrange for k in derived] == [k.ndrange for k in hand], name


def test_a_gpu_search_times_the_pair_first() -> None:
    """`liftkit explore atax/gesummv --rules gpu`: the first candidate of the first step is
    gpu-gemvs's program (atax_low's two kernels, gesummv_low's fused one), checked and timed."""
    from liftkit.explore import explore

    for name, rules in (("atax", ["gemv-t-groups", "gemv-row-groups"]),
                        ("gesummv", ["gemv-row-groups"])):
        result = explore(name, {"M": 64, "N": 512}, "cpu", rules="gpu", budget=1, seed=0)
        first = result.records[0]
        assert first.ok and [c.rule for c in first.derivation] == rules, name
