"""The rewrite engine's SiteCache: a program typed once, and the same answers as without it."""

from __future__ import annotations

import random

from liftkit.explore.space import load_rule_space
from liftkit.ir.printer import show
from liftkit.programs import PROGRAMS
from liftkit.rewrite.core import SiteCache, apply_choice, choices_in, typed_sites
from liftkit.rewrite.strategies import REDUCE_MAP_FUSION
from liftkit.types import LiftTypeError


def _walk(name: str, steps: int, seed: int = 1):  # type: ignore[no-untyped-def]
    """Programs along a random walk of the CPU rule space (fresh space: its own cache)."""
    space = load_rule_space("cpu")
    p = space.prepare(PROGRAMS[name].build())
    rng, out = random.Random(seed), [p]
    for _ in range(steps):
        cs = space.choices(p)
        rng.shuffle(cs)
        for c in cs:
            try:
                p = space.apply(p, c)
                break
            except LiftTypeError:
                continue
        out.append(p)
    return space, out


def test_cached_sites_and_choices_equal_uncached() -> None:
    space, programs = _walk("gesummv", 6)
    plain = [r for r in space.rules]
    for p in programs:
        fresh = typed_sites(p)
        cached = space.typing.sites(p)
        assert [(s.path, s.type, s.arg_types) for s in fresh] == [
            (s.path, s.type, s.arg_types) for s in cached]
        assert choices_in(fresh, plain) == [c for c in space._list_choices(p)
                                            if c.rule in {r.name for r in plain}]


def test_program_typed_once_and_rewrites_remembered() -> None:
    space, programs = _walk("atax", 3)
    p = programs[-1]
    cache = SiteCache()
    cache.sites(p)
    misses = cache.misses
    for s in typed_sites(p):
        assert cache.site(p, s.path).call is s.call
    assert cache.misses == misses  # every site from the one typing
    choice = next(c for c in space.choices(p) if c.rule in {r.name for r in space.rules})
    a = apply_choice(p, choice, space.by_name, cache)
    assert cache.knows(a)  # the result was typed by the check that accepted it
    assert apply_choice(p, choice, space.by_name, cache) is a
    assert show(a) == show(apply_choice(p, choice, space.by_name))


def test_macro_with_shared_cache_matches_plain_application() -> None:
    _, programs = _walk("atax", 0)
    p = programs[0]
    cache = SiteCache()
    for s in typed_sites(p):
        r1 = REDUCE_MAP_FUSION.apply(p, s.path)
        r2 = REDUCE_MAP_FUSION.apply(p, s.path, cache=cache)
        assert bool(r1) == bool(r2)
        if r1:
            assert show(r1.program) == show(r2.program)
            assert [st.choice for st in r1.steps] == [st.choice for st in r2.steps]
    assert cache.hits > 0
