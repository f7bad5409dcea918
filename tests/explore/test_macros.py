"""GPU/CPU macro rules: applied to the bundled high-level programs they give low-level programs
that compile, run on the CPU OpenCL device like the interpreter, and replay with plain rules."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.explore.macros import (
    CPU_ROWS, FUSE_PARTIAL, GLB_PRIVATE, GPU_REDUCTION, GPU_ROWS, GROUP_REDUCE, HELPERS_BY_NAME, MAP_GLB_VEC,
    TO_GROUPS_SEQ, TO_WORKGROUPS, VECTORIZE_FUSED)
from liftkit.explore.space import load_rule_space
from liftkit.programs import PROGRAMS
from liftkit.programs.blas import asum, dot
from liftkit.rewrite.strategies import at, rule, seq

CASES = {
    "asum-gpu": (asum, seq(rule(FUSE_PARTIAL, n=16), rule(TO_WORKGROUPS, L=8),
                           "reduce-reduceSeq")),
    "asum-gpu-contiguous": (asum, seq(rule(FUSE_PARTIAL, n=16),
                                      rule(TO_WORKGROUPS, L=8, coalesce=0), "reduce-reduceSeq")),
    "asum-gpu-vec4": (asum, seq(rule(VECTORIZE_FUSED, w=4), at((2, 1), rule(FUSE_PARTIAL, n=16)),
                                at((2, 1), rule(TO_WORKGROUPS, L=8)),
                                at((2, 1), "reduce-reduceSeq"), "reduce-reduceSeq")),
    "dot-gpu": (dot, seq(rule(FUSE_PARTIAL, n=16), rule(TO_WORKGROUPS, L=8), "reduce-reduceSeq")),
    "asum-cpu": (asum, seq(rule(FUSE_PARTIAL, n=64), rule(TO_GROUPS_SEQ), "reduce-reduceSeq")),
}


# the complete GPU derivations (one macro each), checked at sizes their splits allow
FULL = {
    "scal-vec4": ("scal", rule(MAP_GLB_VEC, w=4), {"N": 4096}),
    "asum-two-stage": ("asum", rule(GPU_REDUCTION, n=4, L=8, final=8), {"N": 4 * 4 * 8 * 8 * 3}),
    "asum-two-stage-scalar": ("asum", rule(GPU_REDUCTION, n=4, L=8, w=1, final=4),
                              {"N": 4 * 8 * 4 * 5}),
    "dot-two-stage": ("dot", rule(GPU_REDUCTION, n=8, L=16, final=8), {"N": 4 * 8 * 16 * 8 * 2}),
    "gemv-rows": ("gemv", rule(GPU_ROWS, L=16), {"N": 24, "M": 4 * 16 * 3}),
    "gemv-rows-scalar": ("gemv", rule(GPU_ROWS, L=8, w=1), {"N": 5, "M": 8 * 7}),
    "gemv-cpu-rows": ("gemv", rule(CPU_ROWS, w=8), {"N": 7, "M": 8 * 5}),
    "mriq-glb-private": ("mriq", at((1,), rule(GLB_PRIVATE)), {"X": 48, "K": 20}),
}


@pytest.mark.parametrize("name", sorted(FULL))
def test_full_gpu_derivation_matches_the_reference(name: str) -> None:
    """One macro takes the high-level program to an OpenCL-level one that runs like the
    program's NumPy reference, and the recorded plain-rule steps replay to the same program."""
    from liftkit.backends.opencl import run_opencl
    from liftkit.ir.printer import show
    from liftkit.ir.typecheck import is_low_level

    prog, strategy, sizes = FULL[name]
    spec = PROGRAMS[prog]
    d = strategy.derive(spec.program, (0,), rules=HELPERS_BY_NAME)
    assert is_low_level(d.final)
    assert show(d.replay()[-1]) == show(d.final)  # each step re-applied and its text compared
    inputs = spec.inputs(sizes, 3)
    got = run_opencl(d.final, *inputs, device="cpu")
    np.testing.assert_allclose(np.ravel(got), np.ravel(spec.reference(*inputs)), rtol=1e-4, atol=1e-4)


