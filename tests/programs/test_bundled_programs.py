"""Every bundled seed program type-checks and matches its independent NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.ir.typecheck import check_program, is_low_level
from liftkit.programs import PROGRAMS
from liftkit.semantics import interpret

SPECS = list(PROGRAMS)


def _close(out, ref, spec) -> None:
    if isinstance(ref, np.ndarray) and ref.dtype.names:
        for name in ref.dtype.names:
            np.testing.assert_allclose(out[name], ref[name], rtol=spec.rtol, atol=spec.atol)
    else:
        assert out.shape == np.shape(ref)
        np.testing.assert_allclose(out, ref, rtol=spec.rtol, atol=spec.atol)


def test_registry_has_the_seed_programs():
    names = set(PROGRAMS.names())
    assert {"scal", "asum", "dot", "gemv", "blackscholes", "md", "partial_dot", "transpose",
            "asum_nvidia", "asum_amd", "asum_intel", "vector_scal", "stencil3", "mm",
            "nbody"} <= names


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_type_checks(spec):
    check_program(spec.program)
    assert is_low_level(spec.program) == (spec.level == "low")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_matches_numpy_reference(spec, seed):
    inputs = spec.inputs(seed=seed)
    out = interpret(spec.program, *inputs)
    _close(out, spec.reference(*inputs), spec)


def test_larger_sizes_for_a_few():
    for name, sizes in [("asum", {"N": 100_000}), ("dot", {"N": 65536}), ("asum_nvidia", {"N": 524288}),
                        ("gemv", {"N": 256, "M": 512}), ("partial_dot", {"N": 1 << 14})]:
        spec = PROGRAMS[name]
        inputs = spec.inputs(sizes, seed=7)
        _close(interpret(spec.program, *inputs), spec.reference(*inputs), spec)
