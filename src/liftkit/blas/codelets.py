"""Codelets (seed 003 §8.4.2) as families of derivations.

A codelet is a rewrite strategy with numeric parameters; applied to the high-level program of an
operation (`liftkit.blas.programs`) it yields a `Derivation` whose final program is OpenCL-level.
No kernel text is written here: every kernel is the code generator's output for a derived
program, and the derivation (rule by rule) is kept with it.

A `Variant` is one point of a codelet's space (codelet name + parameters). Each codelet also
says which input sizes its kernels need to be multiples of (`multiples`): the library pads to
them (edge handling by padding with zeros, which every derived computation here tolerates: zero
rows/columns add nothing to products and sums and are cut off the result).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from liftkit.blas import programs as bp
from liftkit.explore import macros as mc
from liftkit.ir.nodes import Lambda
from liftkit.rewrite.derivation import Derivation
from liftkit.rewrite.strategies import Strategy, at, rule, seq, topdown, try_

# the operations (kernel families) and the high-level program each derives from
OPS = ("mm", "gemv", "transpose", "axpby2d", "scal", "axpy", "dot", "dotc", "asum", "sumsq")
MAP1 = ("scal", "axpy")
REDUCTIONS = ("dot", "dotc", "asum", "sumsq")
BODY = (0,)  # the position of a program's body call


class CodeletError(ValueError):
    """A codelet that does not exist, does not fit an operation, or failed to derive."""


@dataclass(frozen=True)
class Variant:
    """One derivation choice: a codelet and its parameters (hashable, JSON-able)."""

    codelet: str
    params: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(codelet: str, **params: int) -> "Variant":
        return Variant(codelet, tuple(sorted((k, int(v)) for k, v in params.items())))

    @property
    def kw(self) -> dict[str, int]:
        return dict(self.params)

    def __str__(self) -> str:
        ps = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.codelet}({ps})"

    def to_json(self) -> dict[str, Any]:
        return {"codelet": self.codelet, "params": self.kw}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Variant":
        return Variant.of(str(d["codelet"]), **{k: int(v) for k, v in d.get("params", {}).items()})


@dataclass(frozen=True)
class Kind:
    """What a kernel computes: an operation, its element type and its layout
    (mm: NN/NT/TN, for complex types also with R/C letters, `programs.COMPLEX_LAYOUTS`;
    gemv: N/T, complex also R/C; axpby2d: N/T; others: '-')."""

    op: str
    dtype: str
    layout: str = "-"

    def __str__(self) -> str:
        return f"{self.op}/{self.dtype}/{self.layout}"

    def program(self) -> Lambda:
        t, lay = self.dtype, self.layout
        builders: dict[str, Callable[[], Lambda]] = {
            "mm": lambda: bp.mm(t, lay), "gemv": lambda: bp.gemv(t, lay in "TC", lay in "RC"),
            "transpose": lambda: bp.transpose_prog(t), "axpby2d": lambda: bp.axpby2d(t, lay == "T"),
            "cembed": lambda: bp.cembed(t, lay), "cprep": lambda: bp.cprep(t, lay),
            "scal": lambda: bp.scal(t), "axpy": lambda: bp.axpy(t), "dot": lambda: bp.dot(t),
            "dotc": lambda: bp.dotc(t), "asum": lambda: bp.asum(t), "sumsq": lambda: bp.sumsq(t)}
        if self.op not in builders:
            raise CodeletError(f"unknown operation {self.op!r} (known: {', '.join(OPS)})")
        return builders[self.op]()


@dataclass(frozen=True)
class Codelet:
    """A strategy family: `strategy(kind, **params)` rewrites the program's body;
    `multiples(kind, **params)` gives the size multiples its kernels need."""

    name: str
    ops: tuple[str, ...]
    summary: str
    strategy: Callable[..., Strategy]
    space: Callable[[str], list[dict[str, int]]]  # device kind ("cpu"/"gpu") -> params tried
    multiples: Callable[..., dict[str, int]] = field(default=lambda kind, **p: {})
    backends: tuple[str, ...] = ("opencl", "cuda")  # where its kernels run
    dtypes: Optional[tuple[str, ...]] = None  # element types it derives (None: all)
    layouts: Optional[tuple[str, ...]] = None  # layouts it derives (None: all)
    rules: Callable[[], Mapping[str, Any]] = field(default=lambda: {})  # beyond the rules package


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
    from liftkit.codegen.constraints import size_multiples

    return dict(size_multiples(derive(kind, variant).final))


def _mm_mma(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int, lines: int = 0,
            ik: int = 0, ahead: int = 0, group: int = 0, kparts: int = 0,
            kslots: int = 0) -> Strategy:
    from liftkit.rewrite.rules.cuda import MM_TENSOR_CORES
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.rules.mm_schedule import MMA_SPLIT_TAIL

    extra: dict[str, Any] = {"lines": True} if lines else {}
    if ik:  # ik=8: DMMA m16n8k8 throughout (reduceMmaF64K8)
        extra["ik"] = ik
    if ahead:  # with ik=8: fragments read a k-step ahead (1), and the copies spread (2)
        extra["ahead"] = ahead
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
                   w: Optional[int] = None, elems: int = 0) -> Strategy:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES

    extra = {"elems": 1} if elems else {}
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
                         bound: int = 0) -> Strategy:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES_ASYNC
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL

    extra = {"elems": 1} if elems else {}
    tiles = rule(MM_EDGE_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **extra)
    if not (split or bound):
        return tiles
    if not slots:
        raise CodeletError("edge-tiles-async split into parts needs the GPU's slots")
    # the guarded tile loop's last partial wave split along K too (its K tiles zero-filled past K)
    return seq(tiles, topdown(rule(MM_SPLIT_TAIL, parts=split or 1, slots=slots, bound=bound)))


# a tiled codelet's guarded form (rewrite.rules.mm_edges: the same kernel over padded views of
# the operands, its stores of the ragged edge guarded): what liftkit.blas runs instead of padded
# copies where the sizes are not multiples of the tiles
EDGE_FORMS = {"tiles": "edge-tiles", "tiles-async": "edge-tiles-async", "mma": "edge-mma"}
EDGE_CODELETS = frozenset(EDGE_FORMS.values())  # (a profile's entries of them rank guarded forms)
# what the guarded forms do not offer: A's rows rotated in local memory, the grouped block
# order (its grid of row groups needs whole groups of row tiles), the DMMA loop split along K
_NOT_GUARDED = ("rot", "group", "kparts", "kslots")
def fit_choice(kind: Kind, variant: "Variant", sizes: Mapping[str, int]) -> "Variant":
    """The profile's choice fitted to the sizes: without its grouped block order (`group`,
    whose grid takes whole groups of row tiles) where the groups would pad beyond what its tiles
    pad (4097 rows: 4224 with 128-row tiles, 4608 in groups of 4), the same kernel in row order;
    DGEMM NT's own DMMA kernel (no guarded form) where it would pad at all, the `nn` plan
    instead (the transpose, then the NN kernel's guarded form: no padded copies)."""
    if variant.kw.get("group"):
        plain = Variant(variant.codelet, tuple(p for p in variant.params if p[0] != "group"))
        if padded_sizes(sizes, multiples(kind, variant)) != padded_sizes(sizes, multiples(kind, plain)):
            variant = plain
    if (kind.op, kind.layout, variant.codelet) == ("mm", "NT", "mma") and \
            padded_sizes(sizes, multiples(kind, variant)) != dict(sizes):
        return Variant.of("nn")
    return variant


def edge_forms(variant: "Variant") -> list["Variant"]:
    """The guarded forms of a tiled variant, the closest first: the same tiles without what
    `_NOT_GUARDED` names (padded by whole vectors or chunks: their width divides N and K), then
    one that takes any sizes: DMMA without `lines`, FFMA tiles of vectors padded and copied
    element by element (`elems`); none for untiled codelets."""
    name = EDGE_FORMS.get(variant.codelet)
    if name is None:
        return []
    kept = tuple(p for p in variant.params if p[0] not in _NOT_GUARDED)
    out = [Variant(name, kept)]
    if variant.kw.get("lines"):  # (m16n8k8 only with lines)
        out.append(Variant(name, tuple(p for p in kept if p[0] not in ("lines", "ik", "ahead"))))
    elif name != "edge-mma" and variant.kw.get("w", 4) > 1:  # tiles-async: float4 always
        out.append(Variant(name, tuple(sorted(kept + (("elems", 1),)))))
    return out


def edge_lossy(variant: "Variant", edge: "Variant") -> bool:
    """The guarded form lacks a speed-up of the variant: DMMA tiles staged over whole lines
    (`lines`), m16n8k8 (`ik`, `ahead`), the tail split along K (`split`), or tiles of vectors
    copied element by element (`elems`)."""
    return bool(edge.kw.get("elems")) or any(
        variant.kw.get(p) and not edge.kw.get(p) for p in ("lines", "ik", "ahead", "split"))


def edge_form(variant: "Variant") -> Optional["Variant"]:
    """The closest guarded form of a tiled variant (`edge_forms`), None where it has none."""
    forms = edge_forms(variant)
    return forms[0] if forms else None


# the Hopper FFMA SGEMM shapes (tm, tn, tk, rm, rn, stages): H1's run 4 best (128x64x32, 0.92x
# cuBLAS at 4096³, 0.97x at 8192³; the bundled derivations), then those results/issue12/sgemm
# measured at 0.87-0.91x (4096³); 64x64x16 ran fastest at 1024 here (results/issue15/cuda)
TILES_ASYNC_SPACE = ((128, 64, 32, 8, 8, 2), (64, 128, 16, 8, 8, 2), (64, 128, 32, 8, 8, 2),
                     (64, 64, 16, 8, 8, 2), (64, 64, 32, 8, 8, 2), (64, 64, 16, 8, 8, 4),
                     (64, 64, 32, 8, 8, 3))


# the split tail the tuner tries (mm-split-tail after tiles-async): the tail split 3, 4 or 5
# ways along K under __launch_bounds__(threads, 3) (the H100's best: 5 ways at 4096³, 4 at 8192³,
# slots 396 = 132 SMs × 3, bound 3; results/issue12/sgemm22/run1)
SPLIT_PARTS = (3, 4, 5)
SPLIT_BOUND = 3


def tiles_async_footprint(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int
                          ) -> tuple[int, int]:
    """(threads, bytes of shared memory) of a float32 tiles-async block: a thread per rm×rn
    register block, `stages` A and B tiles staged in shared memory."""
    return (tm // rm) * (tn // rn), stages * (tm + tn) * tk * 4


def split_tail_space(kind: Kind, sizes: Mapping[str, int], limits: Any) -> list[Variant]:
    """The split-tail variants of the tiles-async tilings worth trying at `sizes` on a device
    of `limits` (`liftkit.backends.cuda.occupancy.SMLimits`): those whose bound fixes the
    resident blocks (slots = multiprocessors × SPLIT_BOUND, `bounded_slots`) and whose tile
    grid ends in a partial wave after at least one full one, with at least `parts` tiles of K
    to split; none for other kinds or backends."""
    from liftkit.backends.cuda.occupancy import bounded_slots

    c = CODELETS["tiles-async"]
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


def _gemv_groups_split(kind: Kind, lanes: int, g: int, w: int, r: int) -> Strategy:
    from liftkit.rewrite.rules.gemv import GEMV_LANE_COLUMNS_SPLIT

    return rule(GEMV_LANE_COLUMNS_SPLIT, lanes=lanes, g=g, w=w, r=r)


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


# GEMV T in two passes (lanes, g, w, r): the lane-column work-groups that read 128 bytes of a
# row per warp row, r times as many; the H100's fastest first (results/issue15/gemv23 runs 2-3:
# float32 8192² (4,16,8,8) 0.99x cuBLAS by kernel, float64 4096² (4,16,4,8) 0.96x)
GEMV_SPLIT_SPACE = ((4, 16, 8, 8), (4, 32, 8, 4), (4, 16, 8, 16), (4, 32, 8, 8), (4, 16, 4, 8),
                    (4, 32, 4, 8), (8, 16, 2, 8), (4, 64, 8, 2))


def _cuda_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.rules.mm_schedule import MMA_SPLIT_TAIL

    return {**CUDA_RULES_BY_NAME, WRG_ROW_GROUPS.name: WRG_ROW_GROUPS,
            MMA_SPLIT_TAIL.name: MMA_SPLIT_TAIL}


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


def _mma_k8_space() -> list[dict[str, int]]:
    k8 = [{**_mma_params(p), "ik": 8, **({"ahead": h} if h else {})}
          for h in MMA_K8_AHEAD for p in MMA_SPACE if p[5] and p[2] >= 16 and p[4] >= 2]
    return k8 + [{**v, "group": g} for g in MMA_GROUPS for v in k8 if v.get("ahead")]


def _plan_only(kind: Kind) -> Strategy:
    raise CodeletError(f"{kind}: codelets real and nn are plans of several derived kernels "
                       "(liftkit.blas.gemm), not one derivation")


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


CODELETS: dict[str, Codelet] = {c.name: c for c in (
    Codelet("glb", ("mm", "gemv", "transpose", "axpby2d", "scal", "axpy", "cembed", "cprep"),
            "one work-item per output element (map → mapGlb), any size",
            lambda kind: (_glb2d(kind) if kind.op in ("mm", "transpose", "axpby2d", "cprep")
                          else _embed_rows(kind) if kind.op == "cembed"
                          else rule("map-mapGlb", dim=0) if kind.op in MAP1
                          else rule(mc.CPU_ROWS, w=1)),
            lambda dev: [{}]),
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
            kslots=0: _tiled_multiples(
                kind, Variant.of("mma", tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                                 **({"lines": 1} if lines else {}), **({"ik": ik} if ik else {}),
                                 **({"ahead": ahead} if ahead else {}),
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
            lambda dev: [dict(zip(("tm", "tn", "tk", "rm", "rn", "stages"), p))
                         for p in TILES_ASYNC_SPACE] if dev == "gpu" else [],
            lambda kind, tm, tn, tk, rm, rn, stages, rot=0, split=0, slots=0, bound=0, group=0:
                _tiled_multiples(kind, Variant.of(
                    "tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                    **({"rot": 1} if rot else {}),
                    **({"split": split, "slots": slots} if split or bound else {}),
                    **({"bound": bound} if bound else {}), **({"group": group} if group else {})),
                {"M": tm * max(group, 1), "N": tn, "K": tk}),  # group: whole groups of row tiles
            backends=("cuda",), dtypes=("float32",), layouts=("NN", "NT", "TN"),
            rules=_tiles_async_rules),
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
            lambda kind, tm, tn, tk, rm, rn, stages, elems=0, split=0, slots=0, bound=0:
                _tiled_multiples(kind, Variant.of(
                    "edge-tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                    **({"elems": 1} if elems else {}),
                    **({"split": split, "slots": slots} if split or bound else {}),
                    **({"bound": bound} if bound else {})), {}),
            backends=("cuda",), dtypes=("float32",), layouts=("NN",), rules=_edge_rules),
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
            lambda dev: [{"r": r, "k": k} for r, k in ((32, 4), (32, 8), (32, 2), (16, 2))]
            if dev == "gpu" else [],
            lambda kind, r, k: {"M": r, "N": r}, rules=lambda: _transpose_rules()),
    Codelet("row-groups", ("gemv",), "GEMV N: g rows per work-group of lanes×g work-items, lane "
            "l summing the vectors l, l+lanes, … of its row (coalesced), partials in local "
            "memory summed by one work-item per row (the gemv-lane-rows rule, "
            "rewrite.rules.gemv); complex types one element at a time",
            _gemv_groups,
            lambda dev: [dict(zip(("lanes", "g", "w"), p)) for p in GEMV_GROUPS_SPACE["N"]]
            if dev == "gpu" else [],
            lambda kind, lanes, g, w: {"M": g, "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("N", "R"), rules=_gemv_rules),
    Codelet("column-groups", ("gemv",), "GEMV T: lanes·w columns per work-group of lanes×g "
            "work-items, each summing every g-th row of its w columns (A's rows read coalesced, "
            "x broadcast), the g partials per column summed from local memory (the "
            "gemv-lane-columns rule, rewrite.rules.gemv); complex types one element at a time",
            _gemv_groups,
            lambda dev: [dict(zip(("lanes", "g", "w"), p)) for p in GEMV_GROUPS_SPACE["T"]]
            if dev == "gpu" else [],
            lambda kind, lanes, g, w: {"M": g, "N": lanes * w},
            dtypes=tuple(bp.DTYPES), layouts=("T", "C"), rules=_gemv_rules),
    Codelet("column-groups-split", ("gemv",), "GEMV T in two kernels: column-groups' work-groups "
            "over r row chunks (rows ≡ j mod g·r), r times as many, their sums in an [r][N] "
            "workspace, then one work-item per column sums its r partials in order (the "
            "gemv-lane-columns-split rule, rewrite.rules.gemv); complex types one element at a time",
            _gemv_groups_split,
            lambda dev: [dict(zip(("lanes", "g", "w", "r"), p)) for p in GEMV_SPLIT_SPACE]
            if dev == "gpu" else [],
            lambda kind, lanes, g, w, r: {"M": g * r, "N": lanes * w},
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
            "memory (the gpu-rows macro, CLBlast-style)",
            lambda kind, L, w: rule(mc.GPU_ROWS, L=L, w=w),
            lambda dev: [{"L": L, "w": w} for L in (32, 64, 128, 256) for w in (1, 4)],
            lambda kind, L, w: {"N" if kind.layout in "NR" else "M": L * w}),
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
_VECTOR_CODELETS = ("vec", "tree")


def fits(kind: Kind, variant: Variant) -> bool:
    """Whether the variant can derive the kind: complex numbers have no vector forms, so no
    vector codelet and no vector width above 1."""
    if kind.dtype not in bp.COMPLEX:
        return True
    return variant.codelet not in _VECTOR_CODELETS and variant.kw.get("w", 1) == 1


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
    multiprocessors' limits, `occupancy.SMLimits`; on CUDA the split tail, `split_tail_space`)."""
    extra = split_tail_space(kind, sizes, limits) if backend == "cuda" and limits is not None \
        else []
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
    # real GEMV T on the H100: float64 4 lanes of double4 over 64 row groups, 16 columns per
    # work-group (1.00x cuBLAS at 8192², 0.93x at 4096², gemv23); float32 the two-pass form, 4
    # lanes of float8 over 16 row groups × 8 row chunks (0.99x at 8192², 0.84x at 4096², where
    # the one-pass (4, 64, 4) read 0.95x / 0.84x); one work-item per column (`glb`) 0.15-0.26x
    ("gemv", "float32", "T"): Variant.of("column-groups-split", lanes=4, g=16, w=8, r=8),
    ("gemv", "float64", "T"): Variant.of("column-groups", lanes=4, g=64, w=4),
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
    if kind.op in REDUCTIONS:
        return Variant.of("chunks", n=64 if device_kind == "gpu" else 256)
    if kind.op == "gemv":
        return Variant.of("glb")
    return Variant.of("glb")


def variant_key(kind: Kind, variant: Variant) -> str:
    return json.dumps([str(kind), variant.to_json()], sort_keys=True)


def pad_to(n: int, m: int) -> int:
    return -(-n // m) * m if m > 1 else n


def padded_sizes(sizes: Mapping[str, int], mult: Mapping[str, int]) -> dict[str, int]:
    return {k: pad_to(v, mult.get(k, 1)) for k, v in sizes.items()}


def padding_ratio(sizes: Mapping[str, int], mult: Mapping[str, int]) -> float:
    """Padded volume over actual volume (1.0: no padding)."""
    import math

    real = math.prod(sizes.values()) or 1
    return math.prod(padded_sizes(sizes, mult).values()) / real


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
