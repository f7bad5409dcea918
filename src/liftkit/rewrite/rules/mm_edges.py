"""Tiled matrix products for any M, N, K ≥ 1: the ragged edge guarded in the program's types.

`mm-local-tiles` (rules/mm.py) splits M, N and K by its tiles, so the sizes must be multiples of
them (the library pads the operands into copies otherwise). The rules here tile the same way over
*padded views* of the operands instead, and write the result through a *crop*:

    crop 0 (pM - M) ∘ map(crop 0 (pN - N)) $ tiles(pad(A), pad(B))

with pX = ⌈X / tX⌉·tX an arithmetic expression of the symbolic size (the simplifier proves
split tX of pX exact). K, the reduction's dimension, is padded with zeros (a zero term adds
nothing); M (A's rows) and N (B's columns) are padded by clamping (`pad … clamp`: the reads stay
inside the arrays, and what the extra rows and columns compute is cropped). The operands are
padded as rows of w-vectors (`map(asVector w)` first: float4, double2; complex scalars), so a
vector is either wholly inside or wholly padding: one condition per vector load, which
`toLocalAsync` turns into cp.async's source-size operand (0 bytes: the tile's vector is zero-
filled, the pipeline keeps its shape). The code generator guards the crop's dropped cells'
stores (`GuardView`): `if (row < M)`, `if (col < N)`. Where a pad or crop is provably empty
(constant sizes that the tiles divide) it is left out, so no guard is generated.

* `mm-edge-tiles` (tm, tn, tk, rm, rn, unroll, w[, elems, rot]): mm-local-tiles' kernel over the
  padded views; with `elems` padded element by element (any sizes), the tiles copied into local
  memory element by element and read from there as w-vectors; with `rot` A's tile rows rotated
  (1) or swizzled (2, 3) in local memory (`rotated_rows`: the copy's source gathered, by element
  where copied so, and the reads).
* `mm-edge-tiles-async` (… , stages[, elems]): the same, its tile copies pipelined by cp.async
  (`tiles-async`): the Hopper FFMA SGEMM for any size (float32, w = 4; without `elems` 4 | N, K;
  with it 4-byte copies each with its source size).
* `mm-edge-tensor-cores` (tm, tn, tk, warps, staged[, lines]): mm-tensor-cores' FP64 (DMMA)
  kernel over padded views: its tiles staged element by element (any sizes), or with `lines` in
  16-byte chunks, the padding then by whole chunks of two doubles along each operand's stored
  rows (2 divides them).

Vectors of w along K and N need w to divide K and N (`asVector w`: the run-time checks and
`size_multiples` say so); w = 1, or `elems`, takes any size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr, cst, prove_eq
from liftkit.ir.nodes import Expr
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.rewrite.rules.mm import (
    SOURCE, SYMBOLIC_TILES_COMPLEX, Elem, _rot_ok, _symbolic_tiles, _tiles_ok, _zeros4,
    local_tiles, mm_parts, unroll_k_steps,
)

Options = list[dict[str, Any]]


def padded(n: ArithExpr, t: int) -> ArithExpr:
    """⌈n / t⌉·t, the length a split by t of n padded up needs."""
    return ((n + (t - 1)) // t) * t


def _empty(r: ArithExpr) -> bool:
    return prove_eq(r, cst(0))


def _pad(r: ArithExpr, boundary: Any) -> tuple[Any, ...]:
    """pad 0 r boundary, left out where r is provably 0."""
    return () if _empty(r) else (D.pad(0, r, boundary),)


def _crop(r: ArithExpr) -> tuple[Any, ...]:
    return () if _empty(r) else (D.crop(0, r),)


def _apply(funs: tuple[Any, ...], x: Any) -> Any:
    """funs[0] ∘ funs[1] ∘ … $ x (x itself for no functions)."""
    return D.compose(*funs) << x if funs else x


def _zero(e: Elem, w: int) -> Any:
    """The zero vector (or scalar) a K pad fills with."""
    return _zeros4((), w, e)


def edge_tiles(a: Expr, b: Expr, m: ArithExpr, n: ArithExpr, k: ArithExpr, tm: int, tn: int,
               tk: int, rm: int, rn: int, unroll: int, w: int, e: Elem, elems: int = 0,
               rot: int = 0) -> Expr:
    """C = A·B (A: [[t]_K]_M, B: [[t]_N]_K) by `local_tiles` over padded views, cropped;
    `elems`: padded element by element (any sizes), the tiles copied into local memory so and
    read from there as w-vectors; `rot` (scalars, w = 1: complex64): A's tile rows rotated or
    swizzled in local memory as mm-local-tiles' (`rotated_rows`; the padded view is read as it
    is, only the tile's places in local memory move)."""
    pm, pn, pk = padded(m, tm), padded(n, tn), padded(k, tk)
    ew = 1 if elems else w  # the padding's unit
    vec = (D.map(D.asVector(ew)),) if ew > 1 else ()
    kw, nw = (k // ew, n // ew) if ew > 1 else (k, n)
    zero = _zero(e, ew)
    # A: rows of vectors along K (zeros past K), rows past M clamped
    a_p = _apply((*_pad(pm - m, "clamp"), *(D.map(p) for p in _pad(pk // ew - kw, zero)), *vec),
                 a)
    # B: rows of vectors along N (clamped past N), rows past K zeros
    rows_k = _pad(pk - k, zero)
    b_p = _apply((*((D.transpose, D.map(rows_k[0]), D.transpose) if rows_k else ()),
                  *(D.map(p) for p in _pad(pn // ew - nw, "clamp")), *vec), b)
    kernel = local_tiles(a_p, b_p, tm, tn, tk, rm, rn, 0, w, e, vectors=ew > 1,
                         scalar_copies=ew < w, rot=rot)
    if unroll:
        kernel = unroll_k_steps(kernel)
    return _apply((*_crop(pm - m), *(D.map(c) for c in _crop(pn - n))), kernel)


# complex scalars only, after the symbolic sets: mm-local-tiles' complex shapes
# (SYMBOLIC_TILES_COMPLEX), then 128×32 tiles (8×4 blocks on 128 work-items, 4×4 on 256), whose
# grid at N = 1025 (33 columns of tiles, 8 rows: 264) is two blocks per multiprocessor of the
# H100's 132 where 128×64 tiles make 136 (a second wave: CGEMM 1023×1025×999 0.44x cuBLAS,
# results/issue15/oddc25 run 1); 256×32 tiles (8×4 blocks, 256 work-items) make 132 there, one
# block on every multiprocessor, or split along K in two, two halves on each
EDGE_TILES_COMPLEX = ((128, 32, 16, 8, 4, 1, 1), (128, 32, 16, 4, 4, 1, 1),
                      (256, 32, 16, 8, 4, 1, 1))
# float32 (float4) only, after its symbolic sets: narrow tiles for the FFMA kernel — at 1023×1025
# 128×32 tiles make 264 (two blocks per multiprocessor of 132) and 256×32 tiles 132 (one each),
# where 128×64 tiles make 136. Alone they ran slower (a warp of 4 × 8 work-items reads 8 rows of
# A: 4-way bank conflicts); 256×32×16 split along K in 3 (three parts on every multiprocessor)
# is what the H100 profile runs at SGEMM 1023×1025×999 (0.753x cuBLAS against 0.711x,
# results/issue15/odd25b). 256×32 with 16×4 blocks: warps of 8 × 4 (2-way, as 128×64's); with
# A's rows swizzled (rot=2) 16×4 and 8×8 split in 3 ran 0.805x / 0.803x (odd26). 256×32×32 with
# 8×4 blocks: 256 work-items within 128 registers, two blocks (16 warps) on a multiprocessor
EDGE_TILES_FLOAT4 = ((128, 32, 32, 8, 8, 1, 4), (128, 32, 16, 8, 8, 1, 4),
                     (128, 32, 16, 8, 4, 1, 4), (128, 32, 32, 8, 4, 1, 4),
                     (256, 32, 16, 8, 8, 1, 4), (256, 32, 32, 8, 8, 1, 4),
                     (256, 32, 16, 16, 4, 1, 4), (256, 32, 32, 8, 4, 1, 4))


def _choices(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    ws = parts.elem.widths
    sizes = (const(parts.m), const(parts.n), const(parts.k))
    out = []
    extra = (list(SYMBOLIC_TILES_COMPLEX) + list(EDGE_TILES_COMPLEX) if parts.elem.t.is_complex
             else list(EDGE_TILES_FLOAT4) if 4 in ws else [])
    for tm, tn, tk, rm, rn, u, w in dict.fromkeys(_symbolic_tiles(ws) + extra):
        if not _tiles_ok(tm, tn, tk, rm, rn, w, ws):
            continue
        one = {"tm": tm, "tn": tn, "tk": tk, "rm": rm, "rn": rn, "unroll": u, "w": w}
        # constant sizes: vectors of w must divide K and N (the padding is by whole vectors)
        if w == 1 or not any(c is not None and c % w for c in sizes[1:]):
            out.append(one)
        if w > 1 and (tm * tk) % ((tm // rm) * (tn // rn)) == 0:  # padded element by element
            out.append({**one, "elems": 1})
    # complex scalars: A's rows swizzled in 16-byte units (rot=3, as ctiles-async's aligned
    # tiles), after the others: a warp of 128×32 tiles with 4×4 blocks reads 4 rows of A at once
    if parts.elem.t.is_complex:
        out += [{**o, "rot": 3} for o in out
                if o["w"] == 1 and _rot_ok(o["tk"], 1, parts.elem, 3)]
    # float4 tiles (vectors or element copies): A's rows rotated (rot=1) or swizzled (rot=2) in
    # local memory, after the others: 256×32 tiles' 8×8 blocks make warps of 4 × 8 work-items
    # that read 8 rows of A at one K vector, 4-way bank conflicts without (results/issue15/odd26)
    out += [{**o, "rot": r} for r in (1, 2) for o in list(out)
            if o["w"] == 4 and not o.get("rot") and _rot_ok(o["tk"], 4, parts.elem, r)]
    return out


def _build(site: Site, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
           w: int = 4, elems: int = 0, rot: int = 0) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    return edge_tiles(fresh(parts.a), fresh(parts.b), parts.m, parts.n, parts.k, tm, tn, tk, rm,
                      rn, unroll, w, parts.elem, elems, rot)


MM_EDGE_TILES = make_rule(
    "mm-edge-tiles",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ crop 0 (pM-M) ∘ map(crop 0 (pN-N)) $ mm-local-tiles(pad 0 (pM-M) clamp ∘ map(pad 0 (pK-K) 0 "
    "∘ asVector w) $ A, transpose ∘ map(pad 0 (pK-K) 0) ∘ transpose ∘ map(pad 0 (pN-N) clamp ∘ "
    "asVector w) $ B)   (pX = ⌈X/tX⌉·tX: any sizes, the edge tiles' loads zero-filled or clamped, "
    "their stores guarded)",
    SOURCE + "; issue 15 (edge tiles without padded copies)", _choices, _build, lowering=True,
    reshapes=True, opaque=False)


def _edge_tiles_async(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int,
                      elems: int = 0, rot: int = 0) -> Any:
    """mm-edge-tiles (float4, unrolled; `elems`: padded and copied element by element; `rot`:
    A's rows rotated or swizzled in local memory), then its tile loop's copies pipelined
    `stages` deep."""
    from liftkit.rewrite.rules.cuda import TILES_ASYNC
    from liftkit.rewrite.strategies import rule, seq, topdown

    extra = {**({"elems": 1} if elems else {}), **({"rot": rot} if rot else {})}
    return seq(rule(MM_EDGE_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=4, **extra),
               topdown(rule(TILES_ASYNC, stages=stages)))


def _at_mm(site: Site) -> bool:
    return mm_parts(site) is not None


def _edge_tiles_async_macro() -> Any:
    from liftkit.rewrite.strategies import MacroRule

    return MacroRule(
        "mm-edge-tiles-async", _edge_tiles_async,
        "the mm-tiles-async kernel for any M, N, K (N, K multiples of 4): mm-edge-tiles, then "
        "tiles-async (cp.async zero-fills the padding's vectors: source size 0)",
        "issue 15 (edge tiles without padded copies)", where=_at_mm)


MM_EDGE_TILES_ASYNC = _edge_tiles_async_macro()


# ---------------------------------------------------------------------------------------------
# the FP64 tensor-core product (mm-tensor-cores) over the same padded views


def _mma_choices(site: Site) -> Options:
    """mm-tensor-cores' double tilings: staged element by element (8-byte cp.async, each with
    its own source size: any sizes), or with `lines` in 16-byte chunks of two doubles (the
    padding then by whole chunks: 2 divides the chunks' dimensions, K and N for NN, M and N for
    TN); those with lines also on m16n8k8 (`ik=8`, fragments read `ahead` 0-2 k-steps early):
    the padded K steps are zeros in shared memory, whatever instruction reads them."""
    from liftkit.ir import patterns as P
    from liftkit.rewrite.rules.cuda import _mma_choices as tensor_choices, mm_nest

    found = mm_nest(site)
    if found is None or found[5] is not P.ReduceMmaF64:
        return []
    return tensor_choices(site)


def _rows_padded(x: Any, rows: ArithExpr, cols: ArithExpr, rows_to: ArithExpr,
                 cols_to: ArithExpr, row_pad: Any, col_pad: Any, chunks: int) -> Any:
    """x: [[t]_cols]_rows padded to rows_to × cols_to, rows with `row_pad` (a boundary), the
    columns with `col_pad` in whole chunks of `chunks` elements (asVector, pad, asScalar:
    a chunk is all inside or all padding; 1: element by element)."""
    if chunks > 1:
        col = _pad(cols_to // chunks - cols // chunks, col_pad)
        cols_f = ((D.map(D.compose(D.asScalar, col[0], D.asVector(chunks))),) if col else ())
    else:
        cols_f = tuple(D.map(p) for p in _pad(cols_to - cols, col_pad))
    rows_f = _pad(rows_to - rows, row_pad)
    if rows_f and not isinstance(row_pad, str):  # a constant row: through the transpose
        rows_f = (D.transpose, D.map(rows_f[0]), D.transpose)
    # the rows padded first, so that no transpose is on top (mm-tensor-cores reads the
    # transposes on top as the operand's layout: `_copied_across`)
    return _apply((*cols_f, *rows_f), x)


def _mma_build(site: Site, tm: int, tn: int, tk: int, warps: int, staged: int,
               lines: bool = False, ik: int = 0, ahead: int = 0) -> Expr:
    from liftkit.rewrite.rules.cuda import _transposed_view, f64_mma_class, mm_nest, mm_tensor_cores
    from liftkit.types import float64, vector

    a, b, m, n, k, cls = mm_nest(site)  # type: ignore[misc]
    if ik:  # m16n8k8 (k16) throughout, as mm-tensor-cores builds it
        cls = f64_mma_class(ik, ahead, staged)
    pm, pn, pk = padded(m, tm), padded(n, tn), padded(k, tk)
    zero = D.lit(0.0, float64)
    w = 2 if lines else 1  # `lines` copies 16-byte chunks along each operand's stored rows
    if _transposed_view(a):  # TN: A stored K×M, its chunks along M
        a_p = D.transpose << _rows_padded(fresh(a.args[0]), k, m, pk, pm, zero, "clamp", w)  # type: ignore[union-attr]
    else:  # its chunks along K
        a_p = _rows_padded(fresh(a), m, k, pm, pk, "clamp", D.lit(np.zeros(w), vector(float64, w))
                           if w > 1 else zero, w)
    b_p = _rows_padded(fresh(b), k, n, pk, pn, zero, "clamp", w)  # B stored K×N, chunks along N
    kernel = mm_tensor_cores(a_p, b_p, cls, tm, tn, tk, warps, staged, lines)
    return _apply((*_crop(pm - m), *(D.map(c) for c in _crop(pn - n))), kernel)


MM_EDGE_TENSOR_CORES = make_rule(
    "mm-edge-tensor-cores",
    "the double matrix product → crop 0 (pM-M) ∘ map(crop 0 (pN-N)) $ mm-tensor-cores(pad 0 "
    "(pM-M) clamp ∘ map(pad 0 (pK-K) 0) $ A, transpose ∘ map(pad 0 (pK-K) 0) ∘ transpose ∘ "
    "map(pad 0 (pN-N) clamp) $ B)   (the DMMA kernel for any sizes: its staged tiles' elements "
    "past K zero-filled by cp.async, the ragged edge's stores guarded)",
    "issue 12 (tensor cores); issue 15 (edge tiles without padded copies)", _mma_choices,
    _mma_build, lowering=True, reshapes=True, opaque=False)

EDGE_RULES = {r.name: r for r in (MM_EDGE_TILES, MM_EDGE_TILES_ASYNC, MM_EDGE_TENSOR_CORES)}

__all__ = ["EDGE_RULES", "MM_EDGE_TENSOR_CORES", "MM_EDGE_TILES", "MM_EDGE_TILES_ASYNC",
           "edge_tiles", "padded"]
