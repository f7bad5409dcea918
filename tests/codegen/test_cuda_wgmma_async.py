"""reduceWgmmaAsyncTF32 / reduceWgmmaAsyncTF32Z and reduceWgmmaPair… (2-block clusters sharing B)
(ir/patterns/cuda.py, codegen/cuda_wgmma_async.py):
meaning against the high-level product, type errors in words and printing; the data path of the
generated kernel checked element by element without a GPU: the C address expressions the kernel
emits (evaluated here for every thread) put each 16-byte piece cp.async copies where the tensor
cores' descriptors (A) and the lanes' fragment loads (B) read it, every byte once, the fragment
loads free of bank conflicts; the accumulators' columns of C; the CUDA C and NVRTC's sm_90a
build (no register spills, no serialised warpgroup MMA); the refusals; with a GPU (`gpu` marker)
the kernels bit for bit against the interpreter."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.arith import Var, cst
from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.cuda_wgmma import ROW_BYTES, descriptor, tensor_core_address
from liftkit.codegen.cuda_wgmma_async import (_a_addr, _b_addr, a_pieces, b_column, b_pieces,
                                              fragment_addr, plan_error)
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


def low(kind: str = "tf32z", tm: int = 256, tn: int = 128, tk: int = 32, warps: int = 8,
        stages: int = 4, copy: str = "cp.async") -> Any:
    return tensor_core_mm(kind, tm, tn, tk, warps, stages, wgmma=True, copy=copy).final


# ---------------------------------------------------------------------------------------------
# meaning, types, printing


@pytest.mark.parametrize("kind", ["tf32", "tf32z"])
def test_means_the_product_of_the_rounded_operands(kind: str) -> None:
    rng = np.random.default_rng(4)
    p = low(kind)
    A, B = rng.integers(-8, 9, (256, 96)).astype(np.float32), rng.integers(-8, 9, (96, 256)).astype(np.float32)
    np.testing.assert_array_equal(interpret(p, A, B), A @ B)
    A, B = rng.standard_normal((256, 64)).astype(np.float32), rng.standard_normal((64, 128)).astype(np.float32)
    want = ROUND[kind](A).astype(np.float64) @ ROUND[kind](B).astype(np.float64)
    np.testing.assert_allclose(interpret(p, A, B), want, rtol=1e-5, atol=1e-4)
    assert show(parse_program(show(p))) == show(p)
    assert ("reduceWgmmaAsyncTF32Z 8 4" in show(p)) == (kind == "tf32z")


def test_type_errors_in_words() -> None:
    from liftkit.ir.typecheck import check_program as check

    with pytest.raises(LiftTypeError, match="from 3 to 6"):
        check(by_hand(reduceWgmmaAsyncTF32Z, 256, 128, 32, 8, 2))
    with pytest.raises(LiftTypeError, match="multiple of 4"):
        check(by_hand(reduceWgmmaAsyncTF32Z, 256, 128, 32, 6, 4))
    with pytest.raises(LiftTypeError, match="one or two 64-row blocks per warpgroup"):
        check(by_hand(reduceWgmmaAsyncTF32Z, 128, 512, 32, 8, 4))  # four blocks per warpgroup
    with pytest.raises(LiftTypeError, match="up to 256"):
        check(by_hand(reduceWgmmaAsyncTF32Z, 512, 128, 32, 8, 4))
    assert plan_error(256, 256, 32, 8, 4) is not None  # 256 accumulators per lane
    assert "shared memory" in plan_error(256, 128, 32, 8, 5)  # type: ignore[operator]


# ---------------------------------------------------------------------------------------------
# the kernel's data path, from the C expressions it emits


def _c(expr: str, **names: int) -> int:
    """A generated C index expression (non-negative ints: / is floor division) evaluated."""
    text = expr.replace("(unsigned)", "").replace("u ", " ").replace("/", "//")
    text = re.sub(r"(\d+)u\b", r"\1", text)
    return int(eval(text, {}, dict(names)))  # noqa: S307 - our own arithmetic


def _at(e: Any, tid: int) -> int:
    v = e.substitute({"lk_tid": cst(tid)})
    assert v.is_constant
    return v.value


@pytest.mark.parametrize("m,n,k,warps,pair", [(256, 128, 32, 8, False), (128, 256, 32, 8, False),
                                              (128, 128, 32, 4, False), (128, 128, 32, 8, False),
                                              (256, 64, 32, 4, False), (64, 128, 64, 4, False),
                                              (128, 256, 32, 8, True), (256, 128, 32, 8, True),
                                              (64, 128, 64, 4, True)])
def test_copies_land_where_the_products_read(m: int, n: int, k: int, warps: int, pair: bool) -> None:
    """Every element of A's tile reaches the byte the descriptor of its k-step makes the tensor
    cores read for (row, k); every element of B's tile reaches the byte a lane's fragment load
    reads for the fragment row and k the wgmma register layout gives that lane (with a pair:
    in the shared memory of the block that copied that k-row); each staged byte written once;
    each 8-lane (16-byte loads) or 16-lane (8-byte) phase of the fragment loads touches every
    bank at most once; the lanes' columns are the tile's columns once each."""
    threads, groups = 32 * warps, warps // 4
    nb = n // (64 * groups)
    tid = Var("lk_tid", 0, threads)
    b_base = m * k * 4
    where_a: dict[tuple[int, int], int] = {}
    where_b: dict[tuple[int, int], int] = {}
    owner: dict[int, int] = {}  # k-row of B → the block that copies it
    for t in range(threads):
        for row, ch in a_pieces(m, k, threads, tid):
            r, c = _at(row, t), _at(ch, t)
            addr = _c(_a_addr("0", cst(r), cst(c), m))
            for w in range(4):
                where_a[r, 4 * c + w] = addr + 4 * w
        for rank in (0, 1) if pair else (0,):
            for row, ch in b_pieces(n, k // 2 if pair else k, threads, tid):
                r, c = _at(row, t) + rank * k // 2, _at(ch, t)
                owner[r] = rank
                addr = _c(_b_addr("0", b_base, str(r), str(c), n))
                for w in range(4):
                    where_b[4 * c + w, r] = addr + 4 * w  # (column of C, k)
    if pair:
        assert all(owner[r] == (r // 8 * 8) // (k // 2) for r in range(k))  # the fragments' owner
    assert len(where_a) == m * k and len(where_b) == n * k
    assert sorted(where_a.values()) == list(range(0, m * k * 4, 4))
    assert sorted(where_b.values()) == list(range(b_base, b_base + n * k * 4, 4))
    for kk in range(k // 8):
        atom, step = divmod(kk * 8, 32)
        desc = descriptor(atom * m * ROW_BYTES + step * 4)
        for r in range(m):
            for kq in range(8):
                assert tensor_core_address(desc, r, kq) == where_a[r, 8 * kk + kq]
    cols = set()
    for wg in range(groups):
        for w4 in range(4):
            banks: dict[tuple[int, int], list[set[int]]] = {}
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                col = wg * 64 * nb + w4 * 16 * nb + 2 * nb * g
                for kk in range(k // 8):
                    for hk in range(2):
                        addr = _c(fragment_addr("0", b_base, n, nb, 8 * kk + 4 * hk, "t", "col"), t=t, col=col)
                        phase = lane // (8 if nb == 2 else 16)
                        slots = banks.setdefault((kk, hk), [set() for _ in range(4)])[phase]
                        for x in range(2 * nb):  # word x: block x/2, fragment row g + 8(x mod 2)
                            fb, h = divmod(x, 2)
                            assert col + x == b_column(wg, w4, g, fb, h, nb)
                            assert where_b[col + x, 8 * kk + 4 * hk + t] == addr + 4 * x
                            bank = ((addr + 4 * x) // 4) % 32
                            assert bank not in slots
                            slots.add(bank)
                            cols.add(col + x)
    assert cols == set(range(n))


# ---------------------------------------------------------------------------------------------
# CUDA C, NVRTC, refusals


def test_cuda_code_and_sm90a_build_without_spills_or_serialisation(compile_cuda: Any) -> None:
    """The pairs' CUDA code: cp.async copies, the cluster's release/acquire barriers, the rounding
    or truncation of the landed tiles; sm_90a builds without spills or serialised wgmma. The
    one-block form is refused in words: its kernel gave wrong products on the H100 for some
    tilings (results/final22/runB/wgmma.log)."""
    for p in (low("tf32z"), low("tf32", 128, 256, 32, 8, 3), low("tf32z", 128, 128, 32, 4, 3)):
        with pytest.raises(CodegenError, match="gave wrong products on the H100.*reduceWgmmaPair"):
            compile_program(p, CUDA)
    pair = compile_program(low("tf32z", 128, 256, 32, 8, 3, copy="pair"), CUDA).source
    assert "cp.async.cg.shared.global" in pair and "wgmma.mma_async.sync.aligned" in pair
    assert "0x1000u" not in pair and "0xffffe000u" in pair  # truncation, no rounding carry
    assert "__cluster_dims__(1, 2, 1) KERNEL(" in pair and "ld.shared::cluster.v4.b32" in pair
    assert "barrier.cluster.arrive.relaxed" not in pair and "__syncthreads" not in pair
    assert pair.count("barrier.cluster.arrive.release.aligned") == 3  # tile 0, the next tiles, before leaving
    assert "fence.proxy.async.shared::cta" in pair
    rounding = compile_program(low("tf32", 128, 256, 32, 8, 4, copy="pair"), CUDA).source
    assert "0x1000u" in rounding and "st.shared.v4.b32" in rounding
    from liftkit.backends.cuda import NVRTCError

    for p in (low("tf32z", 128, 256, 32, 8, 3, copy="pair"), low("tf32", 128, 256, 32, 8, 4, copy="pair"),
              low("tf32z", 128, 128, 32, 4, 3, copy="pair")):
        for kern in compile_program(p, CUDA).kernels:
            out = compile_cuda(kern.source, "sm_90a", ["-Xptxas=-v", *kern.build_options], name=f"{kern.name}.cu")
            assert "wgmma.mma_async" in out.ptx and "cp.async.cg.shared.global" in out.ptx
            assert " 0 bytes spill stores" in out.log and "C75" not in out.log, out.log
    kern = compile_program(low("tf32z", 128, 256, 32, 8, 3, copy="pair"), CUDA).kernels[0]
    with pytest.raises(NVRTCError, match="reduceWgmmaPairTF32Z needs a Hopper GPU"):
        compile_cuda(kern.source, "sm_80", kern.build_options, name="old.cu")


def test_refused_on_opencl_and_for_layouts_it_cannot_copy() -> None:
    with pytest.raises(CodegenError, match=r"^reduceWgmmaAsyncTF32 needs the CUDA backend on a Hopper GPU"):
        compile_program(low("tf32"))
    with pytest.raises(CodegenError, match="A must be contiguous along k and B along its rows"):
        compile_program(by_hand(reduceWgmmaAsyncTF32Z, 128, 128, 32, 8, 3, layout="TN"), CUDA)
    with pytest.raises(CodegenError, match=r"runs on 8 warps \(256 threads\), but the work-group has 128"):
        compile_program(low(), CompileOptions(dialect="cuda", local_size=(128,)))
    with pytest.raises(CodegenError, match=r"^reduceWgmmaPairTF32Z needs the CUDA backend on a Hopper GPU"):
        compile_program(low("tf32z", 128, 256, 32, 8, 4, copy="pair"))
    A, B = Param("A", float32[64][384]), Param("B", float32[128][64])  # three row tiles: no pairs
    tiles = lambda t: compose(map(compose(transpose, map(split(32)))), split(t))  # noqa: E731
    body = join << mapWrg(1)(lambda ar: map(join) << transpose << mapWrg(0)(
        lambda bc: join << reduceWgmmaPairTF32Z(8, 3, lambda p: p, 0.0) << zip(ar, bc)) << tiles(128)
        << transpose << B) << tiles(128) << A
    with pytest.raises(CodegenError, match="3 work-groups along dimension 1 cannot pair up"):
        compile_program(Lambda((A, B), body), CUDA)
    with pytest.raises(CodegenError, match=r"the number of row tiles \(M/128\) must be known even"):
        compile_program(by_hand(reduceWgmmaPairTF32Z, 128, 256, 32, 8, 3), CUDA)
    from liftkit.codegen.constraints import divisibility_checks  # the derivation pairs them: checked at launch

    checks = divisibility_checks(low("tf32z", 128, 256, 32, 8, 3, copy="pair"))
    assert any(d.what == "split 2" and str(d.length) == "M/128" for d in checks)


# ---------------------------------------------------------------------------------------------
# on a GPU


@pytest.mark.gpu
def test_on_the_gpu_matches_the_interpreter() -> None:
    """Integer-valued inputs exact (one tile, two, many; both warpgroup counts, one and two
    blocks per warpgroup, 3-6 stages); B = I: C is exactly the rounded A, bit for bit (the
    truncating kernel leaves A's bits to the tensor cores); normal data within TF32's
    tolerance of float64."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices or devices[0].compute_capability < (9, 0):
        pytest.skip("no Hopper GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    rng = np.random.default_rng(10)
    variants = [("tf32z", (128, 256, 32, 8, 3), "pair"), ("tf32", (128, 256, 32, 8, 4), "pair"),
                ("tf32z", (128, 128, 32, 4, 3), "pair")]  # (the one-block form is refused)
    for kind, tiles, *copy in variants:
        compiled = compile_program(low(kind, *tiles, copy=(copy or ["cp.async"])[0]), CUDA)
        for m, n, k in ((256, 256, tiles[2]), (256, 512, 2 * tiles[2]), (512, 256, 320)):
            A = rng.integers(-8, 9, (m, k)).astype(np.float32)
            B = rng.integers(-8, 9, (k, n)).astype(np.float32)
            np.testing.assert_array_equal(runner.run(compiled, A, B), A @ B, err_msg=f"{kind} {tiles}")
        A = rng.standard_normal((256, 256)).astype(np.float32)
        np.testing.assert_array_equal(runner.run(compiled, A, np.eye(256, dtype=np.float32)), ROUND[kind](A))
        B = rng.standard_normal((256, 256)).astype(np.float32)
        np.testing.assert_array_equal(runner.run(compiled, np.eye(256, dtype=np.float32), B), ROUND[kind](B))
        A, B = rng.standard_normal((256, 320)).astype(np.float32), rng.standard_normal((320, 512)).astype(np.float32)
        got = runner.run(compiled, A, B).astype(np.float64)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 2e-3
