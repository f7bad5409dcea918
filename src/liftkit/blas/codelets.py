"""Codelets (seed 003 §8.4.2) as families of derivations.

A codelet is a rewrite strategy with numeric parameters; applied to the high-level program of an
operation (`liftkit.blas.programs`) it yields a `Derivation` whose final program is OpenCL-level.
No kernel text is written here: every kernel is the code generator's output for a derived
program, and the derivation (rule by rule) is kept with it.

A `Variant` is one point of a codelet's space (codelet name + parameters). Each codelet also
says which input sizes its kernels need to be multiples of (`multiples`): the library pads to
them (edge handling by padding with zeros, which every derived computation here tolerates: zero
rows/columns add nothing to products and sums and are cut off the result).

The kinds, variants and the `Codelet` record are in `liftkit.blas.variants`, the GEMM codelets
(tiles, tensor cores, cp.async, guarded forms, their CUDA spaces and fit rules) in
`liftkit.blas.mm_codelets`; this module holds the registry (`CODELETS`), the other operations'
codelets, derivation and the defaults. Names callers import from here stay importable here.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Optional

from liftkit.blas import programs as bp
from liftkit.blas.mm_codelets import (  # noqa: F401 - re-exported: callers import them from here
    EDGE_CODELETS, EDGE_FORMS, MM_CODELETS, MM_WIDTH, MMA_GROUPS, MMA_K8_AHEAD, MMA_SPACE,
    SPLIT_BOUND, SPLIT_PARTS, TILES_ASYNC_SPACE, _plan_only, edge_form, edge_forms, edge_lossy,
    ctiles_fit, ctiles_split_space, fit_choice, split_tail_space, tiles_async_footprint,
)
from liftkit.blas.variants import (  # noqa: F401 - re-exported: callers import them from here
    OPS, Codelet, CodeletError, Kind, Variant, on_gpus, pad_to, padded_sizes, padding_ratio,
    variant_key,
)
from liftkit.explore import macros as mc
from liftkit.rewrite.derivation import Derivation
from liftkit.rewrite.strategies import Strategy, at, rule, seq, topdown, try_

MAP1 = ("scal", "axpy")
REDUCTIONS = ("dot", "dotc", "asum", "sumsq")
BODY = (0,)  # the position of a program's body call


def _glb2d(kind: Kind) -> Strategy:
    """Rows to dimension 1, columns to dimension 0 of the global range (one work-item per
    element), inner reductions fused and sequential."""
    return seq(rule("map-mapGlb", dim=1), topdown(rule("map-mapGlb", dim=0)),
               try_(topdown("reduce-map-fusion")))


def _embed_rows(kind: Kind) -> Strategy:
    """cembed: rows of op(Y) to dimension 1, their elements to dimension 0, the pair (1, i)
    sequential (each work-item writes an element of row 2k and of row 2k+1)."""
    return at((1,), seq(rule("map-mapGlb", dim=1), topdown(rule("map-mapGlb", dim=0)),
                        topdown("map-mapSeq")))


# the 2-D copies a padded or split GEMM plan runs (liftkit.blas.gemm, liftkit.blas.split) and the
# size that is their result's row length (what a vector form of width w needs w to divide); not
# tailcols, a column's gather, whose vector form ran slower on the H100 (3.0-3.1 against 2.7-2.8
# us for SGEMM 1023x1025x999's last column, results/issue15/odd25)
COPY_ROWS = {"pad2d": "Q", "window2d": "Q", "crop2d": "N"}


def _vec2d(kind: Kind, w: int) -> Strategy:
    """A 2-D copy's result rows in vectors of w (one 16-byte store per work-item, its lanes read
    from the source as they lie: one vector load where consecutive, else lane by lane): rows to
    dimension 1, then vectorize-map on each row's map, its vectors to dimension 0. One element
    per work-item (`glb`): on the H100 SGEMM 1023x1025x999's pad2d of A 5.8 -> 4.1-4.2 us,
    window2d of B 5.7 -> 3.6-3.7 us; float64's (8 MB) near the bandwidth either way, 6.1 ->
    5.5-5.9 us (results/issue15/odd25)."""
    return seq(rule("map-mapGlb", dim=1), topdown(rule("vectorize-map", w=w)),
               topdown(rule("map-mapGlb", dim=0)))


def copy_form(kind: Kind, sizes: Optional[Mapping[str, int]]) -> Optional[Variant]:
    """A GPU's form of a GEMM plan's 2-D copies (`COPY_ROWS`) at these sizes: 16-byte vectors
    (`vec2d`) where their result rows are whole vectors (real types: complex numbers have no
    OpenCL vectors; a complex64 plan copies its matrices as float32 ones, `gemm._copy_sizes`).
    None: one element per work-item. (The complex embedding cembed 4 elements per work-item ran
    slower than one, 24.0 against 16.8 us at 1000² complex64 on the H100: results/issue15/odd25.)"""
    if sizes is None or kind.op not in COPY_ROWS or kind.dtype in bp.COMPLEX:
        return None
    w = 16 // (4 if kind.dtype == "float32" else 8)
    return Variant.of("vec2d", w=w) if sizes.get(COPY_ROWS[kind.op], 1) % w == 0 else None


def _chunks1d(kind: Kind, n: int) -> Strategy:
    """Maps: n consecutive elements per work-item (split-join, then mapGlb ∘ mapSeq)."""
    return seq(rule("split-join", n=n), at((1,), rule("map-mapGlb", dim=0)),
               at((1, 0, 0, 0), "map-mapSeq"))


def _reduce_chunks(kind: Kind, n: int) -> Strategy:
    """Reductions, the CPU shape (seed 004 Fig. 9c): one work-item per chunk of n, then one
    work-item sums the partial results."""
    return seq(rule(mc.FUSE_PARTIAL, n=n), rule(mc.TO_GROUPS_SEQ), "reduce-reduceSeq")


def _reduce_gpu(kind: Kind, n: int, L: int) -> Strategy:
    return rule(mc.GPU_REDUCTION, n=n, L=L)


def _transpose_rule() -> Any:
    from liftkit.rewrite.rules.transpose import TRANSPOSE_BLOCKS

    return TRANSPOSE_BLOCKS


def _transpose_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.transpose import TRANSPOSE_RULES

    return TRANSPOSE_RULES


def _gemv_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.gemv import GEMV_RULES

    return GEMV_RULES


def _gemv_row_blocks(kind: Kind, r: int, w: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_ROW_BLOCKS

    return rule(GEMV_ROW_BLOCKS, r=r, w=w)


def _gemv_row_block_groups(kind: Kind, r: int, w: int, L: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_ROW_BLOCK_GROUPS

    return rule(GEMV_ROW_BLOCK_GROUPS, r=r, w=w, L=L)


def _gemv_column_blocks(kind: Kind, k: int, w: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_COLUMN_BLOCKS

    return rule(GEMV_COLUMN_BLOCKS, k=k, w=w)


def _gemv_groups(kind: Kind, lanes: int, g: int, w: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_COLUMNS, GEMV_LANE_ROWS

    return rule(GEMV_LANE_COLUMNS if kind.layout in "TC" else GEMV_LANE_ROWS, lanes=lanes, g=g,
                w=w)


def _gemv_row_groups(kind: Kind, lanes: int, g: int, w: int, u: int = 1) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_ROWS

    if kind.layout in "TC" and u == 1:  # (as column-groups: the two share their work-groups)
        return _gemv_groups(kind, lanes, g, w)
    return rule(GEMV_LANE_ROWS, lanes=lanes, g=g, w=w, u=u)


def _gemv_groups_split(kind: Kind, lanes: int, g: int, w: int, r: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_COLUMNS_SPLIT

    return rule(GEMV_LANE_COLUMNS_SPLIT, lanes=lanes, g=g, w=w, r=r)


def streamed(s: Strategy, h: int) -> Strategy:
    """h = 1: s, then the matrix read once (`streamed`, rules/hints.py: CUDA's evict-first
    loads of A, so that A's stream does not evict x and y from the caches; OpenCL C: the
    same source); h = 0: s."""
    from liftkit.rewrite.rules.hints import STREAMED_INPUT
    from liftkit.rewrite.strategies import repeat

    return seq(s, repeat(topdown(rule(STREAMED_INPUT)))) if h else s


def _gemv_groups_last(kind: Kind, lanes: int, g: int, w: int, r: int, b: int = 0,
                      c: int = 0, u: int = 1, h: int = 0) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_COLUMNS_LAST

    return streamed(rule(GEMV_LANE_COLUMNS_LAST, lanes=lanes, g=g, w=w, r=r, b=b, c=c, u=u), h)


def _gemv_groups_tree(kind: Kind, lanes: int, g: int, w: int, u: int = 1, k: int = 0,
                      a: int = 0, f: int = 2, p: int = 0, h: int = 0) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_COLUMNS_TREE

    return streamed(rule(GEMV_LANE_COLUMNS_TREE, lanes=lanes, g=g, w=w, u=u, k=k, a=a, f=f,
                         p=p), h)


def _transpose_local(kind: Kind, r: int, k: int) -> Strategy:
    from liftkit.rewrite.rules.transpose import TRANSPOSE_LOCAL_TILES

    return rule(TRANSPOSE_LOCAL_TILES, r=r, k=k)


# GPU GEMV work-groups (lanes, g, w) the tuner tries: a warp per row or row group, float4 /
# double2 or scalar reads, 4-32 rows or row groups per work-group
# (the H100's fastest first, results/issue15/cuda/run21b; for T, where float32's kernels were
# bound by the bytes each work-item has in flight, first the variants with 8 lanes of 16-byte
# vectors, not yet run on a GPU: (8, 64, 4) is float64's fastest (16, 32, 2) in float32 —
# the same work-groups, work-items, bytes per load and bytes per row step)
# For T also narrower column blocks (4 or 2 lanes: 16 or 8 float4 columns per work-group): at
# 4096² (1024 float4 columns, at most 256 work-items per group, the code generator's cap) 2 lanes
# over 128 row groups ran at twice the rate of (16, 32, 2) in the H100's tuning (run_final);
# at 8192² every float32 variant reading 16 bytes per row step stopped at 2.73 TB/s (0.98x
# cuBLAS) while float64's 32-byte steps reached 3.0 TB/s (1.03x): float8 steps (w=8) first,
# not yet run on a GPU.
GEMV_GROUPS_SPACE = {"N": ((32, 8, 4), (32, 4, 4), (32, 8, 2), (32, 16, 4), (32, 4, 2)),
                     "T": ((4, 64, 8), (2, 128, 8), (4, 32, 8), (2, 128, 4), (4, 64, 4),
                           (8, 64, 4), (8, 128, 4), (4, 32, 4), (8, 32, 4), (4, 64, 2),
                           (16, 32, 2), (8, 128, 2), (16, 64, 2), (32, 32, 1), (16, 32, 4))}


# GEMV T in two passes (lanes, g, w, r): the lane-column work-groups that read 128-512 bytes of
# a row per warp row, r times as many; the H100's fastest first (results/issue15/gemv24: float32
# 8192² (32,8,4,16) 1.00x cuBLAS by kernel, 4096² (8,32,4,8) 0.89x; gemv23 runs 2-3: float32
# 8192² (4,16,8,8) 0.99x, float64 4096² (4,16,4,8) 0.96x)
GEMV_SPLIT_SPACE = ((32, 8, 4, 16), (8, 32, 4, 8), (4, 16, 8, 8), (16, 16, 2, 8), (4, 32, 8, 4),
                    (4, 16, 8, 16), (4, 16, 4, 8), (4, 32, 4, 8), (8, 16, 2, 8))


# GEMV T in one kernel, column blocks × r row chunks meeting through a counter per block (lanes,
# g, w, r[, b[, c]]), the H100's fastest first (results/issue15/gemv25 runs 1-2, gemv25b run 1:
# float32 4096² (16,16,4,16) 0.93x cuBLAS by kernel, 8192² (16,16,4,8) 1.01x; float64 4096² and
# 8192² (8,32,4,8) built for 8 resident groups (b = 8: 32 registers where the compiler chose 34,
# one wave) 0.98x / 1.00x); b = 8 where the kernel was already at 32 registers spilled and lost
# (float32 (16,16,4,16,8) 28.7 against 27.7 us); last the thread-block cluster forms (c = 1),
# not yet run on a GPU
GEMV_LAST_SPACE = ((16, 16, 4, 16), (32, 8, 4, 16), (8, 32, 4, 8, 8), (16, 16, 4, 8),
                   (16, 16, 4, 8, 8), (32, 8, 2, 16, 8), (8, 32, 4, 8), (16, 8, 4, 16),
                   (16, 16, 2, 8), (8, 32, 4, 4), (4, 16, 8, 16), (4, 16, 4, 8),
                   (16, 16, 4, 8, 0, 1), (8, 32, 4, 8, 8, 1),
                   # u > 1 (lanes, g, w, r, b, c, u): u rows a step into u accumulators (H200,
                   # gemv25c run 1: float32 4096² 0.92x by kernel beside (32, 8, 4, 16)'s 0.91x)
                   (32, 8, 4, 16, 0, 0, 4), (16, 16, 4, 16, 0, 0, 2), (16, 16, 4, 8, 0, 0, 2),
                   # h = 1 (lanes, g, w, r, b, c, u, h): A read evict-first (`streamed`)
                   (32, 8, 4, 16, 0, 0, 1, 1), (16, 16, 4, 16, 0, 0, 1, 1))


# GEMV T in one kernel with a tree over the g row groups (lanes, g, w), the H100's fastest first
# (results/issue15/gemv24: (2, 128, 8) float32 / float64 4096² 0.88 / 0.97x cuBLAS by kernel,
# (4, 128, 4) float64 0.97 / 1.00x at 4096² / 8192²; 256 row groups, or 4 lanes of float8,
# read 0.64-0.75x at 4096²)
# (lanes, g, w[, u]): u rows a step into u private accumulators (u loads in flight a
# work-item), first the H200's fastest (results/issue15/gemv25c run 1: (8, 32, 4, 16) float32
# 4096² 0.96x cuBLAS by kernel where the lastWrg form ran 0.91x, 8192² 1.02x; (8, 32, 4, 8)
# float64 4096² 1.03x; (4, 64, 8, 4) float32 8192² 1.03x), then the H100's u = 1 shapes
GEMV_TREE_SPACE = ((8, 32, 4, 16), (8, 32, 4, 8), (4, 64, 8, 4), (4, 64, 4, 4), (4, 64, 8, 8),
                   (8, 32, 4, 4), (2, 128, 8), (4, 128, 4), (4, 64, 4), (2, 128, 4), (4, 64, 8),
                   (2, 64, 8), (8, 32, 2, 8),
                   # (lanes, g, w, u, k, a, f): k = 1, the 512 work-items as one group (cuBLAS's
                   # float32 GEMV T blocks, ≤ 128 registers); a = 1, each step's rows read a step
                   # ahead; f, the tree's fan-in. The H100's fastest (results/issue15/gemv26 run
                   # 2, by kernel at 4096²): float32 (8,64,4,4,k,f=8) 0.985x cuBLAS, float64
                   # (8,64,4,2,k,f=8) 1.025x and (16,32,2,8,k) 1.023x; the pipelined forms (a = 1)
                   # ran 0.5-4 % slower than the same shapes without
                   # p = 1, y's block read into local memory before the rows (gemv26b run 1:
                   # float32 (8,64,4,4,k,f=8,p=1) 1.003x by kernel, float64 u = 2 1.030x)
                   (8, 64, 4, 4, 1, 0, 8, 1), (8, 64, 4, 2, 1, 0, 8, 1), (16, 32, 2, 16, 1, 0, 2, 1),
                   # h = 1, A read evict-first (`streamed`: gemv26b's hand-edited ld.global.cs
                   # ran float32 4096² 1.4 % faster by kernel)
                   (8, 64, 4, 4, 1, 0, 8, 1, 1), (8, 64, 4, 2, 1, 0, 8, 1, 1),
                   (16, 32, 2, 16, 1, 0, 2, 1, 1), (8, 32, 4, 4, 0, 0, 2, 0, 1),
                   (8, 64, 4, 4, 1, 0, 8), (8, 64, 4, 2, 1, 0, 8), (16, 32, 2, 8, 1),
                   (8, 64, 4, 8, 1), (16, 32, 2, 16, 1), (8, 64, 4, 4, 1, 1), (8, 32, 4, 8, 0, 1))


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


CODELETS: dict[str, Codelet] = {c.name: c for c in (
    Codelet("glb", ("mm", "gemv", "transpose", "axpby2d", "scal", "axpy", "cembed", "cprep",
                    "pad2d", "crop2d", "window2d", "tailcols", "hcat"),
            "one work-item per output element (map → mapGlb), any size",
            lambda kind: (_glb2d(kind) if kind.op in ("mm", "transpose", "axpby2d", "cprep",
                                                      "pad2d", "crop2d", "window2d", "tailcols",
                                                      "hcat")
                          else _embed_rows(kind) if kind.op == "cembed"
                          else rule("map-mapGlb", dim=0) if kind.op in MAP1
                          else rule(mc.CPU_ROWS, w=1)),
            lambda dev: [{}]),
    *MM_CODELETS,
    Codelet("blocks-t", ("transpose",), "r×r blocks per work-item (the transpose-blocks rule, "
            "rewrite.rules.transpose): block-rows of the result (swap=0) or of A (swap=1) along "
            "dimension 0, each block copied by r×r sequential accesses",
            lambda kind, r, swap: rule(_transpose_rule(), r=r, swap=swap),
            lambda dev: [{"r": r, "swap": sw} for r in ((8, 4, 16) if dev == "gpu" else (8, 16))
                         for sw in (0, 1)],
            lambda kind, r, swap: {"M": r, "N": r}, rules=lambda: _transpose_rules()),
    Codelet("tiles-t", ("transpose",), "a work-group of r×(r/k) work-items per r×r block "
            "through local memory, k rows per work-item, the tile's rows rotated so that reading "
            "its columns touches every bank (the transpose-local-tiles rule, "
            "rewrite.rules.transpose)",
            _transpose_local,
            on_gpus(("r", "k"), ((32, 4), (32, 8), (32, 2), (16, 2), (64, 16))),
            lambda kind, r, k: {"M": r, "N": r}, rules=lambda: _transpose_rules()),
    Codelet("row-groups", ("gemv",), "GEMV N: g rows per work-group of lanes×g work-items, lane "
            "l summing the vectors l, l+lanes, … of its row (coalesced), partials in local "
            "memory summed by one work-item per row (the gemv-lane-rows rule, "
            "rewrite.rules.gemv); u > 1: each work-item's vectors u at a time into u private "
            "accumulators; complex types one element at a time",
            _gemv_row_groups,
            on_gpus(("lanes", "g", "w", "u"), GEMV_GROUPS_SPACE["N"]),
            lambda kind, lanes, g, w, u=1: {"M": g, "N": lanes * w * u},
            dtypes=tuple(bp.DTYPES), layouts=("N", "R"), rules=_gemv_rules),
    Codelet("column-groups", ("gemv",), "GEMV T: lanes·w columns per work-group of lanes×g "
            "work-items, each summing every g-th row of its w columns (A's rows read coalesced, "
            "x broadcast), the g partials per column summed from local memory (the "
            "gemv-lane-columns rule, rewrite.rules.gemv); complex types one element at a time",
            _gemv_groups,
            on_gpus(("lanes", "g", "w"), GEMV_GROUPS_SPACE["T"]),
            lambda kind, lanes, g, w: {"M": g, "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("T", "C"), rules=_gemv_rules),
    Codelet("column-groups-split", ("gemv",), "GEMV T in two kernels: column-groups' work-groups "
            "over r row chunks (rows ≡ j mod g·r), r times as many, their sums in an [r][N] "
            "workspace, then one work-item per column sums its r partials in order (the "
            "gemv-lane-columns-split rule, rewrite.rules.gemv); complex types one element at a time",
            _gemv_groups_split,
            on_gpus(("lanes", "g", "w", "r"), GEMV_SPLIT_SPACE),
            lambda kind, lanes, g, w, r: {"M": g * r, "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("T", "C"), rules=_gemv_rules),
    Codelet("column-groups-last", ("gemv",), "GEMV T in one kernel: column-groups-split's "
            "work-groups (r row chunks), their sums in a global workspace, the last work-group "
            "of a column block (an atomic counter per block) summing its r partials in order "
            "(the gemv-lane-columns-last rule, rewrite.rules.gemv: the lastWrg pattern); b > 0: "
            "built for b resident work-groups per multiprocessor (CUDA); c = 1: a block's r ≤ 8 "
            "chunks as one thread-block cluster, meeting in distributed shared memory (CUDA); "
            "u > 1: each work-item's rows u at a time into u private accumulators; h = 1: A "
            "read evict-first (the `streamed` hint, rules/hints.py: CUDA ld.global.cs; OpenCL's "
            "source unchanged); complex types one element at a time",
            _gemv_groups_last,
            lambda dev: [dict(zip(("lanes", "g", "w", "r", "b", "c", "u", "h"), p))
                         for p in GEMV_LAST_SPACE] if dev == "gpu" else [],
            lambda kind, lanes, g, w, r, b=0, c=0, u=1, h=0: {"M": g * r * u, "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("T", "C"), rules=_gemv_rules),
    Codelet("column-groups-tree", ("gemv",), "GEMV T in one kernel: column-groups' work-groups, "
            "the g partials per column summed by a tree in local memory (log₂ g steps, every lane "
            "at work) instead of in order by row 0's lanes (the gemv-lane-columns-tree rule, "
            "rewrite.rules.gemv); u > 1: each work-item's rows u at a time into u private "
            "accumulators (u loads in flight); k = 1: the lanes×g work-items as one work-group "
            "beyond the code generator's 256 (wrgItems; CUDA __launch_bounds__); a = 1: each "
            "step's rows read a step ahead (software-pipelined); f: the tree's fan-in (2, 4 "
            "or 8 row groups a step); p = 1 (2): y's block copied into local memory before "
            "(after) the rows, not read after the tree; h = 1: A read evict-first (the "
            "`streamed` hint); complex types one element at a time",
            _gemv_groups_tree,
            on_gpus(("lanes", "g", "w", "u", "k", "a", "f", "p", "h"), GEMV_TREE_SPACE),
            lambda kind, lanes, g, w, u=1, k=0, a=0, f=2, p=0, h=0: {
                "M": g * u * (2 if a else 1), "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("T", "C"), rules=_gemv_rules),
    Codelet("rows", ("gemv",), "one work-item per row, its dot product vectorised by w "
            "(fuse-rows, vectorize-fused, mapGlb; the cpu-rows macro)",
            lambda kind, w: rule(mc.CPU_ROWS, w=w),
            lambda dev: [{"w": w} for w in (1, 4, 8, 16)],
            lambda kind, w: {"N" if kind.layout in "NR" else "M": w}),
    Codelet("row-blocks", ("gemv",), "r rows per work-item, their columns walked once in vectors "
            "of w with r private accumulators (independent chains; one vector of x per step for "
            "all r rows), lanes summed at the end (the gemv-row-blocks rule, "
            "rewrite.rules.gemv); real types, A's rows",
            _gemv_row_blocks,
            lambda dev: [{"r": r, "w": w} for r in (2, 4, 8) for w in (16, 8)] if dev == "cpu"
            else [],
            lambda kind, r, w: {"M": r, "N": w},
            dtypes=("float32", "float64"), layouts=("N",), rules=_gemv_rules),
    Codelet("row-block-groups", ("gemv",), "row-blocks in work-groups of L work-items (the "
            "gemv-row-block-groups rule): the work-group size chosen, not left to the runtime "
            "(CPU: fewer, larger groups, results/issue15/cpu23)",
            _gemv_row_block_groups,
            lambda dev: [{"r": r, "w": 16, "L": L} for r in (2, 4, 8) for L in (32, 64, 128)]
            if dev == "cpu" else [],
            lambda kind, r, w, L: {"M": r * L, "N": w},
            dtypes=("float32", "float64"), layouts=("N",), rules=_gemv_rules),
    Codelet("column-blocks", ("gemv",), "GEMV T: k·w columns of A per work-item, each row's "
            "segment read as k vectors of w into k private accumulators, x's element broadcast "
            "(the gemv-column-blocks rule, rewrite.rules.gemv); real types",
            _gemv_column_blocks,
            lambda dev: [{"k": k, "w": w} for k in (2, 4, 8) for w in (16, 8)] if dev == "cpu"
            else [],
            lambda kind, k, w: {"N": k * w},
            dtypes=("float32", "float64"), layouts=("T",), rules=_gemv_rules),
    Codelet("group-rows", ("gemv",), "one work-group of L work-items per row, a tree in local "
            "memory (the gpu-rows macro, CLBlast-style); h = 1 (GPUs): A read evict-first (the "
            "`streamed` hint, rules/hints.py: CUDA ld.global.cs; OpenCL's source unchanged)",
            lambda kind, L, w, h=0: streamed(rule(mc.GPU_ROWS, L=L, w=w), h),
            lambda dev: [{"L": L, "w": w} for L in (32, 64, 128, 256) for w in (1, 4)]
            + ([{"L": L, "w": w, "h": 1} for L in (128, 256) for w in (4, 2)] if dev == "gpu"
               else []),
            lambda kind, L, w, h=0: {"N" if kind.layout in "NR" else "M": L * w}),
    Codelet("vec2d", tuple(COPY_ROWS), "a 2-D copy's result rows as vectors of w per "
            "work-item (vectorize-map on the rows' map, mapGlb over rows and vectors); the "
            "lanes read as the source lies (one vector load where consecutive)",
            _vec2d, lambda dev: [],
            lambda kind, w: {COPY_ROWS[kind.op]: w}, dtypes=("float32", "float64")),
    Codelet("vec", ("scal",), "float vectors of w per work-item (map-glb-vec)",
            lambda kind, w: rule(mc.MAP_GLB_VEC, w=w),
            lambda dev: [{"w": w} for w in (2, 4, 8)],
            lambda kind, w: {"N": w}),
    Codelet("chunks", ("scal", "axpy", "dot", "dotc", "asum", "sumsq"),
            "n consecutive elements per work-item (maps: split-join; reductions: fuse-partial "
            "and one work-item per chunk, seed 004 Fig. 9c)",
            lambda kind, n: _reduce_chunks(kind, n) if kind.op in REDUCTIONS else _chunks1d(kind, n),
            lambda dev: [{"n": n} for n in (_pow2(4, 64) if dev == "gpu" else _pow2(64, 4096))],
            lambda kind, n: {"N": n}),
    Codelet("tree", ("dot", "dotc", "asum", "sumsq"),
            "float4, n elements per work-item, L per work-group, local-memory trees in two "
            "stages (the gpu-reduction macro, seed 004 Fig. 9a/b)",
            _reduce_gpu,
            lambda dev: [{"n": n, "L": L} for n in (4, 16, 64) for L in (64, 128, 256)],
            lambda kind, n, L: {"N": 4 * n * L * 256}),
)}


def codelets_for(op: str, backend: Optional[str] = None) -> list[Codelet]:
    """The codelets deriving `op` on `backend`; a backend's own codelets (tensor cores, cp.async)
    and the plans of several kernels first, so a tuning run capped by `max_variants` tries them."""
    found = [c for c in CODELETS.values()
             if op in c.ops and (backend is None or backend in c.backends)]
    first = [c for c in found if len(c.backends) == 1 or c.strategy is _plan_only]
    return first + [c for c in found if c not in first]


# codelets that read complex numbers as OpenCL vectors, which do not exist for them
_VECTOR_CODELETS = ("vec", "vec2d", "tree")


def fits(kind: Kind, variant: Variant) -> bool:
    """Whether the variant can derive the kind: complex numbers have no vector forms, so no
    vector codelet and no vector width above 1; ctiles-async kt=1 needs a transposed operand;
    mma's k-row layouts (lines 2, 3) an operand copied as k rows (not NT)."""
    if variant.codelet == "ctiles-async" and not ctiles_fit(kind, variant):
        return False
    if variant.codelet == "mma" and variant.kw.get("lines", 0) >= 2 and kind.layout == "NT":
        return False  # k rows in blocks or rotated segments (lines 2, 3): NT copies none
    if variant.codelet == "tiles-t" and not tile_fits(kind, variant):
        return False
    if kind.dtype not in bp.COMPLEX:
        return True
    return variant.codelet not in _VECTOR_CODELETS and variant.kw.get("w", 1) == 1


