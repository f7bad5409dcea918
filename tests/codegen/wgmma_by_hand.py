"""The tiled product written with a warpgroup MMA pattern directly, shared by test_cuda_wgmma.py,
test_cuda_wgmma_async.py and test_cuda_wgmma_tma.py (their type errors and refusals build
tilings the rules would not offer)."""

from __future__ import annotations

from typing import Any

from liftkit.dsl import compose, float32, join, map, mapWrg, size, split, transpose, zip
from liftkit.ir.nodes import Lambda, Param

M, N, K = size("M"), size("N"), size("K")


def by_hand(cls: Any, tm: int, tn: int, tk: int, warps: int, stages: int, layout: str = "NN") -> Lambda:
    """The tiled product with the pattern `cls` (A m×k, B k×n; T: stored transposed)."""
    ta, tb = layout[0] == "T", layout[1] == "T"
    A, B = Param("A", float32[M][K] if ta else float32[K][M]), Param("B", float32[K][N] if tb else float32[N][K])
    a, b = (transpose << A if ta else A), (transpose << B if tb else B)
    tiles = lambda t: compose(map(compose(transpose, map(split(tk)))), split(t))  # noqa: E731
    body = join << mapWrg(1)(lambda ar: map(join) << transpose << mapWrg(0)(
        lambda bc: join << cls(warps, stages, lambda p: p, 0.0) << zip(ar, bc)) << tiles(tn) << transpose << b) \
        << tiles(tm) << a
    return Lambda((A, B), body)
