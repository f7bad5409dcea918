"""Soundness of the rules that introduce patterns beyond OpenCL (rewrite/rules/cuda.py):
interpreter before == after, bit for bit, on integer-valued inputs, over work-group reductions
of several shapes (trees of 5-8 levels, runs of 32, with add, max and min; the GPU asum and dot
programs), walked with the rules themselves and iterate decomposition. Each rule gets at least
TARGET checked applications per run."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.programs.gpu import reduction_gpu
from liftkit.rewrite import Rule
from liftkit.rewrite.rules import RULES_BY_NAME, normal_form
from liftkit.rewrite.rules.corpus import Case, run
from liftkit.rewrite.rules.cuda import CUDA_RULES, CUDA_RULES_BY_NAME
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "20150"))
TARGET = int(os.environ.get("LIFTKIT_CUDA_RULE_APPS", "60"))
N = size("N")
WALKERS = (CUDA_RULES_BY_NAME["tree-chunks-32"], CUDA_RULES_BY_NAME["reduceWarp"],
           RULES_BY_NAME["iterate-decomposition"])
OPS = [(add, 0.0), (max, float("-inf")), (min, float("inf"))]


def _tree(levels: int, group: int, op, z):  # type: ignore[no-untyped-def]
    return fun([float32[N]], lambda x: join << mapWrg(0)(
        join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1)
        << iterate(levels, join << mapLcl(0)(reduceSeq(op, z)) << split(2))
        << toLocal(mapLcl(0)(id))) << split(group) << x)


def _runs(group: int, op, z):  # type: ignore[no-untyped-def]
    return fun([float32[N]], lambda x: join << mapWrg(0)(
        join << mapLcl(0)(reduceSeq(op, z)) << split(32) << toLocal(mapLcl(0)(id))) << split(group) << x)


def _programs(k: int):  # type: ignore[no-untyped-def]
    op, z = OPS[k % len(OPS)]
    levels = 5 + k % 4
    shapes = [(_tree(levels, 2 ** levels * (1 + k % 2), op, z), 4 * 2 ** levels),
              (_runs(32 * (1 + k % 8), op, z), 32 * 840)]
    if k % 7 == 0:
        shapes.append((reduction_gpu("asum", per_thread=1), 4 * 256 * 256))
    return shapes


_cases: dict[int, Case] = {}


def base_case(i: int) -> Case:
    if i not in _cases:
        shapes = _programs(i // 3)
        prog, n = shapes[i % len(shapes)]
        rng = np.random.default_rng(SEED + i)
        x = rng.integers(-8, 9, n).astype(np.float32)
        p = normal_form(prog)
        _cases[i] = Case(p, [x], run(p, [x]), SEED + i, f"cuda-rules base {i}")
    return _cases[i]


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    order = list(WALKERS)
    rng.shuffle(order)
    return order


HARNESS = Soundness({**RULES_BY_NAME, **CUDA_RULES_BY_NAME}, base_case, lambda r: list(WALKERS),
                    _walk_order, SEED, per_step=2, walk=6, max_bases=400, patience=3)


@pytest.mark.parametrize("rule", CUDA_RULES, ids=[r.name for r in CUDA_RULES])
def test_rule_is_sound(rule: Rule) -> None:
    try:
        stats = HARNESS.exercise(rule, TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= TARGET


def test_the_rules_keep_off_what_they_must_not_touch() -> None:
    """No tree rule without an identity initial value or with a split other than 2; no warp
    rule over runs other than 32, in dimension 1, or for an operator without the facts."""
    from liftkit.rewrite import enumerate_choices

    def offered(p):  # type: ignore[no-untyped-def]
        return {c.rule for c in enumerate_choices(normal_form(p), CUDA_RULES)}

    assert offered(_tree(5, 32, add, 1.0)) == set()  # 1 is not add's identity
    assert offered(_tree(4, 16, add, 0.0)) == set()  # fewer than five levels
    assert offered(_runs(64, add, 0.0)) == {"reduceWarp"}
    assert offered(fun([float32[N]], lambda x: join << mapWrg(0)(
        join << mapLcl(0)(reduceSeq(add, 0.0)) << split(16) << toLocal(mapLcl(0)(id))) << split(64) << x)) == set()
    assert offered(fun([float32[N]], lambda x: join << mapWrg(0)(
        join << mapLcl(0)(reduceSeq(sub, 0.0)) << split(32) << toLocal(mapLcl(0)(id))) << split(64) << x)) == set()
    assert offered(fun([float32[N]], lambda x: join << mapWrg(1)(
        join << mapLcl(1)(reduceSeq(add, 0.0)) << split(32) << toLocal(mapLcl(1)(id))) << split(64) << x)) == set()
