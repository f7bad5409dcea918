"""reduceMmaF64K16AheadSpread (mm-tensor-cores ik=16 ahead=2): the read-ahead DMMA loop of
reduceMmaF64K8AheadSpread on m16n8k16. Same meaning (interpreter, bit for bit on integers),
printed and parsed, offered by the rule after every m16n8k8 choice, then on the deeper
pipelines only it may stage (cuBLAS's 128×64×32 ×3, 144 KB), and by liftkit.blas's `mma`
codelet (tuner space); the CUDA C issues m16n8k16 only, one barrier per tile, the next tile's
fragments read after it (one k-step per 16-deep tile: into new registers, carried at the end);
NVRTC compiles it for Hopper and older GPUs; (gpu marker) the kernel against NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.cuda import ReduceMmaF64K16AheadSpread
from liftkit.rewrite.core import RewriteError
from liftkit.rewrite.rules.cuda import tensor_core_mm

from .f64_mma import deep, assert_sound_and_round_trips, ints, tensor_core_offers

CUDA = CompileOptions(dialect="cuda")


@pytest.mark.parametrize("tiles", [(64, 64, 16, 4, 4), (64, 64, 32, 4, 3), (64, 128, 16, 8, 2),
                                   (128, 64, 32, 8, 3)])
def test_k16_product_is_sound_and_round_trips(tiles: tuple[int, ...]) -> None:
    tm, tn, tk, warps, staged = tiles
    d = tensor_core_mm("f64", tm, tn, tk, warps, staged, lines=True, ik=16, ahead=2)
    assert [(c.choice.params.get("ik"), c.choice.params.get("ahead")) for c in d.steps] == [(16, 2)]
    mma = [n for n in walk(d.final.body) if isinstance(n, P.ReduceMma)]
    assert len(mma) == 1 and type(mma[0]) is ReduceMmaF64K16AheadSpread
    assert_sound_and_round_trips(d.final, tm, tn, tk)


def test_the_rule_offers_k16_last_for_the_k8_tilings_then_deeper() -> None:
    offers = tensor_core_offers()
    first = next(i for i, o in enumerate(offers) if o.get("ik") == 16)
    k16, tail = [o for o in offers[first:] if not deep(o)], [o for o in offers[first:] if deep(o)]
    assert offers[first:] == k16 + tail and not any(deep(o) for o in offers[:first])
    assert k16 and all(o.get("ik") == 16 and o.get("ahead") == 2 and o.get("lines") for o in k16)
    k8 = [o for o in offers[:first] if o.get("ik") == 8 and not o.get("ahead")]
    assert [{k: v for k, v in o.items() if k not in ("ik", "ahead")} for o in k16] == \
        [{k: v for k, v in o.items() if k != "ik"} for o in k8]
    # then the 32-deep tilings whose 3 stages pass 128 KB (cuBLAS's shape first), read ahead
    # on m16n8k16, then on m16n8k8 only
    assert [(o["tm"], o["tn"], o["tk"], o["warps"], o["staged"], o["ik"]) for o in tail[:2]] == \
        [(128, 64, 32, 8, 3, 16), (128, 64, 32, 8, 3, 8)]
    assert all(o["tk"] == 32 and o["staged"] == 3 and o["ahead"] == 2 for o in tail)
    with pytest.raises(RewriteError, match="applies nowhere"):  # the others: 128 KB at most
        tensor_core_mm("f64", 128, 64, 32, 8, 3, lines=True, ik=8, ahead=1)
    for staged, ahead in [(1, 2), (4, 1), (4, 0)]:
        with pytest.raises(ValueError, match="reading fragments ahead"):
            tensor_core_mm("f64", 64, 64, 16, 4, staged, lines=True, ik=16, ahead=ahead)
    with pytest.raises(ValueError, match="ik=16"):
        tensor_core_mm("f64", 64, 64, 16, 4, 4, lines=True, ik=32, ahead=2)


def _loop(src: str) -> str:
    start = re.search(r"for \(int i\w* = 0;", src)
    assert start is not None
    return src[start.start():src.index("cp.async.wait_group 0;")]


@pytest.mark.parametrize("tk, steps", [(16, 1), (32, 2)])
def test_k16_cuda_issues_m16n8k16_after_one_barrier_and_compiles(tk: int, steps: int,
                                                                 compile_cuda: Any) -> None:
    d = tensor_core_mm("f64", 64, 64, tk, 4, 3, lines=True, ik=16, ahead=2)
    src = compile_program(d.final, CUDA).kernels[0].source
    loop = _loop(src)
    assert "m16n8k8" not in src and loop.count("__syncthreads();") == 1
    before, after = loop.split("__syncthreads();")
    hopper = after.split("#else")[0]
    # 2×4 fragments per warp (32×32 of the 64×64 tile): 8 DMMAs per k-step, the last step's
    # after the barrier among the copies of tile i+3, reading the next tile's buffer there
    assert hopper.count("m16n8k16.row.col.f64") == 8 and before.count("m16n8k16.row.col.f64") == 8 * (steps - 1)
    assert "(i + 1) % 3" in hopper and "if (i + 3 < K/" in hopper
    assert "m8n8k4.row.col.f64" in before  # the pre-Hopper fallback on the same accumulators

    for arch in ("compute_90a", "compute_80"):
        assert "mma.sync.aligned" in compile_cuda(src, arch, name="k16.cu").ptx


def test_blas_mma_codelet_offers_and_derives_k16() -> None:
    from liftkit.blas.codelets import CODELETS, Kind, derive, lookup_variant, multiples

    space = CODELETS["mma"].space("gpu")
    k16 = [p for p in space if p.get("ik") == 16]
    assert k16 and all(p["ahead"] == 2 and p["lines"] == 1 for p in k16)
    assert {"tm": 128, "tn": 64, "tk": 32, "warps": 8, "staged": 3} == \
        {k: k16[0][k] for k in ("tm", "tn", "tk", "warps", "staged")}  # cuBLAS's shape first
    assert {**k16[0], "ik": 8} in space  # and on m16n8k8
    assert space.index(k16[0]) > max(i for i, p in enumerate(space) if p.get("ik") == 8
                                     and p["tk"] < 32 and p["lines"] == 1)
    # (after the 16-deep m16n8k8 ones; the k-row layouts lines 2, 3 come last of all)
    for layout in ("NN", "TN", "NT"):
        kind = Kind("mm", "float64", layout)
        for text, mult in [("mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=16,ahead=2)",
                             {"M": 64, "N": 64, "K": 16}),
                            ("mma(tm=128,tn=64,tk=32,warps=8,staged=3,lines=1,ik=16,ahead=2)",
                             {"M": 128, "N": 64, "K": 32})]:
            v = lookup_variant(kind, text)
            assert multiples(kind, v) == mult
            mma = [n for n in walk(derive(kind, v).final.body) if isinstance(n, P.ReduceMma)]
            assert [type(n) for n in mma] == [ReduceMmaF64K16AheadSpread]


@pytest.mark.gpu
def test_k16_product_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles, ik in [((64, 64, 16, 4, 4), 16), ((64, 64, 16, 4, 3), 16), ((128, 64, 16, 8, 4), 16),
                      ((64, 64, 32, 4, 2), 16), ((128, 64, 32, 8, 3), 16), ((128, 64, 32, 8, 3), 8)]:
        d = tensor_core_mm("f64", *tiles, lines=True, ik=ik, ahead=2)  # (the last two: 144 KB)
        A, B = ints((256, 96), 3), ints((96, 192), 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)
