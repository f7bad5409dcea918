"""The DSL names of the patterns only the CUDA backend compiles (`liftkit.ir.patterns.cuda`)
and of the casts that give up precision for the tensor cores (`toTF32`, `toBF16`)."""

from __future__ import annotations

from typing import Any

from liftkit.arith import cst
from liftkit.dsl.core import FunLike, _with_init, fn
from liftkit.ir import patterns as P
from liftkit.ir.nodes import FunDecl
from liftkit.ir.patterns.cuda import toBF16, toTF32, truncTF32


def reduceWarp(f: FunLike, init: Any = None) -> FunDecl:
    """reduceWarp(⊕, z): each run of 32 elements reduced by one warp's shuffles."""
    return _with_init(P.ReduceWarp(fn(f)), init)


def _mma(cls: type[P.ReduceMma]) -> Any:
    def build(warps: int, f: FunLike, init: Any = None) -> FunDecl:
        return _with_init(cls(cst(warps), fn(f)), init)

    build.__name__ = cls.name
    build.__doc__ = (f"{cls.name}(warps, f, z): the K loop over tile pairs on the tensor cores; "
                     "f stages each pair (a, b) into the operands a'·b'ᵀ reads.")
    return build


reduceMmaTF32 = _mma(P.ReduceMmaTF32)
reduceMmaBF16 = _mma(P.ReduceMmaBF16)
reduceMmaF64 = _mma(P.ReduceMmaF64)
reduceMmaF64K8 = _mma(P.ReduceMmaF64K8)


def _wgmma(cls: type[P.ReduceWgmma]) -> Any:
    def build(warps: int, stages: int, f: FunLike, init: Any = None) -> FunDecl:
        return _with_init(cls(warps=cst(warps), stages=cst(stages), f=fn(f)), init)

    build.__name__ = cls.name
    build.__doc__ = (f"{cls.name}(warps, stages, f, z): the K loop over tile pairs on Hopper's "
                     "warpgroup MMA, the operands staged `stages` tiles deep by the pattern; f "
                     "lays out each pair (a, b) whose product a·bᵀ it accumulates.")
    return build


reduceWgmmaTF32 = _wgmma(P.ReduceWgmmaTF32)
reduceWgmmaTF32Z = _wgmma(P.ReduceWgmmaTF32Z)
reduceWgmmaAsyncTF32 = _wgmma(P.ReduceWgmmaAsyncTF32)
reduceWgmmaAsyncTF32Z = _wgmma(P.ReduceWgmmaAsyncTF32Z)
reduceWgmmaPairTF32 = _wgmma(P.ReduceWgmmaPairTF32)
reduceWgmmaPairTF32Z = _wgmma(P.ReduceWgmmaPairTF32Z)
reduceWgmmaTmaTF32Z = _wgmma(P.ReduceWgmmaTmaTF32Z)
reduceWgmmaTmaPairTF32Z = _wgmma(P.ReduceWgmmaTmaPairTF32Z)


def toLocalAsync(stages: int, f: FunLike) -> P.ToLocalAsync:
    """toLocalAsync(s, copy): the copy pipelined s deep with cp.async over a reduceMma's tiles."""
    return P.ToLocalAsync(cst(stages), fn(f))

def reduceSplitTail(parts: int, slots: int, bound: int, f: FunLike, init: Any = None) -> FunDecl:
    """reduceSplitTail(p, slots, b)(f, z): a cp.async tile loop whose last partial wave of `slots`
    work-groups is split p ways along the loop, the parts' sums added in order (b > 0: at least
    b resident work-groups per multiprocessor)."""
    from liftkit.ir.patterns.cuda_schedule import ReduceSplitTail

    return _with_init(ReduceSplitTail(fn(f), cst(parts), cst(slots), cst(bound)), init)


__all__ = ["reduceSplitTail", "reduceWarp", "reduceMmaTF32", "reduceMmaBF16", "reduceMmaF64", "reduceMmaF64K8",
           "toLocalAsync", "toTF32", "toBF16", "reduceWgmmaTF32", "reduceWgmmaTF32Z",
           "reduceWgmmaAsyncTF32", "reduceWgmmaAsyncTF32Z", "reduceWgmmaPairTF32",
           "reduceWgmmaPairTF32Z", "reduceWgmmaTmaTF32Z", "reduceWgmmaTmaPairTF32Z",
           "truncTF32"]
