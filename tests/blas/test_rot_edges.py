"""Guarded float4 tiles with A's rows rotated or swizzled in local memory (results/issue15/odd26):
mm-local-tiles' `rot` over padded views (float4 vectors) and over tiles copied element by element
(`elems`: rotated_rows' gathers over the vectors' lanes); mm-edge-tiles offers rot 1 and 2 for
float4 tiles. Sound bit for bit in the interpreter off every tile; the CUDA source reads A's rows
at the swizzled places (NVRTC, no spills); `edge-tiles` with rot in OpenCL on the CPU device at
random shapes against NumPy; (gpu marker) entries at 1023×1025×999 and 511×127×253 against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.semantics import interpret

from .test_odd_sgemm import check_entry_at_odd_shapes, check_forced_sgemm

KIND = Kind("mm", "float32", "NN")


def _ints(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.integers(-8, 9, shape).astype(np.float32)


@pytest.mark.parametrize("rot", [1, 2])
@pytest.mark.parametrize("elems", [1, 0])
@pytest.mark.parametrize("tiles", [(32, 32, 16, 4, 4), (64, 32, 16, 8, 4)],
                         ids=lambda t: "x".join(map(str, t)))
def test_rotated_guarded_tiles_are_sound_off_every_tile(tiles: tuple, elems: int, rot: int) -> None:
    """M, N, K off the tiles (elems: N, K odd; float4: multiples of 4 only), K over two tile
    steps: the kernel equals A·B exactly on integer-valued operands."""
    tm, tn, tk, rm, rn = tiles
    v = Variant.of("edge-tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=2, rot=rot,
                   **({"elems": 1} if elems else {}))
    assert multiples(KIND, v) == ({} if elems else {"N": 4, "K": 4})
    rng = np.random.default_rng(tm + rot + elems)
    m, n, k = tm + 3, tn + (5 if elems else 4), tk + (7 if elems else 8)
    A, B = _ints(rng, (m, k)), _ints(rng, (k, n))
    np.testing.assert_array_equal(np.asarray(interpret(derive(KIND, v).final, A, B)), A @ B)


def _cuda(v: Variant) -> Any:
    from liftkit.codegen import CompileOptions, compile_program

    return compile_program(derive(KIND, v).final, CompileOptions(dialect="cuda")).kernels[0]


@pytest.mark.parametrize("tk,rot", [(16, 2), (16, 1), (32, 2)])
def test_rotated_element_copies_compile_without_spills(compile_cuda: Any, tk: int, rot: int
                                                       ) -> None:
    """256×32 8×8 with 4-byte copies (the H100's SGEMM 1023×1025×999 tiling): the copies'
    sources and the float4 reads of A at the rotated places (rot=2: one xor per read); NVRTC
    for sm_90a without spills."""
    base = dict(tm=256, tn=32, tk=tk, rm=8, rn=8, stages=2, elems=1)
    plain, k = _cuda(Variant.of("edge-tiles-async", **base)), _cuda(
        Variant.of("edge-tiles-async", **base, rot=rot))
    assert "cp.async.ca.shared.global [%0], [%1], 4, %2;" in k.source
    mark = "^" if rot == 2 else ") % 4"  # (s xor j), or (s + j) mod 4, at K vector j > 0

    def moved(src: str) -> int:
        return sum(mark in ln for ln in src.splitlines() if "((float4*)stage)[" in ln)

    assert moved(k.source) >= 3 * 8 and moved(plain.source) == 0  # 8 rows × 3 K vectors at least
    log = str(compile_cuda(k.source, "sm_90a", [*k.build_options, "--ptxas-options=-v"],
                           name="sgemm_rot.cu").log)
    assert "registers" in log and "0 bytes spill stores" in log, log


@pytest.mark.parametrize("seed", range(2))
def test_rotated_guarded_tiles_on_the_cpu_device(session: Any, seed: int) -> None:
    """`edge-tiles` 128×32×16 with A's rows swizzled, in OpenCL on the CPU device at random
    shapes 1…300 against NumPy (element copies where 4 divides neither N nor K)."""
    rng = np.random.default_rng(100 + seed)
    m, n, k = (int(x) for x in rng.integers(1, 301, 3))
    if seed == 1:  # float4 vectors: N and K multiples of 4
        n, k = 4 * max(1, n // 4), 4 * max(1, k // 4)
    v = Variant.of("edge-tiles", tm=128, tn=32, tk=16, rm=8, rn=4, rot=2 - seed, **(
        {} if n % 4 == 0 and k % 4 == 0 else {"elems": 1}))
    check_forced_sgemm(session, v, rng, m, n, k)


@pytest.mark.gpu
@pytest.mark.parametrize("rot", [1, 2])
def test_rotated_guarded_tiles_on_a_cuda_gpu(cuda_session: Any, rot: int) -> None:
    """Entries of 256×32×16 8×8 with 4-byte copies, split in 3, A's rows rotated, at
    1023×1025×999 and 511×127×253 (`gemm.profiled_edge` runs them there), CuPy operands,
    NaN-poisoned C, against NumPy, twice (the repeated call's plan)."""
    v = Variant.of("edge-tiles-async", tm=256, tn=32, tk=16, rm=8, rn=8, stages=2, elems=1,
                   rot=rot, split=3, slots=396, bound=3)
    check_entry_at_odd_shapes(cuda_session, v, rot)