# the local memory a kernel may declare statically (CUDA's 48 KB; OpenCL GPUs at least 32 KB)
LOCAL_TILE_BYTES = 32 * 1024
ITEMSIZE = {"float32": 4, "float64": 8, "complex64": 8, "complex128": 16}


def tile_fits(kind: Kind, variant: Variant) -> bool:
    """Whether tiles-t's r×r tile of `kind`'s elements fits LOCAL_TILE_BYTES (r = 64: not
    complex128's 64 KB)."""
    return variant.kw.get("r", 0) ** 2 * ITEMSIZE[kind.dtype] <= LOCAL_TILE_BYTES


def get_codelet(variant: Variant, kind: Kind) -> Codelet:
    c = CODELETS.get(variant.codelet)
    if c is None:
        raise CodeletError(f"unknown codelet {variant.codelet!r} (known: {', '.join(CODELETS)})")
    if kind.op not in c.ops:
        raise CodeletError(f"codelet {c.name} does not derive {kind.op} (it derives "
                           f"{', '.join(c.ops)})")
    if c.dtypes is not None and kind.dtype not in c.dtypes:
        raise CodeletError(f"codelet {c.name} derives {', '.join(c.dtypes)} only, not "
                           f"{kind.dtype}")
    if c.layouts is not None and kind.op == "mm" and kind.layout not in c.layouts:
        # (e.g. edge-tiles-async over NT's transposed view: cp.async of vectors across rows)
        raise CodeletError(f"codelet {c.name} derives the layouts {', '.join(c.layouts)} only, "
                           f"not {kind.layout}")
    if variant.codelet == "ctiles-async" and not ctiles_fit(kind, variant):
        raise CodeletError(f"{variant}: kt=1 tiles a transposed operand (layout letters T, C; "
                           f"with rot=1 the second operand), and {kind} has none")
    if variant.codelet == "tiles-t" and not tile_fits(kind, variant):
        raise CodeletError(f"{variant}: an r×r tile of {kind.dtype} takes more than "
                           f"{LOCAL_TILE_BYTES // 1024} KB of local memory")
    if variant.codelet == "mma" and variant.kw.get("lines", 0) >= 2 and kind.layout == "NT":
        raise CodeletError(f"{variant} does not derive {kind}: lines={variant.kw['lines']} lays "
                           f"out operands copied as k rows, and NT copies none")
    if not fits(kind, variant):
        raise CodeletError(f"{variant} reads {kind.dtype} as OpenCL vectors, which complex "
                           f"numbers have none of (vector width 1 only)")
    return c


