"""reduceWgmmaTmaTF32Z (ir/patterns/cuda.py, codegen/cuda_wgmma_tma.py) and the rule mm-wgmma-tma:
meaning against the high-level product of truncated operands, type errors in words, printing;
the grouped launch order (`group`: the same product, blocks started g row tiles at a time), sound
in the interpreter; the kernel's tensor maps, mbarrier pipeline and fragment addresses; NVRTC's
sm_90a build of every offered tiling and group without spills or serialised wgmma (no GPU); the
host's tensor-map encoding and argument packing against a stubbed driver; refusals; with a GPU
(`gpu` marker) every offered tiling and group bit for bit on integer-valued inputs over several
k-tiles, pipeline wraps and groups of row tiles."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.cuda_wgmma_tma import b_column, b_fragment_offset, plan_error
from liftkit.codegen.kernel import TensorMap
from liftkit.codegen.views import CodegenError
from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.ir.nodes import Lambda, Param
from liftkit.ir.parser import parse_program
from liftkit.ir.patterns.cuda import trunc_tf32
from liftkit.ir.printer import show
from liftkit.rewrite.rules.cuda import tensor_core_mm
from liftkit.rewrite.rules.cuda_tma import WGMMA_TMA_GROUPS, WGMMA_TMA_STAGES, WGMMA_TMA_TILES
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError

from .wgmma_by_hand import by_hand

CUDA = CompileOptions(dialect="cuda")
M, N, K = size("M"), size("N"), size("K")
OFFERED = [(tm, tn, tk, w, s) for tm, tn, tk, w in WGMMA_TMA_TILES for s in WGMMA_TMA_STAGES
           if plan_error(tm, tn, tk, w, s) is None]
# with a grouped launch order: every tiling with each group offered
OFFERED_GROUPED = [(t, g) for t in OFFERED for g in WGMMA_TMA_GROUPS if g]
OFFERED_PAIRS = [(tm, tn, tk, w, s) for tm, tn, tk, w in WGMMA_TMA_TILES for s in WGMMA_TMA_STAGES
                 if plan_error(tm, tn, tk, w, s, pair=True) is None]


def low(tm: int = 128, tn: int = 256, tk: int = 32, warps: int = 8, stages: int = 4,
        copy: str = "tma", group: Any = 0) -> Any:
    grp = {"group": group} if copy == "tma" else {}
    return tensor_core_mm("tf32z", tm, tn, tk, warps, stages, wgmma=True, copy=copy, **grp).final


def test_means_the_product_of_the_truncated_operands() -> None:
    rng = np.random.default_rng(5)
    p = low()
    A, B = rng.integers(-8, 9, (256, 96)).astype(np.float32), rng.integers(-8, 9, (96, 512)).astype(np.float32)
    np.testing.assert_array_equal(interpret(p, A, B), A @ B)
    A, B = rng.standard_normal((128, 64)).astype(np.float32), rng.standard_normal((64, 256)).astype(np.float32)
    want = trunc_tf32(A).astype(np.float64) @ trunc_tf32(B).astype(np.float64)
    np.testing.assert_allclose(interpret(p, A, B), want, rtol=1e-5, atol=1e-4)
    assert "reduceWgmmaTmaTF32Z 8 4" in show(p)
    assert show(parse_program(show(p))) == show(p)


def test_grouped_launch_order_is_the_same_product() -> None:
    """group g: the grid is (g row tiles, column tiles, groups), row tiles fastest; the product
    is the same element for element, for constant and symbolic sizes."""
    rng = np.random.default_rng(7)
    A, B = rng.integers(-8, 9, (1024, 96)).astype(np.float32), rng.integers(-8, 9, (96, 512)).astype(np.float32)
    for g in (x for x in WGMMA_TMA_GROUPS if x and 1024 // 128 % x == 0):
        p = low(128, 256, 32, 8, 4, group=g)
        assert "mapWrg(2)(λgrp." in show(p) and f"split {g} ∘" in show(p)
        assert show(parse_program(show(p))) == show(p)
        np.testing.assert_array_equal(interpret(p, A, B), A @ B)
        (k,) = compile_program(p, CUDA).kernels
        assert [str(x) for x in k.ndrange.global_size] == [str(384 * g), "N/256", f"M/{128 * g}"]
        assert k.whole_grid and "blockIdx.z" in k.source
    with pytest.raises(ValueError, match="copy='tma' only"):
        tensor_core_mm("tf32z", 128, 256, 32, 8, 4, wgmma=True, copy="tma-pair", group=8)


def test_mm_wgmma_tma_with_groups_is_sound() -> None:
    """The rule's offers, grouped ones included, in the soundness harness over products whose
    row tiles admit every group (integer-valued inputs: exact)."""
    from liftkit.rewrite.rules import RULES_BY_NAME, normal_form
    from liftkit.rewrite.rules.corpus import Case, run
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

    shapes = [(2048, 256, 64), (4096, 128, 32), (1024, 512, 96)]
    made: dict[int, Case] = {}

    def case(i: int) -> Case:
        if i not in made:
            m, n, k = shapes[i % len(shapes)]
            symbolic = (i // len(shapes)) % 2 == 1
            mm = fun([float32[K][M], float32[N][K]] if symbolic else [float32[k][m], float32[n][k]],
                     lambda A, B: map(lambda rowA: join << map(lambda colB: reduce(add, 0.0) << map(mult)
                                      << zip(rowA, colB)) << transpose << map(map(truncTF32)) << B)
                     << map(map(truncTF32)) << A)
            prog = normal_form(mm)
            r = np.random.default_rng(300 + i)
            xs = [r.integers(-8, 9, (m, k)).astype(np.float32), r.integers(-8, 9, (k, n)).astype(np.float32)]
            sizes = {"M": m, "N": n, "K": k} if symbolic else {}
            made[i] = Case(prog, xs, run(prog, xs, sizes), 300 + i, f"mm-wgmma-tma groups {i}", sizes)
        return made[i]

    harness = Soundness({**RULES_BY_NAME, **CUDA_RULES_BY_NAME}, case, lambda r: [], lambda r, rng: [],
                        300, per_step=4, walk=1, max_bases=60, patience=1)
    try:
        stats = harness.exercise(CUDA_RULES_BY_NAME["mm-wgmma-tma"], 16)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= 16


def test_type_errors_and_rule_limits_in_words() -> None:
    from liftkit.ir.typecheck import check_program as check

    with pytest.raises(LiftTypeError, match="from 2 to 8"):
        check(by_hand(reduceWgmmaTmaTF32Z, 128, 256, 32, 8, 9))
    with pytest.raises(LiftTypeError, match="multiple of 4"):
        check(by_hand(reduceWgmmaTmaTF32Z, 128, 256, 32, 6, 4))
    with pytest.raises(LiftTypeError, match="one or two 64-row blocks"):
        check(by_hand(reduceWgmmaTmaTF32Z, 128, 512, 32, 8, 4))
    with pytest.raises(ValueError, match="'tma' or 'tma-pair' \\(tf32z"):
        tensor_core_mm("tf32", 128, 256, 32, 8, 4, wgmma=True, copy="tma")
    assert plan_error(256, 256, 32, 8, 4) is not None  # 256 accumulators per lane
    assert plan_error(128, 256, 32, 8, 5) is not None  # more than 227 KB of stages


def test_the_rules_offer_only_checked_tilings_of_truncating_programs() -> None:
    from liftkit.rewrite import enumerate_choices
    from liftkit.rewrite.rules import normal_form
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, CUDA_SEARCH_RULES

    tma, pair = CUDA_RULES_BY_NAME["mm-wgmma-tma"], CUDA_RULES_BY_NAME["mm-wgmma-tma-pair"]

    def mm(cast: Any, n: int = 512) -> Any:
        return normal_form(fun([float32[n][n], float32[n][n]], lambda A, B: map(lambda rowA: join << map(
            lambda colB: reduce(add, 0.0) << map(mult) << zip(rowA, colB)) << transpose
            << map(map(cast)) << B) << map(map(cast)) << A))

    def params(c: Any) -> tuple[int, ...]:
        return tuple(c.params[x] for x in ("tm", "tn", "tk", "warps", "stages"))

    assert not enumerate_choices(mm(toTF32), [tma, pair])  # rounding: the copies carry raw bits
    got = {(params(c), c.params["group"]) for c in enumerate_choices(mm(truncTF32, 4096), [tma])}
    assert got == {(t, g) for t in OFFERED for g in WGMMA_TMA_GROUPS}  # 4096: every group divides
    # 512: only groups dividing the row tiles (256-row tiles: 2, ungrouped only; 128: 4)
    got = {(params(c), c.params["group"]) for c in enumerate_choices(mm(truncTF32), [tma])}
    assert got == {(t, g) for t in OFFERED for g in WGMMA_TMA_GROUPS if not g or 512 // t[0] % g == 0}
    assert {g for t, g in got if t[0] == 128} == {0, 4} and {g for t, g in got if t[0] == 256} == {0}
    got_pairs = {params(c) for c in enumerate_choices(mm(truncTF32), [pair])}
    assert got_pairs == set(OFFERED_PAIRS)
    assert all("group" not in c.params for c in enumerate_choices(mm(truncTF32), [pair]))
    # the pair frees a partner's stage with a CTA-scope arrive: kept out of the search
    assert tma in CUDA_SEARCH_RULES and pair not in CUDA_SEARCH_RULES


def test_fragment_columns_cover_every_column_once() -> None:
    """Each column of B's tile is carried by exactly one (warpgroup, warp, lane group, block,
    half), and a lane's 2nb columns are adjacent (one 8- or 16-byte load at b_fragment_offset)."""
    for groups, nb in ((2, 2), (2, 1), (1, 2)):
        cols = sorted(b_column(wg, w4, g, fb, h, nb) for wg in range(groups) for w4 in range(4)
                      for g in range(8) for fb in range(nb) for h in range(2))
        assert cols == list(range(64 * nb * groups))
        for g in range(8):
            first = b_column(0, 1, g, 0, 0, nb)
            assert [b_column(0, 1, g, fb, h, nb) for fb in range(nb) for h in range(2)] == \
                list(range(first, first + 2 * nb))
            assert b_fragment_offset(8, 3, first, 256) % (8 * nb) == 0


