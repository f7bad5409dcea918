"""Soundness of every rewrite rule: interpreter before == interpreter after, bit for bit.

For each rule, programs come from a stream of random high-level programs (`rules.corpus`) and
the bundled high-level programs, and are walked by applying random rules (preferring the rules
that create the pattern the rule under test looks for), so partially lowered programs are
covered too. At every step of a walk the rule under test is applied at a few random sites with
random parameters; every application and every walk step is interpreted on integer-valued
float32 inputs (so reassociating sums is exact) and compared with the original program's
output: shape, dtype and values. Each rule gets at least TARGET applications per run.

Reproduce a failure from what the message prints: the case (`random_case(seed)` or the bundled
program), the walk before it and the failing choice. LIFTKIT_SOUNDNESS_SEED picks another seed,
LIFTKIT_SOUNDNESS_APPS another number of applications per rule.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from liftkit.rewrite import Rule
from liftkit.rewrite.rules import PAPER_RULES as ALL_RULES, RULES_BY_NAME  # extras: test_extra_rules.py
from liftkit.rewrite.rules.corpus import Case, bundled_cases, random_case
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "20150"))
TARGET = int(os.environ.get("LIFTKIT_SOUNDNESS_APPS", "1000"))
PER_STEP = 3  # applications of the rule under test per program of a walk
WALK = 16  # steps per walk
MAX_NODES = 2500  # a walk stops before programs get this large
MAX_BASES = 4000  # give up (and fail) after this many base programs
PATIENCE = 5  # walk steps without a site for the rule before the next base program

# rules that tend to create the pattern each rule looks for (a walk prefers them)
_LOWER_MAPS = ("split-join", "map-mapWrg", "map-mapLcl")
ENABLERS: dict[str, tuple[str, ...]] = {
    "iterate-decomposition": ("reduce-partRed", "partRed-iterate"),
    "map-reorder-commute": ("reduce-partRed", "partRed-reorder", "reorder-map-commute", "split-join"),
    "reorder-map-commute": ("reduce-partRed", "partRed-reorder", "map-reorder-commute"),
    "split-join": (),
    "reduce-partRed": (),
    "partRed-reduce": ("reduce-partRed", "partRed-split-join", "partRed-iterate"),
    "partRed-reorder": ("reduce-partRed", "partRed-split-join"),
    "partRed-iterate": ("reduce-partRed", "partRed-split-join", "partRed-reorder"),
    "partRed-split-join": ("reduce-partRed", "partRed-reorder"),
    "join-split-id": ("split-join", "partRed-split-join", "reduce-partRed", "map-fusion"),
    "split-join-id": ("split-join", "map-fusion"),
    "asScalar-asVector-id": ("asVector-asScalar-id",),
    "asVector-asScalar-id": ("vectorize-map",),
    "map-fusion": ("split-join", "split-join-id", "join-split-id", "map-mapSeq", "map-mapGlb"),
    "reduceSeq-mapSeq-fusion": ("reduce-reduceSeq", "map-mapSeq", "reorder-id"),
    "map-mapWrg": ("split-join",),
    "map-mapLcl": _LOWER_MAPS,
    "map-mapGlb": ("split-join",),
    "map-mapSeq": ("split-join",),
    "reduce-reduceSeq": ("reduce-partRed", "partRed-reduce"),
    "reorder-reorderStride": ("reduce-partRed", "partRed-reorder", "partRed-split-join",
                              "map-reorder-commute", "reorder-map-commute"),
    "reorder-id": ("reduce-partRed", "partRed-reorder"),
    "mapLcl-toGlobal": _LOWER_MAPS,
    "mapLcl-toLocal": _LOWER_MAPS,
    "vectorize-map": ("split-join", "map-mapSeq", "map-mapGlb"),
    "vectorize-reduce": ("reduce-partRed",),
}

_bundled: list[Case] = []
_bases: dict[int, Case] = {}
STATS: dict[str, dict[str, Any]] = {}


def base_case(i: int) -> Case:
    """The i-th program of the stream: every sixth a bundled program, the rest random."""
    if i not in _bases:
        if i % 6 == 5:
            if not _bundled:
                _bundled.extend(bundled_cases(SEED))
            _bases[i] = _bundled[(i // 6) % len(_bundled)]
        else:
            _bases[i] = random_case(SEED * 100_003 + i)
    return _bases[i]


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    """A walk step tries the enablers of `rule` first (most of the time), then the other rules."""
    enablers = [RULES_BY_NAME[n] for n in ENABLERS.get(rule.name, ())]
    rest = [r for r in ALL_RULES if r not in enablers]
    rng.shuffle(enablers)
    rng.shuffle(rest)
    return enablers + rest if rng.random() < 0.75 else rng.sample(list(ALL_RULES), len(ALL_RULES))


HARNESS = Soundness(RULES_BY_NAME, base_case, lambda r: [RULES_BY_NAME[n] for n in ENABLERS[r.name]],
                    _walk_order, SEED, per_step=PER_STEP, walk=WALK, max_nodes=MAX_NODES,
                    max_bases=MAX_BASES, patience=PATIENCE)


def exercise(rule: Rule, target: int) -> dict[str, Any]:
    try:
        return HARNESS.exercise(rule, target)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.name for r in ALL_RULES])
def test_rule_is_sound(rule: Rule) -> None:
    stats = exercise(rule, TARGET)
    STATS[rule.name] = stats
    print(f"\n{rule.name}: {stats}")
    assert stats["applications"] >= TARGET


def test_every_rule_has_enablers_listed() -> None:
    assert set(ENABLERS) == {r.name for r in ALL_RULES}  # the paper rules; extras have their own
    for names in ENABLERS.values():
        assert set(names) <= set(RULES_BY_NAME)


def test_the_harness_catches_an_unsound_rule() -> None:
    """A rule that drops a map (map(f) → id) must be reported, with the rule and the programs."""
    from liftkit.ir import patterns as P
    from liftkit.rewrite.rules.algorithmic import make_rule
    from liftkit.rewrite.rules.soundness import SoundnessError

    drop_map = make_rule("drop-map", "map(f) → id (wrong)", "test",
                         lambda s: [{}] if type(s.f) is P.Map else [], lambda s: s.call.args[0])
    h = Soundness({**RULES_BY_NAME, "drop-map": drop_map}, base_case, lambda r: [], _walk_order, SEED,
                  max_bases=50)
    with pytest.raises(SoundnessError, match="rule drop-map"):
        h.exercise(drop_map, 10)
