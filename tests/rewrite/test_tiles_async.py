"""The rule `tiles-async` and the macro `mm-tiles-async` (rewrite/rules/cuda.py): a reduceSeq
over tiles whose function starts by copying the tile pair into local memory gets those copies
as `toLocalAsync s` (cp.async, s deep); soundness in the interpreter (bit for bit on
integer-valued inputs, float and double, float4 and scalar tiles), the CUDA C the code generator
makes of it (one barrier per tile, 16-byte copies; NVRTC compiles it without a GPU), OpenCL's
refusal in the pattern's words, and (gpu marker) the kernel against NumPy on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.views import CodegenError
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, MM_TILES_ASYNC, TILES_ASYNC, sgemm_derivation
from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
from liftkit.rewrite.rules.mm_blocks import MM_PRIVATE_BLOCKS
from liftkit.rewrite.strategies import rule, topdown
from liftkit.semantics import interpret
from liftkit.types import float32, float64

CUDA = CompileOptions(dialect="cuda")
RULES = {**CUDA_RULES_BY_NAME, MM_LOCAL_TILES.name: MM_LOCAL_TILES, MM_TILES_ASYNC.name: MM_TILES_ASYNC}


def _mm(T, m: int = 0, n: int = 0, k: int = 0):  # type: ignore[no-untyped-def]
    """A·B, at constant sizes or (0) the symbolic M, N, K the bundled program has."""
    m_, n_, k_ = (m or D.size("M")), (n or D.size("N")), (k or D.size("K"))
    add_, mult_ = (D.add, D.mult) if T == float32 else (D.DOUBLE.add, D.DOUBLE.mult)
    return D.fun([T[k_][m_], T[n_][k_]], lambda A, B: D.map(lambda rowA: D.join << D.map(
        lambda colB: D.reduce(add_, D.lit(0.0, T)) << D.map(mult_) << D.zip(rowA, colB))
        << D.transpose << B) << A)


def _ints(shape: tuple[int, int], T, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(T.dtype)


def _tiled(T, tiles):  # type: ignore[no-untyped-def]
    tm, tn, tk, rm, rn, w = tiles
    return topdown(rule(MM_LOCAL_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=w)).derive(
        _mm(T), rules=RULES).final


# (element type, M, N, K, (tm, tn, tk, rm, rn, w)): float4 and scalar tiles, double2
CASES = [(float32, 64, 96, 48, (32, 32, 16, 4, 4, 4)), (float32, 32, 32, 32, (16, 16, 16, 1, 1, 1)),
         (float32, 64, 32, 32, (32, 32, 16, 2, 2, 1)), (float64, 32, 64, 32, (32, 32, 16, 4, 4, 2))]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-w{c[4][5]}" for c in CASES])
def test_tiles_async_is_sound(case) -> None:  # type: ignore[no-untyped-def]
    """Every offered depth, at the one tile loop it applies to, computes the same as the tiled
    program and as A·B (bit for bit: integer-valued inputs)."""
    T, m, n, k, tiles = case
    low = normal_form(_tiled(T, tiles))
    offers = enumerate_choices(low, [TILES_ASYNC])
    assert sorted(c.params["stages"] for c in offers) == [2, 3, 4]
    assert len({c.path for c in offers}) == 1
    for seed, c in enumerate(offers):
        A, B = _ints((m, k), T, seed), _ints((k, n), T, seed + 10)
        new = topdown(rule(TILES_ASYNC, stages=c.params["stages"])).derive(low, rules=RULES).final
        assert sum(isinstance(x, P.ToLocalAsync) for x in walk(new.body)) == 2
        np.testing.assert_array_equal(interpret(new, A, B), interpret(low, A, B))
        np.testing.assert_array_equal(interpret(new, A, B), A @ B)


def test_tiles_async_keeps_off_what_it_must_not_touch() -> None:
    """Not on a product without local tiles (register blocks only), not twice, not on the
    high-level program."""
    blocks = topdown(rule(MM_PRIVATE_BLOCKS)).derive(_mm(float32, 64, 64, 64), rules={
        MM_PRIVATE_BLOCKS.name: MM_PRIVATE_BLOCKS}).final
    assert not enumerate_choices(normal_form(blocks), [TILES_ASYNC])
    assert not enumerate_choices(normal_form(_mm(float32, 64, 64, 64)), [TILES_ASYNC])
    once = topdown(rule(TILES_ASYNC, stages=2)).derive(
        _tiled(float32, (32, 32, 16, 4, 4, 4)), rules=RULES).final
    assert not enumerate_choices(normal_form(once), [TILES_ASYNC])


def test_the_macro_is_the_two_rules_and_replays() -> None:
    d = sgemm_derivation(4096, 4096, 4096, 64, 128, 16, 8, 8, 2)
    assert [(s.choice.rule, s.macro) for s in d.steps] == [("mm-local-tiles", "mm-tiles-async"),
                                                           ("tiles-async", "mm-tiles-async")]
    assert d.steps[1].choice.params == {"stages": 2}
    small = topdown(rule(MM_TILES_ASYNC, tm=32, tn=32, tk=16, rm=4, rn=4, stages=3)).derive(
        normal_form(_mm(float32)), rules=RULES).final
    A, B = _ints((64, 32), float32, 1), _ints((32, 96), float32, 2)
    np.testing.assert_array_equal(interpret(small, A, B), A @ B)
    with pytest.raises(ValueError, match="must divide the sizes"):
        sgemm_derivation(4096, 4096, 4100, 64, 128, 16, 8, 8, 2)


@pytest.mark.parametrize("stages", [2, 3])
def test_the_pipelined_tile_loop_in_cuda(stages: int, compile_cuda: Any) -> None:
    """Tiles 0..s-2 issued before the loop; in it wait_group s-2, the one barrier, the next
    copies (16 bytes each, around L1), one commit; s buffers per operand; NVRTC compiles it."""
    d = sgemm_derivation(4096, 4096, 4096, 64, 128, 16, 8, 8, stages)
    src = compile_program(d.final, CUDA).source
    head = src.index("for (int i = 0; i < K/16;")
    loop, before = src[head:], src[:head]
    assert before.count("cp.async.commit_group") == stages - 1
    body = loop[:loop.rindex("cp.async.wait_group 0;")]
    assert body.count("__syncthreads();") == 1 and body.count("cp.async.commit_group") == 1
    assert body.index(f"cp.async.wait_group {stages - 2};") < body.index("__syncthreads();") \
        < body.index(f"if (i + {stages - 1} < K/16)") < body.index("madS4")
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in body
    assert f"float stage[{64 * 16 * stages}];" in src and f"float stage_2[{128 * 16 * stages}];" in src

    ptx = compile_cuda(src, "compute_90a", name="sgemm.cu").ptx
    assert "cp.async.cg.shared.global" in ptx and "fma.rn.f32" in ptx


# cuBLAS's own shape (256×128 tiles, 16×8 blocks, K steps of 8, 3 deep), 4×16 blocks, and a
# pipeline deeper than CUDA's 48 KB of static shared memory (72 KB: dynamic)
WIDE = [(256, 128, 8, 16, 8, 3), (64, 128, 32, 4, 16, 2), (64, 128, 32, 8, 8, 3)]


@pytest.mark.parametrize("tiles", WIDE, ids=["x".join(map(str, t)) for t in WIDE])
def test_wide_blocks_and_deep_tiles_replay_soundly(tiles: tuple[int, ...],
                                                    compile_cuda: Any) -> None:
    """The Hopper tilings beyond the first ones: from the bundled `mm` (symbolic sizes), equal
    to A·B in the interpreter (bit for bit) and compiled by NVRTC; local memory beyond 48 KB is
    carved from dynamic shared memory."""
    tm, tn, tk, rm, rn, stages = tiles
    d = sgemm_derivation(tm, tn, 3 * tk, *tiles)
    A, B = _ints((tm, 3 * tk), float32, 5), _ints((3 * tk, tn), float32, 6)
    np.testing.assert_array_equal(interpret(d.final, A, B), A @ B)
    k = compile_program(d.final, CUDA).kernels[0]
    local = (tm + tn) * tk * 4 * stages
    assert k.dynamic_shared == (local if local > 48 * 1024 else 0)
    assert ("extern __shared__" in k.source) == (local > 48 * 1024)

    assert "fma.rn.f32" in compile_cuda(k.source, "compute_90a", name="sgemm.cu").ptx


# rotated A rows (rot=1): float4 rows of 8 and 4 vectors (one and two rows per 128-byte line),
# cuBLAS's 16×8 blocks, and double2 tiles
ROT = [(float32, (64, 64, 32, 8, 8, 4)), (float32, (64, 64, 16, 8, 8, 4)),
       (float32, (128, 128, 16, 16, 8, 4)), (float64, (64, 64, 16, 8, 8, 2))]


@pytest.mark.parametrize("case", ROT, ids=[f"{c[0]}-{c[1][0]}x{c[1][1]}x{c[1][2]}" for c in ROT])
def test_rotated_a_rows_are_sound_and_offered_last(case) -> None:  # type: ignore[no-untyped-def]
    """mm-local-tiles rot=1 (A's tile rows rotated in local memory against bank conflicts) and
    then every tiles-async depth compute A·B (bit for bit); the rotated sets come after all the
    others, so a choice naming no `rot` keeps the unrotated kernel."""
    T, (tm, tn, tk, rm, rn, w) = case
    offers = [c.params for c in enumerate_choices(normal_form(_mm(T)), [MM_LOCAL_TILES])]
    first = next(i for i, o in enumerate(offers) if o.get("rot"))
    assert all(o.get("rot") for o in offers[first:]) and first > 0
    d = topdown(rule(MM_LOCAL_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=w, rot=1)
                ).derive(_mm(T), rules=RULES).final
    A, B = _ints((tm, 2 * tk), T, 7), _ints((2 * tk, tn), T, 8)
    np.testing.assert_array_equal(interpret(d, A, B), A @ B)
    for s in (2, 3):
        new = topdown(rule(TILES_ASYNC, stages=s)).derive(d, rules=RULES).final
        np.testing.assert_array_equal(interpret(new, A, B), A @ B)


def test_rotated_rows_spread_a_warps_reads_over_the_banks() -> None:
    """The layout itself: rows of 8 or 4 float4 (128 or 64 bytes), the 4 rows a warp of the
    128×64 tiles reads at once (consecutive rows) at one vector index land in 4 different
    16-byte bank groups (without the rotation: 4-way conflicts at 128-byte rows), and the copy
    and the reads are inverse gathers."""
    from liftkit.arith import cst
    from liftkit.rewrite.rules.mm import rotated_rows

    for c in (8, 4):
        to_pos, to_chunk = rotated_rows(c, 16)
        n = cst(64 * c)
        pos = [to_chunk.f(cst(i), n).value for i in range(64 * c)]  # vector i → its slot
        assert sorted(pos) == list(range(64 * c))
        assert all(to_pos.f(cst(p), n).value == i for i, p in enumerate(pos))
        for j in range(c):
            for r0 in range(0, 64, 4):
                banks = {(pos[r * c + j] * 16 // 16) % 8 for r in range(r0, r0 + 4)}
                assert len(banks) == 4, (c, j, r0, banks)


def test_opencl_refuses_the_pipeline_in_words() -> None:
    d = sgemm_derivation(4096, 4096, 4096, 64, 128, 16, 8, 8, 2)
    with pytest.raises(CodegenError, match=r"^toLocalAsync needs the CUDA backend \(cp.async\)"):
        compile_program(d.final)


@pytest.mark.gpu
def test_the_pipelined_product_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles in [(64, 128, 16, 8, 8, 2), (64, 64, 16, 8, 8, 3), (64, 64, 32, 8, 8, 2), *WIDE,
                  (128, 64, 32, 8, 8, 2, 1), (128, 64, 16, 8, 8, 3, 1)]:  # rotated A rows
        d = sgemm_derivation(256, 384, 512, *tiles)
        A, B = _ints((256, 512), float32, 3), _ints((512, 384), float32, 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)


def test_the_bundled_sgemm_derivations_replay_and_stay_off_opencl() -> None:
    """`run mm --tuned` on the H100's CUDA backend finds the cp.async derivations at the four
    shapes of issue 12, the tail split where it won (mm-split-tail; their steps replay to their
    stored program); an OpenCL device never
    takes a derivation with a CUDA-only pattern (it finds mm-local-tiles' at 4096 instead)."""
    from liftkit.explore import bundled
    from liftkit.explore.space import load_rule_space
    from liftkit.ir.printer import show
    from liftkit.programs.apps import mm

    from types import SimpleNamespace

    cuda = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"
    opencl = SimpleNamespace(fingerprint="NVIDIA CUDA|NVIDIA H100 80GB HBM3|580.159.04", is_gpu=True)
    shapes = {(4096, 4096, 4096): True, (8192, 8192, 8192): True, (8192, 8192, 1024): False,
              (1024, 1024, 8192): True}  # the shape: its tail split
    for (m, n, k), split in shapes.items():
        hit = bundled.find(mm(), {"M": m, "N": n, "K": k}, cuda)
        assert hit is not None and hit.same_device and bundled.cuda_only(hit.derivation)
        d = hit.derivation
        assert [c.rule for c in d.steps] == ["mm-local-tiles", "tiles-async"] + ["mm-split-tail"] * split
        low = bundled.low_level_program(d, mm())
        assert show(load_rule_space(d.rules).replay(mm(), d.steps)) == show(low)
        assert "cp.async.cg" in compile_program(low, CUDA).source
        other = bundled.find(mm(), {"M": m, "N": n, "K": k}, opencl)
        assert other is None or not bundled.cuda_only(other.derivation)
    hit = bundled.find(mm(), {"M": 4096, "N": 4096, "K": 4096}, opencl)
    assert hit is not None and "toLocalAsync" not in hit.derivation.low_level
    compile_program(bundled.low_level_program(hit.derivation, mm()))  # OpenCL C


def test_vectors_across_a_transposed_operand_are_refused_in_words() -> None:
    """A stored transposed (K×M) and tiled with double2 vectors: each vector of A's tile is
    built from two elements a row of A apart, which one cp.async (a contiguous 16-byte source)
    cannot copy: the code generator refuses it in the copy's words instead of printing
    `&double2(At[…], At[… + M])`, which NVRTC rejects; B's vectors (contiguous) are not the
    reason, and the same tiles of the untransposed product still compile."""
    m_, n_, k_ = D.size("M"), D.size("N"), D.size("K")
    tn = D.fun([float64[m_][k_], float64[n_][k_]], lambda At, B: D.map(lambda rowA: D.join << D.map(
        lambda colB: D.reduce(D.DOUBLE.add, D.lit(0.0, float64)) << D.map(D.DOUBLE.mult)
        << D.zip(rowA, colB)) << D.transpose << B) << D.transpose << At)
    tiles = dict(tm=32, tn=32, tk=16, rm=4, rn=4, unroll=1, w=2)
    for p, ok in ((tn, False), (_mm(float64), True)):
        tiled = normal_form(topdown(rule(MM_LOCAL_TILES, **tiles)).derive(p, rules=RULES).final)
        staged = topdown(rule(TILES_ASYNC, stages=2)).derive(tiled, rules=RULES).final
        if ok:
            assert "cp.async.cg.shared.global [%0], [%1], 16;" in compile_program(staged, CUDA).source
            continue
        with pytest.raises(CodegenError) as e:
            compile_program(staged, CUDA)
        assert str(e.value).startswith("toLocalAsync: cp.async copies one contiguous, aligned 4-, "
                                       "8- or 16-byte piece of global memory, but each copied "
                                       "double2 is built from 2 separate elements that are not "
                                       "adjacent in memory")
        assert "\n" not in str(e.value)
        A, B = _ints((32, 16), float64, 3), _ints((16, 32), float64, 4)  # the program is sound
        np.testing.assert_array_equal(interpret(staged, A.T.copy(), B), A @ B)
