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
import time
import zlib
from typing import Any, Optional, Sequence

import pytest

from liftkit.ir.printer import pretty
from liftkit.ir.nodes import Lambda
from liftkit.rewrite import Choice, RewriteError, Rule, Site, apply_choice, typed_sites
from liftkit.rewrite.rules import PAPER_RULES as ALL_RULES, RULES_BY_NAME  # extras: test_extra_rules.py
from liftkit.rewrite.rules.corpus import (
    Case,
    bundled_cases,
    count_nodes,
    is_size_error,
    random_case,
    run,
    same_result,
)
from liftkit.types import LiftTypeError

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


def _reproduce(case: Case) -> str:
    if case.origin.startswith("random"):
        return f"liftkit.rewrite.rules.corpus.random_case({case.seed})"
    return f"[c for c in bundled_cases({case.seed}) if c.origin == {case.origin.split(' +')[0]!r}][0]"


def _fail(what: str, case: Case, prog: Lambda, walk: Sequence[Choice], choice: Choice,
          detail: str, after: Optional[Lambda] = None) -> None:
    steps = "; ".join(str(c) for c in walk) or "none"
    msg = [f"{what}: rule {choice.rule} at path {'.'.join(map(str, choice.path)) or 'root'} "
           f"with params {dict(choice.params)}",
           f"case: {case.origin}, seed {case.seed} (global seed {SEED}); rebuild: {_reproduce(case)}",
           f"walk before it: {steps}", "program before:", pretty(prog)]
    if after is not None:
        msg += ["program after:", pretty(after)]
    msg.append(detail)
    pytest.fail("\n".join(msg), pytrace=False)


def _options(rule: Rule, sites: Sequence[Site]) -> list[Choice]:
    out = []
    for s in sites:
        try:
            ps = rule.choices(s)
        except LiftTypeError:
            continue
        out += [Choice(rule.name, s.path, dict(p)) for p in ps]
    return out


def _apply_and_compare(case: Case, prog: Lambda, walk: Sequence[Choice], choice: Choice
                       ) -> Optional[Lambda]:
    """Apply and compare with the original's output; None when the bound sizes do not admit a
    factor chosen for a symbolic length (skipped). Fails the test on any unsoundness."""
    try:
        new = apply_choice(prog, choice, RULES_BY_NAME)
    except RewriteError as err:
        _fail("ill-typed result", case, prog, walk, choice, str(err))
        raise AssertionError from err  # unreachable
    try:
        out = run(new, case.inputs, case.sizes)
    except Exception as err:  # noqa: BLE001 - any failure of the rewritten program is reported
        if case.symbolic and is_size_error(err):
            return None
        _fail("the rewritten program fails", case, prog, walk, choice, f"{type(err).__name__}: {err}", new)
        raise AssertionError from err  # unreachable
    if not same_result(out, case.expected):
        _fail("different result", case, prog, walk, choice,
              f"expected {case.expected!r}\n     got {out!r}\n(inputs {case.inputs!r})", new)
    return new


def _advance(prog: Lambda, sites: Sequence[Site], rng: random.Random, rule: Rule
             ) -> Optional[Choice]:
    """A random walk step: a rule chosen among those that apply, enablers of `rule` first."""
    enablers = [RULES_BY_NAME[n] for n in ENABLERS.get(rule.name, ())]
    rest = [r for r in ALL_RULES if r not in enablers]
    rng.shuffle(enablers)
    rng.shuffle(rest)
    order = enablers + rest if rng.random() < 0.75 else rng.sample(list(ALL_RULES), len(ALL_RULES))
    for r in order:
        opts = _options(r, sites)
        if opts:
            return rng.choice(opts)
    return None


def exercise(rule: Rule, target: int) -> dict[str, Any]:
    rng = random.Random(SEED ^ zlib.crc32(rule.name.encode()))
    applied = skipped = walked = programs = 0
    i = -1
    t0 = time.perf_counter()
    while applied < target:
        i += 1
        if i >= MAX_BASES:
            pytest.fail(f"{rule.name}: only {applied} applications in {MAX_BASES} base programs "
                        f"(seed {SEED})")
        case = base_case(i)
        prog, walk = case.program, []
        idle = 0
        for step in range(WALK):
            sites = typed_sites(prog)
            opts = _options(rule, sites)
            if step == 0 and not opts and not any(
                    _options(RULES_BY_NAME[n], sites) for n in ENABLERS[rule.name]):
                break  # nothing here leads to the rule: next base program
            idle = 0 if opts else idle + 1
            if idle >= PATIENCE:
                break
            if opts:
                programs += 1
            for choice in rng.sample(opts, min(PER_STEP, len(opts))):
                if _apply_and_compare(case, prog, walk, choice) is None:
                    skipped += 1
                else:
                    applied += 1
            if applied >= target or count_nodes(prog) > MAX_NODES:
                break
            step = _advance(prog, sites, rng, rule)
            if step is None:
                break
            new = _apply_and_compare(case, prog, walk, step)
            if new is None:
                break
            walked += 1
            prog, walk = new, walk + [step]
    return {"applications": applied, "skipped": skipped, "programs": programs, "bases": i + 1,
            "walk steps": walked, "seconds": round(time.perf_counter() - t0, 2)}


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
