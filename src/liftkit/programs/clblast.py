"""CLBlast/PolyBench linear algebra of seed 000 Table 1: ATAX (y = Aᵀ(A·x)) and GESUMMV
(y = α·A·x + β·B·x).

The low-level programs follow CLBlast's GEMV kernels: coalesced reads of the matrix (adjacent
work-items read adjacent addresses), partial sums in local memory, a tree reduction there.
Unlike the CLBlast reference they load float4 (what brought `gemv_gpu` to cuBLAS's speed on the
H200, docs/perf.md; Table 1 lists no vectorisation for these references).

* Row GEMV (A·x, row-major A): one work-group of `WG` work-items per row; work-item t sums the
  float4 elements t, t+WG, t+2·WG, ... of the row (coalesced), a tree in local memory finishes the
  row, one work-item writes it.
* Transposed GEMV (Aᵀ·v, the second half of ATAX): a work-group of `TR`·`TCV` work-items per block
  of `TC` = 4·TCV columns; work-item (r, c) sums float4 column group c over the rows
  r, r+TR, r+2·TR, ... (TCV adjacent work-items read a row's 64-byte run), a tree over r in
  local memory finishes it, TCV work-items write the block.

Paper input sizes (Table 1): 4K² and 8K² matrices. The default sizes here are small for the
interpreter and CPU tests.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs.gpu import multAndSumUp4, sum4
from liftkit.programs.registry import ProgramSpec

M, N = size("M"), size("N")
F4 = lit((0.0, 0.0, 0.0, 0.0), float4)
WG, WG_LOG = 128, 7  # work-items per row of the row GEMV
TCV = 4  # transposed GEMV: float4 columns per work-group (TC = 16 floats, 64-byte runs) ...
TC = 4 * TCV
TR, TR_LOG = 64, 6  # ... and row groups: TR·TCV = 256 work-items


# -- shared pieces ------------------------------------------------------------------------------
def _dot_rows(A: Any, x: Any) -> Any:
    """High level: A·x as one dot product per row."""
    return join << map(lambda row: reduce(add, 0.0) << map(mult) << zip(row, x)) << A


def _row_gemv(row_terms: Any, acc_fun: Any) -> Any:
    """One work-group's row: WG strided per-thread float4 sums of `row_terms` (an array whose
    length is a multiple of WG) with `acc_fun`, lanes added, a tree in local memory, one thread
    writes the sum."""
    partial = (join << toLocal(mapLcl(0)(lambda xs: mapSeq(sum4) << reduceSeq(acc_fun, F4) << xs))
               << transpose << split(WG) << row_terms)
    total = iterate(WG_LOG, join << mapLcl(0)(reduceSeq(add, 0.0)) << split(2)) << partial
    return join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1) << total


def _axpy4_impl(acc: Any, a: Any, v: Any) -> Any:
    v = np.asarray(v)
    return acc + a * (v[..., None] if v.ndim else v)


axpy4 = user_fun("axpy4", [("acc", float4), ("a", float4), ("v", float32)], float4,
                 "return acc + a * v;", _axpy4_impl)


def _transposed_gemv(A: Any, v: Any) -> Any:
    """Aᵀ·v for A: [[float]_N]_M, v: [float]_M, one work-group per TC columns (see the module
    docstring); returns [float]_N. The work-group is one-dimensional: work-item t = r·TCV + c,
    and the partial sums are a flat local array in the same order (iterate works on flat
    arrays)."""
    def block(cols: Any) -> Any:  # cols: [[float4]_TCV]_M, the block's columns of every row
        groups = zip(transpose << split(TR) << cols, transpose << split(TR) << v)  # by r
        seqs = join << map(lambda g: map(lambda col: zip(col, g[1])) << transpose << g[0]) << groups
        partial = join << toLocal(mapLcl(0)(reduceSeq(lambda acc, av: axpy4(acc, av[0], av[1]), F4))) << seqs
        # one tree step adds row groups 2k and 2k+1: [2n·TCV] -> [n·TCV]
        step = (join << mapLcl(0)(reduceSeq(add4, F4)) << join
                << map(compose(transpose, split(TCV))) << split(2 * TCV))
        return toGlobal(mapLcl(0)(id4)) << iterate(TR_LOG, step) << partial

    return (asScalar << join << mapWrg(0)(block) << transpose << map(split(TCV))
            << map(asVector(4)) << A)


# -- ATAX ---------------------------------------------------------------------------------------
def atax() -> Any:
    """A: [[float]_N]_M (M rows of N), x: [float]_N; y = Aᵀ·(A·x): [float]_N."""
    return fun([float32[N][M], float32[N]], lambda A, x:
               let(_dot_rows(A, x), lambda tmp:
                   join << map(lambda col: reduce(add, 0.0) << map(mult) << zip(col, tmp))
                   << transpose << A))


def atax_low() -> Any:
    """Two kernels, as CLBlast's two GEMV calls: tmp = A·x (a work-group per row), then
    y = Aᵀ·tmp (a work-group of 256 per 16 columns)."""
    return fun([float32[N][M], float32[N]], lambda A, x:
               let(join << mapWrg(0)(lambda row: _row_gemv(
                       zip(asVector(4) << row, asVector(4) << x), multAndSumUp4)) << A,
                   lambda tmp: _transposed_gemv(A, tmp)))


def _atax_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    m, n = s["M"], s["N"]
    return [rng.uniform(-1, 1, (m, n)).astype(np.float32), rng.uniform(-1, 1, n).astype(np.float32)]


def _atax_ref(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    a = A.astype(np.float64)
    return (a.T @ (a @ x.astype(np.float64))).astype(np.float32)


def _atax_xp(xp: Any, A: Any, x: Any) -> Any:
    return A.T @ (A @ x)


# -- GESUMMV ------------------------------------------------------------------------------------
def _axpby_dot_impl(acc: Any, a: Any, b: Any, x: Any, alpha: Any, beta: Any) -> Any:
    al, be = (np.asarray(s)[..., None] if np.ndim(s) else s for s in (alpha, beta))
    return acc + (al * a + be * b) * x


axpby_dot4 = user_fun("axpbyDot4", [("acc", float4), ("a", float4), ("b", float4), ("x", float4),
                                    ("alpha", float32), ("beta", float32)], float4,
                     "return acc + (alpha * a + beta * b) * x;", _axpby_dot_impl)


def gesummv() -> Any:
    """A, B: [[float]_N]_M, x: [float]_N, α, β; y = α·A·x + β·B·x: [float]_M."""
    return fun([float32[N][M], float32[N][M], float32[N], float32, float32],
               lambda A, B, x, alpha, beta:
               map(add) << zip(map(lambda v: mult(alpha, v)) << _dot_rows(A, x),
                               map(lambda v: mult(beta, v)) << _dot_rows(B, x)))


def gesummv_low() -> Any:
    """CLBlast-style row GEMV over both matrices in one kernel: a work-group per row, each
    work-item accumulates (α·a + β·b)·x over its strided float4 elements of the two rows (one pass
    over A and B, no intermediate vector; CLBlast's GESUMMV is two GEMV calls), a tree in local
    memory, one write per row."""
    return fun([float32[N][M], float32[N][M], float32[N], float32, float32],
               lambda A, B, x, alpha, beta:
               join << mapWrg(0)(lambda ab: _row_gemv(
                   zip(asVector(4) << ab[0], asVector(4) << ab[1], asVector(4) << x),
                   lambda acc, t: axpby_dot4(acc, t[0], t[1], t[2], alpha, beta)))
               << zip(A, B))


def _gesummv_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    m, n = s["M"], s["N"]
    return [rng.uniform(-1, 1, (m, n)).astype(np.float32), rng.uniform(-1, 1, (m, n)).astype(np.float32),
            rng.uniform(-1, 1, n).astype(np.float32), np.float32(rng.uniform(0.5, 2)),
            np.float32(rng.uniform(0.5, 2))]


def _gesummv_ref(A: np.ndarray, B: np.ndarray, x: np.ndarray, alpha: Any, beta: Any) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (float(alpha) * (A.astype(np.float64) @ x64)
            + float(beta) * (B.astype(np.float64) @ x64)).astype(np.float32)


def _gesummv_xp(xp: Any, A: Any, B: Any, x: Any, alpha: Any, beta: Any) -> Any:
    return alpha * (A @ x) + beta * (B @ x)


XP_REFERENCES: dict[str, Callable[..., Any]] = {"atax": _atax_xp, "gesummv": _gesummv_xp}

SPECS = [
    ProgramSpec("atax", "ATAX: y = Aᵀ·(A·x) (PolyBench, CLBlast)", "seed 000 Table 1 (CLBlast)",
                atax, _atax_inputs, _atax_ref, {"M": 48, "N": 64}, rtol=1e-3, atol=1e-3,
                size_rule="M, N any (≥ 1)", tags=("table1",)),
    ProgramSpec("atax_low", "ATAX as two GEMV kernels with local-memory trees (row, then transposed)",
                "seed 000 Table 1 (CLBlast)", atax_low, _atax_inputs, _atax_ref,
                {"M": 128, "N": 512}, level="low", rtol=1e-3, atol=1e-3,
                size_rule=f"N a multiple of {4 * WG}, M a multiple of {TR}",
                tags=("table1", "gpu")),
    ProgramSpec("gesummv", "GESUMMV: y = α·A·x + β·B·x (PolyBench, CLBlast)",
                "seed 000 Table 1 (CLBlast)", gesummv, _gesummv_inputs, _gesummv_ref,
                {"M": 48, "N": 64}, rtol=1e-3, atol=1e-3, size_rule="M, N any (≥ 1)",
                tags=("table1",)),
    ProgramSpec("gesummv_low", "GESUMMV, one fused row-GEMV kernel over A and B, local-memory tree",
                "seed 000 Table 1 (CLBlast)", gesummv_low, _gesummv_inputs, _gesummv_ref,
                {"M": 48, "N": 512}, level="low", rtol=1e-3, atol=1e-3,
                size_rule=f"N a multiple of {4 * WG}", tags=("table1", "gpu")),
]
