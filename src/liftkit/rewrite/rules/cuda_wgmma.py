"""Rules that put the high-level matrix product of TF32-rounded operands on Hopper's warpgroup
MMA (`reduceWgmma…`, codegen/cuda_wgmma.py and cuda_wgmma_async.py); the TMA-fed form is
rules/cuda_tma.py.

- `mm-wgmma` (tm, tn, tk, warps, stages): where rules/cuda.py `mm_nest` finds the product with
  both operands rounded by the program itself (`map(map(toTF32))` or `map(map(truncTF32))`;
  the rule never makes an FP32 product TF32), tm×tn tiles of C per work-group, the K loop's
  tile pairs reduced by `reduceWgmma<P> warps stages`, the pattern staging its operands itself.
- `mm-wgmma-async`: the same with the tiles copied raw by cp.async (B through registers into
  the products); kept out of the CUDA search (rules/cuda.py `_search_rules`).
- `mm-wgmma-pair`: as mm-wgmma-async, the work-groups of consecutive row tiles run as 2-block
  clusters sharing each B tile.

Only the tilings the code generator's plan accepts are offered (`_wgmma_plan`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh

Options = list[dict[str, Any]]


# (tm, tn, tk) offered, largest first; warps (warpgroups of 4) and staged tiles
WGMMA_TILES = ((128, 256, 32), (128, 128, 32), (64, 256, 32), (128, 128, 64), (64, 128, 32),
               (128, 64, 32), (64, 64, 32))
WGMMA_WARPS = (8, 4)
WGMMA_STAGES = (3, 2, 4)
_WGMMA_CASTS = {"toTF32": P.ReduceWgmmaTF32, "truncTF32": P.ReduceWgmmaTF32Z}


def _wgmma_tilings(site: Site, casts: dict[str, type], tiles: Sequence[tuple[int, int, int]],
                   stages: Sequence[int]) -> Options:
    """The tilings mm_wgmma offers for the product at the site (its operands cast as `casts`
    maps to a reduceWgmma class): the tiles dividing its known sizes (for a 2-block-cluster
    pair, an even number of row tiles), with the warps and stages the class's plan accepts."""
    from liftkit.rewrite.rules.cuda import mm_nest

    found = mm_nest(site, casts, None)
    if found is None:
        return []
    _, _, m, n, k, cls = found
    plan, pair = _wgmma_plan(cls), issubclass(cls, P.ReduceWgmmaPair)
    cm, cn, ck = const(m), const(n), const(k)
    return [{"tm": tm, "tn": tn, "tk": tk, "warps": w, "stages": s}
            for tm, tn, tk in tiles
            if all(c is None or c % t == 0 for c, t in ((cm, tm), (cn, tn), (ck, tk)))
            and not (pair and cm is not None and cm // tm % 2)
            for w in WGMMA_WARPS for s in stages if plan(tm, tn, tk, w, s) is None]


def _wgmma_choices(site: Site) -> Options:
    return _wgmma_tilings(site, _WGMMA_CASTS, WGMMA_TILES, WGMMA_STAGES)


def mm_wgmma(a: Expr, b: Expr, cls: type, tm: int, tn: int, tk: int, warps: int, stages: int) -> Expr:
    """C = A·B with `cls` (a reduceWgmma) over tm×tn×tk tiles: the tile nest of mm-tensor-cores,
    the pattern staging its operands itself (its function the identity)."""
    from liftkit import dsl as D
    from liftkit.ir.nodes import Literal as Lit

    why = _wgmma_plan(cls)(tm, tn, tk, warps, stages)
    if why is not None:
        raise ValueError(f"{cls.name}: {why}")
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))  # noqa: E731
    mma = cls(warps=cst(warps), stages=cst(stages), f=D.fn(lambda pair: pair))
    zero = Lit(0.0, cls.acc)
    rows = tiles(tm)
    if issubclass(cls, (P.ReduceWgmmaPair, P.ReduceWgmmaTmaPair)):  # the row tiles in pairs (2-block clusters): join ∘
        # split 2 means the identity, and makes the runtime check that their number is even
        rows = D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.join, D.split(2), D.split(tm))
    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose << D.mapWrg(0)(
        lambda b_col: D.join << FunCall(mma, (zero, D.zip(a_row, b_col))))
        << tiles(tn) << D.transpose << b) << rows << a)


def _wgmma_build(site: Site, tm: int, tn: int, tk: int, warps: int, stages: int) -> Expr:
    from liftkit.rewrite.rules.cuda import mm_nest

    a, b, _, _, _, cls = mm_nest(site, _WGMMA_CASTS, None)  # type: ignore[misc]
    return mm_wgmma(fresh(a), fresh(b), cls, tm, tn, tk, warps, stages)


