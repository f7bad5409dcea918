"""Stencils and the CGO convolution from their high-level programs (issue 10 item 3): the
layout-only maps (map(pad), map(slide), map(transpose)) stay views through lowering, the
local-memory tilings (rules/stencil.py) compile and compute the reference's result on the CPU
device, inexact tilings are filtered at the real sizes, and the search finds valid kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import OpenCLRunner, list_devices  # noqa: E402
from liftkit.codegen import compile_program  # noqa: E402
from liftkit.explore import DeviceLimits, FilterContext, TuningDB, explore  # noqa: E402
from liftkit.explore import filters as F  # noqa: E402
from liftkit.ir import patterns as P  # noqa: E402
from liftkit.ir.nodes import walk  # noqa: E402
from liftkit.ir.printer import show  # noqa: E402
from liftkit.ir.typecheck import is_low_level, layout_only  # noqa: E402
from liftkit.programs import PROGRAMS  # noqa: E402
from liftkit.rewrite import apply_choice, enumerate_choices  # noqa: E402
from liftkit.rewrite.rules import RULES_BY_NAME, SEARCH_RULES, normal_form  # noqa: E402
from liftkit.rewrite.rules.stencil import STENCIL_RULES  # noqa: E402
from liftkit.rewrite.strategies import choice, repeat, topdown  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device (PoCL)")
LOWERING = ("map-mapGlb", "map-mapSeq", "map-mapWrg", "map-mapLcl")


def test_layout_only_maps_are_not_lowered() -> None:
    p = normal_form(PROGRAMS["convolution"].program)
    layout = [n for n in walk(p) if isinstance(n, P.Map) and layout_only(n.f)]
    assert len(layout) >= 4  # map(pad) twice, map(slide), map(transpose)
    for c in enumerate_choices(p, [RULES_BY_NAME[n] for n in LOWERING]):
        from liftkit.rewrite.core import get

        assert not layout_only(get(p, c.path).f.f), c


def test_the_stencil_rules_give_the_hand_written_shapes() -> None:
    conv = normal_form(PROGRAMS["convolution"].program)
    c = [c for c in enumerate_choices(conv, STENCIL_RULES) if dict(c.params) == {"r": 4, "c": 32}]
    text = show(apply_choice(conv, c[0], RULES_BY_NAME))
    # the bundled conv2d's structure: 4×32 outputs per work-group from a 6×34 tile in local memory
    assert ("join ∘ map(map(join) ∘ transpose) ∘ mapWrg(1)(mapWrg(0)(toGlobal(mapLcl(1)(join ∘ "
            "mapLcl(0)(") in text
    assert ("map(transpose) ∘ slide 3 1 ∘ map(slide 3 1) ∘ toLocal(mapLcl(1)(mapLcl(0)(id))))) ∘ "
            "map(transpose) ∘ slide 6 4 ∘ map(slide 34 32) ∘ transpose ∘ map(pad 1 1 clamp)") in text
    st = normal_form(PROGRAMS["stencil3"].program)
    c = [c for c in enumerate_choices(st, STENCIL_RULES) if dict(c.params) == {"u": 130, "v": 128}]
    assert show(apply_choice(st, c[0], RULES_BY_NAME)) == (
        "λ(x: [float]_N). (join ∘ join ∘ mapWrg(0)(toGlobal(mapLcl(0)(reduce(add, 0.0f))) ∘ "
        "slide 3 1 ∘ toLocal(mapLcl(0)(id))) ∘ slide 130 128 ∘ pad 1 1 clamp)(x)")


def test_inexact_tilings_are_filtered_at_the_real_sizes() -> None:
    conv = normal_form(PROGRAMS["convolution"].program)
    c = [c for c in enumerate_choices(conv, STENCIL_RULES) if dict(c.params) == {"r": 4, "c": 32}]
    tiled = apply_choice(conv, c[0], RULES_BY_NAME)
    dev = DeviceLimits(False, 1 << 16, 1024)
    assert F.sizes_not_divisible(FilterContext(tiled, {"M": 64, "N": 64}, dev)) is None
    why = F.sizes_not_divisible(FilterContext(tiled, {"M": 30, "N": 64}, dev))
    assert why == "tiles of slide 6 4 do not cover M + 2 = 32 exactly"


def _lower_rest(program: object) -> object:
    """reduce → reduceSeq and the remaining computing maps → mapSeq (a plain strategy)."""
    s = repeat(topdown(choice("reduce-reduceSeq", "map-mapSeq")))
    r = s.apply(program)
    assert r, r
    return r.program


@needs_cpu
@pytest.mark.parametrize("name,sizes,params", [
    ("convolution", {"M": 32, "N": 64}, {"r": 4, "c": 32}),
    ("convolution", {"M": 48, "N": 48}, {"r": 8, "c": 16}),
    ("stencil3", {"N": 1024}, {"u": 130, "v": 128}),
])
def test_tiled_stencils_compile_and_match_the_reference(name: str, sizes: dict, params: dict,
                                                        tmp_path: Path) -> None:
    from liftkit.backends.opencl.cache import KernelCache

    spec = PROGRAMS[name]
    p = normal_form(spec.program)
    c = [c for c in enumerate_choices(p, STENCIL_RULES) if dict(c.params) == params]
    low = _lower_rest(apply_choice(p, c[0], RULES_BY_NAME))
    assert is_low_level(low) and "toLocal" in show(low)
    assert not any(isinstance(n, (P.MapGlb, P.MapSeq)) and layout_only(n.f) for n in walk(low))
    inputs = spec.inputs(sizes, seed=3)
    got = OpenCLRunner("cpu", KernelCache(tmp_path)).run(compile_program(low), *inputs, sizes=sizes)
    np.testing.assert_allclose(np.ravel(got), np.ravel(spec.reference(*inputs)), rtol=1e-4, atol=1e-4)


@needs_cpu
def test_the_convolution_is_explored_from_its_high_level_program(tmp_path: Path) -> None:
    result = explore("convolution", {"M": 64, "N": 64}, "cpu", budget=5,
                     db=TuningDB(tmp_path / "t.sqlite"))
    assert result.best is not None, [r.label() for r in result.records]
    assert sum(r.ok for r in result.records) >= 4, [r.label() for r in result.records]


def test_the_search_rules_include_the_stencil_tilings() -> None:
    names = {r.name for r in SEARCH_RULES}
    assert {"stencil-local-1d", "stencil-local-2d"} <= names