def derive(kind: Kind, variant: Variant) -> Derivation:
    """The derivation of `kind`'s kernel by `variant`'s codelet from its high-level program
    (derived once per kind and variant: building a kernel and finding the size multiples of a
    tiled codelet both need it, and a tensor-core derivation takes seconds; callers treat the
    shared result as immutable)."""
    return _derive(kind, variant)


@functools.lru_cache(maxsize=256)
def _derive(kind: Kind, variant: Variant) -> Derivation:
    c = get_codelet(variant, kind)
    start = Derivation(kind.program(), name=f"{kind}")
    try:
        return start.then(c.strategy(kind, **variant.kw), BODY, rules=c.rules())
    except Exception as err:  # noqa: BLE001 - any rewrite failure is one message
        raise CodeletError(f"{variant} does not derive {kind}: {err}") from None


def multiples(kind: Kind, variant: Variant) -> dict[str, int]:
    return dict(get_codelet(variant, kind).multiples(kind, **variant.kw))


@functools.cache
def _multiples_if_derives(kind: Kind, variant: Variant) -> Optional[dict[str, int]]:
    """The variant's size multiples for this kind, None where it does not derive it."""
    try:
        return multiples(kind, variant)
    except CodeletError:
        return None


def space(kind: Kind, device_kind: str, backend: str = "opencl") -> list[Variant]:
    """Every variant the tuner tries for `kind` on a device of `device_kind` and `backend`."""
    return [v for c in codelets_for(kind.op, backend) for p in c.space(device_kind)
            if (c.dtypes is None or kind.dtype in c.dtypes)
            and (c.layouts is None or kind.layout in c.layouts)
            and fits(kind, v := Variant.of(c.name, **p))]


