"""reduceWgmmaTF32 / reduceWgmmaTF32Z (ir/patterns/cuda.py, codegen/cuda_wgmma.py): meaning
against the high-level product, type errors and printing, the shared-memory layout against the
tensor cores' addressing (descriptor, 128-byte swizzle), each thread's 16-byte pieces (every
element once, whole lines per warp load, no bank conflicts per store phase), the CUDA C and
NVRTC's sm_90a build (no GPU needed), the refusals; with a GPU (`gpu` marker) the kernels
against the interpreter bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.arith import Var, cst
from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.cuda_wgmma import (ALIGN, ROW_BYTES, descriptor, offset, tensor_core_address,
                                        thread_pieces)
from liftkit.codegen.views import CodegenError
from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.ir.nodes import Lambda, Param
from liftkit.ir.parser import parse_program
from liftkit.ir.patterns.cuda import round_tf32, trunc_tf32
from liftkit.ir.printer import show
from liftkit.rewrite.rules.cuda import tensor_core_mm
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError

from .wgmma_by_hand import by_hand

CUDA = CompileOptions(dialect="cuda")
M, N, K = size("M"), size("N"), size("K")
ROUND = {"tf32": round_tf32, "tf32z": trunc_tf32}


def low(kind: str = "tf32z", tm: int = 128, tn: int = 128, tk: int = 32, warps: int = 8,
        stages: int = 3) -> Any:
    return tensor_core_mm(kind, tm, tn, tk, warps, stages, wgmma=True).final


# ---------------------------------------------------------------------------------------------
# meaning, types, printing


@pytest.mark.parametrize("kind", ["tf32", "tf32z"])
def test_wgmma_means_the_product_of_the_rounded_operands(kind: str) -> None:
    rng = np.random.default_rng(2)
    A, B = rng.integers(-8, 9, (256, 96)).astype(np.float32), rng.integers(-8, 9, (96, 128)).astype(np.float32)
    p = low(kind)
    np.testing.assert_array_equal(interpret(p, A, B), A @ B)
    A, B = rng.standard_normal((128, 64)).astype(np.float32), rng.standard_normal((64, 256)).astype(np.float32)
    want = ROUND[kind](A).astype(np.float64) @ ROUND[kind](B).astype(np.float64)
    np.testing.assert_allclose(interpret(p, A, B), want, rtol=1e-5, atol=1e-4)
    assert show(parse_program(show(p))) == show(p)
    assert ("reduceWgmmaTF32Z" in show(p)) == (kind == "tf32z")


def test_trunc_tf32_clears_the_low_bits_of_every_pattern() -> None:
    x = np.array([1 + 2 ** -11, -(1 + 3 * 2 ** -11), 1 + 2 ** -10, np.inf], np.float32)
    np.testing.assert_array_equal(trunc_tf32(x), np.float32([1, -(1 + 2 ** -10), 1 + 2 ** -10, np.inf]))
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(interpret(fun([float32[N]], lambda v: map(truncTF32) << v), r), trunc_tf32(r))


@pytest.mark.parametrize("args,message", [
    ((6, 3), "multiple of 4"),
    ((8, 5), "from 2 to 4"),
])
def test_wgmma_type_errors_in_words(args, message) -> None:  # type: ignore[no-untyped-def]
    from liftkit.ir.typecheck import check_program as check

    with pytest.raises(LiftTypeError, match=message):
        check(by_hand(reduceWgmmaTF32Z, 128, 128, 32, *args))
    with pytest.raises(LiftTypeError, match="do not fit 2 warpgroup"):
        check(by_hand(reduceWgmmaTF32Z, 64, 128, 32, 8, 3))  # 32 rows per warpgroup
    with pytest.raises(LiftTypeError, match="do not fit"):
        check(by_hand(reduceWgmmaTF32Z, 128, 128, 16, 4, 3))  # k not a whole swizzled row


# ---------------------------------------------------------------------------------------------
# the staged layout and the threads' pieces


@pytest.mark.parametrize("rows,k", [(64, 32), (128, 32), (256, 32), (128, 64)])
def test_staged_layout_is_where_the_tensor_cores_read(rows: int, k: int) -> None:
    """For every k-step and 64-row block (A) or all rows (B), the descriptor the kernel builds
    (start + 32 bytes per k-step) makes the tensor cores' address of (row, k) the byte `offset`
    stores it at; and the layout is a permutation of the tile's bytes."""
    base = 7 * ALIGN
    for kk in range(k // 8):
        atom, step = divmod(kk * 8, 32)
        for first, count in ([(b, 64) for b in range(0, rows, 64)] + [(0, rows)]):
            desc = descriptor(base + atom * rows * ROW_BYTES + first * ROW_BYTES + step * 4)
            for r in range(count):
                for kq in range(8):
                    assert tensor_core_address(desc, r, kq) == base + offset(first + r, kk * 8 + kq, rows)
    places = {offset(r, c, rows) for r in range(rows) for c in range(k)}
    assert places == set(range(0, rows * k * 4, 4))


def _value(e: Any, tid: int) -> int:
    v = e.substitute({"lk_tid": cst(tid)})
    assert v.is_constant
    return v.value


@pytest.mark.parametrize("rows,k,warps,along_k", [
    (128, 32, 8, True), (256, 32, 8, False), (128, 32, 4, False), (64, 32, 4, True), (128, 64, 8, False),
    (64, 64, 4, True)])
def test_thread_pieces_cover_the_tile_in_whole_lines_without_bank_conflicts(rows, k, warps, along_k) -> None:  # type: ignore[no-untyped-def]
    threads = 32 * warps
    tid = Var("lk_tid", 0, threads)
    pieces, chunks = thread_pieces(rows, k, warps, along_k, tid)
    seen, stored = [], []
    stride = 4096  # the matrix's row length in memory (k or rows contiguous)
    lines: dict[tuple[int, int], set[int]] = {}
    for t in range(threads):
        ps = [(_value(r, t), _value(c, t)) for r, c in pieces]
        for j, (r, c) in enumerate(ps):
            elems = [(r, c + w) for w in range(4)] if along_k else [(r + w, c) for w in range(4)]
            seen += elems
            addr = r * stride + c if along_k else c * stride + r
            lines.setdefault((j, t // 32), set()).add(addr * 4 // 128)
        for j, (row, ch, parts) in enumerate(chunks):
            row, ch = _value(row, t), _value(ch, t)
            for w, (pc, lane) in enumerate(parts):
                r, c = ps[pc]
                assert ((r, c + lane) if along_k else (r + lane, c)) == (row, 4 * ch + w)
            stored.append((j, t, offset(row, 4 * ch, rows)))
    assert sorted(seen) == [(r, c) for r in range(rows) for c in range(k)]
    assert sorted(o for _, _, o in stored) == list(range(0, rows * k * 4, 16))
    assert all(len(ls) <= 4 for ls in lines.values())  # each warp load: 512 bytes in 4 lines
    for j in range(len(chunks)):  # each 8-lane phase of a 16-byte store: 8 different bank quads
        for phase in range(threads // 8):
            slots = {(o >> 4) % 8 for jj, t, o in stored if jj == j and t // 8 == phase}
            assert len(slots) == 8


# ---------------------------------------------------------------------------------------------
# CUDA C, NVRTC, refusals


def test_wgmma_cuda_code_and_sm90a_build(compile_cuda: Any) -> None:
    c = compile_program(low("tf32z", 128, 256, 32, 8, 3), CUDA)
    src = c.source
    assert "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32" in src
    assert "fence.proxy.async.shared::cta" in src and "wgmma.wait_group.sync.aligned 1;" in src
    loop = src[src.index("for (int i = 0;"):]  # the next tile's loads after the proxy fence (a MEMBAR)
    assert loop.index("fence.proxy.async") < loop.index("(const float4*)A)") < loop.index("wgmma.wait_group")
    assert "0xffffe000u" in src and "0x1000u" not in src  # truncation: no rounding carry
    assert "0x1000u" in compile_program(low("tf32", 128, 128, 32, 8, 2), CUDA).source
    assert c.kernels[0].dynamic_shared == 3 * (128 + 256) * 32 * 4 + ALIGN
    from liftkit.backends.cuda import NVRTCError

    for p in (low("tf32z", 128, 256, 32, 8, 3), low("tf32", 128, 128, 64, 8, 2), low("tf32z", 64, 128, 32, 4, 2)):
        for k in compile_program(p, CUDA).kernels:
            out = compile_cuda(k.source, "sm_90a", k.build_options, name=f"{k.name}.cu")
            assert out.cubin and "wgmma.mma_async" in out.ptx
    k = compile_program(low(), CUDA).kernels[0]
    with pytest.raises(NVRTCError, match="reduceWgmmaTF32Z needs a Hopper GPU") as err:
        compile_cuda(k.source, "sm_80", k.build_options, name="old.cu")
    assert str(err.value).startswith("old.cu for sm_80: ") and "\n" not in str(err.value)


def test_wgmma_refused_on_opencl_and_for_what_it_cannot_load() -> None:
    with pytest.raises(CodegenError, match=r"^reduceWgmmaTF32 needs the CUDA backend on a Hopper GPU"):
        compile_program(low("tf32"))
    with pytest.raises(CodegenError, match=r"runs on 8 warps \(256 threads\), but the work-group has 128"):
        compile_program(low(), CompileOptions(dialect="cuda", local_size=(128,)))
    A, B = Param("A", float32[K][M]), Param("B", float32[N][K])
    tiles = lambda t: compose(map(compose(transpose, map(split(32)))), split(t))  # noqa: E731
    staged = lambda p: tuple_(toLocal(mapLcl(0)(mapSeq(id))) << get(0) << p, get(1) << p)  # noqa: E731
    body = join << mapWrg(1)(lambda ar: map(join) << transpose << mapWrg(0)(
        lambda bc: join << reduceWgmmaTF32Z(4, 2, staged, 0.0) << zip(ar, bc)) << tiles(64) << transpose << B) \
        << tiles(64) << A
    with pytest.raises(CodegenError, match="only lay out the tile pair"):
        compile_program(Lambda((A, B), body), CUDA)


# ---------------------------------------------------------------------------------------------
# on a GPU


@pytest.mark.gpu
def test_wgmma_on_the_gpu_matches_the_interpreter() -> None:
    """Integer-valued inputs: exact in every variant (one tile, two, many; both warpgroup
    counts; 2-4 stages; NN and the transposed layouts, whose operands load along the other
    direction). Then B = I: C is exactly the rounded A, bit for bit, which pins the operands'
    rounding (truncation or to nearest) to the pattern's. Then normal data within TF32's
    tolerance of float64."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices or devices[0].compute_capability < (9, 0):
        pytest.skip("no Hopper GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    rng = np.random.default_rng(9)
    variants = [("tf32z", (128, 256, 32, 8, 3), "NN"), ("tf32z", (128, 128, 32, 8, 2), "NN"),
                ("tf32", (128, 128, 32, 8, 3), "NN"), ("tf32z", (128, 128, 64, 8, 2), "NN"),
                ("tf32z", (64, 128, 32, 4, 3), "NN"), ("tf32z", (128, 128, 32, 4, 2), "NN"),
                ("tf32z", (128, 128, 32, 8, 3), "TN"), ("tf32", (128, 128, 32, 8, 3), "NT")]
    cls = {"tf32": reduceWgmmaTF32, "tf32z": reduceWgmmaTF32Z}
    for kind, tiles, lay in variants:
        p = low(kind, *tiles) if lay == "NN" else by_hand(cls[kind], *tiles, layout=lay)
        compiled = compile_program(p, CUDA)
        stored = lambda A, B: (A.T.copy() if lay[0] == "T" else A, B.T.copy() if lay[1] == "T" else B)  # noqa: E731
        for m, n, k in ((256, 256, tiles[2]), (256, 512, 2 * tiles[2]), (384, 256, 320)):  # 1, 2, 10 or 5 tiles
            A = rng.integers(-8, 9, (m, k)).astype(np.float32)
            B = rng.integers(-8, 9, (k, n)).astype(np.float32)
            np.testing.assert_array_equal(runner.run(compiled, *stored(A, B)), A @ B, err_msg=f"{kind} {tiles} {lay}")
        A = rng.standard_normal((256, 256)).astype(np.float32)
        np.testing.assert_array_equal(runner.run(compiled, *stored(A, np.eye(256, dtype=np.float32))), ROUND[kind](A))
        A, B = rng.standard_normal((256, 320)).astype(np.float32), rng.standard_normal((320, 512)).astype(np.float32)
        got = runner.run(compiled, *stored(A, B)).astype(np.float64)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 2e-3
