"""reduceMmaF64K8 (mm-tensor-cores ik=8): the FP64 product on Hopper's m16n8k8 DMMA throughout,
where reduceMmaF64 issues the largest shape dividing a tile's k (m16n8k16 for 16/32-deep
tiles). Same meaning (interpreter, bit for bit on integers), printed and parsed, offered by the
rule for the `lines` tilings at least 16 deep after every other choice, chosen by the blas `mma`
codelet's ik=8; the CUDA C issues only m16n8k8 on Hopper (m8n8k4 on older GPUs) and NVRTC
compiles it; (gpu marker) the kernel against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.rewrite.rules.cuda import tensor_core_mm

from .f64_mma import deep, assert_sound_and_round_trips, ints, tensor_core_offers

CUDA = CompileOptions(dialect="cuda")


@pytest.mark.parametrize("tiles", [(64, 64, 16, 4, 4), (128, 64, 32, 4, 2)])
def test_k8_product_is_sound_and_round_trips(tiles: tuple[int, ...]) -> None:
    tm, tn, tk, warps, staged = tiles
    d = tensor_core_mm("f64", tm, tn, tk, warps, staged, lines=True, ik=8)
    assert [c.choice.params.get("ik") for c in d.steps] == [8]
    mma = [n for n in walk(d.final.body) if isinstance(n, P.ReduceMma)]
    assert len(mma) == 1 and type(mma[0]) is P.ReduceMmaF64K8
    assert_sound_and_round_trips(d.final, tm, tn, tk)


def test_the_rule_offers_k8_after_the_others_for_line_tilings_only() -> None:
    offers = [o for o in tensor_core_offers() if not deep(o)]  # (deep ones: test_cuda_mma_k16)
    first = next(i for i, o in enumerate(offers) if o.get("ik"))
    # m16n8k8 first, then (test_cuda_mma_k16) the read-ahead loop on m16n8k16
    assert first > 0 and [o.get("ik") for o in offers[first:]] == sorted(o.get("ik") for o in offers[first:])
    assert all(o.get("ik") in (8, 16) for o in offers[first:])
    assert all(o.get("lines") and o["tk"] >= 16 for o in offers[first:])
    assert {(o["tm"], o["tn"], o["tk"], o["warps"], o["staged"]) for o in offers[first:]
            if o["ik"] == 8} == {
        (o["tm"], o["tn"], o["tk"], o["warps"], o["staged"]) for o in offers[:first]
        if o.get("lines") and o["tk"] >= 16}
    with pytest.raises(ValueError, match="only f64 takes ik=8"):
        tensor_core_mm("tf32", 128, 128, 16, 4, 3, lines=True, ik=8)


def test_k8_cuda_issues_m16n8k8_only_and_compiles(compile_cuda: Any) -> None:
    d = tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8)
    src = compile_program(d.final, CUDA).kernels[0].source
    assert "m16n8k8.row.col.f64" in src and "m16n8k16" not in src
    assert "m8n8k4.row.col.f64" in src  # the pre-Hopper fallback on the same accumulators
    plain = compile_program(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True).final, CUDA)
    assert "m16n8k16.row.col.f64" in plain.kernels[0].source

    assert "mma.sync.aligned.m16n8k8.row.col.f64" in compile_cuda(src, "compute_90a", name="k8.cu").ptx


def test_the_blas_mma_codelet_takes_ik() -> None:
    from liftkit.blas.codelets import Kind, Variant, derive

    v = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8)
    d = derive(Kind("mm", "float64", "NN"), v)
    assert any(type(n) is P.ReduceMmaF64K8 for n in walk(d.final.body))


@pytest.mark.gpu
def test_k8_product_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles in [(128, 64, 16, 4, 4), (64, 64, 16, 2, 4)]:
        d = tensor_core_mm("f64", *tiles, lines=True, ik=8)
        A, B = ints((256, 96), 3), ints((96, 192), 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)