def space_at(kind: Kind, device_kind: str, backend: str, sizes: Mapping[str, int],
             limits: Any = None) -> list[Variant]:
    """`space`, then the variants that depend on the sizes and the device (`limits`: its
    multiprocessors' limits, `occupancy.SMLimits`; on CUDA the split tail, `split_tail_space`,
    and the complex tiles' register caps and whole-grid split, `ctiles_split_space`)."""
    extra = split_tail_space(kind, sizes, limits) + ctiles_split_space(kind, sizes, limits) \
        if backend == "cuda" and limits is not None else []
    return space(kind, device_kind, backend) + extra


# untuned GEMMs large enough for tiles: the tiled derivation measured fastest on the CPU
# device per element type (scalar register blocks, which Intel's CPU compiler vectorises across
# work-items: for float32 4×4 blocks of 64×64 tiles, 2.5x the float4 blocks at 1024³,
# results/issue15/cpu-final; for double and complex 4×1, docs/blas.md); GPUs keep `glb` until
# tuned (the tiles were not run there through liftkit.blas yet)
_CPU_SCALAR_TILES = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)
DEFAULT_TILES: dict[str, dict[str, Variant]] = {"cpu": {
    "float32": Variant.of("tiles", tm=64, tn=64, tk=16, rm=4, rn=4, w=1),
    "float64": _CPU_SCALAR_TILES, "complex64": _CPU_SCALAR_TILES, "complex128": _CPU_SCALAR_TILES}}
