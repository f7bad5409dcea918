"""The GEMM codelets: tiled derivations of C = A·B (local-memory tiles, register blocks, the
FP64 tensor cores, cp.async pipelines), their guarded forms for sizes the tiles do not divide,
the plans of several kernels (`real`, `nn`), the variant spaces the tuner tries on CUDA and the
rules that fit a chosen variant to the sizes of a call (`fit_choice`, `edge_forms`).

`MM_CODELETS` holds them in the order the registry (`liftkit.blas.codelets.CODELETS`) lists
them; a tiled codelet's size multiples are read off its derivation, so they call the registry's
`derive` (imported where used: the registry imports this module).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Optional

from liftkit.blas.mm_cedge import EDGE_CTILES_CODELET
from liftkit.blas.mm_zmma import EDGE_ZMMA_CODELET, ZMMA_CODELET
from liftkit.blas.variants import Codelet, CodeletError, Kind, Variant, on_gpus, padded_sizes
from liftkit.explore import macros as mc
from liftkit.rewrite.strategies import Strategy, rule, seq, topdown

# the vector width of the tiles' loads and register blocks where a variant names none: the
# element type's widest (complex numbers have no OpenCL vectors)
MM_WIDTH = {"float32": 4, "float64": 2, "complex64": 1, "complex128": 1}


def _mm_tiles(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
              w: Optional[int] = None) -> Strategy:
    return rule(mc.MM_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=unroll,
                w=MM_WIDTH[kind.dtype] if w is None else w)


def _mm_blocks(kind: Kind, rm: int, rn: int, wx: int, wy: int) -> Strategy:
    return rule(mc.MM_BLOCKS, rm=rm, rn=rn, wx=wx, wy=wy)


def _tiled_multiples(kind: Kind, variant: "Variant", declared: Mapping[str, int]
                     ) -> dict[str, int]:
    """What a tiled codelet's work-group grid divides (`declared`), joined with the multiples
    the derived program's splits and float4 reads state."""
    out = dict(declared)
    for k, m in _derived_multiples(kind, variant).items():
        out[k] = math.lcm(out.get(k, 1), m)
    return out


@functools.cache
def _derived_multiples(kind: Kind, variant: "Variant") -> dict[str, int]:
    from liftkit.blas.codelets import derive  # the registry, which holds these codelets
    from liftkit.codegen.constraints import size_multiples

    return dict(size_multiples(derive(kind, variant).final))


def _mm_mma(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int, lines: int = 0,
            ik: int = 0, ahead: int = 0, group: int = 0, kparts: int = 0,
            kslots: int = 0, pairs: int = 0) -> Strategy:
    from liftkit.rewrite.rules.cuda import MM_TENSOR_CORES
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.rules.mm_schedule import MMA_SPLIT_TAIL

    # lines=1: 16-byte chunks over whole lines into rotated rows; 2: the operands copied as k
    # rows (A of TN, B of NN and TN) kept in blocks of 4 rows, no rotation to compute per read;
    # 3: those rows' 128-byte segments rotated within themselves
    extra: dict[str, Any] = {"lines": lines if lines in (2, 3) else True} if lines else {}
    if ik:  # ik=8: DMMA m16n8k8 throughout (reduceMmaF64K8); ik=16 (ahead=2): m16n8k16
        extra["ik"] = ik
    if ahead:  # with ik=8: fragments read a k-step ahead (1), and the copies spread (2)
        extra["ahead"] = ahead
    if pairs:  # (ahead=2) k permuted in blocks of 16 in both operands: 16-byte fragment reads
        extra["pairs"] = True
    tiles = rule(MM_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, **extra)
    if kparts:  # the last partial wave's tiles split along K (mma-split-tail; ahead=2 only)
        if group or not kslots:
            raise CodeletError("mma: kparts takes kslots (the GPU's resident blocks) and no "
                               "group (both use the grid's third dimension)")
        return seq(tiles, topdown(rule(MMA_SPLIT_TAIL, parts=kparts, slots=kslots)))
    # group: the blocks started `group` rows of tiles at a time (wrg-row-groups), for L2 reuse
    return seq(tiles, topdown(rule(WRG_ROW_GROUPS, g=group))) if group else tiles


def _mm_tiles_async(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
                    rot: int = 0, split: int = 0, slots: int = 0, bound: int = 0,
                    group: int = 0) -> Strategy:
    from liftkit.rewrite.rules.cuda import MM_TILES_ASYNC
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    extra = {"rot": rot} if rot else {}  # rot=1: A's rows rotated in shared memory
    if kind.layout != "NN":  # NT's Bᵀ, TN's Aᵀ tiled as stored (rules/mm_layouts.py)
        extra["kt"] = 1
    tiles = rule(MM_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **extra)
    if group:  # the blocks started `group` rows of tiles at a time (wrg-row-groups, grid z)
        if split or bound:
            raise CodeletError("tiles-async: group (the grid's z) and split (its z too) exclude "
                               "each other")
        return seq(tiles, topdown(rule(WRG_ROW_GROUPS, g=group)))
    if not (split or bound):
        return tiles
    if not slots:
        raise CodeletError("tiles-async split into parts needs the GPU's slots (resident blocks)")
    # mm-split-tail: the last partial wave of `slots` tiles split along K into `split` parts
    # (bound: __launch_bounds__ blocks per multiprocessor; split=1 with a bound: that alone)
    return seq(tiles, topdown(rule(MM_SPLIT_TAIL, parts=split or 1, slots=slots, bound=bound)))


