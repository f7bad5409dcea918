"""nbody-local-tiles (rules/nbody_tiles.py): an all-pairs reduction tiled through local memory.

Sound in the interpreter (bit for bit: the fold over tiles keeps reduceSeq's order) on N-Body
and on a scalar all-pairs program whose two arrays differ in length, refused where the second
array depends on the element, and run as OpenCL on the CPU device."""

from __future__ import annotations

import numpy as np

from liftkit.dsl import add, float32, fun, join, map, mult, reduceSeq, size
from liftkit.explore.macros import NBODY_TILES as NBODY_MACRO
from liftkit.ir.printer import show
from liftkit.ir.typecheck import is_low_level
from liftkit.programs import PROGRAMS
from liftkit.rewrite.core import Choice, apply_choice, typed_sites
from liftkit.rewrite.rules import RULES_BY_NAME, SEARCH_RULES, normal_form
from liftkit.rewrite.rules.corpus import run, same_result
from liftkit.rewrite.rules.nbody_tiles import NBODY_TILES
N, M = size("N"), size("M")


def _tiled(program, wg):  # type: ignore[no-untyped-def]
    p = normal_form(program)
    sites = [s for s in typed_sites(p) if NBODY_TILES.choices(s)]
    assert len(sites) == 1
    assert {"wg": wg} in NBODY_TILES.choices(sites[0])
    return p, apply_choice(p, Choice(NBODY_TILES.name, sites[0].path, {"wg": wg}), RULES_BY_NAME)


def _pairs():  # type: ignore[no-untyped-def]
    """y_i = x_i + Σ_j x_i·q_j over a second array of another length."""
    return fun([float32[N], float32[M]], lambda xs, ys:
               join << map(lambda x: map(lambda a: add(a, x))
                           << reduceSeq(lambda acc, q: add(acc, mult(x, q)), 0.0) << ys) << xs)


def test_nbody_tiles_are_sound_in_the_interpreter() -> None:
    spec = PROGRAMS["nbody"]
    sizes = {"N": 256}
    inputs = spec.inputs(sizes, 1)
    for wg in (64, 128, 256):
        p, q = _tiled(spec.build(), wg)
        assert is_low_level(q) and "toLocal(mapLcl(0)" in show(q)
        assert same_result(run(q, inputs, sizes), run(p, inputs, sizes)), wg


def test_pairs_of_two_lengths_are_sound() -> None:
    sizes = {"N": 128, "M": 192}
    rng = np.random.default_rng(4)
    inputs = [rng.uniform(-1, 1, 128).astype(np.float32), rng.uniform(-1, 1, 192).astype(np.float32)]
    p, q = _tiled(_pairs(), 64)
    assert same_result(run(q, inputs, sizes), run(p, inputs, sizes))


def test_refused_where_the_second_array_depends_on_the_element() -> None:
    own = fun([float32[N], float32[M]], lambda xs, ys:
              join << map(lambda x: map(lambda a: add(a, x))
                          << reduceSeq(lambda acc, q: add(acc, q), 0.0)
                          << map(lambda y: mult(x, y)) << ys) << xs)
    assert not any(NBODY_TILES.choices(s) for s in typed_sites(normal_form(own)))


def test_tiled_nbody_runs_on_the_cpu_device_and_the_search_offers_it() -> None:
    from liftkit.backends.opencl import run_opencl
    from liftkit.explore.macros import rule_space

    spec = PROGRAMS["nbody"]
    sizes = {"N": 256}
    inputs = spec.inputs(sizes, 2)
    _, q = _tiled(spec.build(), 64)
    got = run_opencl(q, *inputs, device="cpu")
    want = spec.reference(*inputs)
    for k in ("f0", "f1"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4)
    assert NBODY_TILES in SEARCH_RULES
    space = rule_space("gpu")
    offered = {c.rule for c in space.choices(space.prepare(spec.build()))}
    assert {NBODY_MACRO.name, NBODY_TILES.name} <= offered
