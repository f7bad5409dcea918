"""ProgramSpecs (program + input maker + NumPy reference) with one broken part each
(tests/cli/test_bad_inputs.py)."""

import numpy as np

from liftkit.dsl import *
from liftkit.programs.registry import ProgramSpec

N = size("N")


def _neg():
    return fun([float32[N]], lambda x: map(neg) << x)


def _inputs(sizes, rng):
    return [rng.standard_normal(sizes["N"]).astype(np.float32)]


def _spec(**kw):
    base = dict(name="neg", summary="negation", source="tests", build=_neg, make_inputs=_inputs,
                reference=lambda x: -x, sizes={"N": 64})
    return ProgramSpec(**(base | kw))


build_fails = _spec(build=lambda: 1 // 0)
build_not_lambda = _spec(build=lambda: "map(neg)")
inputs_fail = _spec(make_inputs=lambda sizes, rng: rng.no_such_method(sizes["N"]))
inputs_float64 = _spec(make_inputs=lambda sizes, rng: [rng.standard_normal(sizes["N"])])
inputs_too_few = _spec(make_inputs=lambda sizes, rng: [])
reference_fails = _spec(reference=lambda x: np.linalg.inv(x))
