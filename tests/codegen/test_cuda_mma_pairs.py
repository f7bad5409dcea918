"""k-permuted DMMA fragment reads (mm-tensor-cores `pairs`; the `mma` codelet's pairs=1) and the
FP64 accumulators written two at a time: the permutation (a 4×4 transpose of each 16-block of
k, the same in both operands) keeps the product's meaning (interpreter, bit for bit on integers,
NN/NT/TN through liftkit.blas), prints and parses back; the rule offers it after every other
choice and refuses it where it does not apply; the rows a lane group reads at once still land in
both halves of a bank line in the across-staged operands; the CUDA C reads an operand stored
along k as 16-byte vectors in the mma's register order (and only so: a vector feeding registers
out of order would cost moves); the FP64 products store their accumulators as 16-byte vectors;
NVRTC compiles both; (gpu marker) the kernels against NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.rewrite.rules.cuda import PAIR_BLOCK, line_shift, tensor_core_mm

from .f64_mma import assert_sound_and_round_trips, deep, ints, tensor_core_offers

CUDA = CompileOptions(dialect="cuda")
K8 = dict(lines=True, ik=8, ahead=2)


@pytest.mark.parametrize("tiles, ik", [((64, 64, 16, 4, 4), 8), ((128, 64, 16, 4, 4), 8),
                                       ((128, 64, 16, 8, 4), 8), ((64, 64, 32, 4, 3), 16),
                                       ((128, 64, 32, 8, 3), 8)])
def test_pairs_product_is_sound_and_round_trips(tiles: tuple[int, ...], ik: int) -> None:
    tm, tn, tk, warps, staged = tiles
    d = tensor_core_mm("f64", tm, tn, tk, warps, staged, lines=True, ik=ik, ahead=2, pairs=True)
    assert d.steps[0].choice.params.get("pairs") is True
    assert_sound_and_round_trips(d.final, tm, tn, tk)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
def test_pairs_codelet_is_exact_for_every_layout(layout: str) -> None:
    from liftkit.blas.codelets import Kind, derive, lookup_variant, multiples
    from liftkit.rewrite.rules.corpus import run

    kind = Kind("mm", "float64", layout)
    v = lookup_variant(kind, "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2,pairs=1)")
    assert multiples(kind, v) == {"M": 64, "N": 64, "K": 16}
    d = derive(kind, v)
    m, n, k = 64, 128, 48
    a = ints((k, m) if layout[0] == "T" else (m, k), 5)
    b = ints((n, k) if layout[1] == "T" else (k, n), 6)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k})).reshape(m, n)
    np.testing.assert_array_equal(got, (a.T if layout[0] == "T" else a) @ (b.T if layout[1] == "T" else b))


def test_the_rule_offers_pairs_last_and_refuses_them_elsewhere() -> None:
    offers = tensor_core_offers(pairs=True)
    first = next(i for i, o in enumerate(offers) if o.get("pairs"))
    tail = offers[first:]
    assert all(o.get("pairs") and o["ahead"] == 2 and o["tk"] % PAIR_BLOCK == 0 for o in tail)
    assert [{k: v for k, v in o.items() if k != "pairs"} for o in tail] == \
        [o for o in offers[:first] if o.get("ahead") == 2 and o["tk"] % PAIR_BLOCK == 0]
    assert any(deep(o) for o in tail)
    for bad in [dict(ahead=1), dict(ahead=0)]:
        with pytest.raises(ValueError, match="pairs"):
            tensor_core_mm("f64", 64, 64, 16, 4, 4, lines=True, ik=8, pairs=True, **bad)
    with pytest.raises(ValueError, match="pairs"):
        tensor_core_mm("f64", 64, 64, 8, 4, 4, pairs=True, **K8)


def test_across_rows_read_together_fill_both_halves_of_a_bank_line() -> None:
    """A fragment read of an operand staged as k rows (B of NN, A of TN) touches 4 rows, each
    64 bytes (8 doubles): 2 wavefronts at best, each half of the 128-byte bank line hit by 2
    rows. Without pairs those rows are t + 4j, with pairs 4t + x."""
    c = 32  # 64 doubles per k row in 16-byte chunks
    for pairs, rows in [(False, lambda x: [x + t for t in range(4)]),
                        (True, lambda x: [4 * t + x for t in range(4)])]:
        for x in range(4):
            halves = [line_shift(r, P.ReduceMmaF64K8, c, 1, True, pairs) * 16 % 128 // 64
                      for r in rows(x)]
            assert sorted(halves) == [0, 0, 1, 1], (pairs, x, halves)
    # the old rotation would put all four k rows 4t + x in one half
    assert len({line_shift(4 * t, P.ReduceMmaF64K8, c, 1, True) * 16 % 128 // 64
                for t in range(4)}) == 1


def _loop(src: str) -> str:
    start = re.search(r"for \(int (i\w*) = 0; \1 < K/", src)
    assert start is not None
    return src[start.start():src.index("cp.async.wait_group 0;")]


def test_pairs_cuda_reads_vectors_in_register_order_and_compiles(compile_cuda: Any) -> None:
    from liftkit.blas.codelets import Kind, derive, lookup_variant

    kind = Kind("mm", "float64", "NT")  # both operands stored along k
    v = lookup_variant(kind, "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2,pairs=1)")
    src = compile_program(derive(kind, v).final, CUDA).kernels[0].source
    loop = _loop(src).split("#else")[0]
    # B's two registers of a k-step are one 16-byte vector: 4 fragments × 2 steps per tile
    assert len(re.findall(r"frag\w* = \(\(double2\*\)stage_2\)", loop)) == 8
    # A element by element (a vector of its k pair would feed registers 0 and 2: moves)
    assert not re.search(r"frag\w* = \(\(double2\*\)stage\)", loop)
    assert re.search(r"\ba0_2 = stage\[[^;]*\+ 1\];", loop)  # the next tile's k pair, each alone
    for arch in ("compute_90a", "compute_80"):
        assert "mma.sync.aligned" in compile_cuda(src, arch, name="pairs.cu").ptx


def test_fp64_products_store_accumulators_as_vectors(compile_cuda: Any) -> None:
    d = tensor_core_mm("f64", 128, 64, 16, 4, 4, **K8)
    src = compile_program(d.final, CUDA).kernels[0].source
    tail = src[src.index("cp.async.wait_group 0;"):]
    # 4×4 fragments of 4 accumulators per lane: 32 16-byte stores, no single ones
    assert len(re.findall(r"(acc2\w*)\.x = c\d_\d_[02]; \1\.y = c\d_\d_[13]; \(\(double2\*\)out\)\[[^]]*\] = \1;", tail)) == 32
    assert not re.search(r"\bout\[", tail)
    assert "mma.sync.aligned" in compile_cuda(src, "compute_90a", name="stores.cu").ptx


@pytest.mark.gpu
def test_pairs_products_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles, ik in [((64, 64, 16, 4, 4), 8), ((128, 64, 16, 4, 4), 8), ((128, 64, 16, 8, 4), 8),
                      ((64, 64, 32, 4, 3), 16)]:
        d = tensor_core_mm("f64", *tiles, lines=True, ik=ik, ahead=2, pairs=True)
        A, B = ints((256, 96), 3), ints((96, 192), 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)
    assert any(isinstance(n, P.ReduceMma) for n in walk(d.final.body))
