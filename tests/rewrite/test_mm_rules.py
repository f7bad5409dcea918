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
from liftkit.rewrite.rules import ALL_RULES, MM_RULES, RULES_BY_NAME, SEARCH_RULES, normal_form
from liftkit.rewrite.rules.corpus import Case, run
from liftkit.rewrite.rules.mm import MM_LOCAL_TILES, MM_TILE_2D, MM_TILES_LOWER
from liftkit.rewrite.rules.mm_blocks import MM_PRIVATE_BLOCKS
from liftkit.rewrite.rules.mm_steps import (MM_TILES_BLOCKS, MM_TILES_PRIVATE, MM_TILES_STAGE_LOCAL,
                                            MM_TILES_UNROLL, MM_TILES_VECTORIZE, MM_TILES_WORK_ITEMS)
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


def staged_case(case: Case, vectorize: bool = True) -> Case:
    """A tiled case staged into local memory by mm-tiles-stage-local, half of them (with
    `vectorize`) then vectorised by mm-tiles-vectorize (what mm-tiles-blocks lowers)."""
    opts = enumerate_choices(case.program, [MM_TILES_STAGE_LOCAL])
    if not opts:
        return case
    rng = random.Random(case.seed)
    prog = apply_choice(case.program, rng.choice(opts), RULES)
    origin = case.origin + " + mm-tiles-stage-local"
    vec = enumerate_choices(prog, [MM_TILES_VECTORIZE]) if vectorize else []
    if vec and rng.random() < 0.5:  # half of them with vector copies
        prog = apply_choice(prog, rng.choice(vec), RULES)
        origin += " + mm-tiles-vectorize"
    return Case(prog, case.inputs, case.expected, case.seed, origin, case.sizes)  # type: ignore[arg-type]


def blocked_case(case: Case) -> Case:
    """A staged case whose work-items' blocks mm-tiles-work-items placed (what mm-tiles-private
    puts in registers)."""
    opts = enumerate_choices(case.program, [MM_TILES_WORK_ITEMS])
    if not opts:
        return case
    prog = apply_choice(case.program, opts[0], RULES)
    return Case(prog, case.inputs, case.expected, case.seed, case.origin + " + mm-tiles-work-items",
                case.sizes)  # type: ignore[arg-type]


def loop_kernel_case(case: Case) -> Case:
    """A tiled case lowered by mm-tiles-lower with its K steps a loop (unroll=0: the kernel
    mm-tiles-unroll unrolls)."""
    opts = [c for c in enumerate_choices(case.program, [MM_TILES_LOWER]) if c.params["unroll"] == 0]
    if not opts:
        return case
    prog = apply_choice(case.program, random.Random(case.seed).choice(opts), RULES)
    return Case(prog, case.inputs, case.expected, case.seed, case.origin + " + mm-tiles-lower unroll=0",
                case.sizes)  # type: ignore[arg-type]


def _walk_order(rule: Rule, rng: random.Random) -> list[Rule]:
    return rng.sample(WALKERS, 8)


RULES = dict(RULES_BY_NAME)
HARNESS = Soundness(RULES, lambda i: mm_case(SEED * 13 + i), lambda r: [], _walk_order, SEED,
                    per_step=3, walk=3, max_bases=200, patience=1)
HARNESS_TILED = Soundness(RULES, lambda i: tiled_case(SEED * 17 + i), lambda r: [], _walk_order,
                          SEED, per_step=3, walk=3, max_bases=200, patience=1)
HARNESS_STAGED = Soundness(RULES, lambda i: staged_case(tiled_case(SEED * 37 + i)), lambda r: [],
                           _walk_order, SEED, per_step=3, walk=3, max_bases=200, patience=1)
HARNESS_SCALAR_STAGED = Soundness(RULES, lambda i: staged_case(tiled_case(SEED * 43 + i), False),
                                  lambda r: [], _walk_order, SEED, per_step=3, walk=3, max_bases=200,
                                  patience=1)
HARNESS_BLOCKED = Soundness(RULES, lambda i: blocked_case(staged_case(tiled_case(SEED * 47 + i))),
                            lambda r: [], _walk_order, SEED, per_step=3, walk=3, max_bases=200,
                            patience=1)
