"""OpenCL-level programs for the code generator (issue: GEMV with local memory, naive and tiled
matrix multiplication, 1D stencils with each boundary, 2D convolution with local tiles, N-Body
with private memory and float4, MD with neighbour gathers). Each reuses the NumPy reference of
its high-level counterpart."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs import apps, blas
from liftkit.programs.registry import ProgramSpec

# ruff: noqa: F405
N, M, K = size("N"), size("M"), size("K")
# float32 sums of K products of numbers in [-1, 1): the rounding error grows with K (about
# 1e-4 absolute at K = 4096, where cuBLAS differs from a float64 reference by as much)
MM_ATOL = 1e-3
TS = 16  # matrix-multiplication and convolution tile size
WG = 128  # work-group size of the GEMV reduction


def gemv_fused() -> Any:
    """CLBlast-style GEMV: one work-group per row; 128 threads each sum a strided slice of the
    row (coalesced: transpose ∘ split 128 gives thread t elements t, t+128, ...) into local memory, a tree reduction finishes it, and one
    thread writes α·sum + β·y."""
    def row(ry: Any, x: Any, alpha: Any, beta: Any) -> Any:
        partial = (join << toLocal(mapLcl(0)(reduceSeq(multAndSumUp, 0.0)))
                   << transpose << split(WG) << zip(ry[0], x))
        total = iterate(7, join << mapLcl(0)(reduceSeq(add, 0.0)) << split(2)) << partial
        return join << toGlobal(mapLcl(0)(mapSeq(lambda s: add(mult(alpha, s), mult(beta, ry[1])))))\
            << split(1) << total

    return fun([float32[M][N], float32[M], float32[N], float32, float32], lambda A, x, y, alpha, beta:
               join << mapWrg(0)(lambda ry: row(ry, x, alpha, beta)) << zip(A, y))


def mm_naive() -> Any:
    """One work-item per output element (2D mapGlb)."""
    return fun([float32[K][M], float32[N][K]], lambda A, B:
               mapGlb(1)(lambda rowA: join << mapGlb(0)(
                   lambda colB: reduceSeq(multAndSumUp, 0.0) << zip(rowA, colB)) << transpose << B) << A)


def mm_tiled() -> Any:
    """16×16 tiles of A and B staged in local memory by a 16×16 work-group; each thread
    accumulates one output element in local memory across the K/16 tile pairs."""
    a_tiles = compose(map(compose(transpose, map(split(TS)))), split(TS))
    b_tiles = compose(transpose, map(transpose), map(map(split(TS))), split(TS))
    zero = lit(np.zeros((TS, TS), np.float32), float32[TS][TS])
    copy2d = lambda: mapLcl(1)(mapLcl(0)(id))  # noqa: E731

    def step(acc: Any, pair: Any) -> Any:
        # lA: [[float]_16 (k)]_16 (rows), lB: [[float]_16 (cols)]_16 (k), both in local memory
        return let(toLocal(copy2d()) << pair[0], toLocal(copy2d()) << pair[1], lambda lA, lB:
                   mapLcl(1)(lambda accRow_rowA: join << mapLcl(0)(
                       lambda a_colB: reduceSeq(multAndSumUp, a_colB[0]) << zip(accRow_rowA[1], a_colB[1]))
                       << zip(accRow_rowA[0], transpose << lB)) << zip(acc, lA))

    return fun([float32[K][M], float32[N][K]], lambda A, B:
               untile() << mapWrg(1)(lambda aRows: mapWrg(0)(lambda bCols:
                   toGlobal(copy2d()) << join << reduceSeq(step, toLocal(copy2d()) << zero)
                   << zip(aRows, bCols)) << b_tiles << B) << a_tiles << A)


def stencil1d(boundary: str) -> Any:
    return lambda: fun([float32[N]], lambda x: join << mapGlb(0)(reduceSeq(add, 0.0))
                       << slide(3, 1) << pad(1, 1, boundary) << x)


def conv2d(ts: tuple[int, int] = (32, 4)) -> Any:
    """3×3 convolution, NVIDIA-SDK style: a work-group stages a (TY+2)×(TX+2) tile of the
    clamped image (ts = (TX, TY) outputs) in local memory, rows of TX+2 read coalesced, then each
    of its TX×TY compute work-items combines its 3×3 window with the weights in a fully unrolled
    loop (constant local offsets and weight indices). The work-group is the copy's shape
    ((TX+2)×(TY+2) work-items: (34, 6) by default, a whole warp per image row segment; a 16×16
    output tile would need 18×18 = 324 > 256 work-items and get a halved, warp-unfriendly shape)."""
    tx, ty = ts
    return fun([float32[N][M], float32[3][3]], lambda img, w:
               untile() << mapWrg(1)(mapWrg(0)(lambda tile:
                   toGlobal(mapLcl(1)(lambda row: join << mapLcl(0)(
                       lambda win: reduceSeqUnroll(multAndSumUp, 0.0) << zip(join << win, join << w)) << row))
                   << slide2D(3, 1) << toLocal(mapLcl(1)(mapLcl(0)(id))) << tile))
               << map(transpose) << slide(ty + 2, ty) << map(slide(tx + 2, tx)) << pad2D(1, 1, "clamp") << img)


def nbody_private() -> Any:
    """AMD-SDK style N-Body: one work-item per particle, its position in private memory, float4."""
    return fun([float4[N], float4[N], float32, float32], lambda pos, vel, espSqr, dt:
               join << mapGlb(0)(lambda pv: toGlobal(mapSeq(lambda acc: apps.update(pv[0], pv[1], dt, acc)))
                                 << reduceSeq(lambda acc, q: apps.calcAcc(acc, toPrivate(id_of(float4))(pv[0]), q, espSqr),
                                              apps.F4_ZERO) << pos) << zip(pos, vel))


def md_low() -> Any:
    """SHOC MD: one work-item per particle, neighbours gathered by index from global memory."""
    return fun([float4[N], int32[M][N], float32, float32, float32], lambda ps, nbhs, cutsq, lj1, lj2:
               join << mapGlb(0)(lambda p_ns: reduceSeq(
                   lambda f, nid: apps.updateF(f, p_ns[0], at(ps, nid), cutsq, lj1, lj2), apps.F4_ZERO)
                   << p_ns[1]) << zip(ps, nbhs))


def blackscholes_low() -> Any:
    """One work-item per option (mapGlb): a coalesced read of its random number and a coalesced
    write of its (call, put) pair; the same user function as the high-level program."""
    return fun([float32[N]], lambda s: mapGlb(0)(apps.BSComputation) << s)


def _mm_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    return [rng.uniform(-1, 1, (s["M"], s["K"])).astype(np.float32),
            rng.uniform(-1, 1, (s["K"], s["N"])).astype(np.float32)]


def _mm_ref(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return (A.astype(np.float64) @ B).astype(np.float32)


def _stencil_ref(mode: str):  # type: ignore[no-untyped-def]
    np_mode = {"clamp": "edge", "wrap": "wrap", "mirror": "symmetric"}[mode]
    return lambda x: np.lib.stride_tricks.sliding_window_view(
        np.pad(x.astype(np.float64), 1, mode=np_mode), 3).sum(-1).astype(np.float32)


def _vec(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    return [rng.uniform(-1, 1, s["N"]).astype(np.float32)]


SPECS = [
    ProgramSpec("gemv_fused", "GEMV, one work-group per row, local-memory tree reduction",
                "seed 000 Table 1 (CLBlast)", gemv_fused, blas._gemv_inputs, blas._gemv_ref,
                {"N": 32, "M": 256}, level="low", rtol=1e-3, atol=1e-3, size_rule="M a multiple of 128"),
    ProgramSpec("mm_naive", "matrix multiplication, one work-item per element (2D mapGlb)",
                "seed 000 Table 1", mm_naive, _mm_inputs, _mm_ref, {"M": 32, "K": 48, "N": 40},
                level="low", rtol=1e-4, atol=MM_ATOL),
    ProgramSpec("mm_tiled", "matrix multiplication with 16×16 local-memory tiles",
                "seed 000 Table 1 (NVIDIA style)", mm_tiled, _mm_inputs, _mm_ref,
                {"M": 32, "K": 48, "N": 64}, level="low", rtol=1e-4, atol=MM_ATOL,
                size_rule="M, N, K multiples of 16"),
    *[ProgramSpec(f"stencil1d_{b}", f"3-point stencil with {b} boundary (slide, pad)", "seed 000 §3.2",
                  stencil1d(b), _vec, _stencil_ref(b), {"N": 1000}, level="low")
      for b in ("clamp", "wrap", "mirror")],
    ProgramSpec("conv2d", "3×3 convolution with 6×34 local-memory tiles (slide2D)",
                "seed 000 Table 1 (NVIDIA SDK)", conv2d, apps._conv_inputs, apps._conv_ref,
                {"M": 32, "N": 64}, level="low", rtol=1e-4, atol=1e-4,
                size_rule="M a multiple of 4, N a multiple of 32"),
    ProgramSpec("nbody_private", "N-Body, one work-item per particle, private memory, float4",
                "seed 000 Table 1 (AMD SDK)", nbody_private, apps._nbody_inputs, apps._nbody_ref,
                {"N": 256}, level="low", rtol=1e-4, atol=1e-4),
    ProgramSpec("md_low", "MD, one work-item per particle, neighbour-index gathers",
                "seed 000 Table 1 (SHOC)", md_low, apps._md_inputs, apps._md_ref, {"N": 512, "M": 16},
                level="low", rtol=1e-3, atol=1e-3),
    ProgramSpec("blackscholes_low", "BlackScholes, one work-item per option",
                "seed 002 Fig. 13 (NVIDIA SDK)", blackscholes_low,
                next(s for s in apps.SPECS if s.name == "blackscholes").make_inputs, apps._bs_ref,
                {"N": 4096}, level="low", rtol=1e-3, atol=2e-3,
                size_rule="N any (≥ 1)", tags=("table1", "gpu")),
]