def _mm_ctiles_async(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
                     kt: int = 0, rot: int = 0, split: int = 0, slots: int = 0, bound: int = 0,
                     pair: int = 0) -> Strategy:
    """The complex FFMA tiles: mm-tiles-async over complex scalars (w=1: 8-byte cp.async
    copies, rm×rn complex accumulators, each complex multiply-add 4 FMAs); kt=1: the
    transposed operand (layout letters T, C) tiled as stored, so its copies are coalesced
    (rules/mm_layouts.py); rot=1: rows rotated in local memory (NT's Bᵀ with kt, else A's),
    rot=2: swizzled (chunk xor row) instead, rot=3: A's rows swizzled in 16-byte units (with
    kt NT's Bᵀ's too); pair=1: B's (NN) or Aᵀ's and B's (TN, kt) elements owned
    in consecutive pairs (16-byte reads); split/slots/bound: then mm-split-tail, as
    tiles-async (the parts' partial sums added as pairs of reals)."""
    from liftkit.rewrite.rules.cuda import MM_TILES_ASYNC
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    if kt and not transposes(kind):
        raise CodeletError(f"ctiles-async kt=1 tiles a transposed operand; {kind} has none")
    extra = {**({"kt": 1} if kt else {}), **({"rot": rot} if rot else {}),
             **({"pair": 1} if pair else {})}
    tiles = rule(MM_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, w=1, **extra)
    if not (split or bound):
        return tiles
    if not slots:
        raise CodeletError("ctiles-async split into parts needs the GPU's slots (resident blocks)")
    return seq(tiles, topdown(rule(MM_SPLIT_TAIL, parts=split or 1, slots=slots, bound=bound)))


def transposes(kind: Kind) -> bool:
    """A GEMM kind reads an operand transposed (layout letter T or C)."""
    return kind.op == "mm" and any(c in "TC" for c in kind.layout)


def ctiles_fit(kind: Kind, variant: "Variant") -> bool:
    """ctiles-async's kt=1 needs a transposed operand, and with rot=1 a transposed second one
    (the rotation is then Bᵀ's: mm-local-tiles offers no other); pair=1 a K-outer operand
    tiled as stored: B without kt where none is transposed, Aᵀ (and B) with kt."""
    kw = variant.kw
    if kw.get("pair") and (kind.layout[0] not in "TC" or kind.layout[1] in "TC"
                           if kw.get("kt") else transposes(kind)):
        return False
    return not kw.get("kt") or (transposes(kind) and (not kw.get("rot") or kind.layout[1] in "TC"))


def _tiles_async_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, MM_TILES_ASYNC
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS

    return {**CUDA_RULES_BY_NAME, MM_TILES_ASYNC.name: MM_TILES_ASYNC,
            MM_SPLIT_TAIL.name: MM_SPLIT_TAIL, WRG_ROW_GROUPS.name: WRG_ROW_GROUPS}


def _edge_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.mm_edges import EDGE_RULES

    return {**CUDA_RULES_BY_NAME, **EDGE_RULES}


def _mm_edge_tiles(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
                   w: Optional[int] = None, elems: int = 0, rot: int = 0) -> Strategy:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES

    extra = {**({"elems": 1} if elems else {}), **({"rot": rot} if rot else {})}
    return rule(MM_EDGE_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=unroll,
                w=MM_WIDTH[kind.dtype] if w is None else w, **extra)


def _mm_edge_mma(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int,
                 lines: int = 0, ik: int = 0, ahead: int = 0) -> Strategy:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TENSOR_CORES

    extra: dict[str, Any] = {"lines": True} if lines else {}
    if ik:  # DMMA m16n8k8 (its fragments read `ahead` k-steps early)
        extra.update(ik=ik, **({"ahead": ahead} if ahead else {}))
    return rule(MM_EDGE_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, **extra)


def _mm_edge_tiles_async(kind: Kind, tm: int, tn: int, tk: int, rm: int, rn: int,
                         stages: int, elems: int = 0, split: int = 0, slots: int = 0,
                         bound: int = 0, rot: int = 0) -> Strategy:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES_ASYNC
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    extra = {**({"elems": 1} if elems else {}), **({"rot": rot} if rot else {})}
    tiles = rule(MM_EDGE_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **extra)
    if not (split or bound):
        return tiles
    if not slots:
        raise CodeletError("edge-tiles-async split into parts needs the GPU's slots")
    # the guarded tile loop's last partial wave split along K too (its K tiles zero-filled past K)
    return seq(tiles, topdown(rule(MM_SPLIT_TAIL, parts=split or 1, slots=slots, bound=bound)))


