"""reduceMmaF64K8Ahead (mm-tensor-cores ik=8 ahead=1): reduceMmaF64K8 whose lanes read each
k-step's fragments one step ahead, across the cp.async pipeline's tile boundary too; and
reduceMmaF64K8AheadSpread (ahead=2), the next tile's copies issued among the last products. Same meaning
(interpreter, bit for bit on integers), printed and parsed, offered by the rule after the ik=8
choices; the CUDA C reads the next tile's first fragments after the barrier that sits before the
current tile's last products (one barrier per tile), the plain ik=8 source is unchanged; NVRTC
compiles it for Hopper and older GPUs; (gpu marker) the kernel against NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.views import CodegenError
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.cuda import ReduceMmaF64K8Ahead, ReduceMmaF64K8AheadSpread
from liftkit.rewrite.rules.cuda import tensor_core_mm

from .f64_mma import deep, assert_sound_and_round_trips, ints, tensor_core_offers

CUDA = CompileOptions(dialect="cuda")


@pytest.mark.parametrize("tiles", [(64, 64, 16, 4, 4, 1), (128, 64, 32, 4, 2, 1), (128, 64, 16, 4, 3, 2)])
def test_ahead_product_is_sound_and_round_trips(tiles: tuple[int, ...]) -> None:
    tm, tn, tk, warps, staged, ahead = tiles
    d = tensor_core_mm("f64", tm, tn, tk, warps, staged, lines=True, ik=8, ahead=ahead)
    assert [(c.choice.params.get("ik"), c.choice.params.get("ahead")) for c in d.steps] == [(8, ahead)]
    mma = [n for n in walk(d.final.body) if isinstance(n, P.ReduceMma)]
    assert len(mma) == 1 and type(mma[0]) is (ReduceMmaF64K8Ahead, ReduceMmaF64K8AheadSpread)[ahead - 1]
    assert_sound_and_round_trips(d.final, tm, tn, tk)


def test_the_rule_offers_ahead_after_the_k8_choices() -> None:
    offers = [o for o in tensor_core_offers() if not deep(o)]  # (deep ones: test_cuda_mma_k16)
    first = next(i for i, o in enumerate(offers) if o.get("ahead"))
    ahead = [o for o in offers[first:] if o.get("ik") == 8]  # (then ik=16: test_cuda_mma_k16)
    assert [o.get("ahead") for o in ahead] == sorted(o.get("ahead") for o in ahead)
    assert all(o.get("ahead") in (1, 2) for o in ahead)
    assert ahead == offers[first:first + len(ahead)]
    k8 = [{k: v for k, v in o.items()} for o in offers[:first] if o.get("ik")]
    assert [{k: v for k, v in o.items() if k != "ahead"} for o in ahead] == k8 + k8
    for staged, ik, ahead in [(1, 8, 1), (4, 0, 1), (4, 8, 3)]:
        with pytest.raises(ValueError, match="reading fragments ahead"):
            tensor_core_mm("f64", 128, 64, 16, 4, staged, lines=True, ik=ik, ahead=ahead)


def _loop(src: str) -> str:
    """The tile loop of the one kernel's source (from the `for (int i` to the final wait)."""
    start = re.search(r"for \(int i\w* = 0;", src)
    assert start is not None
    return src[start.start():src.index("cp.async.wait_group 0;")]


def test_ahead_cuda_reads_the_next_tile_after_its_one_barrier_and_compiles(compile_cuda: Any) -> None:
    d = tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=1)
    src = compile_program(d.final, CUDA).kernels[0].source
    loop = _loop(src)
    hopper = loop.split("__syncthreads();")
    assert len(hopper) == 2  # one barrier per tile, inside the loop
    before, after = hopper
    assert "cp.async.wait_group 2;" in before and "cp.async.wait_group 3;" in src  # s-2, s-1 (prologue)
    # after the barrier: the copy of tile i+4 into tile i's buffer, the next tile's fragments
    # (buffer (i + 1) % 4) and the current tile's last products, all 16 of them
    assert "if (i + 4 < K/16)" in after and "(i + 1) % 4" in after
    assert after.count("m16n8k8.row.col.f64") == 16 and before.count("m16n8k8.row.col.f64") == 16
    assert "(i + 1) % 4" not in before
    assert "m8n8k4.row.col.f64" in before  # the pre-Hopper fallback on the same accumulators
    plain = compile_program(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8).final,
                            CUDA).kernels[0].source
    assert plain != src and "(i + 1) % 4" not in plain and _loop(plain).count("__syncthreads();") == 1

    for arch in ("compute_90a", "compute_80"):
        assert "mma.sync.aligned" in compile_cuda(src, arch, name="ahead.cu").ptx


def test_spread_issues_the_copies_among_the_last_products(compile_cuda: Any) -> None:
    d = tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=2)
    src = compile_program(d.final, CUDA).kernels[0].source
    before, after = _loop(src).split("__syncthreads();")
    hopper, older = after.split("#else")
    # A's copies after the first row of 4 products, B's after the second; the same copies
    # without products before sm_90; one commit after either
    rows = hopper.split("if (i + 4 < K/16)")
    assert [r.count("m16n8k8.row.col.f64") for r in rows] == [4, 4, 8]
    assert older.count("if (i + 4 < K/16)") == 2 and "m16n8k8" not in older
    assert after.count("cp.async.commit_group") == 1 and "cp.async.commit_group" not in before

    for arch in ("compute_90a", "compute_80"):
        assert "mma.sync.aligned" in compile_cuda(src, arch, name="spread.cu").ptx


def test_ahead_needs_a_cp_async_pipeline() -> None:
    d = tensor_core_mm("f64", 64, 64, 16, 4, 1)  # staged into local memory, no pipeline
    from liftkit.rewrite.core import positions, replace_at

    path, mma = next((q, n) for q, n in positions(d.final) if type(n) is P.ReduceMmaF64)
    bent = replace_at(d.final, path, ReduceMmaF64K8Ahead(mma.warps, mma.f))
    with pytest.raises(CodegenError, match="toLocalAsync s ≥ 2"):
        compile_program(bent, CUDA)


@pytest.mark.gpu
def test_ahead_product_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles, ahead in [((128, 64, 16, 4, 4), 1), ((128, 64, 32, 4, 2), 1), ((64, 64, 16, 2, 3), 2),
                         ((128, 64, 16, 4, 3), 2)]:
        d = tensor_core_mm("f64", *tiles, lines=True, ik=8, ahead=ahead)
        A, B = ints((256, 96), 3), ints((96, 192), 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)
