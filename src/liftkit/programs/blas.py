"""Linear-algebra programs of the seeds: scal, asum, dot, gemv (seed 002 Fig. 13, seed 004 Fig. 5),
the hand-derived asum variants (seed 004 Fig. 9), vector scaling (seed 004 Fig. 2b) and the
partial dot product (seed 000 Listing 1)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs.registry import ProgramSpec

N, M = size("N"), size("M")
F4_ZERO = lit((0.0, 0.0, 0.0, 0.0), float4)


def _vec(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, n).astype(np.float32)


# -- high-level BLAS (seed 002 Fig. 13) ----------------------------------------------------------
def scal() -> Any:
    return fun([float32, float32[N]], lambda a, x: map(lambda v: mult(a, v)) << x)


def asum() -> Any:
    return fun([float32[N]], lambda x: reduce(add, 0.0) << map(abs) << x)


def dot() -> Any:
    return fun([float32[N], float32[N]], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))


def gemv() -> Any:
    """y = α·A·x + β·y, built from dot and scal as in the paper."""
    def body(A: Any, x: Any, y: Any, alpha: Any, beta: Any) -> Any:
        ax = join << map(lambda row: map(lambda d: mult(alpha, d))
                         << reduce(add, 0.0) << map(mult) << zip(row, x)) << A
        by = map(lambda v: mult(beta, v)) << y
        return map(add) << zip(ax, by)

    return fun([float32[M][N], float32[M], float32[N], float32, float32], body)


def _gemv_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    n, m = s["N"], s["M"]
    return [rng.uniform(-1, 1, (n, m)).astype(np.float32), _vec(m, rng), _vec(n, rng),
            np.float32(rng.uniform(0.5, 2)), np.float32(rng.uniform(0.5, 2))]


# -- device-specific asum derivations (seed 004 Fig. 9) ------------------------------------------
def asum_nvidia() -> Any:
    """(a) NVIDIA: coalesced loads (reorderStride), per-thread sums in local memory, a tree
    reduction by `iterate` in local memory, one result per work-group; final sum sequential."""
    return fun([float32[N]], lambda x:
               reduceSeq(add, 0.0) << join << mapWrg(0)(
                   join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1)
                   << iterate(7, join << mapLcl(0)(reduceSeq(add, 0.0)) << split(2))
                   << join << toLocal(mapLcl(0)(reduceSeq(absAndSumUp, 0.0))) << split(2048)
                   << reorderStride(128)
               ) << split(262144) << x)


def asum_amd() -> Any:
    """(b) AMD: as NVIDIA's, vectorised by 4."""
    return fun([float32[N]], lambda x:
               reduceSeq(add, 0.0) << asScalar << join << mapWrg(0)(
                   join << toGlobal(mapLcl(0)(mapSeq(id4))) << split(1)
                   << iterate(8, join << mapLcl(0)(reduceSeq(add4, F4_ZERO)) << split(2))
                   << join << toLocal(mapLcl(0)(reduceSeq(absAndSumUp4, F4_ZERO))) << split(2)
                   << reorderStride(256)
               ) << split(512) << asVector(4) << x)


def asum_intel() -> Any:
    """(c) Intel CPU: vectorised, one work-item per work-group, no local memory."""
    return fun([float32[N]], lambda x:
               reduceSeq(add, 0.0) << asScalar << join << mapWrg(0)(
                   join << mapLcl(0)(reduceSeq(absAndSumUp4, F4_ZERO)) << split(8192)
               ) << split(8192) << asVector(4) << x)


# -- vector scaling (seed 004 Fig. 2b) ----------------------------------------------------------
mul3 = user_fun("mul3", [("x", int32)], int32, "return x * 3;", lambda x: x * 3)
mul3_4 = mul3.vectorize(4)


def vector_scal() -> Any:
    return fun([int32[N]], lambda x:
               join << mapWrg(0)(asScalar << mapLcl(0)(mul3_4) << asVector(4)) << split(1024) << x)


# -- partial dot product (seed 000 Listing 1) ---------------------------------------------------
def partial_dot() -> Any:
    return fun([float32[N], float32[N]], lambda x, y:
               join << mapWrg(0)(
                   join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1)
                   << iterate(6, join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(add, 0.0))
                              << split(2))
                   << join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(multAndSumUp, 0.0))
                   << split(2)
               ) << split(128) << zip(x, y))


def _asum_ref(x: np.ndarray) -> np.ndarray:
    return np.array([np.abs(x.astype(np.float64)).sum()], dtype=np.float32)


def _one_vec(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    return [_vec(s["N"], rng)]


def _two_vecs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    return [_vec(s["N"], rng), _vec(s["N"], rng)]


def _gemv_ref(A: np.ndarray, x: np.ndarray, y: np.ndarray, a: Any, b: Any) -> np.ndarray:
    return (a * (A.astype(np.float64) @ x) + b * y).astype(np.float32)


def _partial_dot_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x.astype(np.float64) * y).reshape(-1, 128).sum(axis=1).astype(np.float32)


SPECS = [
    ProgramSpec("scal", "vector scaling a·x", "seed 002 Fig. 13", scal,
                lambda s, rng: [np.float32(rng.uniform(-2, 2)), _vec(s["N"], rng)],
                lambda a, x: (a * x).astype(np.float32), {"N": 4096}),
    ProgramSpec("asum", "sum of absolute values", "seed 002 Fig. 13", asum, _one_vec, _asum_ref,
                {"N": 4096}),
    ProgramSpec("dot", "dot product", "seed 002 Fig. 13", dot, _two_vecs,
                lambda x, y: np.array([x.astype(np.float64) @ y], dtype=np.float32), {"N": 4096}),
    ProgramSpec("gemv", "matrix-vector product α·A·x + β·y", "seed 002 Fig. 13", gemv,
                _gemv_inputs, _gemv_ref, {"N": 64, "M": 128}),
    ProgramSpec("asum_nvidia", "asum derived for NVIDIA GPUs", "seed 004 Fig. 9a", asum_nvidia,
                _one_vec, _asum_ref, {"N": 262144}, level="low", rtol=1e-3,
                size_rule="N a multiple of 262144"),
    ProgramSpec("asum_amd", "asum derived for AMD GPUs (float4)", "seed 004 Fig. 9b", asum_amd,
                _one_vec, _asum_ref, {"N": 4096}, level="low", rtol=1e-3,
                size_rule="N a multiple of 2048"),
    ProgramSpec("asum_intel", "asum derived for Intel CPUs (float4, one thread per group)",
                "seed 004 Fig. 9c", asum_intel, _one_vec, _asum_ref, {"N": 65536}, level="low",
                rtol=1e-3, size_rule="N a multiple of 32768"),
    ProgramSpec("vector_scal", "vectorised scaling by 3 (int4)", "seed 004 Fig. 2b", vector_scal,
                lambda s, rng: [rng.integers(-1000, 1000, s["N"]).astype(np.int32)],
                lambda x: (x * 3).astype(np.int32), {"N": 4096}, level="low",
                size_rule="N a multiple of 1024"),
    ProgramSpec("partial_dot", "partial dot product: one sum per 128 elements", "seed 000 Listing 1",
                partial_dot, _two_vecs, _partial_dot_ref, {"N": 4096}, level="low",
                size_rule="N a multiple of 128"),
]