# untuned GEMVs reading A's rows on the CPU device: 4 rows per work-item read in float16 /
# double16 vectors (a vector as wide as the SIMD unit or wider: Intel's CPU compiler keeps the
# work-item's own vectors instead of packing work-items, whose rows stride across SIMD lanes;
# results/issue15/cpu/gemv.md: 1.5-2x a work-group of 32 per row, the previous default); complex
# numbers have no vectors: a work-group of 32 per row (docs/blas.md)
_CPU_GROUP_ROWS = Variant.of("group-rows", L=32, w=1)
_CPU_ROW_BLOCKS = Variant.of("row-blocks", r=4, w=16)
DEFAULT_ROWS: dict[str, dict[str, Variant]] = {"cpu": {
    "float32": _CPU_ROW_BLOCKS, "float64": _CPU_ROW_BLOCKS,
    "complex64": _CPU_GROUP_ROWS, "complex128": _CPU_GROUP_ROWS}}
# untuned real GEMV T on the CPU device: 128 columns per work-item as 8 float16/double16 vectors
# along A's rows (results/issue15/cpu/gemv: 1.3-2.3x single-thread NumPy at 2048/4096, where
# one work-item per column ran at 0.12-0.14x)
DEFAULT_COLUMNS = {"cpu": Variant.of("column-blocks", k=8, w=16)}
DEFAULT_MAX_PADDING = 1.25  # padding may add at most this share of work to use the tiles
# untuned on the CUDA backend: what the H100 ran fastest (results/issue15/cuda: tiles-async
# 64x64x16 with 2 stages best at 1024 and within 1 % of the best at 4096; DMMA 128x64x16 on 4
# warps, tiles copied over whole lines 4 deep, results/issue12/mma run 5: 2.885 ms = 0.88x
# cuBLAS DGEMM at 4096³; NT/TN and complex GEMMs as plans over those; 64 work-items per row for
# GEMV); everything else as on any GPU
_MMA_DEFAULT = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1)
CUDA_DEFAULTS: dict[tuple[str, str, str], Variant] = {
    ("mm", "float32", "NN"): Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2),
    # SGEMM TN on its own derivation (Aᵀ tiled as stored, kt): per call 1.01x cuBLAS at 1024
    # against 0.91x through the transpose (results/issue15/sgemm23); NT keeps the transpose
    # (its kt form, 0.87x at best, loses to it)
    ("mm", "float32", "NT"): Variant.of("nn"),
    ("mm", "float32", "TN"): Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2),
    ("mm", "float64", "NN"): _MMA_DEFAULT,
    # DGEMM NT through the transpose and the NN kernel; TN on its own DMMA derivation with
    # the tiles copied over whole lines (A's along its stored rows): in run 22 on the H100
    # (results/issue15/cuda/run22) per call 30.3 / 42.2 TFLOP/s at 1024 / 4096 against the
    # nn plan's 28.2 / 40.6 (no transpose, no workspace)
    ("mm", "float64", "NT"): Variant.of("nn"), ("mm", "float64", "TN"): _MMA_DEFAULT,
    **{("mm", c, lay): Variant.of("real") for c in bp.COMPLEX for lay in bp.COMPLEX_LAYOUTS},
    # GEMV N: a work-group of 128 per row (H100, results/issue15/gemv23, kernels beside cuBLAS
    # at 4096² / 8192²: float32 float4 1.09 / 1.22x, float64 double2 1.01 / 0.98x where double4
    # read 0.94 / 0.97x, complex64 1.06 / 1.00x, complex128 1.00 / 0.96x); row-groups ran as fast
    # or slower (run21b, gemv23 run 1)
    **{("gemv", dt, lay): Variant.of("group-rows", L=128, w={"float32": 4, "float64": 2}.get(dt, 1))
       for dt in bp.DTYPES for lay in "NR"},
    # real GEMV T on the H100 (results/issue15/gemv24, kernels beside cuBLAS at 4096² / 8192²):
    # float32 the two-pass form over whole 512-byte runs of a row, 32 lanes of float4 × 8 row
    # groups × 16 row chunks (0.88 / 1.00x, where (4, 16, 8, 8) read 0.84 / 0.99x); float64 4
    # lanes of double4 over 128 row groups finished by a tree (0.96-0.97 / 1.00x, where the
    # in-order column-groups(4, 64, 4) read 0.94 / 1.00x); one work-item per column (`glb`)
    # 0.15-0.26x. float32 now those work-groups in one kernel, the last of each column block
    # summing its 16 chunks (column-groups-last, results/issue15/gemv25 runs 1-2: 0.93 / 1.02x,
    # the two-pass form 0.88-0.90 / 1.00x in the same runs)
    ("gemv", "float32", "T"): Variant.of("column-groups-last", lanes=32, g=8, w=4, r=16),
    ("gemv", "float64", "T"): Variant.of("column-groups-tree", lanes=4, g=128, w=4),
    # complex GEMV T and Aᴴ: 8 lanes × 64 row groups of single elements (results/issue15/gemv23
    # run 4, T: 0.83-0.98x cuBLAS by kernel at 4096²/8192², one work-item per column 0.06-0.11x)
    **{("gemv", dt, lay): Variant.of("column-groups", lanes=8, g=64, w=1)
       for dt in bp.COMPLEX for lay in "TC"},
    # transposes through rotated local tiles (0.90-0.94x the copy at 8192², glb 0.30x)
    **{("transpose", dt, "-"): Variant.of("tiles-t", r=32, k=8 if dt == "float32" else 4)
       for dt in bp.DTYPES},
}


