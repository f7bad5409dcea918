"""The complex FFMA tiles for any M, N, K (`edge-ctiles-async`): ctiles-async's kernel over
padded views of the operands (rewrite.rules.mm_edges' mm-edge-tiles with w=1: K zero-filled,
M and N clamped, the ragged edge's stores guarded), its tile copies then pipelined by cp.async
(tiles-async). A complex64 element is 8 bytes, so every row of any pitch is copied by whole
elements (cp.async of 8 bytes, source size 0 past K): sizes off the tiles need no padded copies
and B no real embedding (the `real` plan's cembed), which is what CGEMM 1000³ and 1023×1025×999
spent beside their product (results/issue15/odd25). rot=3 swizzles A's tile rows in 16-byte
units as ctiles-async's (results/issue15/cgemm25): with 128×32 tiles and 4×4 accumulators a
warp of 8 × 4 work-items reads 4 rows of A at one K offset, 128 bytes apart, otherwise in the
same banks (results/issue15/oddc26). liftkit.blas runs it where the device profile measured it
at the call's very sizes (`gemm.measured_here`).
"""

from __future__ import annotations

from typing import Any, Mapping

from liftkit.blas.variants import Codelet, CodeletError, Kind, Variant
from liftkit.rewrite.strategies import Strategy, rule, seq, topdown


def _mm_edge_ctiles_async(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
                          split: int = 0, slots: int = 0, bound: int = 0, rot: int = 0
                          ) -> Strategy:
    from liftkit.rewrite.rules.cuda import TILES_ASYNC
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    swizzled = {"rot": rot} if rot else {}  # rot=3: A's rows swizzled in 16-byte units
    tiles = seq(rule(MM_EDGE_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=1,
                     **swizzled),
                topdown(rule(TILES_ASYNC, stages=stages)))
    if not (split or bound):
        return tiles
    if not slots:
        raise CodeletError("edge-ctiles-async split into parts needs the GPU's slots")
    # the guarded tile loop's last partial wave split along K (its K tiles zero-filled past K)
    return seq(tiles, topdown(rule(MM_SPLIT_TAIL, parts=split or 1, slots=slots, bound=bound)))


def _rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.mm_edges import EDGE_RULES
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    return {**CUDA_RULES_BY_NAME, **EDGE_RULES, MM_SPLIT_TAIL.name: MM_SPLIT_TAIL}


def _multiples(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
               split: int = 0, slots: int = 0, bound: int = 0, rot: int = 0) -> dict[str, int]:
    from liftkit.blas.mm_codelets import _tiled_multiples

    v = Variant.of("edge-ctiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                   **({"split": split, "slots": slots} if split or bound else {}),
                   **({"bound": bound} if bound else {}), **({"rot": rot} if rot else {}))
    return _tiled_multiples(kind, v, {})


def edge_ctiles(variant: Variant) -> Variant:
    """The guarded form of a ctiles-async variant: the same tiles, split and A's rows swizzled
    in 16-byte units (rot=3), without what the padded views do not offer (rows rotated, 8-byte
    swizzles, operands tiled as stored, pairs)."""
    if variant.codelet != "ctiles-async":
        raise CodeletError(f"{variant} is not a ctiles-async variant")
    return Variant("edge-ctiles-async", tuple(p for p in variant.params if p[0] not in (
        "kt", "pair") and (p[0] != "rot" or p[1] == 3)))


EDGE_CTILES_CODELET = Codelet(
    "edge-ctiles-async", ("mm",), "ctiles-async for any M, N, K: the complex tiles over padded "
    "views of A and B (the mm-edge-tiles rule with w=1, rewrite.rules.mm_edges: K zero-filled, M "
    "and N clamped), then tiles-async (8-byte cp.async, source size 0 past K), the ragged edge's "
    "stores guarded (rot=3: A's rows swizzled in 16-byte units in shared memory; "
    "split/slots/bound: then mm-split-tail); no padded copies and no real "
    "embedding at any size; CUDA only, complex64, every layout (a transposed operand gathered)",
    _mm_edge_ctiles_async, lambda dev: [], _multiples, backends=("cuda",),
    dtypes=("complex64",), rules=_rules)
