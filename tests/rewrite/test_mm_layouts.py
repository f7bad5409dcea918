"""mm-local-tiles kt=1 (rules/mm_layouts.py): NT's Bᵀ and TN's Aᵀ tiled as stored, so the tile
copies move contiguous vectors and cp.async (tiles-async) takes them. Soundness in the
interpreter (bit for bit on integer-valued inputs: the same products in the same order), the
offers (after all the others, never for NN), the CUDA C of the pipelined form (16-byte copies
only, compiled by NVRTC without a GPU), the OpenCL form on the CPU device, and liftkit.blas's
tiles-async codelet for NT/TN."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.blas import programs as bp
from liftkit.blas.codelets import CodeletError, Kind, Variant, derive, multiples
from liftkit.codegen import CompileOptions, compile_program
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, MM_TILES_ASYNC
from liftkit.rewrite.rules.mm import FLOAT32, MM_LOCAL_TILES, Elem, local_tiles
from liftkit.rewrite.strategies import rule, topdown
from liftkit.semantics import interpret
from liftkit.types import float32, float64
from liftkit.ir.userfuns import scalar_funs

CUDA = CompileOptions(dialect="cuda")
RULES = {**CUDA_RULES_BY_NAME, MM_LOCAL_TILES.name: MM_LOCAL_TILES, MM_TILES_ASYNC.name: MM_TILES_ASYNC}


def _operands(layout: str, m: int, n: int, k: int, dtype: type, seed: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, X, Y): the product's A (m×k) and B (k×n) with integer values, and the operands as
    the layout stores them (Aᵀ for TN, Bᵀ for NT)."""
    rng = np.random.default_rng(seed)
    A = rng.integers(-8, 9, (m, k)).astype(dtype)
    B = rng.integers(-8, 9, (k, n)).astype(dtype)
    return A, B, (A.T.copy() if layout[0] == "T" else A), (B.T.copy() if layout[1] == "T" else B)


# (layout, element type, (tm, tn, tk, rm, rn, w), rot, private)
DIRECT = [("NT", float32, (32, 32, 16, 4, 4, 4), 0, True), ("TN", float32, (32, 32, 16, 4, 4, 4), 0, True),
          ("NT", float32, (32, 32, 16, 4, 4, 4), 1, True), ("TN", float32, (64, 32, 16, 8, 4, 4), 0, False),
          ("NT", float64, (32, 32, 16, 4, 4, 2), 0, False), ("TN", float64, (32, 32, 16, 4, 4, 2), 0, True)]


@pytest.mark.parametrize("case", DIRECT, ids=[f"{c[0]}-{c[1]}-rot{c[3]}-p{int(c[4])}" for c in DIRECT])
def test_transposed_tiles_are_sound(case) -> None:  # type: ignore[no-untyped-def]
    """local_tiles kt=1 over the stored operands (register blocks in registers or in place,
    rotated rows) equals A·B bit for bit."""
    layout, T, (tm, tn, tk, rm, rn, w), rot, private = case
    m, n, k = 2 * tm, 3 * tn, 3 * tk
    ta, tb = layout[0] == "T", layout[1] == "T"
    e = FLOAT32 if T == float32 else Elem(T, scalar_funs(T).mult)
    prog = D.fun([T[m][k] if ta else T[k][m], T[k][n] if tb else T[n][k]], lambda X, Y: local_tiles(
        D.transpose << X if ta else X, D.transpose << Y if tb else Y, tm, tn, tk, rm, rn, 0, w, e,
        private=private, rot=rot, kt=1))
    A, B, X, Y = _operands(layout, m, n, k, T.dtype, 3)
    np.testing.assert_array_equal(np.asarray(interpret(prog, X, Y)), A @ B)


def test_kt_is_offered_after_the_others_and_only_for_transposed_operands() -> None:
    for layout in ("NT", "TN"):
        offers = [c.params for c in enumerate_choices(normal_form(bp.mm("float32", layout)),
                                                      [MM_LOCAL_TILES])]
        first = next(i for i, o in enumerate(offers) if o.get("kt"))
        assert first > 0 and all(o.get("kt") for o in offers[first:])
        assert all(o["w"] > 1 for o in offers[first:])
        # rot rotates NT's Bᵀ (TN's Aᵀ is K-outer: none for TN)
        assert any(o.get("rot") for o in offers[first:]) == (layout == "NT")
    nn = enumerate_choices(normal_form(bp.mm("float32", "NN")), [MM_LOCAL_TILES])
    assert nn and not any(c.params.get("kt") for c in nn)
    with pytest.raises(ValueError, match="kt=1 tiles a transposed operand"):
        D.fun([float32[64][64], float32[64][64]],
              lambda A, B: local_tiles(A, B, 32, 32, 16, 4, 4, kt=1))