def test_cuda_code_tensor_maps_and_pipeline() -> None:
    c = compile_program(low(), CUDA)
    (k,) = c.kernels
    maps = [a for a in k.args if a.kind == "tensormap"]
    assert [(a.buffer, a.tensor_map.box, a.tensor_map.swizzle) for a in maps] == \
        [("input:A", (32, 128), 128), ("input:B", (256, 32), 0)]
    assert str(maps[0].tensor_map.row) == "K" and str(maps[1].tensor_map.row) == "N"
    assert k.ndrange.local_size == (384, 1) and k.whole_grid
    src = k.source
    assert "struct __align__(64) lk_tensor_map" in src and "const __grid_constant__ lk_tensor_map lk_map_A" in src
    assert "__launch_bounds__(384, 1) KERNEL(" in src
    assert src.count("cp.async.bulk.tensor.2d") == 2 and "mbarrier.arrive.expect_tx" in src
    assert "setmaxnreg.dec.sync.aligned.u32 40" in src and "setmaxnreg.inc.sync.aligned.u32 232" in src
    assert "for (int wg_id" not in src  # one block per work-group: no grid-stride loop
    assert "fence.proxy.async" not in src and "cp.async.wait_group" not in src
    # the producer waits for stage i mod s emptied by tile i-s; consumers for phase (i/s) mod 2;
    # from 4 stages one tile's products stay in flight (two fragment sets, the loop unrolled)
    assert "(i / 4 + 1) & 1" in src and "(((i_2 + 1) + 1) / 4) & 1" in src
    assert src.count("wgmma.wait_group.sync.aligned 1;") == 2
    after = compile_program(low(stages=3), CUDA).source
    assert "((i_2 + 1) / 3) & 1" in after and "wgmma.wait_group.sync.aligned 1;" not in after


