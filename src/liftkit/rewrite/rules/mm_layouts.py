"""mm-local-tiles for transposed operands kept as stored (kt=1): NT and TN without a transpose pass.

mm_parts gives TN's A as the view `transpose $ Aᵀ` (Aᵀ stored K×M) and NT's B as `transpose $ Bᵀ`
(Bᵀ stored N×K). `local_tiles` tiles A·B through those views: its tile copies then read vectors
across the stored rows (gathered element by element, and cp.async, which copies contiguous
bytes, cannot take them at all). Here each operand is tiled as it is stored instead, so every
copy into local memory moves whole 16-byte vectors of consecutive elements, and the reads from
local memory and the register blocks are views over the other arrangement:

* an operand stored with K contiguous (A in NN and NT, Bᵀ in NT) keeps tiles of t rows × tk
  ([t][tk/w] vectors); a work-item owns the rows y, y + lanes, …, reads a vector of w K steps
  of each, and uses its elements as scalars (A's broadcast factor) or, for Bᵀ, regroups the w
  elements of w rows into vectors over its columns (a transposed view of its registers);
  rot=1 rotates Bᵀ's tile rows in local memory (`rotated_rows`) against bank conflicts (a
  quarter-warp reads 8 of its rows at once; A's row it reads is one, a broadcast); rot=2
  swizzles them (chunk j of row r at j xor s(r)) to the same end; rot=3 swizzles A's rows
  and Bᵀ's in 16-byte units (a warp's two rows of A, read 16 bytes at a time, 128 bytes
  apart: one bank group without it; Bᵀ's pairs of K steps then one 16-byte read too);
* an operand stored with K outermost (B in NN and TN, Aᵀ in TN) keeps tiles of tk rows × t
  ([tk][t/w] vectors); a work-item owns the vectors x, x + lanes, … of each row; for Aᵀ the
  w rows of a vector are w rows of C, used as scalars (the transposed view of its registers).

The products are the same products added in the same order as `local_tiles` at these
parameters; only where C's elements live in the work-items differs (TN: rows in groups of w;
NT: columns one by one, stored as scalars), which the result's view undoes.
"""

from __future__ import annotations

from typing import Any

from liftkit import dsl as D
from liftkit.ir.nodes import Expr
from liftkit.rewrite.rules.mm import (
    Elem, _block_update, _private_copy4, _rot_ok, _tiles_ok, _zeros4, rotated_rows, stored,
    tile_grid,
)


def _tiling(k_inner: bool, t: int, tk: int) -> Any:
    """The tile pairs' tiling of a stored operand: [[x]_K]_R → [[[[x]_tk]_t]_(K/tk)]_(R/t)
    (k_inner: K contiguous) or [[x]_R]_K → [[[[x]_t]_tk]_(K/tk)]_(R/t)."""
    if k_inner:
        return D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))
    return D.compose(D.transpose, D.map(D.transpose), D.map(D.map(D.split(t))), D.split(tk))


def pair_ok(ta: bool, tb: bool, rm: int, rn: int, w: int, e: Elem) -> bool:
    """pair=1 applies: complex scalars (w = 1), an operand stored K-outer (B as in NN and TN,
    Aᵀ in TN), whose register blocks hold an even number of its elements."""
    return (w == 1 and e.t.is_complex and (ta or not tb)
            and not (ta and rm % 2) and not (not tb and rn % 2))