def _cuda_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.rules.mm_schedule import MMA_SPLIT_TAIL

    return {**CUDA_RULES_BY_NAME, WRG_ROW_GROUPS.name: WRG_ROW_GROUPS,
            MMA_SPLIT_TAIL.name: MMA_SPLIT_TAIL}


# the Hopper FFMA SGEMM shapes (tm, tn, tk, rm, rn, stages): H1's run 4 best (128x64x32, 0.92x
# cuBLAS at 4096³, 0.97x at 8192³; the bundled derivations), then those results/issue12/sgemm
# measured at 0.87-0.91x (4096³); 64x64x16 ran fastest at 1024 here (results/issue15/cuda)
TILES_ASYNC_SPACE = ((128, 64, 32, 8, 8, 2), (64, 128, 16, 8, 8, 2), (64, 128, 32, 8, 8, 2),
                     (64, 64, 16, 8, 8, 2), (64, 64, 32, 8, 8, 2), (64, 64, 16, 8, 8, 4),
                     (64, 64, 32, 8, 8, 3))


# the complex64 FFMA tilings (tm, tn, tk, rm, rn, stages) the tuner tries: rm×rn complex
# accumulators (2·rm·rn registers), A's and B's complex tiles 8 bytes per element
CTILES_ASYNC_SPACE = ((64, 64, 16, 4, 8, 2), (64, 64, 16, 4, 8, 3), (64, 64, 16, 8, 8, 2),
                      (64, 32, 16, 8, 4, 2), (128, 64, 16, 8, 4, 2), (128, 64, 16, 8, 8, 2),
                      (128, 64, 8, 8, 8, 3), (64, 128, 8, 8, 8, 3), (64, 64, 32, 8, 8, 2),
                      (128, 128, 8, 8, 8, 3))
# then for layouts with a transposed operand the same tiled as stored (kt=1) and, for NT's Bᵀ
# read across its rows, with those rotated (rot=1) or swizzled in 16-byte units with A's rows
# (rot=3, below)
CTILES_KT = ((64, 64, 16, 4, 8, 2), (64, 32, 16, 8, 4, 2), (128, 64, 16, 8, 4, 2))
# A's rows swizzled in 16-byte units (rot=3; with kt, NT's Bᵀ's too): the two rows of A a warp
# reads at once (16 bytes each, 128 bytes apart) in different banks, each still one LDS.128 (on
# the H100 per call beside cuBLAS: NN 1024 0.915x where the plain tiles ran 0.890x, NT kt 0.925x
# where rot=1 ran 0.863x; results/issue15/cgemm25). Not in the space, measured slower there:
# Bᵀ swizzled by 8-byte chunks (rot=2, NT 0.843x), K-outer operands owned in pairs (pair=1,
# NN 0.858x, TN 0.871x where kt alone ran 0.910x) and the 128×64 tiles 32 deep (NN 0.869x)
CTILES_ROT = ((128, 64, 16, 8, 4, 2),)


def _ctiles_space(dev: str) -> list[dict[str, int]]:
    names = ("tm", "tn", "tk", "rm", "rn", "stages")
    if dev != "gpu":
        return []
    out = [dict(zip(names, p)) for p in CTILES_ASYNC_SPACE]
    out += [{**dict(zip(names, p)), "rot": 3} for p in CTILES_ROT]
    return out + [{**dict(zip(names, p)), "kt": 1, **r} for r in ({}, {"rot": 1}, {"rot": 3})
                  for p in CTILES_KT]


# the split tail the tuner tries (mm-split-tail after tiles-async): the tail split 3, 4 or 5
# ways along K under __launch_bounds__(threads, 3) (the H100's best: 5 ways at 4096³, 4 at 8192³,
# slots 396 = 132 SMs × 3, bound 3; results/issue12/sgemm22/run1)
SPLIT_PARTS = (3, 4, 5)
SPLIT_BOUND = 3


# tilings (tm, tn, tk, warps, staged, lines) of the FP64 tensor-core derivation the tuner tries,
# the fastest first as results/issue12/mma (H100, 4096³) measured them: 128×64×16 on 4 warps
# with the tiles copied in 16-byte chunks over whole lines (lines=1), cp.async 4 deep at 0.88x
# cuBLAS, 3 deep 0.85x, 2 deep 0.83x (run 5); without lines 2 deep 0.79x; then wider, deeper
# and smaller ones
MMA_SPACE = ((128, 64, 16, 4, 4, 1), (128, 64, 16, 4, 3, 1), (128, 64, 16, 4, 2, 1),
             (128, 64, 16, 4, 2, 0), (64, 128, 16, 4, 2, 1), (64, 128, 16, 4, 2, 0),
             (128, 64, 16, 4, 3, 0), (128, 128, 32, 8, 2, 0), (128, 64, 8, 4, 4, 0),
             (64, 64, 16, 4, 2, 0), (64, 64, 32, 4, 1, 0), (32, 32, 16, 2, 2, 0))


