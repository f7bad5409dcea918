"""The seed 000 Table 1 benchmark programs (K-Means, NN, MRI-Q, ATAX, GESUMMV, BlackScholes):
high-level programs in the interpreter and low-level ones compiled on the CPU device match the
independent NumPy references; the NumPy/CuPy-style references (`XP_REFERENCES`) match too; bad
sizes are refused with the size rule in the message."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.backends.opencl import OpenCLError, run_opencl
from liftkit.ir.typecheck import check_program, is_low_level
from liftkit.programs import PROGRAMS, clblast, parboil, rodinia
from liftkit.semantics import interpret

PAIRS = {"kmeans": "kmeans_low", "nn": "nn_low", "mriq": "mriq_low", "atax": "atax_low",
         "gesummv": "gesummv_low", "blackscholes": "blackscholes_low"}
XP = rodinia.XP_REFERENCES | parboil.XP_REFERENCES | clblast.XP_REFERENCES

# larger sizes that satisfy every size rule (N multiple of 512 and M of 64 for atax_low)
LARGER = {"kmeans": {"P": 5000, "F": 34, "C": 7}, "nn": {"N": 100_003},
          "mriq": {"X": 3000, "K": 500}, "atax": {"M": 192, "N": 1024},
          "gesummv": {"M": 100, "N": 1536}, "blackscholes": {"N": 100_000}}


def _close(out, ref, spec) -> None:
    if isinstance(ref, np.ndarray) and ref.dtype.names:
        for name in ref.dtype.names:
            np.testing.assert_allclose(out[name], ref[name], rtol=spec.rtol, atol=spec.atol)
    else:
        assert np.shape(out) == np.shape(ref)
        assert np.asarray(out).dtype == np.asarray(ref).dtype
        np.testing.assert_allclose(out, ref, rtol=spec.rtol, atol=spec.atol)


def test_registered_with_levels_and_rules():
    for high, low in PAIRS.items():
        assert PROGRAMS[high].level == "high" and PROGRAMS[low].level == "low"
        assert PROGRAMS[low].size_rule
        check_program(PROGRAMS[low].program)
        assert is_low_level(PROGRAMS[low].program) and not is_low_level(PROGRAMS[high].program)
    assert set(XP) == set(PAIRS) - {"blackscholes"}


def test_module_docstrings_give_the_paper_sizes():
    assert "0.2M" in rodinia.__doc__ and "34M" in rodinia.__doc__
    assert "262K" in parboil.__doc__ and "8K²" in clblast.__doc__


@pytest.mark.parametrize("name", sorted(PAIRS) + sorted(PAIRS.values()))
def test_interpreter_matches_reference_at_larger_sizes(name):
    spec = PROGRAMS[name]
    inputs = spec.inputs(LARGER[name.removesuffix("_low")], seed=3)
    _close(interpret(spec.program, *inputs), spec.reference(*inputs), spec)


@pytest.mark.parametrize("name", sorted(PAIRS.values()))
@pytest.mark.parametrize("which", ["default", "larger"])
def test_compiled_on_cpu_matches_interpreter_and_reference(name, which):
    spec = PROGRAMS[name]
    sizes = LARGER[name.removesuffix("_low")] if which == "larger" else None
    inputs = spec.inputs(sizes, seed=5)
    out = run_opencl(spec.program, *inputs, device="cpu")
    _close(out, spec.reference(*inputs), spec)
    _close(out, interpret(spec.program, *inputs), spec)


@pytest.mark.parametrize("name", sorted(XP))
@pytest.mark.parametrize("seed", [0, 1])
def test_xp_reference_with_numpy_matches_spec_reference(name, seed):
    spec = PROGRAMS[name]
    inputs = spec.inputs(seed=seed)
    out = XP[name](np, *inputs)
    assert isinstance(out, np.ndarray)
    _close(out, spec.reference(*inputs), spec)


def test_kmeans_takes_the_first_cluster_on_ties():
    spec = PROGRAMS["kmeans_low"]
    features = np.zeros((2, 3), np.float32)  # 3 points at the origin
    clusters = np.array([[1, 0], [0, 1], [-1, 0]], np.float32)  # all at distance 1
    assert list(run_opencl(spec.program, features, clusters, device="cpu")) == [0, 0, 0]
    assert list(interpret(PROGRAMS["kmeans"].program, features, clusters)) == [0, 0, 0]
    assert list(spec.reference(features, clusters)) == [0, 0, 0]


@pytest.mark.parametrize("name, sizes", [("atax_low", {"M": 64, "N": 500}),
                                         ("atax_low", {"M": 60, "N": 512}),
                                         ("gesummv_low", {"M": 4, "N": 384})])
def test_bad_sizes_are_refused_with_a_clear_message(name, sizes):
    spec = PROGRAMS[name]
    with pytest.raises(OpenCLError, match="multiple of"):
        run_opencl(spec.program, *spec.inputs(sizes), device="cpu")


def test_mriq_returns_qr_qi_pairs():
    spec = PROGRAMS["mriq_low"]
    x, y, z, k = spec.inputs({"X": 8, "K": 4})
    out = run_opencl(spec.program, x, y, z, k, device="cpu")
    assert out.shape == (8, 2)
    arg = 2 * np.pi * (x[0] * k[:, 0] + y[0] * k[:, 1] + z[0] * k[:, 2]).astype(np.float64)
    np.testing.assert_allclose(out[0], [(k[:, 3] * np.cos(arg)).sum(), (k[:, 3] * np.sin(arg)).sum()],
                               rtol=1e-4, atol=1e-4)