def test_pair_cuda_code_multicasts_half_of_b_to_both_blocks() -> None:
    (k,) = compile_program(low(copy="tma-pair"), CUDA).kernels
    src = k.source
    assert "__cluster_dims__(1, 2, 1) KERNEL(" in src and src.count("multicast::cluster") == 1
    assert [a.tensor_map.box for a in k.args if a.kind == "tensormap"] == [(32, 128), (256, 16)]
    assert "mbarrier.arrive.shared::cluster.b64" in src and "arrive.release.cluster" not in src
    assert src.count("barrier.cluster.arrive.release.aligned") == 2  # after the init, before leaving
    with pytest.raises(CodegenError, match="must be known even"):
        compile_program(by_hand(reduceWgmmaTmaPairTF32Z, 128, 256, 32, 8, 4), CUDA)


def test_every_offered_tiling_builds_for_sm90a_without_spills(compile_cuda: Any) -> None:
    assert len(OFFERED) >= 6

    # grouped: each tiling with one group, every group in turn (the group changes only the block
    # index arithmetic before the tile loop; the GPU test runs them all)
    groups = [g for g in WGMMA_TMA_GROUPS if g]
    grouped = [(t, "tma", groups[i % len(groups)]) for i, t in enumerate(OFFERED)]
    for t, copy, g in [(t, "tma", 0) for t in OFFERED] + grouped + [(t, "tma-pair", 0) for t in OFFERED_PAIRS]:
        (kern,) = compile_program(low(*t, copy=copy, group=g), CUDA).kernels
        out = compile_cuda(kern.source, "sm_90a", ["-Xptxas=-v", *kern.build_options], name="tma.cu")
        assert "cp.async.bulk.tensor.2d" in out.ptx and "wgmma.mma_async" in out.ptx
        assert " 0 bytes spill stores" in out.log and "C75" not in out.log, (t, g, out.log)