HARNESS_LOOPS = Soundness(RULES, lambda i: loop_kernel_case(tiled_case(SEED * 29 + i)), lambda r: [],
                          _walk_order, SEED, per_step=3, walk=3, max_bases=200, patience=1)


# other element types: (type, product, layout); the product of complex types may conjugate a
# factor (liftkit.blas's C/R layouts), NT reads B's columns as stored rows (no transpose)
ELEMS = (("double", "mult", "NN"), ("cfloat", "mult", "NT"), ("cdouble", "multConj", "NN"),
         ("double", "mult", "NT"), ("cfloat", "multConj", "NT"), ("cdouble", "mult", "NN"))


def mm_program_of(t: Any, product: str, layout: str, m: Any, n: Any, k: Any) -> Any:
    """High-level mm over element type t with its `add` from 0 and the named product; NT: B
    given as N×K, its rows are the columns."""
    from liftkit.dsl import fun, join, lit, map, reduce, transpose, zip  # noqa: A004
    from liftkit.ir.userfuns import complex_funs, scalar_funs

    funs = complex_funs(t) if t.is_complex else scalar_funs(t)
    nt = layout == "NT"
    return fun([t[k][m], t[k][n] if nt else t[n][k]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(funs.add, lit(0.0, t)) << map(getattr(funs, product))
        << zip(rowA, colB)) << (B if nt else transpose << B)) << A)


def _ints(g: np.random.Generator, shape: tuple[int, int], t: Any) -> np.ndarray:
    x = g.integers(-3, 4, shape).astype(t.dtype)
    return (x + 1j * g.integers(-3, 4, shape)).astype(t.dtype) if t.is_complex else x


def elem_case(seed: int) -> Case:
    """MM over double, cfloat or cdouble (conjugating products, NT) at one of SIZES, constant
    or (every third) symbolic sizes; integer-valued inputs, so every order of the sum is exact."""
    from liftkit.dsl import size
    from liftkit.types import SCALARS

    rng = random.Random(seed)
    m, n, k = rng.choice(SIZES)
    name, product, layout = ELEMS[seed % len(ELEMS)]
    t = SCALARS[name]
    symbolic = seed % 3 == 0
    dims = (size("M"), size("N"), size("K")) if symbolic else (m, n, k)
    prog = normal_form(mm_program_of(t, product, layout, *dims))
    g = np.random.default_rng(seed)
    inputs = [_ints(g, (m, k), t), _ints(g, (n, k) if layout == "NT" else (k, n), t)]
    sizes = {"M": m, "N": n, "K": k} if symbolic else {}
    return Case(prog, inputs, run(prog, inputs, sizes), seed, f"mm {name} {product} {layout}",  # type: ignore[arg-type]
                sizes)


def elem_tiled_case(seed: int) -> Case:
    case = elem_case(seed)
    opts = enumerate_choices(case.program, [MM_TILE_2D])
    if not opts:
        return case
    prog = apply_choice(case.program, random.Random(seed).choice(opts), RULES)
    return Case(prog, case.inputs, case.expected, seed, case.origin + " + mm-tile-2d", case.sizes)  # type: ignore[arg-type]


ELEM_HARNESS = Soundness(RULES, lambda i: elem_case(SEED * 19 + i), lambda r: [], _walk_order,
                         SEED, per_step=3, walk=2, max_bases=200, patience=1)
ELEM_HARNESS_TILED = Soundness(RULES, lambda i: elem_tiled_case(SEED * 23 + i), lambda r: [],
                               _walk_order, SEED, per_step=3, walk=2, max_bases=200, patience=1)
ELEM_HARNESS_STAGED = Soundness(RULES, lambda i: staged_case(elem_tiled_case(SEED * 41 + i)),
                                lambda r: [], _walk_order, SEED, per_step=3, walk=2, max_bases=200,
                                patience=1)