def default_variant(kind: Kind, device_kind: str = "cpu",
                    sizes: Optional[Mapping[str, int]] = None, backend: str = "opencl") -> Variant:
    """The derivation used when no profile says better: correct for any size (with `sizes`,
    a GEMM the tiles fit with little padding gets the tiled derivation where it derives)."""
    real_t = kind.op == "gemv" and kind.layout == "T" and kind.dtype not in bp.COMPLEX
    better = (DEFAULT_TILES.get(device_kind, {}).get(kind.dtype) if kind.op == "mm" else
              DEFAULT_ROWS.get(device_kind, {}).get(kind.dtype)
              if kind.op == "gemv" and kind.layout in "NR" else
              DEFAULT_COLUMNS.get(device_kind) if real_t else None)
    if backend == "cuda":
        better = CUDA_DEFAULTS.get((kind.op, kind.dtype, kind.layout), better)
    if better is not None and sizes is not None:
        mult = _multiples_if_derives(kind, better)
        if mult is not None and padding_ratio(sizes, mult) <= DEFAULT_MAX_PADDING:
            return better
    if device_kind == "gpu" and (form := copy_form(kind, sizes)) is not None:
        return form  # a GPU's 2-D copies in 16-byte vectors where the rows are whole vectors
    if kind.op in REDUCTIONS:
        return Variant.of("chunks", n=64 if device_kind == "gpu" else 256)
    if kind.op == "gemv":
        return Variant.of("glb")
    return Variant.of("glb")


def lookup_variant(kind: Kind, text: Optional[str]) -> Variant:
    """A variant written as `codelet(k=v,...)` (the CLI's form)."""
    if not text:
        return default_variant(kind)
    name, _, rest = text.partition("(")
    params = {}
    for item in filter(None, rest.rstrip(")").split(",")):
        k, _, v = item.partition("=")
        params[k.strip()] = int(v)
    return Variant.of(name.strip(), **params)