def _mma_params(p: tuple[int, ...]) -> dict[str, int]:
    """A MMA_SPACE point as a variant's parameters (`lines` named only where set)."""
    out = dict(zip(("tm", "tn", "tk", "warps", "staged"), p[:5]))
    return {**out, "lines": 1} if p[5] else out


# DMMA m16n8k8 throughout (ik=8), plain and with the fragments read ahead and the next tile's
# copies spread among them (ahead=2): what mm-tensor-cores offers them for (tiles over whole
# lines, tk >= 16, a cp.async pipeline), tried after the m16n8k16 tilings. On the H100 at 4096³
# 128x64x16 w4 x4 lines ran 0.843x cuBLAS with ik=8 and 0.905x with ahead=2 as well
# (results/issue12/dmma22/run1, the shipped profile); ahead=1 lost to 2 there and is not tried
MMA_K8_AHEAD = (0, 2)


# and those read ahead in groups of 4 row tiles (wrg-row-groups): per call on the H100 at 4096³
# and 8192³ the fastest order for DGEMM NN and ZGEMM (results/issue15/dmma23/run1)
MMA_GROUPS = (4,)


# the read-ahead loops (ahead=2) on deeper tiles, (tm, tn, tk, warps, staged, ik), tried after the
# m16n8k8 ones: cuBLAS's DGEMM shape on the H100 (128×64×32, 8 warps, 3 stages of 144 KB,
# m16n8k16: 42.7 us at 1024³ against our 48.8; NVRTC 13: 250 registers, no spill) and the same
# on m16n8k8 (202), not yet timed; then the fastest m16n8k16 tiling of results/issue15/fp64-24
# run 2 (64×64×32 ×3: 0.77× cuBLAS at 1024, the shipped m16n8k8 0.84×; 16-deep m16n8k16
# tiles, one k-step per barrier, ran 0.56-0.72×)
MMA_DEEP_SPACE = ((128, 64, 32, 8, 3, 16), (128, 64, 32, 8, 3, 8), (64, 64, 32, 4, 3, 16))


# the read-ahead loops with two warps per scheduler at 1024 (tm, tn, tk, warps, staged; tried
# after the grouped ones, before the deep tilings of MMA_DEEP_SPACE, which lost everywhere): 8
# warps of 32×32 on 128×64 tiles, and 64×64 tiles on 4 warps (256 tiles, 2 blocks per SM), as
# they are and with k permuted for 16-byte fragment reads (pairs=1): DGEMM 1024 per call on the
# H100 NN 0.93 / 0.93x cuBLAS (pairs), NT 0.97x (128×64, pairs), TN 0.90x (64×64); the 128×64
# 4-warp kernel ran NN 0.92x, NT 0.89x (results/issue15/fp64-25 run 1)
MMA_PAIRS_SPACE = ((128, 64, 16, 8, 4), (64, 64, 16, 4, 4))


# the read-ahead loops with the operands copied as k rows (A of TN, B of NN and TN) in layouts
# whose fragment reads need no rotation computed per read (tm, tn, tk, warps, staged, lines,
# group; tried last): their 128-byte segments rotated (lines=3) on the shipped TN/NN tilings,
# and in blocks of 4 rows (lines=2) on 8 warps: DGEMM per call on the H100 TN 1024 1.025x,
# 4096 0.989x, 8192 1.084x, NN 1024 0.991x (lines=2, w8), 4096 0.963x (results/issue15/fp64-26)
MMA_KROWS_SPACE = ((64, 64, 16, 4, 4, 3, 0), (128, 64, 16, 4, 4, 3, 8), (128, 64, 16, 4, 4, 3, 4),
                   (128, 64, 16, 8, 4, 2, 0), (128, 64, 16, 8, 4, 3, 0))


def _mma_k8_space() -> list[dict[str, int]]:
    k8 = [{**_mma_params(p), "ik": 8, **({"ahead": h} if h else {})}
          for h in MMA_K8_AHEAD for p in MMA_SPACE if p[5] and p[2] >= 16 and p[4] >= 2]
    deep = [{**dict(zip(("tm", "tn", "tk", "warps", "staged", "ik"), p)), "lines": 1,
             "ahead": 2} for p in MMA_DEEP_SPACE]
    two = [{**dict(zip(("tm", "tn", "tk", "warps", "staged"), p)), "lines": 1, "ik": 8, "ahead": 2,
            **pairs} for pairs in ({"pairs": 1}, {}) for p in MMA_PAIRS_SPACE]
    krows = [{**dict(zip(("tm", "tn", "tk", "warps", "staged", "lines"), p)), "ik": 8, "ahead": 2,
              **({"group": p[6]} if p[6] else {})} for p in MMA_KROWS_SPACE]
    return k8 + [{**v, "group": g} for g in MMA_GROUPS for v in k8 if v.get("ahead")] + two + deep \
        + krows