@pytest.mark.parametrize("layout", ["NT", "TN"])
def test_the_pipelined_transposed_tiles_in_cuda(layout: str, compile_cuda: Any) -> None:
    """mm-tiles-async kt=1 from blas's NT/TN program: sound, every tile copy a 16-byte cp.async
    (no element-wise gathers), 2 stages of both tiles; NT's scalar stores, TN's float4 ones;
    NVRTC compiles it."""
    tm, tn, tk, rm, rn, s = 128, 64, 32, 8, 8, 2
    d = topdown(rule(MM_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=s, kt=1)).derive(
        bp.mm("float32", layout), rules=RULES)
    A, B, X, Y = _operands(layout, 2 * tm, 2 * tn, 3 * tk, np.float32, 4)
    np.testing.assert_array_equal(np.asarray(interpret(d.final, X, Y)), A @ B)
    src = compile_program(d.final, CUDA).kernels[0].source
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in src
    assert not re.search(r"cp\.async\.ca\.shared\.global \[%0\], \[%1\], [48];", src)
    assert src.count(f"float stage[{tm * tk * s}];") + src.count(f"float stage_2[{tn * tk * s}];") == 2
    assert ("out[" in src and "] = vec.s0;" in src) == (layout == "NT")

    ptx = compile_cuda(src, "compute_90a", name="sgemm.cu").ptx
    assert ptx.count("fma.rn.f32") == rm * rn * tk and "cp.async.cg.shared.global" in ptx
    assert ("st.global.v4" in ptx) == (layout == "TN")


@pytest.mark.parametrize("layout", ["NT", "TN"])
def test_blas_runs_nt_and_tn_on_tiles_async(layout: str) -> None:
    """The tiles-async codelet derives NT and TN (kt=1 implied by the layout), the split tail
    too; the multiples are the tiles'."""
    k = Kind("mm", "float32", layout)
    v = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2, split=3, slots=396,
                   bound=3)
    d = derive(k, v)
    assert [s.choice.params.get("kt") for s in d.steps if s.choice.rule == "mm-local-tiles"] == [1]
    assert multiples(k, v) == {"M": 64, "N": 64, "K": 16}
    A, B, X, Y = _operands(layout, 128, 64, 48, np.float32, 5)
    np.testing.assert_array_equal(np.asarray(interpret(d.final, X, Y)), A @ B)
    # the guarded form is NN's only: NT/TN off the tiles pad (its copies of vectors across
    # the transposed view's rows are refused by the code generator)
    with pytest.raises(CodeletError, match="derives the layouts NN only, not " + layout):
        multiples(k, Variant.of("edge-tiles-async", **{p: v.kw[p] for p in
                                                       ("tm", "tn", "tk", "rm", "rn", "stages")}))


def test_untuned_cuda_runs_tn_on_its_own_derivation() -> None:
    from liftkit.blas.codelets import default_variant

    big = {"M": 1024, "N": 1024, "K": 1024}
    tn = default_variant(Kind("mm", "float32", "TN"), "gpu", big, "cuda")
    assert tn == Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    assert default_variant(Kind("mm", "float32", "NT"), "gpu", big, "cuda") == Variant.of("nn")


pyopencl = pytest.importorskip("pyopencl")
from liftkit.backends.opencl import OpenCLRunner, list_devices  # noqa: E402


@pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()), reason="no OpenCL CPU device")
@pytest.mark.parametrize("layout,rot", [("NT", 1), ("TN", 0)])
def test_the_opencl_form_on_the_cpu_device(layout: str, rot: int, tmp_path: Path) -> None:
    from liftkit.backends.opencl.cache import KernelCache

    extra = {"rot": 1} if rot else {}
    low = topdown(rule(MM_LOCAL_TILES, tm=64, tn=32, tk=16, rm=8, rn=4, unroll=1, w=4, kt=1,
                       **extra)).derive(bp.mm("float32", layout), rules=RULES).final
    A, B, X, Y = _operands(layout, 128, 96, 48, np.float32, 6)
    sizes = {"M": 128, "N": 96, "K": 48}
    got = OpenCLRunner("cpu", KernelCache(tmp_path)).run(compile_program(low), X, Y, sizes=sizes)
    np.testing.assert_array_equal(np.asarray(got).reshape(128, 96), A @ B)
