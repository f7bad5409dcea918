"""GPU/CPU macro rules: applied to the bundled high-level programs they give low-level programs
that compile, run on the CPU OpenCL device like the interpreter, and replay with plain rules."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.explore.macros import (
    FUSE_PARTIAL, HELPERS_BY_NAME, TO_GROUPS_SEQ, TO_WORKGROUPS, VECTORIZE_FUSED)
from liftkit.explore.space import load_rule_space
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
    assert {"fuse-partial", "to-workgroups", "vectorize-fused"} <= gpu.macro_names
    assert {"fuse-partial", "to-groups-seq"} <= cpu.macro_names
    assert load_rule_space("default").macro_names.isdisjoint({"to-workgroups"})
