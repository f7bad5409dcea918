"""`mm-private-blocks` (rm, rn, wx, wy): matrix multiplication in the CLBlast/AMD shape (the
bundled `mm_amd`, seed 001's MM fragments): 2D register blocking without local memory.
Work-groups of wx×wy work-items, each an rm×rn block of C in registers; A read as float4 along
K, B as float4 rows; neighbouring work-items read neighbouring float4 of B (coalesced on GPUs,
one cache line on CPUs).

It matches the high-level nest of rules/mm.py (`mm_parts`) and shares its element types, vector
multiply-adds and block helpers; it lives apart because it shares none of their tiling.
"""

from __future__ import annotations

from typing import Any

from liftkit import dsl as D
from liftkit.ir.nodes import Expr
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.rewrite.rules.mm import (BLOCKS, FLOAT32, GROUPS, MAX_CHOICES, MAX_GROUP, SOURCE,
                                     SYMBOLIC_BLOCKS, Elem, Options, _block_update, _fits,
                                     _private_copy4, _zeros4, mm_parts)


def _blocks_ok(rm: int, rn: int, wx: int, wy: int, w: int = 4) -> bool:
    return rn % w == 0 and wx * wy <= MAX_GROUP


def _choices_blocks(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    m, n, k, w = parts.m, parts.n, parts.k, max(parts.elem.widths)
    cm, cn, ck = const(m), const(n), const(k)
    if not _fits(ck, w):
        return []
    if cm is None or cn is None:
        combos = [c for c in SYMBOLIC_BLOCKS if _fits(cm, c[3] * c[0]) and _fits(cn, c[2] * c[1])]
    else:
        combos = [(rm, rn, wx, wy) for rm, rn in BLOCKS for wx, wy in GROUPS
                  if _fits(cm, wy * rm) and _fits(cn, wx * rn) and _blocks_ok(rm, rn, wx, wy, w)]
        combos.sort(key=lambda c: (-(c[0] * c[1]), -(c[2] * c[3])))
        combos = combos[:MAX_CHOICES]
    return [{"rm": rm, "rn": rn, "wx": wx, "wy": wy} for rm, rn, wx, wy in combos
            if _blocks_ok(rm, rn, wx, wy, w)]


def private_blocks(a: Expr, b: Expr, rm: int, rn: int, wx: int, wy: int, e: Elem = FLOAT32) -> Expr:
    """C = A·B in the CLBlast/AMD shape (see the module docstring), with vectors of e's widest
    width (float4, double2; complex numbers: scalars)."""
    w = max(e.widths)
    if not _blocks_ok(rm, rn, wx, wy, w):
        raise ValueError(f"inconsistent blocks rm={rm} rn={rn} wx={wx} wy={wy} for {e.t}")
    as_vec = D.asVector(w) if w > 1 else D.split(1)

    def thread(a_blk: Any, b_blk: Any) -> Any:
        # a_blk: [[t]_K]_RM, b_blk: [[tw]_K]_(RN/w)
        a_steps = D.transpose << D.map(as_vec) << a_blk  # [[tw]_RM]_(K/w) ([[[t]_1]_RM]_K)
        b_steps = D.transpose << D.map(D.split(w)) << b_blk  # [[[tw]_w]_(RN/w)]_(K/w)

        def step(acc: Any, ab: Any) -> Any:
            a_cols = (lambda aP: D.map(D.asScalar) << D.split(1) << aP) if w > 1 else (lambda aP: aP)
            return D.let(_private_copy4(1 if w > 1 else 2, w, e) << ab[0],
                         _private_copy4(2, w, e) << ab[1], lambda aP, bP:
                         _block_update(acc, a_cols(aP), D.transpose << bP, w, e))

        return (D.toGlobal(_private_copy4(2, w, e)) << D.join
                << D.reduceSeq(step, _private_copy4(2, w, e) << _zeros4((rm, rn // w), w, e))
                << D.zip(a_steps, b_steps))

    vec: tuple[Any, ...] = (D.map(D.asVector(w)),) if w > 1 else ()
    b_tiles = D.compose(D.map(D.compose(D.transpose, D.split(wx))), D.split(wx * rn // w),
                        D.transpose, *vec)
    scalars: tuple[Any, ...] = (D.map(D.asScalar),) if w > 1 else ()
    wg_rows = D.compose(D.join, D.map(D.compose(*scalars, D.map(D.join), D.map(D.transpose),
                                                D.transpose)))
    return (D.join << D.mapWrg(1)(lambda a_rows: D.map(D.join) << D.transpose << D.map(wg_rows)
                                  << D.mapWrg(0)(lambda b_cols: D.mapLcl(1)(lambda a_blk: D.mapLcl(0)(
                                      lambda b_blk: thread(a_blk, b_blk)) << b_cols)
                                      << D.split(rm) << a_rows) << b_tiles(b))
            << D.split(wy * rm) << a)


def _build_blocks(site: Site, rm: int, rn: int, wx: int, wy: int) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    return private_blocks(fresh(parts.a), fresh(parts.b), rm, rn, wx, wy, parts.elem)


MM_PRIVATE_BLOCKS = make_rule(
    "mm-private-blocks",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRows. untile ∘ mapWrg(0)(λbCols. mapLcl(1)(λaBlk. mapLcl(0)(λbBlk. "
    "toGlobal(copy) ∘ join ∘ reduceSeq(rm×rn float4 register block += float4 of A · float4 rows "
    "of B, 0) $ zip(float4 steps of aBlk, of bBlk)) $ bCols) ∘ split rm $ aRows) ∘ float4 column "
    "blocks(wx, rn) $ B) ∘ split (wy·rm) $ A",
    SOURCE + ": 2D register blocking, float4 loads, no local memory (CLBlast for AMD)",
    _choices_blocks, _build_blocks, lowering=True, reshapes=True, opaque=False)