def test_group_reduce_reads_columns_and_refuses_other_sizes() -> None:
    """The one-group stage reads column l (elements l, l+L, ...) per thread; L must be a power
    of two for the tree, and a length L does not divide is refused at run time in words."""
    from liftkit.backends.opencl import OpenCLError, run_opencl
    from liftkit.ir.printer import show

    d = rule(GROUP_REDUCE, L=8).derive(asum(), (0,), rules=HELPERS_BY_NAME)
    assert "transpose ∘ split 8" in show(d.final)
    assert not rule(GROUP_REDUCE, L=6).apply(asum(), (0,), rules=HELPERS_BY_NAME)
    low = rule("reduce-reduceSeq").apply(d.final, (0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 0, 0),
                                         rules=HELPERS_BY_NAME)
    x = np.arange(-20, 20, dtype=np.float32)
    prog = low.program if low else d.final
    if not low:  # the column reductions are already sequential
        assert np.allclose(run_opencl(prog, x, device="cpu"), np.abs(x).sum())
    with pytest.raises(OpenCLError, match="divisible by 8"):
        run_opencl(prog, np.ones(44, np.float32), device="cpu")


@pytest.mark.parametrize("name", sorted(CASES))
def test_macro_derivation_compiles_runs_and_replays(name: str) -> None:
    from liftkit.backends.opencl import run_opencl
    from liftkit.codegen import compile_program
    from liftkit.semantics.interpreter import interpret

    make, strategy = CASES[name]
    d = strategy.derive(make(), (0,), rules=HELPERS_BY_NAME)
    assert len(d.steps) > 3  # recorded rule by rule
    replayed = d.replay()  # each step re-applied with the plain (and helper) rules
    low = d.final
    compile_program(low)
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, 2048).astype(np.float32) for _ in low.params]
    got = np.ravel(run_opencl(low, *xs, device="cpu"))
    want = np.ravel(interpret(make(), *xs))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert replayed is not None


def test_gpu_and_cpu_rule_spaces_hold_the_macros() -> None:
    gpu, cpu = load_rule_space("gpu"), load_rule_space("cpu")
    assert {"fuse-partial", "to-workgroups", "vectorize-fused", "gpu-reduction", "gpu-rows",
            "group-reduce", "map-glb-vec"} <= gpu.macro_names
    assert {"fuse-partial", "to-groups-seq", "cpu-rows", "glb-private"} <= cpu.macro_names
    assert load_rule_space("default").macro_names.isdisjoint({"to-workgroups"})



@pytest.mark.parametrize("name,width", [("float", "float4"), ("double", "double2"),
                                        ("cfloat", None)])
def test_every_gpu_mm_tiles_parameter_set_applies_to_each_element_type(name: str,
                                                                      width: str | None) -> None:
    """The GPU parameter sets of mm-tiles name no vector width: mm-tiles-lower takes the widest
    the element type allows (a fixed w=4 made every set fail on a double product)."""
    from liftkit.codegen import compile_program
    from liftkit.dsl import fun, join, lit, map, reduce, size, transpose, zip  # noqa: A004
    from liftkit.explore.macros import GPU_PARAMS, MACROS_BY_NAME
    from liftkit.ir.userfuns import complex_funs, scalar_funs
    from liftkit.rewrite.rules import RULES_BY_NAME, normal_form
    from liftkit.types import SCALARS

    t = SCALARS[name]
    fs = complex_funs(t) if t.is_complex else scalar_funs(t)
    m, n, k = size("M"), size("N"), size("K")
    prog = normal_form(fun([t[k][m], t[n][k]], lambda A, B: map(lambda row: join << map(
        lambda col: reduce(fs.add, lit(0.0, t)) << map(fs.mult) << zip(row, col))
        << transpose << B) << A))
    for params in GPU_PARAMS["mm-tiles"]:
        r = MACROS_BY_NAME["mm-tiles"].apply(prog, (0,), rules=dict(RULES_BY_NAME), **params)
        assert r, (params, r)
        lowered = [s.choice for s in r.steps if s.choice.rule == "mm-tiles-lower"]
        assert len(lowered) == 1 and lowered[0].params["w"] == (4 if name == "float" else
                                                                2 if name == "double" else 1)
    if width is not None:
        assert width in compile_program(r.program).source
