"""The rule `mm-wgmma-tma`: the high-level matrix product of truncated operands on Hopper's
warpgroup MMA fed by the bulk tensor copy engine (reduceWgmmaTmaTF32Z, codegen/cuda_wgmma_tma.py).

It applies where mm-wgmma-async does (rules/cuda.py `mm_nest`: A and B truncated by the program
itself, `map(map(truncTF32))`; the rule never makes an FP32 product TF32) and builds the same
tile nest (`mm_wgmma`); `warps` counts the consumer warps (a producer warpgroup comes with them).
Only the tilings in `WGMMA_TMA_TILES` are offered: each was checked on an H100 over several
k-tiles and pipeline wraps (results/issue12/tma/); the code generator's `plan_error` refuses
what it cannot run.

`group` (mm-wgmma-tma only): the blocks started `group` row tiles at a time, as the rule
`wrg-row-groups` (rules/grid_order.py) orders a tile grid, built here at once, because the
kernel runs one block per work-group (`whole_grid`) and its grid is the launch order:
`join ∘ join ∘ mapWrg(2)(λgrp. map(map(join) ∘ transpose) ∘ transpose ∘ mapWrg(1)(λbCol.
mapWrg(0)(λaRow. …) $ grp) ∘ tiles(tn, tk) ∘ transpose $ B) ∘ split g ∘ tiles(tm, tk) $ A`
(map interchange and split-join: the same C element for element, only which block computes
which tile changes). The resident blocks then cover g row tiles × (resident / g) column tiles
instead of about two rows × every column, so each k-slice of B is read from memory M/(g·tm)
times instead of once per wave. group 0: the grid's own order (row tiles slowest).
"""

from __future__ import annotations

from typing import Any

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh

# (tm, tn, tk, consumer warps) offered, largest first, and the stages
WGMMA_TMA_TILES = ((128, 256, 32, 8), (256, 128, 32, 8), (128, 256, 64, 8), (256, 128, 64, 8),
                   (128, 128, 32, 4))
WGMMA_TMA_STAGES = (4, 3, 2)
# row tiles per group of the launch order offered (0: ungrouped), the first the derivation's
# default: each checked with every tiling on an H100 (results/issue12/tma/run6); at 4096³ no
# group was faster than the grid's own order in alternating rounds (0.957-0.974x against 0.976x)
WGMMA_TMA_GROUPS = (0, 8, 4, 16)
_CASTS = {"truncTF32": P.ReduceWgmmaTmaTF32Z}
_PAIR_CASTS = {"truncTF32": P.ReduceWgmmaTmaPairTF32Z}


def _choices(site: Site, casts: dict[str, type] = _CASTS) -> list[dict[str, Any]]:
    from liftkit.codegen.cuda_wgmma_tma import plan_error
    from liftkit.rewrite.rules.cuda import mm_nest

    pair = casts is _PAIR_CASTS
    found = mm_nest(site, casts, None)
    if found is None:
        return []
    _, _, m, n, k, _ = found
    cm, cn, ck = const(m), const(n), const(k)
    # a pair's clusters join consecutive row tiles along the grid's y: no grouped order
    groups = (0,) if pair else WGMMA_TMA_GROUPS
    return [{"tm": tm, "tn": tn, "tk": tk, "warps": w, "stages": s, **({} if pair else {"group": g})}
            for tm, tn, tk, w in WGMMA_TMA_TILES
            if all(c is None or c % t == 0 for c, t in ((cm, tm), (cn, tn), (ck, tk)))
            and not (pair and cm is not None and cm // tm % 2)
            for s in WGMMA_TMA_STAGES if plan_error(tm, tn, tk, w, s, pair=pair) is None
            for g in groups if not g or cm is None or cm // tm % g == 0]


def _build(site: Site, tm: int, tn: int, tk: int, warps: int, stages: int, group: int = 0,
           casts: dict[str, type] = _CASTS) -> Any:
    from liftkit.rewrite.rules.cuda import mm_nest
    from liftkit.rewrite.rules.cuda_wgmma import mm_wgmma

    a, b, _, _, _, cls = mm_nest(site, casts, None)  # type: ignore[misc]
    if not group:
        return mm_wgmma(fresh(a), fresh(b), cls, tm, tn, tk, warps, stages)
    return grouped_mm(fresh(a), fresh(b), cls, tm, tn, tk, warps, stages, group)


def grouped_mm(a: Any, b: Any, cls: type, tm: int, tn: int, tk: int, warps: int, stages: int,
               group: int) -> Any:
    """mm_wgmma's tile nest with its blocks started `group` row tiles at a time (the module
    docstring; rules/grid_order.py's wrg-row-groups applied to mm_wgmma's nest)."""
    from liftkit import dsl as D
    from liftkit.ir.nodes import FunCall
    from liftkit.ir.nodes import Literal as Lit
    from liftkit.rewrite.rules.cuda_wgmma import _wgmma_plan

    why = _wgmma_plan(cls)(tm, tn, tk, warps, stages)
    if why is not None or group < 1:
        raise ValueError(f"{cls.name}: {why or f'a group of {group} row tiles'}")
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))  # noqa: E731
    mma = cls(warps=cst(warps), stages=cst(stages), f=D.fn(lambda pair: pair))
    zero = Lit(0.0, cls.acc)
    return (D.join << D.join << D.mapWrg(2)(lambda grp: D.map(D.compose(D.map(D.join), D.transpose))
            << D.transpose << D.mapWrg(1)(lambda b_col: D.mapWrg(0)(
                lambda a_row: D.join << FunCall(mma, (zero, D.zip(a_row, b_col)))) << grp)
            << tiles(tn) << D.transpose << b) << D.split(group) << tiles(tm) << a)


MM_WGMMA_TMA = make_rule(
    "mm-wgmma-tma",
    "as mm-wgmma-async for c = truncTF32, with reduceWgmmaTmaTF32Z w s (id, 0): the tiles copied "
    "raw by the bulk tensor copy engine (TMA) on mbarriers, s stages, by a producer warpgroup "
    "beside w/4 consumer warpgroups; group g > 0: the work-groups started g row tiles at a time "
    "(as wrg-row-groups: join ∘ join ∘ mapWrg(2)(λgrp. map(map(join) ∘ transpose) ∘ transpose ∘ "
    "mapWrg(1)(λbCol. mapWrg(0)(λaRow. …) $ grp) $ B's tiles) ∘ split g $ A's tiles)",
    "issue 12 (Hopper warpgroup MMA fed by TMA)", _choices, _build,
    lowering=True, reshapes=True, opaque=False)

MM_WGMMA_TMA_PAIR = make_rule(
    "mm-wgmma-tma-pair",
    "as mm-wgmma-tma, with reduceWgmmaTmaPairTF32Z w s (id, 0): the work-groups of consecutive row "
    "tiles run as 2-block clusters, each copying half of their common B tile to both (TMA multicast)",
    "issue 12 (Hopper warpgroup MMA fed by TMA, 2-block clusters)",
    lambda site: _choices(site, _PAIR_CASTS),
    lambda site, **kw: _build(site, casts=_PAIR_CASTS, **kw),
    lowering=True, reshapes=True, opaque=False)
