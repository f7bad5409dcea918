"""Matrix multiplication tiled and blocked for GPUs and CPUs (seed 001's MM fragments, seed 004).

The high-level program (`liftkit.programs.apps.mm`) is a map over the rows of A of a map over
the columns of B of a dot product:

    map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A

Each rule below rewrites that whole nest in one step into a kernel shape of the papers (as the
stencil rules of rules/stencil.py tile and lower in one step), with every size a constant
parameter, so the tiles and register blocks have constant sizes:

* `mm-local-tiles` (tm, tn, tk, rm, rn, unroll, w): the CLBlast/NVIDIA shape (seed 001 Listing 1
  with local memory; the bundled `mm_nvidia`). 2D tiling of C into tm×tn tiles, one work-group
  each (`mapWrg(1) ∘ mapWrg(0)`); the K loop split by the constant tk (`split tk` of A's rows and
  B's columns: a `reduceSeq` over the K/tk tile pairs); each tile pair copied into local memory
  cooperatively (`toLocal(mapSeqUnroll(mapLcl(1)(mapLcl(0)(id))))`, coalesced float4 rounds);
  2D register blocking: (tn/rn)×(tm/rm) work-items each accumulate an rm×rn block of C in
  private memory (rm = 1 or rn = w give the 1D blockings), A and B read from local memory as
  float4 (asVector 4, aligned vector loads; w = 4) or as scalars (w = 1, rm = rn = 1: no register
  blocking, the bundled `mm_tiled`'s shape with the accumulator in a register); the tk/w steps of a tile and the block
  update fully unrolled (`reduceSeqUnroll`, `mapSeqUnroll`: the private arrays become
  registers); unroll=0 keeps the K steps of a tile a loop.
* `mm-private-blocks` (rm, rn, wx, wy): the CLBlast/AMD shape without local memory
  (rules/mm_blocks.py).

* `mm-tile-2d` (tm, tn, tk) then `mm-tiles-lower` (rm, rn, w, unroll): `mm-local-tiles` in two
  steps. The first is algorithmic (still high-level): tm×tn tiles of C, each element's dot
  product split into K/tk partial sums of tk products; the second lowers exactly that tiled
  form (compared with a rebuilt copy up to parameter names) to the kernel of `mm-local-tiles`.
  The `mm-tiles` macro is the two in sequence; between them the search may also take the
  tiled program elsewhere.
* `mm-tiles-lower` in small steps, one rule each (rules/mm_steps.py, which builds on this module,
  never the reverse; rules/__init__.py assembles `MM_RULES`; `mm-tiles-lower` and
  `mm-local-tiles` build what they make in sequence, `lowered_tiles`): `mm-tiles-stage-local`
  (wx, wy): one work-group of wx×wy work-items per tile of C, each tile pair copied into local
  memory cooperatively in rounds, the tile's product from the copies still high-level; `mm-tiles-vectorize` (w): those
  copies (and the later block loads) as float4/double2 vectors; `mm-tiles-blocks`: each
  work-item accumulates a (tm/wy)×(tn/wx) register block (float-w loads and blocks, the K steps
  of a tile a loop), or the same in two steps, `mm-tiles-work-items` (the blocks accumulated in
  place) then `mm-tiles-private` (in registers); `mm-tiles-unroll`: that loop unrolled
  (`reduceSeq` → `reduceSeqUnroll`).
* `mm-local-tiles` kt=1 (rules/mm_layouts.py): NT's and TN's transposed operand (`transpose $
  X`) tiled as X is stored, so every tile copy moves contiguous vectors (cp.async takes them:
  NT and TN without a transpose pass); offered after all the others.

All need the reduction to be the element type's `add` from 0 and the products its `mult`, over
float, double, cfloat or cdouble (`Elem` and the match `mm_parts`, rules/mm_match.py, re-exported
here; for complex types any one-expression product, e.g. the
conjugating `multConj`, since the rules only regroup the sum of the products). The vector
multiply-add replaces them: acc + a·b, a broadcast over b's lanes (`madS4` for float4, double2 for
doubles), `madS` for w = 1 (complex types: `add(acc, product)`, scalar accesses only: OpenCL has
no complex vectors). Columns of B given as rows (NT: `map(λcolB. …) $ Bᵀ`) are read as
`transpose $ B`. The sizes must be
multiples of the tiles; for constant sizes the rules offer only dividing parameters, for
symbolic ones a fixed list (the exploration's filters check the splits at the real sizes).
Both results are OpenCL-level programs.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit import dsl as D
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, unwrap_eta, walk
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.rewrite.rules.mm_match import (  # noqa: F401 - ELEM_WIDTHS, MAD, MAD_S4, MMParts: re-exported
    ELEM_WIDTHS, FLOAT32, MAD, MAD_S4, _NOT_AROUND, Elem, MMParts, _product, mm_parts,
)
from liftkit.types import ArrayType, ScalarType

Options = list[dict[str, Any]]
SOURCE = "seed 001 (matrix-multiplication fragments: tiling, register blocking), seed 004"

# the parameter sets offered where a size is symbolic: (tm, tn, tk, rm, rn, unroll, w) and (rm,
# rn, wx, wy); they include every set the macros of explore/macros.py try
SYMBOLIC_TILES = ((64, 64, 16, 8, 8, 1, 4), (64, 128, 16, 8, 8, 1, 4), (128, 64, 16, 8, 8, 1, 4),
                  (64, 64, 32, 8, 8, 1, 4), (64, 128, 32, 8, 8, 1, 4), (128, 128, 16, 8, 8, 1, 4),
                  (64, 64, 16, 4, 8, 1, 4), (128, 64, 16, 8, 4, 1, 4), (64, 32, 16, 8, 4, 1, 4),
                  (32, 32, 16, 4, 4, 1, 4), (32, 64, 16, 2, 8, 0, 4), (64, 64, 16, 8, 8, 0, 4),
                  # Hopper FFMA shapes (256 work-items, K steps of 8 for deep cp.async pipelines)
                  (128, 128, 8, 8, 8, 1, 4), (64, 128, 8, 8, 8, 1, 4), (128, 64, 8, 8, 8, 1, 4),
                  # scalar (w = 1): 1×1 (no register blocking, the bundled mm_tiled), 1D, 2D
                  (16, 16, 16, 1, 1, 1, 1), (32, 32, 16, 2, 2, 1, 1), (64, 64, 16, 4, 4, 1, 1),
                  (32, 32, 32, 2, 2, 1, 1), (32, 32, 16, 4, 1, 1, 1), (64, 64, 16, 8, 8, 1, 1))
# float32 only, after those (results/issue12/sgemm run 4, the Hopper FFMA shapes continued): 128×64
# tiles 32 deep; deep tiles beyond 48 KB of staged local memory (CUDA: dynamic shared memory);
# 4×16 blocks; 8×16 and 16×8 blocks (128 accumulators: 255 registers; cuBLAS's 256×128×8 shape)
SYMBOLIC_TILES_FLOAT4 = ((128, 64, 32, 8, 8, 1, 4), (128, 128, 32, 8, 8, 1, 4), (64, 128, 64, 8, 8, 1, 4),
                  (64, 128, 32, 4, 16, 1, 4), (64, 128, 16, 4, 16, 1, 4), (128, 128, 16, 4, 16, 1, 4),
                  (128, 128, 32, 4, 16, 1, 4), (128, 128, 16, 8, 16, 1, 4), (128, 128, 32, 8, 16, 1, 4),
                  (256, 128, 16, 16, 8, 1, 4), (128, 256, 16, 8, 16, 1, 4), (256, 128, 8, 16, 8, 1, 4),
                  (128, 128, 16, 16, 8, 1, 4))
# complex scalars only, after those: the complex FFMA tiles' 128×64 8×4 shape 32 deep (half the
# tile steps, barriers and copy rounds per K of the 16-deep form; results/issue15/cgemm25)
SYMBOLIC_TILES_COMPLEX = ((128, 64, 32, 8, 4, 1, 1),)
# tile heights whose symbolic float4/double2 sets are offered again with A's rows rotated in
# local memory (rot=1, after all others): where a warp reads 2-8 rows of A at once
ROT_ROWS = (64, 128, 256)
SYMBOLIC_BLOCKS = ((4, 4, 8, 8), (4, 8, 8, 8), (8, 8, 8, 8), (4, 4, 16, 16), (8, 4, 8, 8),
                   (2, 4, 16, 8), (2, 8, 4, 8))
# the candidates for constant sizes (filtered by divisibility)
TILE_SIZES = (8, 16, 32, 64, 128)
K_TILES = (4, 8, 16, 32)
BLOCKS = ((8, 8), (4, 8), (8, 4), (2, 8), (4, 4), (2, 4), (4, 1), (1, 4), (2, 2), (1, 1))
GROUPS = ((8, 8), (16, 16), (8, 4), (4, 4), (16, 8), (2, 2))
MAX_GROUP = 256
MIN_GROUP = 16
MAX_CHOICES = 8




def _fits(n: Optional[int], d: int) -> bool:
    return n is None or (n % d == 0 and n >= d)


# ---------------------------------------------------------------------------------------------
# shared pieces of both shapes


def _private_copy4(depth: int, w: int = 4, e: Elem = FLOAT32) -> Any:
    """toPrivate of a fully unrolled copy of a depth-dimensional array of e's vectors of w
    (float4, double2) or scalars (w = 1): registers."""
    f: Any = e.id(w)
    for _ in range(depth):
        f = D.mapSeqUnroll(f)
    return D.toPrivate(f)


def _block_update(acc: Any, a_cols: Any, b_rows: Any, w: int = 4, e: Elem = FLOAT32) -> Any:
    """acc[r][c] += Σ_kk a_cols[r][kk] · b_rows[kk][c] for a register block (all unrolled)."""
    mad = e.mad(w)
    return D.mapSeqUnroll(lambda acc_a: D.join << D.mapSeqUnroll(
        lambda acc_b: D.reduceSeqUnroll(lambda s, ab: mad(s, ab[0], ab[1]), acc_b[0])
        << D.zip(acc_a[1], acc_b[1])) << D.zip(acc_a[0], D.transpose << b_rows)) << D.zip(acc, a_cols)


def _zeros4(shape: tuple[int, ...], w: int = 4, e: Elem = FLOAT32) -> Any:
    t: Any = e.vec(w)
    for n in reversed(shape):
        t = t[n]
    return D.lit(np.zeros(shape + ((w,) if w > 1 else ()), e.t.dtype), t)


# ---------------------------------------------------------------------------------------------
# mm-local-tiles


def _tiles_ok(tm: int, tn: int, tk: int, rm: int, rn: int, w: int = 4,
              widths: tuple[int, ...] = (4, 1)) -> bool:
    if w not in widths or tm % rm or tn % rn or rn % w or tk % w:
        return False
    nt = (tm // rm) * (tn // rn)
    return MIN_GROUP <= nt <= MAX_GROUP and (tm * tk // w) % nt == 0 and (tk * tn // w) % nt == 0


def _rot_ok(tk: int, w: int, e: Elem, rot: int = 1) -> bool:
    """A's rows can be rotated (`rotated_rows`): vectors of 16 bytes (or complex64 scalars, 8),
    at least two per row; swizzled (rot=2) a power of two of them."""
    size, c = e.t.dtype.itemsize * w, tk // w
    return ((size == 16 or (size == 8 and e.t.is_complex)) and c >= 2
            and rot in (1, 2, 3) and (rot == 1 or not c & (c - 1))
            and (rot != 3 or (size == 8 and c >= 4)))


def rotated_rows(c: int, vec_bytes: int, rot: int = 1, lanes: int = 1) -> tuple[Any, Any]:
    """(position → chunk, chunk → position) gathers over a flattened tile of rows of c vectors:
    vector j of row r is kept at position (j + s(r)) mod c of its row, s(r) = (r / L) mod c
    with L the rows sharing one 128-byte line of 32 banks. Rows that a warp reads at the same
    vector index then land in different banks (without it every row of 128 bytes starts at
    bank 0: a 4-way conflict when a warp reads 4 rows). The first gathers the copy's source
    (the copy itself stays contiguous: conflict-free stores), the second the reads. Together
    they are the identity, so the tile means what it meant.

    rot=2 swizzles instead of rotating (c a power of two): vector j of row r at position
    j xor s(r), the same banks apart; xor is its own inverse, so both gathers are one, and a
    work-item's reads at K steps j are `row base + (s xor j)`, one xor each from the same s,
    where NVRTC keeps the rotation's (j + s) mod c for every j in registers (complex NT tiles:
    128 registers instead of 150). rot=3 swizzles 16-byte units (8-byte vectors: s(r) even),
    so a pair of K steps stays one aligned 16-byte read (complex A rows read by LDS.128).
    lanes > 1: the gathers over the vectors' scalars (each vector's `lanes` elements move
    together), for a tile copied element by element (`local_tiles`' scalar_copies)."""
    lines = max(1, 128 // (c * vec_bytes))

    def shift(r: Any) -> Any:
        return (r // lines) % c

    def over(f: Any) -> Any:  # vector index function → gather (over the lanes where lanes > 1)
        if lanes == 1:
            return D.gather(lambda i, n: f(i))
        return D.gather(lambda i, n: f(i // lanes) * lanes + i % lanes)

    if rot in (2, 3):  # rot=3: in 16-byte units (pairs of 8-byte vectors kept whole)
        u = max(1, 16 // vec_bytes) if rot == 3 else 1
        swizzle = over(lambda i: (i // c) * c + ((i % c) ^ (u * ((i // c // lines) % (c // u)))))
        return swizzle, swizzle

    to_pos = over(lambda p: (p // c) * c + ((p % c) + c - shift(p // c)) % c)
    to_chunk = over(lambda i: (i // c) * c + ((i % c) + shift(i // c)) % c)
    return to_pos, to_chunk


def _choices_tiles(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    m, n, k, ws = parts.m, parts.n, parts.k, parts.elem.widths
    cm, cn, ck = const(m), const(n), const(k)
    if cm is None or cn is None or ck is None:
        combos = [c for c in _symbolic_tiles(ws) + (
            list(SYMBOLIC_TILES_COMPLEX) if parts.elem.t.is_complex else [])
            if _fits(cm, c[0]) and _fits(cn, c[1]) and _fits(ck, c[2])]
        combos = list(dict.fromkeys(combos))
    else:
        combos = [(tm, tn, tk, rm, rn, 1, w) for w in ws for tm in TILE_SIZES for tn in TILE_SIZES
                  for tk in K_TILES for rm, rn in BLOCKS
                  if _fits(cm, tm) and _fits(cn, tn) and _fits(ck, tk) and _tiles_ok(tm, tn, tk, rm, rn, w, ws)]
        combos.sort(key=lambda c: (-c[6], -(c[0] * c[1]), -c[3] * c[4], -c[2]))
        combos = combos[:MAX_CHOICES] + [c for c in combos if c[6] == 1][:MAX_CHOICES // 2]
    out = [{"tm": tm, "tn": tn, "tk": tk, "rm": rm, "rn": rn, "unroll": u, "w": w}
           for tm, tn, tk, rm, rn, u, w in dict.fromkeys(combos) if _tiles_ok(tm, tn, tk, rm, rn, w, ws)]
    if cm is None or cn is None or ck is None:  # the rotated A rows after all the others
        out += [{**o, "rot": 1} for o in out if o["tm"] in ROT_ROWS and _rot_ok(o["tk"], o["w"], parts.elem)]
        # then the same swizzled instead (rot=2, and rot=3 in 16-byte units: `rotated_rows`)
        out += [{**o, "rot": r} for r in (2, 3) for o in out if o.get("rot") == 1
                and _rot_ok(o["tk"], o["w"], parts.elem, r)]
    # transposed operands tiled as stored (kt=1, rules/mm_layouts.py) after those; rot then
    # rotates NT's Bᵀ (so not for TN)
    if _kt_ok(parts.a, parts.b, 2):
        out += [{**o, "kt": 1} for o in out if (o["w"] > 1 or parts.elem.t.is_complex)
                and not (o.get("rot") and stored(parts.b) is None)
                and not (stored(parts.a) is not None and o["rm"] % o["w"])]
    # then, for complex scalars, a K-outer operand's elements owned in consecutive pairs
    # (pair=1, rules/mm_layouts.py): NN's B (without kt) and TN's Aᵀ and B (with kt)
    from liftkit.rewrite.rules.mm_layouts import pair_ok  # builds on this module

    ta, tb = stored(parts.a) is not None, stored(parts.b) is not None
    out += [{**o, "pair": 1} for o in out if (bool(o.get("kt")) == (ta or tb))
            and pair_ok(ta and bool(o.get("kt")), tb, o["rm"], o["rn"], o["w"], parts.elem)]
    return out


def _symbolic_tiles(widths: tuple[int, ...]) -> list[tuple[int, ...]]:
    """SYMBOLIC_TILES for an element type: the float4 sets at its widest vector width (double2;
    complex numbers: scalars), the scalar sets as they are; for float32 SYMBOLIC_TILES_FLOAT4
    after them (so the first choices stay the general ones)."""
    out = [c for c in SYMBOLIC_TILES if c[6] in widths]
    if 4 not in widths:
        return [c[:6] + (max(widths),) for c in SYMBOLIC_TILES if c[6] == 4] + out
    return out + list(SYMBOLIC_TILES_FLOAT4)


def stored(x: Expr) -> Optional[Expr]:
    """The stored operand X when x is the view `transpose $ X` (how mm_parts gives TN's A and
    NT's B), None otherwise."""
    return x.args[0] if isinstance(x, FunCall) and type(x.f) is P.Transpose else None


def _kt_ok(a: Expr, b: Expr, w: int, e: Optional[Elem] = None) -> bool:
    """kt=1 applies: an operand is a transposed view, the tiles move vectors (w > 1) or
    complex scalars (8 or 16 bytes, which have no vectors)."""
    return (w > 1 or (e is not None and e.t.is_complex)) and (stored(a) is not None
                                                               or stored(b) is not None)


def local_tiles(a: Expr, b: Expr, tm: int, tn: int, tk: int, rm: int, rn: int,
                unroll: int = 1, w: int = 4, e: Elem = FLOAT32, private: bool = True,
                rot: int = 0, vectors: bool = False, scalar_copies: bool = False,
                kt: int = 0, pair: int = 0) -> Expr:
    """C = A·B in the CLBlast/NVIDIA shape (see the module docstring) over e's element type;
    w = 1: scalar loads and register blocks instead of float4 (double2: w = 2). private=False:
    the work-items' blocks accumulate in place, without the register copies (toPrivate of the
    blocks and of a K step's values, the result's toGlobal copy): what mm-tiles-private adds.
    rot=1: A's tile rows rotated in local memory (`rotated_rows`), so that the work-items of a
    warp, which read one vector of K from each of several rows, hit different banks (also with
    `vectors` or `scalar_copies`: the copy's source gathered by vector or by element).
    vectors=True: a and b are given as rows of w-vectors (`mm_edges`' padded operands);
    scalar_copies=True: the tiles are copied into local memory element by element and read
    from there as w-vectors (`mm_edges`' operands padded element by element).
    kt=1: an operand given as the view `transpose $ X` (TN's A, NT's B) is tiled as X is
    stored (`transposed_tiles`), so every tile copy moves contiguous vectors. pair=1 (complex
    scalars): the work-items own a K-outer operand's elements in consecutive pairs
    (`transposed_tiles`, which builds it)."""
    if pair:
        if vectors or scalar_copies or (not kt and (stored(a) is not None or stored(b) is not None)):
            raise ValueError("pair=1 takes the operands as stored (kt=1 where one is transposed), "
                             "not padded")
        from liftkit.rewrite.rules.mm_layouts import transposed_tiles  # builds on this module

        return transposed_tiles(a, b, tm, tn, tk, rm, rn, unroll, w, e, private, rot, pair)
    if kt:
        if not _kt_ok(a, b, w, e) or vectors or scalar_copies:
            raise ValueError("kt=1 tiles a transposed operand (transpose $ X) as stored, with "
                             f"vectors (w > 1) or complex scalars; got w={w} for {e.t}")
        from liftkit.rewrite.rules.mm_layouts import transposed_tiles  # builds on this module

        return transposed_tiles(a, b, tm, tn, tk, rm, rn, unroll, w, e, private, rot)
    if (not _tiles_ok(tm, tn, tk, rm, rn, w, e.widths) or (rot and not _rot_ok(tk, w, e, rot))
            or (vectors and scalar_copies)):
        raise ValueError(f"inconsistent tiles tm={tm} tn={tn} tk={tk} rm={rm} rn={rn} w={w} "
                         f"rot={rot} for {e.t}")
    wy, wx = tm // rm, tn // rn
    idw = e.id(w)
    a_tiles, b_tiles, rounds = _tile_pieces(tm, tn, tk, wx, wy, w, vectors, scalar_copies)
    as_vec: tuple[Any, ...] = (D.asVector(w),) if scalar_copies and w > 1 else ()
    from_local = lambda row: D.compose(D.split(row), *as_vec, D.join, D.map(D.join))  # noqa: E731
    a_threads = D.compose(D.transpose, D.split(wy), from_local(tk // w))
    a_rounds = rounds
    if rot:  # the copy's source gathered per vector (per scalar where copied so), the reads too
        vec_b = e.t.dtype.itemsize * w
        to_pos = rotated_rows(tk // w, vec_b, rot, w if scalar_copies else 1)[0]
        to_chunk = rotated_rows(tk // w, vec_b, rot)[1]
        a_rounds = D.compose(D.map(D.split(wx)), D.split(wx * wy), to_pos, D.join,
                             *((D.map(D.asVector(w)),) if w > 1 and not (vectors or scalar_copies)
                               else ()))
        a_threads = D.compose(D.transpose, D.split(wy), D.split(tk // w), to_chunk, *as_vec,
                              D.join, D.map(D.join))
    b_threads = D.compose(D.transpose, D.map(D.transpose), D.map(D.split(wx)), from_local(tn // w))
    over_k = D.reduceSeqUnroll if unroll else D.reduceSeq
    a_cols = D.compose(D.map(D.asScalar), D.split(1)) if w > 1 else D.split(1)

    def thread(acc: Any, a_t: Any, b_t: Any) -> Any:
        def chunk(regs: Any, ab: Any) -> Any:
            if not private:
                return _block_update(regs, a_cols << ab[0], ab[1], w, e)
            return D.let(_private_copy4(1, w, e) << ab[0], _private_copy4(2, w, e) << ab[1],
                         lambda aP, bP: _block_update(regs, a_cols << aP, bP, w, e))

        steps = D.zip(D.transpose << a_t, D.split(w) << b_t)
        if not private:
            return D.join << over_k(chunk, acc) << steps
        return (D.mapSeqUnroll(D.mapSeqUnroll(idw)) << D.join
                << over_k(chunk, _private_copy4(2, w, e) << acc) << steps)

    def step(acc: Any, tiles: Any) -> Any:
        copy = lambda: D.toLocal(D.mapSeqUnroll(D.mapLcl(1)(D.mapLcl(0)(  # noqa: E731
            e.id(1) if scalar_copies else idw))))
        return D.let(copy() << a_rounds(tiles[0]), copy() << rounds(tiles[1]), lambda lA, lB:
                     D.mapLcl(1)(lambda acc_a: D.mapLcl(0)(
                         lambda acc_b: thread(acc_b[0], acc_a[1], acc_b[1]))
                         << D.zip(acc_a[0], b_threads(lB))) << D.zip(acc, a_threads(lA)))

    by_block = D.compose(D.map(D.transpose), D.transpose, D.map(D.map(D.transpose)), D.map(D.transpose))
    scalars: tuple[Any, ...] = (D.map(D.asScalar),) if w > 1 else ()
    wg_rows = D.compose(*scalars, D.join, D.map(D.map(D.join)), D.map(D.transpose), by_block)
    zeros = _zeros4((wy, wx, rm, rn // w), w, e)
    return tile_grid(step, zeros, idw, private, wg_rows, a_tiles(a), b_tiles(b))


def tile_grid(step: Any, zeros: Any, idw: Any, private: bool, wg_rows: Any, a_tiled: Expr,
              b_tiled: Expr) -> Expr:
    """The work-groups of `local_tiles` and `transposed_tiles` over A's tile rows × B's tile columns,
    each folding `step` over its K tiles from `zeros` (private: in registers, stored by toGlobal)."""
    init = D.toPrivate(D.mapLcl(1)(D.mapLcl(0)(D.mapSeqUnroll(D.mapSeqUnroll(idw)))))
    out = D.toGlobal(D.mapLcl(1)(D.mapLcl(0)(D.mapSeqUnroll(D.mapSeqUnroll(idw)))))

    def tile(a_row: Any, b_col: Any) -> Any:
        if not private:
            return D.join << D.reduceSeq(step, zeros) << D.zip(a_row, b_col)
        return out << D.join << D.reduceSeq(step, init << zeros) << D.zip(a_row, b_col)

    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose << D.map(wg_rows)
                                  << D.mapWrg(0)(lambda b_col: tile(a_row, b_col))
                                  << b_tiled) << a_tiled)


def lowered_tiles(a: Expr, b: Expr, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
                  w: int = 4, e: Elem = FLOAT32, rot: int = 0, kt: int = 0, pair: int = 0) -> Expr:
    """What the small rules make of the tiled product in sequence: mm-tiles-stage-local (wx =
    tn/rn, wy = tm/rm), for w > 1 mm-tiles-vectorize (w), mm-tiles-blocks (the loop kernel
    `local_tiles` with unroll=0), then for unroll=1 mm-tiles-unroll (`unroll_k_steps`);
    test_mm_rules checks the steps give it."""
    kernel = local_tiles(a, b, tm, tn, tk, rm, rn, 0, w, e, rot=rot, kt=kt, pair=pair)
    return unroll_k_steps(kernel) if unroll else kernel


def _build_tiles(site: Site, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
                 w: int = 4, rot: int = 0, kt: int = 0, pair: int = 0) -> Expr:
    """mm-tile-2d, then the small rules of `lowered_tiles`, in one step (rot: A's rows
    rotated in local memory, `rotated_rows`; kt: transposed operands tiled as stored,
    rules/mm_layouts.py; pair: K-outer operands' elements owned in consecutive pairs)."""
    parts = mm_parts(site)
    assert parts is not None
    return lowered_tiles(fresh(parts.a), fresh(parts.b), tm, tn, tk, rm, rn, unroll, w, parts.elem,
                         rot, kt, pair)


MM_LOCAL_TILES = make_rule(
    "mm-local-tiles",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRow. untile ∘ mapWrg(0)(λbCol. toGlobal(copy) ∘ join ∘ reduceSeq(λ(acc, "
    "(a, b)). let lA = toLocal(copy rounds a), lB = toLocal(copy rounds b) in mapLcl(1)(mapLcl(0)("
    "rm×rn float4 register block += lA·lB, unrolled)), 0) $ zip(aRow, bCol)) ∘ tiles(tk, tn) $ B) "
    "∘ tiles(tm, tk) $ A",
    SOURCE + ": 2D tiling, local-memory tiles with cooperative copies, K split by tk, 2D register "
    "blocking, unrolling, float4 loads", _choices_tiles, _build_tiles, lowering=True, reshapes=True,
    opaque=False)


# ---------------------------------------------------------------------------------------------
# the same in two steps: mm-tile-2d (algorithmic), then mm-tiles-lower


def tiled(a: Expr, b: Expr, tm: int, tn: int, tk: int, e: Elem = FLOAT32) -> Expr:
    """C = A·B tiled, still high-level: tm×tn tiles of C (tm rows of A against tn columns of B),
    each element's dot product split into K/tk partial sums of tk products (2D tiling and the K
    loop split by tk)."""

    def dot(row: Any, col: Any) -> Any:
        return (D.reduce(e.add, e.zero()) << D.join
                << D.map(lambda p: D.reduce(e.add, e.zero()) << D.map(e.mult) << D.zip(p[0], p[1]))
                << D.zip(D.split(tk) << row, D.split(tk) << col))

    def tile(a_rows: Any, b_cols: Any) -> Any:
        return D.map(lambda rowA: D.join << D.map(lambda colB: dot(rowA, colB)) << b_cols) << a_rows

    return (D.join << D.map(lambda a_rows: D.map(D.join) << D.transpose
                            << D.map(lambda b_cols: tile(a_rows, b_cols))
                            << D.split(tn) << D.transpose << b) << D.split(tm) << a)


def _choices_tile2d(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    m, n, k, ws = parts.m, parts.n, parts.k, parts.elem.widths
    cm, cn, ck = const(m), const(n), const(k)
    if cm is None or cn is None or ck is None:
        shapes = [c[:3] for c in _symbolic_tiles(ws)]
    else:
        shapes = [(tm, tn, tk) for tm in TILE_SIZES for tn in TILE_SIZES for tk in K_TILES
                  if any(_tiles_ok(tm, tn, tk, rm, rn, w, ws) for rm, rn in BLOCKS for w in ws)]
        shapes.sort(key=lambda c: (-(c[0] * c[1]), -c[2]))
    shapes = [c for c in dict.fromkeys(shapes) if _fits(cm, c[0]) and _fits(cn, c[1]) and _fits(ck, c[2])]
    return [{"tm": tm, "tn": tn, "tk": tk} for tm, tn, tk in shapes[:2 * MAX_CHOICES]]


def _build_tile2d(site: Site, tm: int, tn: int, tk: int) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    return tiled(fresh(parts.a), fresh(parts.b), tm, tn, tk, parts.elem)


MM_TILE_2D = make_rule(
    "mm-tile-2d",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ map(λaRows. map(join) ∘ transpose ∘ map(λbCols. map(λrowA. join ∘ map(λcolB. "
    "reduce(add, 0) ∘ join ∘ map(λp. reduce(add, 0) ∘ map(mult) $ zip(p.0, p.1)) $ zip(split tk "
    "rowA, split tk colB)) $ bCols) $ aRows) ∘ split tn ∘ transpose $ B) ∘ split tm $ A",
    SOURCE + ": 2D tiling of C and the K loop split by the constant tk", _choices_tile2d,
    _build_tile2d, reshapes=True, opaque=False)


def _same(x: Any, y: Any, names: dict[int, Any]) -> bool:
    """x and y are the same expression up to the names of their bound parameters (`names`: x's
    parameters, by uid, to what stands for them in y)."""
    if isinstance(x, Param):
        target = names.get(x.uid, x)
        if not isinstance(target, Param):  # a free parameter standing for an expression
            return target is y or _same(target, y, {})
        return target is y
    if isinstance(y, Param):
        return False
    if type(x) is not type(y):
        return False
    if isinstance(x, Lambda):
        if len(x.params) != len(y.params):
            return False
        names = {**names, **{p.uid: q for p, q in zip(x.params, y.params)}}
        return _same(x.body, y.body, names)
    if isinstance(x, FunCall):
        return (len(x.args) == len(y.args) and _same(x.f, y.f, names)
                and all(_same(u, v, names) for u, v in zip(x.args, y.args)))
    if isinstance(x, Literal):
        return x.type == y.type and np.array_equal(np.asarray(x.value), np.asarray(y.value))
    if isinstance(x, P.Pattern):
        fx, fy = x.functions(), y.functions()
        return (x.static_params() == y.static_params() and len(fx) == len(fy)
                and all(_same(u, v, names) for u, v in zip(fx, fy)))
    return bool(x == y)


def tiled_parts(site: Site) -> Optional[tuple[Expr, Expr, int, int, int, Elem]]:
    """(A, B, tm, tn, tk) when the site is exactly what mm-tile-2d makes of A·B (compared up to
    parameter names with a rebuilt copy, so nothing a later rewrite changed is lowered)."""
    from liftkit.rewrite.core import normalize

    j = site.call
    if type(site.f) is not P.Join or site.inside(*_NOT_AROUND):
        return None
    m = j.args[0]
    if not (isinstance(m, FunCall) and type(m.f) is P.Map and isinstance(m.f.f, Lambda)
            and len(m.f.f.params) == 1):
        return None
    sa = m.args[0]  # split tm $ A
    if not (isinstance(sa, FunCall) and type(sa.f) is P.Split):
        return None
    tm, a = const(sa.f.n), sa.args[0]
    rows = m.f.f.params[0]
    # split tn ∘ transpose $ B: the one split in the body whose argument is free of aRows
    outer = [n for n in walk(m.f.f.body) if isinstance(n, FunCall) and type(n.f) is P.Split
             and isinstance(n.args[0], FunCall) and type(n.args[0].f) is P.Transpose
             and not any(q is rows for q in walk(n.args[0]))]
    inner = [const(n.n) for n in walk(m.f.f.body) if isinstance(n, P.Split)]
    if tm is None or len(outer) != 1 or len(inner) != 3:
        return None
    tn, b = const(outer[0].f.n), outer[0].args[0].args[0]
    if tn is None or None in inner:
        return None
    inner.remove(tn)
    tk = inner[0] if inner[0] == inner[1] else None
    if tk is None:
        return None
    a_t = site.type_of(a)
    et = a_t.elem.elem if isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType) else None
    if not isinstance(et, ScalarType):
        return None
    mults = {u for n in walk(m.f.f.body) if isinstance(n, P.Map)
             for u in [_product(et, n.f)] if u is not None}
    if len(mults) != 1:
        return None
    e = Elem(et, mults.pop())
    try:
        want = normalize(D.fun([a_t, site.type_of(b)],  # type: ignore[list-item]
                               lambda x, y: tiled(x, y, tm, tn, tk, e)))
    except Exception:  # noqa: BLE001 - no such tiling of these arguments
        return None
    sub = {want.params[0].uid: a, want.params[1].uid: b}  # type: ignore[union-attr]
    if not _same(want.body, j, sub):  # type: ignore[union-attr]
        return None
    return a, b, tm, tn, tk, e


def _choices_lower(site: Site) -> Options:
    parts = tiled_parts(site)
    if parts is None:
        return []
    _, _, tm, tn, tk, e = parts
    return [{"rm": rm, "rn": rn, "w": w, "unroll": u} for u in (1, 0) for w in e.widths
            for rm, rn in BLOCKS if _tiles_ok(tm, tn, tk, rm, rn, w, e.widths)]


def _build_lower(site: Site, rm: int, rn: int, w: int = 4, unroll: int = 1) -> Expr:
    parts = tiled_parts(site)
    assert parts is not None
    a, b, tm, tn, tk, e = parts
    return lowered_tiles(fresh(a), fresh(b), tm, tn, tk, rm, rn, unroll, w, e)


MM_TILES_LOWER = make_rule(
    "mm-tiles-lower",
    "join ∘ map(λaRows. map(join) ∘ transpose ∘ map(λbCols. tm×tn dot products of K/tk partial "
    "sums) ∘ split tn ∘ transpose $ B) ∘ split tm $ A → mapWrg(1)/mapWrg(0) "
    "over the tiles, A and B tiles copied into local memory cooperatively (float4 rounds), rm×rn "
    "register blocks per work-item, unrolled (= mm-local-tiles)",
    SOURCE + ": local-memory tiles with cooperative copies, 1D/2D register blocking, vectorised "
    "loads, unrolling", _choices_lower, _build_lower, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# the pieces the small rules of rules/mm_steps.py share with the composites


def _tile_pieces(tm: int, tn: int, tk: int, wx: int, wy: int, w: int, vectors: bool = False,
                 scalar_copies: bool = False) -> Any:
    """The tiling of A and B into tile pairs and a tile's cooperative copy in rounds of the
    wx·wy work-items (float-w vectors), shared by the staged form and `local_tiles`
    (`vectors`: A's and B's rows are given as rows of w-vectors already; `scalar_copies`: the
    copy rounds move scalars)."""
    vec: tuple[Any, ...] = (D.map(D.asVector(w)),) if w > 1 and not (vectors or scalar_copies) \
        else ()
    ka, nb = (tk // w, tn // w) if vectors else (tk, tn)
    a_tiles = D.compose(D.map(D.compose(D.transpose, D.map(D.split(ka)))), D.split(tm))
    b_tiles = D.compose(D.transpose, D.map(D.transpose), D.map(D.map(D.split(nb))), D.split(tk))
    # a tile (as float4) in rounds of WX·WY work-items: neighbouring work-items read neighbours
    rounds = D.compose(D.map(D.split(wx)), D.split(wx * wy), D.join, *vec)
    return a_tiles, b_tiles, rounds


def _is_k_steps(f: Any, init: Expr, inside_lcl: bool) -> bool:
    """f (with its init) is a work-item's loop over the K steps of a tile: a reduceSeq inside a
    mapLcl whose accumulator starts as a register copy (toPrivate of an unrolled copy)."""
    if type(f) is not P.ReduceSeq or not inside_lcl:
        return False
    if not (isinstance(init, FunCall) and isinstance(init.f, P.ToPrivate)):
        return False
    return isinstance(unwrap_eta(init.f.f), P.MapSeqUnroll)


def unroll_k_steps(node: Any, inside_lcl: bool = False) -> Any:
    """mm-tiles-unroll applied wherever it applies in a kernel (how the composite rules take
    that step): each work-item's reduceSeq over the K steps of a tile → reduceSeqUnroll."""
    if isinstance(node, FunCall):
        f = node.f
        args = tuple(unroll_k_steps(a, inside_lcl) for a in node.args)
        if _is_k_steps(f, node.args[0] if node.args else node, inside_lcl):
            f = P.ReduceSeqUnroll(f.f)  # type: ignore[attr-defined]
        return FunCall(unroll_k_steps(f, inside_lcl), args)
    if isinstance(node, Lambda):
        return Lambda(node.params, unroll_k_steps(node.body, inside_lcl))
    if isinstance(node, P.Pattern) and node.functions():
        inner = inside_lcl or isinstance(node, P.MapLcl)
        return node.with_functions([unroll_k_steps(g, inner) for g in node.functions()])
    return node
