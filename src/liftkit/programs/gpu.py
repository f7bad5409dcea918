"""Hand-chosen OpenCL-level variants of scal, asum, dot and gemv for GPUs (the performance smoke
test of the code generator; the exploration of a later issue searches for such variants).

Choices: float4 loads (asVector 4), coalesced strided access per thread (reorderStride /
transpose ∘ split), per-thread sequential sums, a tree reduction in local memory, and one
partial result per work-group summed by a second one-work-item kernel."""

from __future__ import annotations

from typing import Any

from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs import blas
from liftkit.programs.registry import ProgramSpec

# ruff: noqa: F405
N, M = size("N"), size("M")
F4 = lit((0.0, 0.0, 0.0, 0.0), float4)
LS = 256  # work-group size
# float4 elements each thread sums before the tree reduction: the best of the H200 sweep in
# docs/perf.md (asum 64, dot 32); explicit unrolling did not help there
PER_THREAD = {"asum": 64, "dot": 32}
SIZE_RULE = 4 * LS * LS * 64  # N must be a multiple of this for both

scale4 = user_fun("scale4", [("a", float32), ("v", float4)], float4, "return a * v;",
                  lambda a, v: _scale(a, v))
sum4 = user_fun("sum4", [("v", float4)], float32, "return v.x + v.y + v.z + v.w;",
                lambda v: v.sum(axis=-1, dtype=v.dtype))
multAndSumUp4 = user_fun("multAndSumUp4", [("acc", float4), ("x", float4), ("y", float4)], float4,
                         "return acc + x * y;", lambda acc, x, y: acc + x * y)


def _scale(a: Any, v: Any) -> Any:
    """a (batched scalar) times v (batched float4): the scalar broadcasts over the lanes."""
    import numpy as np

    a = np.asarray(a)
    return (a[..., None] if a.ndim else a) * v


def _tree(levels: int) -> Any:
    """Reduce a local array of 2^levels partial sums to one, halving each step."""
    return iterate(levels, join << mapLcl(0)(reduceSeq(add, 0.0)) << split(2))


def scal_gpu() -> Any:
    """One float4 per work-item."""
    return fun([float32, float32[N]], lambda a, x:
               asScalar << mapGlb(0)(lambda v: scale4(a, v)) << asVector(4) << x)


def _partials(per_thread: Any) -> Any:
    """Each work-group: LS threads each reduce their strided float4 elements with `per_thread`,
    sum the lanes into local memory, tree-reduce, one thread writes the group's result."""
    return mapWrg(0)(
        join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1) << _tree(8)
        << join << toLocal(mapLcl(0)(lambda xs: mapSeq(sum4) << per_thread(xs)))
        << transpose << split(LS))


def _final_stage(partials: Any, count: Any) -> Any:
    """Sum the work-groups' partial results in one work-group of LS threads (instead of one
    work-item): each thread sums a strided share, then a tree in local memory."""
    return (join << mapWrg(0)(join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1) << _tree(8)
                              << join << toLocal(mapLcl(0)(reduceSeq(add, 0.0))) << transpose << split(LS))
            << split(count) << partials)


def reduction_gpu(kind: str, per_thread: int | None = None, unroll: bool = False,
                  parallel_final: bool = True) -> Any:
    """asum or dot for GPUs; the choices are the knobs the performance notes compare."""
    chunk = LS * (per_thread or PER_THREAD[kind])  # float4 elements per work-group
    red = reduceSeqUnroll if unroll else reduceSeq

    def finish(partials: Any) -> Any:
        if parallel_final:
            return _final_stage(partials, N // (4 * chunk))
        return reduceSeq(add, 0.0) << partials

    if kind == "asum":
        return fun([float32[N]], lambda x: finish(
            join << _partials(red(absAndSumUp4, F4)) << split(chunk) << asVector(4) << x))
    return fun([float32[N], float32[N]], lambda x, y: finish(
        join << _partials(red(multAndSumUp4, F4)) << split(chunk) << zip(asVector(4) << x, asVector(4) << y)))


def asum_gpu() -> Any:
    return reduction_gpu("asum")


def dot_gpu() -> Any:
    return reduction_gpu("dot")


def gemv_gpu() -> Any:
    """One work-group per row, float4 loads, tree reduction in local memory."""
    def row(ry: Any, x: Any, alpha: Any, beta: Any) -> Any:
        partial = (join << toLocal(mapLcl(0)(lambda xs: mapSeq(sum4) << reduceSeq(multAndSumUp4, F4) << xs))
                   << transpose << split(LS) << zip(asVector(4) << ry[0], asVector(4) << x))
        return join << toGlobal(mapLcl(0)(mapSeq(lambda s: add(mult(alpha, s), mult(beta, ry[1])))))\
            << split(1) << _tree(8) << partial

    return fun([float32[M][N], float32[M], float32[N], float32, float32], lambda A, x, y, alpha, beta:
               join << mapWrg(0)(lambda ry: row(ry, x, alpha, beta)) << zip(A, y))


SPECS = [
    ProgramSpec("scal_gpu", "scal for GPUs: one float4 per work-item", "hand-chosen", scal_gpu,
                blas.SPECS[0].make_inputs, blas.SPECS[0].reference, {"N": 1 << 16}, level="low",
                size_rule="N a multiple of 4", tags=("gpu",)),
    ProgramSpec("asum_gpu", "asum for GPUs: float4, local-memory trees, two kernels", "hand-chosen",
                asum_gpu, blas._one_vec, blas._asum_ref, {"N": SIZE_RULE}, level="low", rtol=1e-3,
                size_rule=f"N a multiple of {SIZE_RULE}", tags=("gpu",)),
    ProgramSpec("dot_gpu", "dot for GPUs: float4, local-memory trees, two kernels", "hand-chosen",
                dot_gpu, blas._two_vecs, blas.SPECS[2].reference, {"N": SIZE_RULE}, level="low",
                rtol=1e-3, atol=1e-3, size_rule=f"N a multiple of {SIZE_RULE}", tags=("gpu",)),
    ProgramSpec("gemv_gpu", "gemv for GPUs: a work-group per row, float4", "hand-chosen", gemv_gpu,
                blas._gemv_inputs, blas._gemv_ref, {"N": 64, "M": 2048}, level="low", rtol=1e-3,
                atol=1e-3, size_rule="M a multiple of 1024", tags=("gpu",)),
]