def _plan_only(kind: Kind, **_: int) -> Strategy:
    raise CodeletError(f"{kind}: codelets real, nn and split are plans of several derived "
                       "kernels (liftkit.blas.gemm, liftkit.blas.split), not one derivation")


def tiles_async_footprint(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
                          size: int = 4) -> tuple[int, int]:
    """(threads, bytes of shared memory) of a tiles-async block of `size`-byte elements
    (float32; complex64: 8): a thread per rm×rn register block, `stages` A and B tiles staged
    in shared memory."""
    return (tm // rm) * (tn // rn), stages * (tm + tn) * tk * size


def split_tail_space(kind: Kind, sizes: Mapping[str, int], limits: Any) -> list[Variant]:
    """The split-tail variants of the tiles-async tilings worth trying at `sizes` on a device
    of `limits` (`liftkit.backends.cuda.occupancy.SMLimits`): those whose bound fixes the
    resident blocks (slots = multiprocessors × SPLIT_BOUND, `bounded_slots`) and whose tile
    grid ends in a partial wave after at least one full one, with at least `parts` tiles of K
    to split; none for other kinds or backends."""
    from liftkit.backends.cuda.occupancy import bounded_slots

    c = next(c for c in MM_CODELETS if c.name == "tiles-async")
    if kind.op != "mm" or kind.dtype not in (c.dtypes or ()) \
            or kind.layout not in (c.layouts or ()):
        return []
    out = []
    for tm, tn, tk, rm, rn, stages in TILES_ASYNC_SPACE:
        threads, shared = tiles_async_footprint(tm, tn, tk, rm, rn, stages)
        slots = bounded_slots(limits, threads, shared, SPLIT_BOUND)
        tiles = -(-sizes["M"] // tm) * -(-sizes["N"] // tn)
        if slots is None or tiles <= slots or tiles % slots == 0:
            continue
        out += [Variant.of("tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                           split=p, slots=slots, bound=SPLIT_BOUND)
                for p in SPLIT_PARTS if -(-sizes["K"] // tk) >= p]
    return out


# the complex tiles under a register cap (tm, tn, tk, rm, rn, stages, bound: __launch_bounds__
# blocks per SM): 256 threads at 128 registers (2 per SM; NVRTC 13 gives NT/TN tiled as stored,
# kt=1, 143-156 registers uncapped: one block per SM; capped 127-128, no spills, 2 or 3 stages),
# 128 threads at 128 (4 per SM)
CTILES_BOUNDED = ((128, 64, 16, 8, 4, 2, 2), (128, 64, 16, 8, 4, 3, 2), (64, 64, 16, 4, 8, 2, 4))


def ctiles_split_space(kind: Kind, sizes: Mapping[str, int], limits: Any) -> list[Variant]:
    """The complex tiles (ctiles-async) worth trying at `sizes` on a device of `limits` beyond
    their space: tiled as the layout reads best (kt=1 where an operand is transposed, rows
    swizzled, rot=3, where A or the second operand is read across rows), under the register cap
    `CTILES_BOUNDED` (those kernels exceed it), and where the tile grid fills at most half the
    capped slots (1024²: 128 tiles of 128×64 or 256 of 64×64 for 264 / 528) split in 2 along K
    across the whole grid (mm-split-tail: every tile is in the last partial wave; both parts of
    every tile resident at once, twice the warps per SM for the same work); none for other
    kinds."""
    from liftkit.backends.cuda.occupancy import bounded_slots

    c = next(c for c in MM_CODELETS if c.name == "ctiles-async")
    if kind.op != "mm" or kind.dtype not in (c.dtypes or ()):
        return []
    kt = transposes(kind)
    # rows swizzled (rot=3: A's, with kt NT's Bᵀ's too) where a K-inner tile is read across
    # rows: 138-157 registers uncapped (H100, cgemm25: NN 4096 0.937x, 8192 0.976x; NT 0.917x,
    # 0.968x capped)
    lay = ({"kt": 1, **({"rot": 3} if kind.layout[1] in "TC" else {})} if kt
           else {"rot": 3})
    out = []
    for tm, tn, tk, rm, rn, stages, bound in CTILES_BOUNDED:
        threads, shared = tiles_async_footprint(tm, tn, tk, rm, rn, stages, 8)
        slots = bounded_slots(limits, threads, shared, bound)
        if slots is None:
            continue
        tiling = dict(tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **lay)
        out.append(Variant.of("ctiles-async", **tiling, bound=bound, slots=slots))
        tiles = -(-sizes["M"] // tm) * -(-sizes["N"] // tn)
        if 2 * tiles <= slots and -(-sizes["K"] // tk) >= 2:
            out.append(Variant.of("ctiles-async", **tiling, split=2, bound=bound, slots=slots))
    return out


MM_CODELETS: tuple[Codelet, ...] = (
    Codelet("tiles", ("mm",), "tm×tn tiles of C per work-group, A and B tiles of depth tk in "
            "local memory, rm×rn register blocks per work-item of vectors of w (default: float4, "
            "double2, complex scalars; the mm-tiles macro, rules/mm.py; every dtype and layout)",
            _mm_tiles,
            lambda dev: [dict(zip(("tm", "tn", "tk", "rm", "rn"), p)) for p in (
                ((64, 64, 16, 8, 8), (64, 128, 16, 8, 8), (128, 64, 16, 8, 8), (64, 64, 32, 8, 8))
                if dev == "gpu" else
                ((64, 64, 16, 8, 8), (32, 32, 16, 4, 4), (64, 64, 32, 8, 8), (64, 64, 16, 4, 8)))]
            # scalar blocks (every dtype; the CPU's fastest for double and complex, docs/blas.md;
            # on the CPU device also 64×64 tiles of 4×4 / 8×4 scalar blocks, which Intel's CPU
            # compiler vectorises across work-items: about twice the float4 blocks' rate at 1024³
            # float32, results/issue15/cpu-final)
            + [dict(zip(("tm", "tn", "tk", "rm", "rn", "w"), p)) for p in (
                (32, 32, 16, 4, 1, 1), (32, 32, 16, 2, 2, 1), (16, 16, 16, 1, 1, 1))
               + (((64, 64, 16, 4, 4, 1), (64, 64, 16, 8, 4, 1), (128, 64, 16, 8, 4, 1))
                  if dev == "cpu" else ())],
            lambda kind, tm, tn, tk, rm, rn, unroll=1, **w: _tiled_multiples(
                kind, Variant.of("tiles", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, **w),
                {"M": tm, "N": tn, "K": tk})),
    Codelet("blocks", ("mm",), "wx×wy work-items per group, each an rm×rn register block of C "
            "(float4, double2, complex scalars), no local memory (the mm-blocks macro, "
            "rules/mm.py; every dtype and layout)",
            _mm_blocks,
            lambda dev: [{"rm": rm, "rn": rn, "wx": wx, "wy": wy}
                         for rm, rn, wx, wy in ((4, 4, 8, 8), (8, 8, 8, 8), (4, 8, 8, 8))],
            lambda kind, rm, rn, wx, wy: _tiled_multiples(
                kind, Variant.of("blocks", rm=rm, rn=rn, wx=wx, wy=wy),
                {"M": rm * wy, "N": rn * wx, "K": MM_WIDTH[kind.dtype]})),
    Codelet("mma", ("mm",), "tm×tn tiles of C per block on the FP64 tensor cores (DMMA): the "
            "mm-tensor-cores rule (rewrite.rules.cuda), K in steps of tk, tiles staged in shared "
            "memory (staged=1) or by cp.async `staged` deep (lines=1: in 16-byte chunks over whole "
            "lines into rotated rows); CUDA only, float64 (same precision)",
            _mm_mma,
            lambda dev: [_mma_params(p) for p in MMA_SPACE] + _mma_k8_space()
            if dev == "gpu" else [],
            lambda kind, tm, tn, tk, warps, staged, lines=0, ik=0, ahead=0, group=0, kparts=0,
            kslots=0, pairs=0: _tiled_multiples(
                kind, Variant.of("mma", tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                                 **({"lines": lines} if lines else {}), **({"ik": ik} if ik else {}),
                                 **({"ahead": ahead} if ahead else {}),
                                 **({"pairs": pairs} if pairs else {}),
                                 **({"group": group} if group else {}),
                                 **({"kparts": kparts, "kslots": kslots} if kparts else {})),
                {"M": tm * max(group, 1), "N": tn, "K": tk}),  # whole groups of row tiles
            backends=("cuda",), dtypes=("float64",), layouts=("NN", "TN", "NT"), rules=_cuda_rules),
    Codelet("tiles-async", ("mm",), "the tiles codelet (float4 register blocks) with its A and B "
            "tile copies made cp.async `stages` deep (the mm-tiles-async macro: mm-local-tiles, "
            "then tiles-async, rewrite.rules.cuda; split/slots/bound: then mm-split-tail, the last "
            "partial wave of `slots` tiles split along K); CUDA only, float32 (FFMA: same "
            "precision); NT and TN tile their transposed operand as stored (kt, no transpose pass)",
            _mm_tiles_async,
            on_gpus(("tm", "tn", "tk", "rm", "rn", "stages"), TILES_ASYNC_SPACE),
            lambda kind, tm, tn, tk, rm, rn, stages, rot=0, split=0, slots=0, bound=0, group=0:
                _tiled_multiples(kind, Variant.of(
                    "tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                    **({"rot": 1} if rot else {}),
                    **({"split": split, "slots": slots} if split or bound else {}),
                    **({"bound": bound} if bound else {}), **({"group": group} if group else {})),
                {"M": tm * max(group, 1), "N": tn, "K": tk}),  # group: whole groups of row tiles
            backends=("cuda",), dtypes=("float32",), layouts=("NN", "NT", "TN"),
            rules=_tiles_async_rules),
    Codelet("ctiles-async", ("mm",), "complex tiles on the FFMA units: the tiles codelet over "
            "complex scalars (tm×tn tiles, rm×rn complex accumulators per thread, each complex "
            "multiply-add 4 FMAs) with the A and B tile copies made cp.async `stages` deep (the "
            "mm-tiles-async macro with w=1; kt=1: a transposed operand tiled as stored, rot=1: "
            "rows rotated in local memory); CUDA only, complex64, every layout (no 2x real "
            "embedding, no packing kernels)",
            _mm_ctiles_async, _ctiles_space,
            lambda kind, tm, tn, tk, rm, rn, stages, kt=0, rot=0, split=0, slots=0, bound=0,
            pair=0: _tiled_multiples(kind, Variant.of(
                    "ctiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                    **({"kt": 1} if kt else {}), **({"rot": rot} if rot else {}),
                    **({"pair": 1} if pair else {}),
                    **({"split": split, "slots": slots} if split or bound else {}),
                    **({"bound": bound} if bound else {})), {"M": tm, "N": tn, "K": tk}),
            backends=("cuda",), dtypes=("complex64",), rules=_tiles_async_rules),
    ZMMA_CODELET,  # complex128 tiles on the FP64 tensor cores (blas/mm_zmma.py)
    Codelet("edge-tiles", ("mm",), "the tiles codelet for any M, N, K: the same kernel over "
            "padded views of A and B (K zeros, M and N clamped), its ragged edge's stores guarded "
            "(the mm-edge-tiles rule, rewrite.rules.mm_edges); with vectors of w, w must divide "
            "N and K; liftkit.blas runs it where tiles would need padded copies (`edge_form`)",
            _mm_edge_tiles, lambda dev: [],
            lambda kind, tm, tn, tk, rm, rn, unroll=1, **w: _tiled_multiples(
                kind, Variant.of("edge-tiles", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn,
                                 **({"unroll": unroll} if unroll != 1 else {}), **w), {}),
            rules=_edge_rules),
    Codelet("edge-tiles-async", ("mm",), "tiles-async for any M (N, K multiples of 4; elems=1: "
            "any sizes, 4-byte copies): the mm-edge-tiles-async macro, cp.async zero-filling the "
            "padding (source size 0) and the ragged edge's stores guarded (split/slots/bound: "
            "then mm-split-tail, as tiles-async); CUDA only, float32 NN",
            _mm_edge_tiles_async, lambda dev: [],
            lambda kind, tm, tn, tk, rm, rn, stages, elems=0, split=0, slots=0, bound=0, rot=0:
                _tiled_multiples(kind, Variant.of(
                    "edge-tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                    **({"elems": 1} if elems else {}), **({"rot": rot} if rot else {}),
                    **({"split": split, "slots": slots} if split or bound else {}),
                    **({"bound": bound} if bound else {})), {}),
            backends=("cuda",), dtypes=("float32",), layouts=("NN",), rules=_edge_rules),
    EDGE_CTILES_CODELET,  # ctiles-async for any sizes (blas/mm_cedge.py)
    EDGE_ZMMA_CODELET,  # zmma for any sizes (blas/mm_zmma.py)
    Codelet("edge-mma", ("mm",), "mma for any M, N, K: the DMMA kernel over padded views of A "
            "and B, its tiles staged by cp.async element by element, or with lines=1 in 16-byte "
            "chunks (then 2 divides the chunks' dimensions; with them also on m16n8k8, ik=8, "
            "fragments read `ahead` steps early), zero-filled past K, the ragged edge's stores "
            "guarded (the mm-edge-tensor-cores rule, rewrite.rules."
            "mm_edges); CUDA only, float64",
            _mm_edge_mma, lambda dev: [],
            lambda kind, tm, tn, tk, warps, staged, lines=0, ik=0, ahead=0: _tiled_multiples(
                kind, Variant.of("edge-mma", tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                                 **({"lines": 1} if lines else {}), **({"ik": ik} if ik else {}),
                                 **({"ahead": ahead} if ahead else {})), {}),
            backends=("cuda",), dtypes=("float64",), layouts=("NN", "TN"), rules=_edge_rules),
    Codelet("real", ("mm",), "a complex GEMM as one real GEMM of twice the depth and width (the "
            "4M form): A's complex rows read as reals, B embedded as [[Br, Bi], [-Bi, Br]] by the "
            "derived cembed kernel, C's complex rows written as reals; the real kernel is the "
            "profile's best for the real dtype (tensor cores for complex128 on CUDA)",
            _plan_only, lambda dev: [{}] if dev == "gpu" else [],
            lambda kind: {}, dtypes=("complex64", "complex128")),
    Codelet("nn", ("mm",), "NT/TN as the transpose kernel on the transposed operand, then the "
            "profile's NN kernel (the FP64 tensor-core derivation reads NN and TN only)",
            _plan_only, lambda dev: [{}] if dev == "gpu" else [],
            lambda kind: {}, dtypes=("float32", "float64"), layouts=("NT", "TN")),
    Codelet("split", ("mm",), "N one past a multiple of w: the 1..N−1 interior on the profile's "
            "kernel (X padded to 16-byte rows by pad2d, Y's columns by window2d), the last "
            "column by a GEMV (tailcols; gemv=1: a warp per row), the two placed by hcat "
            "(liftkit.blas.split); measured by `tune --edges` beside the GEMM's own plan, never "
            "in a class's space",
            _plan_only, lambda dev: [], lambda kind, w, gemv=0: {},
            dtypes=("float32", "float64"), layouts=("NN",)),
)


# a tiled codelet's guarded form (rewrite.rules.mm_edges: the same kernel over padded views of
# the operands, its stores of the ragged edge guarded): what liftkit.blas runs instead of padded
# copies where the sizes are not multiples of the tiles
EDGE_FORMS = {"tiles": "edge-tiles", "tiles-async": "edge-tiles-async", "mma": "edge-mma"}
# (a profile's entries of them rank guarded forms; edge-ctiles-async, blas/mm_cedge.py, and
# edge-zmma, blas/mm_zmma.py, run only where measured at a call's very sizes: gemm.measured_here)
EDGE_CODELETS = frozenset(EDGE_FORMS.values()) | {"edge-ctiles-async", "edge-zmma"}
# what the guarded forms do not offer: A's rows rotated in local memory, the grouped block
# order (its grid of row groups needs whole groups of row tiles), the DMMA loop split along K,
# the k-permuted DMMA fragment reads (pairs)
_NOT_GUARDED = ("rot", "group", "kparts", "kslots", "pairs")


def fit_choice(kind: Kind, variant: "Variant", sizes: Mapping[str, int]) -> "Variant":
    """The profile's choice fitted to the sizes: without its grouped block order (`group`,
    whose grid takes whole groups of row tiles) where the groups would pad beyond what its tiles
    pad (4097 rows: 4224 with 128-row tiles, 4608 in groups of 4), the same kernel in row order;
    DGEMM NT's own DMMA kernel (no guarded form) where it would pad at all, the `nn` plan
    instead (the transpose, then the NN kernel's guarded form: no padded copies); likewise the
    complex tiles (`ctiles-async`, no guarded form), the `real` plan (its real kernel's
    guarded forms and odd-size entries: results/issue15/odd24); so are ZGEMM's complex DMMA
    tiles (`zmma`)."""
    from liftkit.blas.codelets import multiples  # the registry, which holds these codelets

    if variant.kw.get("group"):
        plain = Variant(variant.codelet, tuple(p for p in variant.params if p[0] != "group"))
        if padded_sizes(sizes, multiples(kind, variant)) != padded_sizes(sizes, multiples(kind, plain)):
            variant = plain
    if (kind.op, kind.layout, variant.codelet) == ("mm", "NT", "mma") and \
            padded_sizes(sizes, multiples(kind, variant)) != dict(sizes):
        return Variant.of("nn")
    if variant.codelet in ("ctiles-async", "zmma") and \
            padded_sizes(sizes, multiples(kind, variant)) != dict(sizes):
        return Variant.of("real")
    return variant


def edge_forms(variant: "Variant") -> list["Variant"]:
    """The guarded forms of a tiled variant, the closest first: the same tiles without what
    `_NOT_GUARDED` names (padded by whole vectors or chunks: their width divides N and K), then
    one that takes any sizes: DMMA without `lines`, FFMA tiles of vectors padded and copied
    element by element (`elems`); none for untiled codelets."""
    name = EDGE_FORMS.get(variant.codelet)
    if name is None:
        return []
    # k rows in blocks of 4 (lines=2, 3) are not offered guarded: the rotated rows (lines=1)
    kept = tuple(("lines", 1) if p in (("lines", 2), ("lines", 3)) else p
                 for p in variant.params if p[0] not in _NOT_GUARDED)
    out = [Variant(name, kept)]
    if variant.kw.get("lines"):  # (m16n8k8 only with lines)
        out.append(Variant(name, tuple(p for p in kept if p[0] not in ("lines", "ik", "ahead"))))
    elif name != "edge-mma" and variant.kw.get("w", 4) > 1:  # tiles-async: float4 always
        out.append(Variant(name, tuple(sorted(kept + (("elems", 1),)))))
    return out


def edge_lossy(variant: "Variant", edge: "Variant") -> bool:
    """The guarded form lacks a speed-up of the variant: DMMA tiles staged over whole lines
    (`lines`), m16n8k8 (`ik`, `ahead`), k-permuted fragment reads (`pairs`), the tail split
    along K (`split`), or tiles of vectors
    copied element by element (`elems`)."""
    return bool(edge.kw.get("elems")) or any(
        variant.kw.get(p) and not edge.kw.get(p) for p in ("lines", "ik", "ahead", "split", "pairs"))


def edge_form(variant: "Variant") -> Optional["Variant"]:
    """The closest guarded form of a tiled variant (`edge_forms`), None where it has none."""
    forms = edge_forms(variant)
    return forms[0] if forms else None