def transposed_tiles(a: Expr, b: Expr, tm: int, tn: int, tk: int, rm: int, rn: int,
                     unroll: int, w: int, e: Elem, private: bool = True, rot: int = 0,
                     pair: int = 0) -> Expr:
    """C = A·B as `local_tiles` computes it, TN's Aᵀ and NT's Bᵀ tiled as stored (see the
    module docstring); a or b (or both) is `transpose $ X`, or neither with pair=1.

    pair=1 (complex scalars): a work-item owns the elements of a K-outer operand's rows in
    consecutive pairs, 2l + 2·lanes·j + {0, 1}, instead of l + lanes·j, so each pair is one
    16-byte read of local memory (LDS.128: half the reads; a warp's 16 work-items then read
    256 consecutive bytes, two wavefronts, as their 4 8-byte reads took) and C's pairs one
    16-byte store."""
    at, bt = stored(a), stored(b)
    ta, tb = at is not None, bt is not None
    if (not (ta or tb or pair) or (w < 2 and not e.t.is_complex)
            or not _tiles_ok(tm, tn, tk, rm, rn, w, e.widths)
            or (ta and rm % w) or (rot and not _rot_ok(tk, w, e, rot))
            or (pair and not pair_ok(ta, tb, rm, rn, w, e))):
        raise ValueError(f"inconsistent transposed tiles tm={tm} tn={tn} tk={tk} rm={rm} "
                         f"rn={rn} w={w} rot={rot} pair={pair} for {e.t}")
    x = at if at is not None else a
    y = bt if bt is not None else b
    wy, wx = tm // rm, tn // rn
    idw = e.id(w)
    # w = 1 (complex scalars, which have no vectors): the vector views are identities
    vec: tuple[Any, ...] = (D.map(D.asVector(w)),) if w > 1 else ()
    to_scalars: tuple[Any, ...] = (D.map(D.asScalar),) if w > 1 else ()
    rounds = D.compose(D.map(D.split(wx)), D.split(wx * wy), D.join, *vec)
    from_local = lambda row: D.compose(D.split(row), D.join, D.map(D.join))  # noqa: E731

    def k_inner(lanes: int, rotate: int) -> tuple[Any, Any]:
        """(copy rounds, work-items' rows) of a tile [t][tk]: work-item l owns rows l + lanes·i;
        rows rotated or swizzled as `rotated_rows(rotate)` says."""
        if not rotate:
            return rounds, D.compose(D.transpose, D.split(lanes), from_local(tk // w))
        to_pos, to_chunk = rotated_rows(tk // w, e.t.dtype.itemsize * w, rotate)
        return (D.compose(D.map(D.split(wx)), D.split(wx * wy), to_pos, D.join, *vec),
                D.compose(D.transpose, D.split(lanes), D.split(tk // w), to_chunk, D.join,
                          D.map(D.join)))

    g = 2 if pair else 1  # a K-outer operand's elements a work-item owns side by side

    def k_outer(t: int, lanes: int) -> tuple[Any, Any]:
        """(copy rounds, work-items' vectors) of a tile [tk][t]: work-item l owns vectors
        l + lanes·j of each row (pair: elements 2l + 2·lanes·j + {0, 1})."""
        if g > 1:
            return rounds, D.compose(D.transpose, D.map(D.map(D.join)), D.map(D.transpose),
                                     D.map(D.split(lanes)), D.map(D.split(g)), from_local(t))
        return rounds, D.compose(D.transpose, D.map(D.transpose), D.map(D.split(lanes)),
                                 from_local(t // w))

    # rot rotates Bᵀ's rows only: the 8 work-items of a quarter-warp (one 128-bit load's
    # phase) read 8 different rows of it, but one row of A (a broadcast)
    # rot=3: A's rows and Bᵀ's swizzled in 16-byte units: a row's pairs of complex K steps
    # stay one LDS.128 (Bᵀ's too: half its reads), A's two rows a warp reads at once, 128 bytes
    # apart, land in different banks, Bᵀ's 16 rows in 8 bank groups (two wavefronts, the least
    # for 256 bytes)
    a_rounds, a_threads = k_outer(tm, wy) if ta else k_inner(wy, 3 if rot == 3 else 0)
    b_rounds, b_threads = k_inner(wx, rot) if tb else k_outer(tn, wx)
    scalars = D.compose(*to_scalars, D.split(1))  # [v]_r → [[t]_w]_r
    # a K step's values as the block update takes them: A's [rm][w] scalars, B's [w][rn/w]
    a_cols = D.compose(D.transpose, *to_scalars) if ta else scalars
    b_rows = (lambda v: D.compose(*vec, D.transpose, scalars) << v) if tb else (lambda v: v)
    a_steps = (lambda t: D.split(w) << t) if ta else (lambda t: D.transpose << t)
    b_steps = (lambda t: D.transpose << t) if tb else (lambda t: D.split(w) << t)
    a_depth, b_depth = (2 if ta else 1), (1 if tb else 2)
    over_k = D.reduceSeqUnroll if unroll else D.reduceSeq

    def thread(acc: Any, a_t: Any, b_t: Any) -> Any:
        def chunk(regs: Any, ab: Any) -> Any:
            if not private:
                return _block_update(regs, a_cols << ab[0], b_rows(ab[1]), w, e)
            return D.let(_private_copy4(a_depth, w, e) << ab[0],
                         _private_copy4(b_depth, w, e) << ab[1],
                         lambda aP, bP: _block_update(regs, a_cols << aP, b_rows(bP), w, e))

        steps = D.zip(a_steps(a_t), b_steps(b_t))
        if not private:
            return D.join << over_k(chunk, acc) << steps
        return (D.mapSeqUnroll(D.mapSeqUnroll(idw)) << D.join
                << over_k(chunk, _private_copy4(2, w, e) << acc) << steps)

    def step(acc: Any, tiles: Any) -> Any:
        copy = lambda: D.toLocal(D.mapSeqUnroll(D.mapLcl(1)(D.mapLcl(0)(idw))))  # noqa: E731
        return D.let(copy() << a_rounds(tiles[0]), copy() << b_rounds(tiles[1]), lambda lA, lB:
                     D.mapLcl(1)(lambda acc_a: D.mapLcl(0)(
                         lambda acc_b: thread(acc_b[0], acc_a[1], acc_b[1]))
                         << D.zip(acc_a[0], b_threads(lB))) << D.zip(acc, a_threads(lA)))

    zeros = _zeros4((wy, wx, rm, rn // w), w, e)
    # the result [wy][wx][rm][rn/w] of vectors as the tile's rows: a work-item's columns are
    # the vectors x + wx·j (B as stored K-outer) or the columns x + wx·j (Bᵀ), its rows the
    # rows y + wy·i (A) or the rows of the vectors y + wy·g (Aᵀ)
    # (pair: a work-item's columns of B 2x + 2·wx·j + {0, 1}, rows of Aᵀ 2y + 2·wy·g + {0, 1})
    cols = D.compose(D.join, D.transpose, *to_scalars) if tb \
        else D.compose(D.join, D.join, D.transpose, D.map(D.split(g))) if g > 1 \
        else D.compose(*((D.asScalar,) if w > 1 else ()), D.join, D.transpose)
    rows = D.compose(D.join, D.join, D.transpose, D.map(D.split(max(w, g)))) if ta \
        else D.compose(D.join, D.transpose)
    wg_rows = D.compose(rows, D.map(D.map(cols)), D.map(D.transpose))
    return tile_grid(step, zeros, idw, private, wg_rows, _tiling(not ta, tm, tk)(x),
                     _tiling(tb, tn, tk)(y))