# the double cases only (ELEMS 0 and 3: complex types have no vectors)
ELEM_HARNESS_SCALAR_STAGED = Soundness(RULES, lambda i: staged_case(elem_tiled_case(SEED * 282 + 3 * i), False),
                                       lambda r: [], _walk_order, SEED, per_step=3, walk=2,
                                       max_bases=200, patience=1)
ELEM_HARNESS_BLOCKED = Soundness(RULES, lambda i: blocked_case(staged_case(elem_tiled_case(SEED * 53 + i))),
                                 lambda r: [], _walk_order, SEED, per_step=3, walk=2, max_bases=200,
                                 patience=1)
ELEM_HARNESS_LOOPS = Soundness(RULES, lambda i: loop_kernel_case(elem_tiled_case(SEED * 31 + i)),
                               lambda r: [], _walk_order, SEED, per_step=3, walk=2, max_bases=200,
                               patience=1)
ELEM_TARGET = int(os.environ.get("LIFTKIT_MM_ELEM_APPS", "12"))


@pytest.mark.parametrize("rule", MM_RULES, ids=[r.name for r in MM_RULES])
def test_mm_rule_is_sound_for_double_and_complex(rule: Rule) -> None:
    """The rules over double, cfloat and cdouble, with conjugating products and NT layouts:
    every application checked in the interpreter (before == after, exactly)."""
    harness = {MM_TILES_LOWER: ELEM_HARNESS_TILED, MM_TILES_STAGE_LOCAL: ELEM_HARNESS_TILED,
               MM_TILES_BLOCKS: ELEM_HARNESS_STAGED, MM_TILES_VECTORIZE: ELEM_HARNESS_SCALAR_STAGED,
               MM_TILES_UNROLL: ELEM_HARNESS_LOOPS, MM_TILES_WORK_ITEMS: ELEM_HARNESS_STAGED,
               MM_TILES_PRIVATE: ELEM_HARNESS_BLOCKED}.get(rule, ELEM_HARNESS)
    try:
        stats = harness.exercise(rule, ELEM_TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    print(f"\n{rule.name}: {stats}")
    assert stats["applications"] >= ELEM_TARGET


def test_the_element_type_decides_the_vector_widths() -> None:
    """float: float4 or scalars; double: double2 or scalars; complex: scalars only, for any
    product (a conjugating one too); other products of reals, and sums that are not the type's
    add, are refused."""
    from liftkit.types import SCALARS

    for name, product, widths in (("double", "mult", {1, 2}), ("cfloat", "mult", {1}),
                                  ("cdouble", "multConj", {1})):
        t = SCALARS[name]
        for layout in ("NN", "NT"):
            prog = mm_program_of(t, product, layout, 64, 64, 32)
            tiles = _choices(prog, MM_LOCAL_TILES)
            assert tiles and {p["w"] for p in tiles} == widths, (name, layout)
            assert _choices(prog, MM_PRIVATE_BLOCKS) and _choices(prog, MM_TILE_2D)
    # a real "product" that is not mult (x - y) is no matrix product for the vector rules
    assert _choices(mm_program_of(SCALARS["double"], "sub", "NN", 64, 64, 32), MM_LOCAL_TILES) == []
    assert _choices(mm_program_of(SCALARS["int"], "mult", "NN", 64, 64, 32), MM_LOCAL_TILES) == []


@pytest.mark.parametrize("rule", MM_RULES, ids=[r.name for r in MM_RULES])
def test_mm_rule_is_sound(rule: Rule) -> None:
    harness = {MM_TILES_LOWER: HARNESS_TILED, MM_TILES_STAGE_LOCAL: HARNESS_TILED,
               MM_TILES_BLOCKS: HARNESS_STAGED, MM_TILES_VECTORIZE: HARNESS_SCALAR_STAGED,
               MM_TILES_UNROLL: HARNESS_LOOPS, MM_TILES_WORK_ITEMS: HARNESS_STAGED,
               MM_TILES_PRIVATE: HARNESS_BLOCKED}.get(rule, HARNESS)
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


def test_the_composites_unroll_by_the_unroll_rule() -> None:
    """mm-tiles-lower with unroll=1 = mm-tiles-lower with unroll=0, then mm-tiles-unroll (one
    site: the K steps of a tile; same generated source); the unrolled kernel offers it nowhere,
    and neither does a program before lowering."""
    p = normal_form(PROGRAMS["mm"].program)
    tile = [c for c in enumerate_choices(p, [MM_TILE_2D]) if dict(c.params) == {"tm": 64, "tn": 64, "tk": 16}]
    t = apply_choice(p, tile[0], RULES)
    assert enumerate_choices(p, [MM_TILES_UNROLL]) == enumerate_choices(t, [MM_TILES_UNROLL]) == []
    lows = {(c.params["w"], c.params["unroll"]): c for c in enumerate_choices(t, [MM_TILES_LOWER])
            if (c.params["rm"], c.params["rn"]) == (4, 4)}
    for w in (4, 1):
        loop = apply_choice(t, lows[w, 0], RULES)
        steps = enumerate_choices(loop, [MM_TILES_UNROLL])
        assert len(steps) == 1
        unrolled = apply_choice(loop, steps[0], RULES)
        assert show(unrolled).count("reduceSeqUnroll") == show(loop).count("reduceSeqUnroll") + 1
        assert enumerate_choices(unrolled, [MM_TILES_UNROLL]) == []
        one = apply_choice(t, lows[w, 1], RULES)
        assert compile_program(unrolled).source == compile_program(one).source


@pytest.mark.parametrize("elem,tile,block", [
    (("float", "mult", "NN"), (64, 64, 16), {"rm": 8, "rn": 8, "w": 4, "unroll": 1}),
    (("float", "mult", "NN"), (64, 128, 16), {"rm": 8, "rn": 4, "w": 4, "unroll": 0}),
    (("float", "mult", "NN"), (32, 32, 16), {"rm": 4, "rn": 1, "w": 1, "unroll": 1}),
    (("double", "mult", "NT"), (32, 32, 16), {"rm": 4, "rn": 4, "w": 2, "unroll": 1}),
    (("cdouble", "multConj", "NN"), (32, 32, 16), {"rm": 2, "rn": 2, "w": 1, "unroll": 1}),
])
def test_the_small_steps_give_the_composite_kernel(elem: tuple, tile: tuple, block: dict) -> None:
    """mm-tiles-stage-local (wx = tn/rn, wy = tm/rm), mm-tiles-vectorize (w > 1), mm-tiles-blocks
    (or mm-tiles-work-items then mm-tiles-private), then (unroll=1) mm-tiles-unroll, each at its
    one site, give mm-tiles-lower's kernel (same generated source);
    the staged program keeps its tile product high-level; mm-tiles-blocks lowers only the
    staged form as mm-tiles-stage-local left it."""
    from liftkit.dsl import size
    from liftkit.types import SCALARS

    tm, tn, tk = tile
    p = normal_form(mm_program_of(SCALARS[elem[0]], *elem[1:], size("M"), size("N"), size("K")))
    t = apply_choice(p, [c for c in enumerate_choices(p, [MM_TILE_2D])
                         if dict(c.params) == {"tm": tm, "tn": tn, "tk": tk}][0], RULES)
    stage = {"wx": tn // block["rn"], "wy": tm // block["rm"]}
    staged = apply_choice(t, [c for c in enumerate_choices(t, [MM_TILES_STAGE_LOCAL])
                              if dict(c.params) == stage][0], RULES)
    assert not is_low_level(staged) and "toLocal" in show(staged) and "asVector" not in show(staged)
    vec = enumerate_choices(staged, [MM_TILES_VECTORIZE])
    if elem[0] == "cdouble":  # no complex vectors
        assert vec == []
    if block["w"] > 1:
        assert [dict(c.params) for c in vec] == [{"w": block["w"]}]
        staged = apply_choice(staged, vec[0], RULES)
        assert "asVector" in show(staged) and enumerate_choices(staged, [MM_TILES_VECTORIZE]) == []
    assert enumerate_choices(t, [MM_TILES_BLOCKS]) == []
    for other in ("map-fusion", "reduce-reduceSeq"):
        for c in enumerate_choices(staged, [RULES[other]])[:2]:
            assert enumerate_choices(apply_choice(staged, c, RULES), [MM_TILES_BLOCKS]) == [], c
    blocks = enumerate_choices(staged, [MM_TILES_BLOCKS])
    assert len(blocks) == 1
    q = apply_choice(staged, blocks[0], RULES)
    assert is_low_level(q)
    # mm-tiles-blocks in two steps: the blocks in place (no register copies), then registers
    placed = enumerate_choices(staged, [MM_TILES_WORK_ITEMS])
    assert len(placed) == 1 and enumerate_choices(staged, [MM_TILES_PRIVATE]) == []
    in_place = apply_choice(staged, placed[0], RULES)
    assert "toPrivate" not in show(in_place) and "mapLcl" in show(in_place)
    assert enumerate_choices(in_place, [MM_TILES_BLOCKS, MM_TILES_WORK_ITEMS, MM_TILES_UNROLL]) == []
    assert enumerate_choices(q, [MM_TILES_PRIVATE]) == []
    for c in enumerate_choices(in_place, [RULES["map-fusion"]])[:2]:
        assert enumerate_choices(apply_choice(in_place, c, RULES), [MM_TILES_PRIVATE]) == [], c
    private = enumerate_choices(in_place, [MM_TILES_PRIVATE])
    assert len(private) == 1
    assert show(apply_choice(in_place, private[0], RULES)) == show(q)
    if block["unroll"]:
        q = apply_choice(q, enumerate_choices(q, [MM_TILES_UNROLL])[0], RULES)
    one = apply_choice(t, [c for c in enumerate_choices(t, [MM_TILES_LOWER]) if dict(c.params) == block][0], RULES)
    assert compile_program(q).source == compile_program(one).source


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
@pytest.mark.parametrize("name,product,layout,macro,params", [
    ("double", "mult", "NN", "mm-tiles", {"tm": 32, "tn": 32, "tk": 16, "rm": 4, "rn": 4, "w": 2}),
    ("double", "mult", "NT", "mm-blocks", {"rm": 4, "rn": 4, "wx": 8, "wy": 8}),
    ("cfloat", "mult", "NT", "mm-tiles", {"tm": 32, "tn": 32, "tk": 16, "rm": 2, "rn": 2, "w": 1}),
    ("cdouble", "multConj", "NN", "mm-tiles", {"tm": 16, "tn": 16, "tk": 16, "rm": 1, "rn": 1, "w": 1}),
    ("cdouble", "mult", "NN", "mm-blocks", {"rm": 2, "rn": 8, "wx": 4, "wy": 8}),
])
def test_the_macros_give_checked_kernels_for_double_and_complex(
        name: str, product: str, layout: str, macro: str, params: dict, tmp_path: Path) -> None:
    from liftkit.backends.opencl.cache import KernelCache
    from liftkit.dsl import size
    from liftkit.explore.macros import MACROS_BY_NAME
    from liftkit.types import SCALARS

    t = SCALARS[name]
    prog = normal_form(mm_program_of(t, product, layout, size("M"), size("N"), size("K")))
    r = MACROS_BY_NAME[macro].apply(prog, (0,), rules=RULES, **params)
    assert r, r
    assert is_low_level(r.program)
    sizes = {"M": 64, "N": 32, "K": 48}
    g = np.random.default_rng(3)
    a = g.standard_normal((64, 48)).astype(t.dtype)
    b = g.standard_normal((32, 48) if layout == "NT" else (48, 32)).astype(t.dtype)
    if t.is_complex:
        a = (a + 1j * g.standard_normal(a.shape)).astype(t.dtype)
        b = (b + 1j * g.standard_normal(b.shape)).astype(t.dtype)
    src = compile_program(r.program)
    if name == "double":  # double2 loads and register blocks
        assert "double2" in src.source
    got = OpenCLRunner("cpu", KernelCache(tmp_path)).run(src, a, b, sizes=sizes)
    want = (np.conjugate(a) if product == "multConj" else a) @ (b.T if layout == "NT" else b)
    tol = 1e-4 if t.dtype.itemsize == 4 or name == "cfloat" else 1e-10
    np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=tol, atol=tol * 10)


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
