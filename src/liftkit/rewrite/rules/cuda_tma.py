"""The rule `mm-wgmma-tma`: the high-level matrix product of truncated operands on Hopper's
warpgroup MMA fed by the bulk tensor copy engine (reduceWgmmaTmaTF32Z, codegen/cuda_wgmma_tma.py).

It applies where mm-wgmma-async does (rules/cuda.py `mm_nest`: A and B truncated by the program
itself, `map(map(truncTF32))`; the rule never makes an FP32 product TF32) and builds the same
tile nest (`mm_wgmma`); `warps` counts the consumer warps (a producer warpgroup comes with them).
Only the tilings in `WGMMA_TMA_TILES` are offered: each was checked on an H100 over several
k-tiles and pipeline wraps (results/issue12/tma/); the code generator's `plan_error` refuses
what it cannot run.
"""

from __future__ import annotations

from typing import Any

from liftkit.ir import patterns as P
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh

# (tm, tn, tk, consumer warps) offered, largest first, and the stages
WGMMA_TMA_TILES = ((128, 256, 32, 8), (256, 128, 32, 8), (128, 256, 64, 8), (256, 128, 64, 8),
                   (128, 128, 32, 4))
WGMMA_TMA_STAGES = (4, 3, 2)
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
    return [{"tm": tm, "tn": tn, "tk": tk, "warps": w, "stages": s}
            for tm, tn, tk, w in WGMMA_TMA_TILES
            if all(c is None or c % t == 0 for c, t in ((cm, tm), (cn, tn), (ck, tk)))
            and not (pair and cm is not None and cm // tm % 2)
            for s in WGMMA_TMA_STAGES if plan_error(tm, tn, tk, w, s, pair=pair) is None]


def _build(site: Site, tm: int, tn: int, tk: int, warps: int, stages: int,
           casts: dict[str, type] = _CASTS) -> Any:
    from liftkit.rewrite.rules.cuda import mm_nest, mm_wgmma

    a, b, _, _, _, cls = mm_nest(site, casts, None)  # type: ignore[misc]
    return mm_wgmma(fresh(a), fresh(b), cls, tm, tn, tk, warps, stages)


MM_WGMMA_TMA = make_rule(
    "mm-wgmma-tma",
    "as mm-wgmma-async for c = truncTF32, with reduceWgmmaTmaTF32Z w s (id, 0): the tiles copied "
    "raw by the bulk tensor copy engine (TMA) on mbarriers, s stages, by a producer warpgroup "
    "beside w/4 consumer warpgroups",
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
