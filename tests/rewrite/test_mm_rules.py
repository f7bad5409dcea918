"""The matrix-multiplication rules (rules/mm.py) and macros (explore/macros.py: mm-tiles,
mm-blocks): soundness in the interpreter (before == after, bit for bit, on integer-valued
inputs) over MM programs of several constant and symbolic sizes, walked with the other rules;
the rewritten programs are the bundled hand-written kernels' (same generated source); they
compile and compute the reference's product on the CPU device; the search finds them."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import compile_program
from liftkit.ir import patterns as P
from liftkit.ir.nodes import unwrap_eta
from liftkit.ir.printer import show
from liftkit.ir.typecheck import is_low_level
from liftkit.programs import PROGRAMS
from liftkit.rewrite import Rule, apply_choice, enumerate_choices
from liftkit.rewrite.rules import ALL_RULES, RULES_BY_NAME, SEARCH_RULES, normal_form
from liftkit.rewrite.rules.corpus import Case, run
from liftkit.rewrite.rules.mm import (MM_LOCAL_TILES, MM_PRIVATE_BLOCKS, MM_RULES, MM_TILE_2D,
                                      MM_TILES_LOWER)
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError
from liftkit.types import float32

SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "20150"))
TARGET = int(os.environ.get("LIFTKIT_MM_APPS", "16"))
SIZES = ((32, 32, 16), (64, 32, 16), (32, 64, 32), (64, 64, 16), (32, 128, 16))  # (M, N, K)
WALKERS = [r for r in ALL_RULES if r.name not in ("copy-insertion",) and r not in MM_RULES]


def mm_program(m: Any, n: Any, k: Any) -> Any:
    """The bundled high-level mm with these (constant or symbolic) sizes."""
    from liftkit.dsl import add, fun, join, map, mult, reduce, transpose, zip  # noqa: A004

    return fun([float32[k][m], float32[n][k]], lambda A, B:
               map(lambda rowA: join << map(lambda colB: reduce(add, 0.0) << map(mult)
                                            << zip(rowA, colB)) << transpose << B) << A)


def mm_case(seed: int) -> Case:
    """MM at one of SIZES, with constant sizes or (every third) symbolic ones bound at run time."""
    from liftkit.dsl import size

    rng = random.Random(seed)
    m, n, k = rng.choice(SIZES)
    symbolic = seed % 3 == 0
    prog = normal_form(mm_program(size("M"), size("N"), size("K")) if symbolic else mm_program(m, n, k))
    g = np.random.default_rng(seed)
    inputs = [g.integers(-3, 4, (m, k)).astype(np.float32), g.integers(-3, 4, (k, n)).astype(np.float32)]
    sizes = {"M": m, "N": n, "K": k} if symbolic else {}
    return Case(prog, inputs, run(prog, inputs, sizes), seed, "mm", sizes)  # type: ignore[arg-type]


def tiled_case(seed: int) -> Case:
    """An MM case already tiled by mm-tile-2d (the shape mm-tiles-lower lowers)."""
    case = mm_case(seed)
    opts = enumerate_choices(case.program, [MM_TILE_2D])
    if not opts:
        return case
    prog = apply_choice(case.program, random.Random(seed).choice(opts), RULES)
    return Case(prog, case.inputs, case.expected, seed, "mm + mm-tile-2d", case.sizes)  # type: ignore[arg-type]


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    return rng.sample(WALKERS, 8)


RULES = dict(RULES_BY_NAME)
HARNESS = Soundness(RULES, lambda i: mm_case(SEED * 13 + i), lambda r: [], _walk_order, SEED,
                    per_step=3, walk=3, max_bases=200, patience=1)
HARNESS_TILED = Soundness(RULES, lambda i: tiled_case(SEED * 17 + i), lambda r: [], _walk_order,
                          SEED, per_step=3, walk=3, max_bases=200, patience=1)


@pytest.mark.parametrize("rule", MM_RULES, ids=[r.name for r in MM_RULES])
def test_mm_rule_is_sound(rule: Rule) -> None:
    harness = HARNESS_TILED if rule is MM_TILES_LOWER else HARNESS
    try:
        stats = harness.exercise(rule, TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    print(f"\n{rule.name}: {stats}")
    assert stats["applications"] >= TARGET


def test_the_mm_rules_are_search_rules_with_facts() -> None:
    names = {r.name for r in SEARCH_RULES}
    for r in MM_RULES:
        assert r.name in names and RULES_BY_NAME[r.name] is r
        assert r.lowering == (r is not MM_TILE_2D) and "→" in r.fact and r.source


def _choices(prog: Any, rule: Rule) -> list[dict[str, Any]]:
    return [dict(c.params) for c in enumerate_choices(normal_form(prog), [rule])]


def test_the_rules_offer_only_dividing_tiles_for_constant_sizes() -> None:
    for m, n, k in ((64, 128, 32), (96, 64, 48), (32, 32, 16)):
        tiles = _choices(mm_program(m, n, k), MM_LOCAL_TILES)
        assert tiles and {p["w"] for p in tiles} == {1, 4}, (m, n, k)
        for p in tiles:
            assert m % p["tm"] == 0 and n % p["tn"] == 0 and k % p["tk"] == 0
            assert p["tm"] % p["rm"] == 0 and p["tn"] % p["rn"] == 0 and p["rn"] % p["w"] == 0
        for p in _choices(mm_program(m, n, k), MM_PRIVATE_BLOCKS):
            assert m % (p["wy"] * p["rm"]) == 0 and n % (p["wx"] * p["rn"]) == 0
    assert _choices(mm_program(30, 64, 16), MM_LOCAL_TILES) == []  # no tile divides 30 rows


def test_the_rules_refuse_what_is_not_a_matrix_product() -> None:
    from liftkit.dsl import add, fun, join, map, mult, reduce, transpose, zip  # noqa: A004
    from liftkit.dsl import size

    M, N, K = size("M"), size("N"), size("K")
    not_sum = fun([float32[K][M], float32[N][K]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(mult, 1.0) << map(add) << zip(rowA, colB)) << transpose << B) << A)
    own_row = fun([float32[K][M], float32[K][M]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(add, 0.0) << map(mult) << zip(rowA, colB)) << transpose << split_rows(rowA))
        << A)
    for prog in (not_sum, own_row):
        assert _choices(prog, MM_LOCAL_TILES) == [] and _choices(prog, MM_PRIVATE_BLOCKS) == []


def split_rows(row: Any) -> Any:
    """A K×1 matrix made of the row itself (B depends on the map's parameter)."""
    from liftkit.dsl import split

    return split(1) << row


def test_the_rewritten_programs_are_the_hand_written_kernels() -> None:
    """mm-local-tiles (64, 64, 16, 8, 8) gives mm_nvidia's kernel and mm-private-blocks (4, 4,
    8, 8) mm_amd's, character for character."""
    from liftkit.programs.vendor import mm_amd, mm_nvidia

    p = normal_form(PROGRAMS["mm"].program)
    for rule, params, ref in ((MM_LOCAL_TILES, {"tm": 64, "tn": 64, "tk": 16, "rm": 8, "rn": 8,
                                                "unroll": 1, "w": 4}, mm_nvidia()),
                              (MM_PRIVATE_BLOCKS, {"rm": 4, "rn": 4, "wx": 8, "wy": 8}, mm_amd())):
        c = [c for c in enumerate_choices(p, [rule]) if dict(c.params) == params]
        q = apply_choice(p, c[0], RULES)
        assert is_low_level(q)
        assert compile_program(q).source == compile_program(ref).source


def test_the_two_steps_give_the_one_step_kernel_and_nothing_else_is_lowered() -> None:
    """mm-tile-2d then mm-tiles-lower = mm-local-tiles (same generated source); the tiled
    program stays high-level and is lowered only as mm-tile-2d left it."""
    p = normal_form(PROGRAMS["mm"].program)
    tile = [c for c in enumerate_choices(p, [MM_TILE_2D]) if dict(c.params) == {"tm": 64, "tn": 128, "tk": 16}]
    t = apply_choice(p, tile[0], RULES)
    assert not is_low_level(t)
    lows = enumerate_choices(t, [MM_TILES_LOWER])
    assert {"rm": 8, "rn": 8, "w": 4, "unroll": 1} in [dict(c.params) for c in lows]
    two = apply_choice(t, [c for c in lows if dict(c.params) == {"rm": 8, "rn": 8, "w": 4, "unroll": 1}][0], RULES)
    one = [c for c in enumerate_choices(p, [MM_LOCAL_TILES]) if dict(c.params) == {
        "tm": 64, "tn": 128, "tk": 16, "rm": 8, "rn": 8, "unroll": 1, "w": 4}]
    assert compile_program(two).source == compile_program(apply_choice(p, one[0], RULES)).source
    # any other rewrite of the tiled program (here: split-join on an inner map) is not lowered
    for other in ("split-join", "map-fusion", "reduce-reduceSeq"):
        for c in enumerate_choices(t, [RULES[other]])[:3]:
            assert enumerate_choices(apply_choice(t, c, RULES), [MM_TILES_LOWER]) == [], c


def test_the_tiled_kernels_pass_the_search_filters() -> None:
    """The register blocks are toPrivate(mapLcl(1)(mapLcl(0)(…))) over the whole work-group:
    each work-item holds only its rm×rn block, so the private-memory filter counts that."""
    from liftkit.explore import filters as F
    from liftkit.explore.filters import DeviceLimits, FilterContext
    from liftkit.explore.macros import MACROS_BY_NAME

    p = normal_form(PROGRAMS["mm"].program)
    sizes = {"M": 4096, "N": 4096, "K": 4096}
    for params in ({"tm": 64, "tn": 64, "tk": 16, "rm": 8, "rn": 8},
                   {"tm": 128, "tn": 128, "tk": 16, "rm": 8, "rn": 8}):
        q = MACROS_BY_NAME["mm-tiles"].apply(p, (0,), rules=RULES, **params).program
        for gpu in (True, False):
            ctx = FilterContext(q, sizes, DeviceLimits(gpu, 1 << 16, 1024))
            assert F.first_rejection(ctx) is None
            blocks = [s for s in ctx.sites_of(P.ToPrivate) if isinstance(unwrap_eta(s.f.f), P.MapLcl)]
            bytes_ = F._bytes(ctx, blocks[0], "private")
            assert [F._shared_out(ctx, s, bytes_) for s in blocks] == [8 * 8 * 4]  # rm·rn floats


# ---------------------------------------------------------------------------------------------
# on the CPU device (PoCL or Intel's CPU runtime)

pyopencl = pytest.importorskip("pyopencl")
from liftkit.backends.opencl import OpenCLRunner, list_devices  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device")


@needs_cpu
@pytest.mark.parametrize("macro,params,sizes", [
    ("mm-tiles", {"tm": 32, "tn": 32, "tk": 16, "rm": 4, "rn": 4}, {"M": 64, "N": 64, "K": 64}),
    ("mm-tiles", {"tm": 64, "tn": 32, "tk": 16, "rm": 8, "rn": 4}, {"M": 128, "N": 96, "K": 48}),
    ("mm-tiles", {"tm": 32, "tn": 64, "tk": 16, "rm": 2, "rn": 8, "unroll": 0},
     {"M": 32, "N": 192, "K": 48}),
    ("mm-tiles", {"tm": 16, "tn": 16, "tk": 16, "rm": 1, "rn": 1, "w": 1}, {"M": 48, "N": 32, "K": 64}),
    ("mm-tiles", {"tm": 32, "tn": 32, "tk": 16, "rm": 4, "rn": 1, "w": 1}, {"M": 64, "N": 96, "K": 32}),
    ("mm-blocks", {"rm": 4, "rn": 4, "wx": 8, "wy": 8}, {"M": 64, "N": 64, "K": 64}),
    ("mm-blocks", {"rm": 2, "rn": 8, "wx": 4, "wy": 8}, {"M": 48, "N": 96, "K": 20}),
])
def test_the_macros_give_checked_kernels(macro: str, params: dict, sizes: dict, tmp_path: Path) -> None:
    from liftkit.backends.opencl.cache import KernelCache
    from liftkit.explore.macros import MACROS_BY_NAME

    spec = PROGRAMS["mm"]
    r = MACROS_BY_NAME[macro].apply(normal_form(spec.program), (0,), rules=RULES, **params)
    assert r, r
    low = r.program
    assert is_low_level(low) and [s.choice.rule for s in r.steps] == (
        ["mm-tile-2d", "mm-tiles-lower"] if macro == "mm-tiles" else ["mm-private-blocks"])
    assert ("toLocal" in show(low)) == (macro == "mm-tiles")
    inputs = spec.inputs(sizes, seed=5)
    got = OpenCLRunner("cpu", KernelCache(tmp_path)).run(compile_program(low), *inputs, sizes=sizes)
    want = spec.reference(*inputs)
    np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=1e-4, atol=1e-3)


@needs_cpu
def test_a_short_search_finds_a_tiled_matrix_product(tmp_path: Path) -> None:
    from liftkit.explore import TuningDB, explore
    from liftkit.explore.macros import rule_space
    from liftkit.explore.search import SearchSettings

    # the first step's macro choices are evaluated as they are (no random walks: a few seconds)
    result = explore("mm", {"M": 64, "N": 64, "K": 64}, "cpu", rules=rule_space("cpu"),
                     settings=SearchSettings(budget=4, walks=0, seed=0),
                     db=TuningDB(tmp_path / "t.sqlite"))
    assert result.best is not None, [r.label() for r in result.records]
    rules = {c.rule for c in result.best.derivation}
    assert rules & {"mm-tiles-lower", "mm-local-tiles", "mm-private-blocks"}, result.best.derivation