def _wgmma_plan(cls: type) -> Any:
    """The code generator's plan check of a reduceWgmma class (why a tiling cannot run)."""
    if issubclass(cls, P.ReduceWgmmaTma):
        from functools import partial

        from liftkit.codegen.cuda_wgmma_tma import plan_error as tma_plan

        return partial(tma_plan, pair=issubclass(cls, P.ReduceWgmmaTmaPair))
    if issubclass(cls, P.ReduceWgmmaAsync):
        from functools import partial

        from liftkit.codegen.cuda_wgmma_async import plan_error as async_plan

        return partial(async_plan, pair=issubclass(cls, P.ReduceWgmmaPair))
    from liftkit.codegen.cuda_wgmma import plan_error

    return plan_error


MM_WGMMA = make_rule(
    "mm-wgmma",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ "
    "map(map(c)) $ B) $ map(map(c)) $ A → join ∘ mapWrg(1)(λaRow. map(join) ∘ transpose ∘ "
    "mapWrg(0)(λbCol. join ∘ reduceWgmma<P> w s (id, 0) $ zip(aRow, bCol)) ∘ tiles(tn, tk) ∘ "
    "transpose $ B) ∘ tiles(tm, tk) $ A   (c = toTF32: P = TF32; c = truncTF32: P = TF32Z)",
    "issue 12 (Hopper warpgroup MMA)", _wgmma_choices, _wgmma_build, lowering=True, reshapes=True,
    opaque=False)


# the same product with the tiles copied raw by cp.async (B through registers into the products)
WGMMA_ASYNC_TILES = ((256, 128, 32), (128, 256, 32), (128, 128, 32), (256, 64, 32), (128, 64, 32),
                     (64, 128, 32), (64, 64, 32))
WGMMA_ASYNC_STAGES = (4, 3, 5, 6)
_WGMMA_ASYNC_CASTS = {"toTF32": P.ReduceWgmmaAsyncTF32, "truncTF32": P.ReduceWgmmaAsyncTF32Z}


def _wgmma_async_choices(site: Site, casts: Optional[dict[str, type]] = None) -> Options:
    return _wgmma_tilings(site, casts or _WGMMA_ASYNC_CASTS, WGMMA_ASYNC_TILES, WGMMA_ASYNC_STAGES)


def _wgmma_async_build(site: Site, tm: int, tn: int, tk: int, warps: int, stages: int,
                       casts: Optional[dict[str, type]] = None) -> Expr:
    from liftkit.rewrite.rules.cuda import mm_nest

    a, b, _, _, _, cls = mm_nest(site, casts or _WGMMA_ASYNC_CASTS, None)  # type: ignore[misc]
    return mm_wgmma(fresh(a), fresh(b), cls, tm, tn, tk, warps, stages)


MM_WGMMA_ASYNC = make_rule(
    "mm-wgmma-async",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ "
    "map(map(c)) $ B) $ map(map(c)) $ A → join ∘ mapWrg(1)(λaRow. map(join) ∘ transpose ∘ "
    "mapWrg(0)(λbCol. join ∘ reduceWgmmaAsync<P> w s (id, 0) $ zip(aRow, bCol)) ∘ tiles(tn, tk) ∘ "
    "transpose $ B) ∘ tiles(tm, tk) $ A   (c = toTF32: P = TF32; c = truncTF32: P = TF32Z; the "
    "tiles copied raw by cp.async, B through registers)",
    "issue 12 (Hopper warpgroup MMA fed by cp.async)", _wgmma_async_choices, _wgmma_async_build,
    lowering=True, reshapes=True, opaque=False)

# the same with B shared by the two blocks of a 2-block cluster (an even number of row tiles)
_WGMMA_PAIR_CASTS = {"toTF32": P.ReduceWgmmaPairTF32, "truncTF32": P.ReduceWgmmaPairTF32Z}


def _wgmma_pair_choices(site: Site) -> Options:
    return _wgmma_async_choices(site, _WGMMA_PAIR_CASTS)


def _wgmma_pair_build(site: Site, tm: int, tn: int, tk: int, warps: int, stages: int) -> Expr:
    return _wgmma_async_build(site, tm, tn, tk, warps, stages, _WGMMA_PAIR_CASTS)


MM_WGMMA_PAIR = make_rule(
    "mm-wgmma-pair",
    "as mm-wgmma-async, with reduceWgmmaPair<P> w s (id, 0): the work-groups of consecutive row "
    "tiles run as 2-block clusters sharing each B tile (each copies half, both read all of it)",
    "issue 12 (Hopper warpgroup MMA, 2-block clusters)",
    _wgmma_pair_choices, _wgmma_pair_build,
    lowering=True, reshapes=True, opaque=False)
