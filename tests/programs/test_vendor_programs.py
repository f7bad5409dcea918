"""The vendor-style Table 1 programs (vendor.py) and the high-level convolution: compiled on the
CPU device against the NumPy reference for several tunings, the generated code has the shape the
GPU needs (register blocks as scalars, unrolled inner loops, local tiles), and the array-library
references agree with the specs' references."""

from __future__ import annotations

import re

import numpy as np
import pytest

from liftkit.backends.opencl import list_devices, run_opencl
from liftkit.codegen import compile_program
from liftkit.ir.typecheck import check_program, is_low_level
from liftkit.programs import PROGRAMS, vendor
from liftkit.semantics import interpret

NAMES = ["nbody_nvidia", "mm_amd", "mm_nvidia", "convolution", "conv2d"]
needs_cpu = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                               reason="no OpenCL CPU device")


def _close(out, ref, rtol: float, atol: float) -> None:
    if isinstance(ref, np.ndarray) and ref.dtype.names:
        for name in ref.dtype.names:
            np.testing.assert_allclose(out[name], ref[name], rtol=rtol, atol=atol)
    else:
        assert np.shape(out) == np.shape(ref)
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


def test_registered_with_the_expected_levels():
    for name in NAMES:
        spec = PROGRAMS[name]
        check_program(spec.program)
        assert is_low_level(spec.program) == (name != "convolution")


def test_high_level_convolution_matches_conv2d_reference_and_inputs():
    conv, low = PROGRAMS["convolution"], PROGRAMS["conv2d"]
    assert conv.reference is low.reference and conv.make_inputs is low.make_inputs
    inputs = conv.inputs({"M": 20, "N": 36}, seed=3)
    _close(interpret(conv.program, *inputs), conv.reference(*inputs), conv.rtol, conv.atol)


@pytest.mark.parametrize("seed", [0, 1])
def test_xp_convolution_with_numpy(seed):
    spec = PROGRAMS["convolution"]
    img, w = spec.inputs({"M": 24, "N": 40}, seed=seed)
    out = vendor.XP_REFERENCES["convolution"](np, img, w)
    np.testing.assert_allclose(out, spec.reference(img, w), rtol=1e-5, atol=1e-5)


TUNINGS = [
    ("mm_amd", {}, {"M": 256, "K": 12, "N": 128}),
    ("mm_amd", {"rb": (4, 8), "wg": (8, 4)}, {"M": 32, "K": 8, "N": 128}),
    ("mm_amd", {"rb": (2, 4), "wg": (2, 2)}, {"M": 12, "K": 20, "N": 24}),
    ("mm_nvidia", {}, {"M": 128, "K": 48, "N": 64}),
    ("mm_nvidia", {"ts": (64, 128), "tk": 16, "rb": (8, 8)}, {"M": 64, "K": 32, "N": 256}),
    ("mm_nvidia", {"ts": (32, 64), "tk": 8, "rb": (4, 8)}, {"M": 64, "K": 16, "N": 128}),
    ("mm_nvidia", {"ts": (8, 16), "tk": 4, "rb": (2, 8)}, {"M": 16, "K": 8, "N": 32}),
    ("mm_nvidia", {"prefetch": True}, {"M": 128, "K": 48, "N": 64}),
    ("mm_nvidia", {"prefetch": True}, {"M": 64, "K": 16, "N": 64}),  # one tile: no loop step
    ("mm_nvidia", {"ts": (128, 64), "rb": (8, 4), "prefetch": True}, {"M": 128, "K": 64, "N": 128}),
    ("mm_nvidia", {"ts": (32, 64), "tk": 8, "rb": (4, 8), "unroll": False, "prefetch": True},
     {"M": 64, "K": 24, "N": 128}),
    ("nbody_nvidia", {}, {"N": 768}),
    ("nbody_nvidia", {"wg": 32}, {"N": 96}),
]


@needs_cpu
@pytest.mark.parametrize("name,params,sizes", TUNINGS, ids=lambda v: str(v))
def test_tunings_compile_and_match_the_reference(name, params, sizes):
    spec = PROGRAMS[name]
    program = getattr(vendor, name)(**params)
    inputs = spec.inputs(sizes, seed=5)
    _close(run_opencl(program, *inputs, device="cpu"), spec.reference(*inputs), spec.rtol, spec.atol)


def test_inconsistent_tunings_are_refused():
    with pytest.raises(ValueError):
        vendor.mm_nvidia(ts=(64, 64), rb=(8, 6))
    with pytest.raises(ValueError):
        vendor.mm_amd(rb=(4, 6))


def _kernel(name: str) -> str:
    return compile_program(PROGRAMS[name].program).kernels[0].source


def test_register_blocks_are_scalars_and_loops_unrolled():
    for name in ("mm_amd", "mm_nvidia"):
        src = _kernel(name)
        assert not re.search(r"float4 \w+\[", src), "a private array was not scalarised"
        assert "(const global float4*)" in src  # aligned 16-byte loads
    nv = _kernel("mm_nvidia")
    # 2 work-group loops and the K tiles; the tk/4 = 4 float4 steps of a tile are unrolled:
    # 16 float4 accumulators × 4 k per step × 4 steps (+ the definition)
    assert "local float" in nv and nv.count("for (") == 3
    assert nv.count("madS4(") == 16 * 4 * 4 + 1
    amd = _kernel("mm_amd")
    assert amd.count("madS4(") == 4 * 4 + 1  # 4×4 block: 4 float4 × 4 k per step
    assert "local float" not in amd and "barrier" not in amd and amd.count("for (") == 3


def test_nbody_nvidia_stages_positions_in_local_memory():
    src = _kernel("nbody_nvidia")
    assert "local float" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    assert "calcAcc(acc, v," in src  # the own position is a private register


def test_conv2d_unrolls_the_window():
    src = _kernel("conv2d")
    assert src.count("multAndSumUp(acc") == 9 and "local float" in src