def test_refused_on_opencl_and_for_layouts_it_cannot_copy() -> None:
    with pytest.raises(CodegenError, match=r"^reduceWgmmaTmaTF32Z needs the CUDA backend on a Hopper GPU"):
        compile_program(low())
    At, B = Param("A", float32[M][K]), Param("B", float32[N][K])  # A stored transposed (k-major rows of M)
    tiles = lambda t: compose(map(compose(transpose, map(split(32)))), split(t))  # noqa: E731
    body = join << mapWrg(1)(lambda ar: map(join) << transpose << mapWrg(0)(
        lambda bc: join << reduceWgmmaTmaTF32Z(8, 4, lambda p: p, 0.0) << zip(ar, bc))
        << tiles(256) << transpose << B) << tiles(128) << transpose << At
    with pytest.raises(CodegenError, match="A must be contiguous along k"):
        compile_program(Lambda((At, B), body), CUDA)


class _Driver:
    """The driver calls tensor_maps makes, recorded (no GPU)."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUkernel:
        pass

    cuuint64_t = cuuint32_t = int
    CUtensorMapDataType = SimpleNamespace(CU_TENSOR_MAP_DATA_TYPE_FLOAT32="f32")
    CUtensorMapSwizzle = SimpleNamespace(CU_TENSOR_MAP_SWIZZLE_NONE="none", CU_TENSOR_MAP_SWIZZLE_128B="128B")
    CUtensorMapInterleave = SimpleNamespace(CU_TENSOR_MAP_INTERLEAVE_NONE="none")
    CUtensorMapL2promotion = SimpleNamespace(CU_TENSOR_MAP_L2_PROMOTION_L2_256B="l2")
    CUtensorMapFloatOOBfill = SimpleNamespace(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE="none")

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._map = (ctypes.c_ubyte * 128)(*range(128))

    def cuTensorMapEncodeTiled(self, *args: Any) -> tuple[int, Any]:
        self.calls.append(args)
        return 0, SimpleNamespace(getPtr=lambda: ctypes.addressof(self._map))

    def cuLaunchKernel(self, *args: Any) -> tuple[int]:
        self.calls.append(args)
        return (0,)


def test_tensor_map_encoding_and_argument_packing_with_a_stubbed_driver() -> None:
    from liftkit.backends.cuda import tensor_maps

    d = _Driver()
    spec = TensorMap(K, M * K, (32, 128), 128)
    enc = tensor_maps.encode(d, spec, 0x10000, 4096, 4096 * 1024)
    assert enc.data == bytes(range(128))
    (_, rank, addr, dims, strides, box, estr, _, swz, *_), = d.calls
    assert (rank, addr, dims, strides, box, estr, swz) == (2, 0x10000, [4096, 1024], [16384], [32, 128], [1, 1], "128B")
    with pytest.raises(ValueError, match="not a multiple of 16 bytes"):
        tensor_maps.encode(d, spec, 0x10004, 4096, 4096 * 1024)
    with pytest.raises(ValueError, match="whole 32×128 boxes"):
        tensor_maps.encode(d, spec, 0x10000, 4096, 4096 * 100)
    with pytest.raises(ValueError, match="wider than the 128-byte swizzle"):
        tensor_maps.encode(d, TensorMap(N, K * N, (64, 32), 128), 0x10000, 256, 256 * 64)
    packed = tensor_maps.PackedParams([0x1234, np.int32(7), enc])
    assert packed.argument_bytes(0, 8) == (0x1234).to_bytes(8, "little")
    assert packed.argument_bytes(1, 4) == (7).to_bytes(4, "little")
    assert packed.argument_bytes(2, 128) == bytes(range(128)) and packed.pointers[2] % 64 == 0
    tensor_maps.launch(d, SimpleNamespace(handle="f"), (4, 2), (384, 1), 1000, "s", [0x1234, enc])
    assert d.calls[-1][:10] == ("f", 4, 2, 1, 384, 1, 1, 1000, "s", d.calls[-1][9])


@pytest.mark.gpu
def test_every_offered_tiling_on_the_gpu_matches_the_interpreter() -> None:
    """Integer-valued inputs exact over 1, s, s+1 and 2s+3 k-tiles (every pipeline wrap and
    phase), several work-groups along M and N; B = I gives A truncated bit for bit. Grouped
    orders: one and two groups of row tiles, three column tiles."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices or devices[0].compute_capability < (9, 0):
        pytest.skip("no Hopper GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    rng = np.random.default_rng(11)
    for t, copy, g in ([(t, "tma", 0) for t in OFFERED] + [(t, "tma", g) for t, g in OFFERED_GROUPED]
                       + [(t, "tma-pair", 0) for t in OFFERED_PAIRS]):
        tm, tn, tk, _, s = t
        compiled = compile_program(low(*t, copy=copy, group=g), CUDA)
        for kts in (1, s + 1, 2 * s + 3):
            mt = 2 * g if g else 2
            A = rng.integers(-8, 9, (mt * tm, kts * tk)).astype(np.float32)
            B = rng.integers(-8, 9, (kts * tk, (3 if g else 2) * tn)).astype(np.float32)
            np.testing.assert_array_equal(runner.run(compiled, A, B), A @ B, err_msg=f"{t} g{g} {kts} tiles")
        A = rng.standard_normal((512 if g * tm <= 512 else g * tm, 256)).astype(np.float32)  # whole groups
        np.testing.assert_array_equal(runner.run(compiled, A, np.eye(256, dtype=np.float32)), trunc_tf32(A))
