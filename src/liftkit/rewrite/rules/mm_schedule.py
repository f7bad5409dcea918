"""The tile schedule of a matrix product's cp.async tile loop against the GPU's slots (issue 12:
SGEMM 4096³ on the H100 runs 2048 tiles of 128×64 in 5.17 waves of 132 SMs × 3 blocks; the last
wave's 68 tiles leave most of the machine idle).

- `mm-split-tail` (parts, slots, bound): in the FFMA tile kernel of mm-tiles-async (a
  work-group's reduceSeq over tile pairs whose function starts with toLocalAsync copies and
  multiply-adds into register blocks that start at zero),
  `reduceSeq(f, z) → reduceSplitTail parts slots bound (f, z)`: the tiles of the last partial wave
  of `slots` run split along K into `parts` work-groups each, their partial sums added in order
  (ir/patterns/cuda_schedule.py); `bound` > 0 also asks for at least that many resident
  work-groups per multiprocessor (a register cap; parts = 1: that alone). Sound where z is zero
  and f adds to its accumulator, which is what the rule checks: the sum of the products is only
  regrouped (exact on integer-valued inputs, reassociated rounding on floats).

`sgemm_schedule_derivation` replays mm-tiles-async then this rule from the bundled `mm`: the
bundled H100 derivations of `mm` at 4096³ (parts 5) and 8192³ (parts 4), slots 396, bound 3,
that `liftkit run mm --tuned --backend cuda` replays, and liftkit.blas's SGEMM NN there (the
tiles-async codelet's split/slots/bound, the shipped H100 profile).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import FunCall, Lambda, Literal, UserFun, unwrap_eta, walk
from liftkit.ir.patterns.cuda_schedule import ReduceSplitTail
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import call, type_checks

Options = list[dict[str, Any]]

# (parts, slots, bound) offered: the H100's 132 SMs × 3 resident 128-thread blocks of the 128×64
# FFMA tiles (396; bound 3 keeps the split kernel at ≤ 168 registers, so at 3), × 4 with a
# 128-register cap (528), × 2 (264, the 256-thread tiles), × 7 (924, 64×64 tiles); split 2-6
SCHEDULES = ((4, 396, 0), (3, 396, 0), (5, 396, 0), (2, 396, 0), (6, 396, 0), (5, 396, 3),
             (4, 396, 3), (3, 396, 3), (1, 528, 4), (4, 528, 4), (3, 528, 4), (4, 264, 0),
             (3, 924, 0), (4, 924, 0), (2, 924, 0),
             # the complex64 FFMA tiles (ctiles-async) capped at 128 registers, 256 threads 2
             # resident per SM (264), 128 threads 4 (528): alone, and a grid that fills at most
             # half the slots split in 2
             (1, 264, 2), (2, 264, 2), (2, 528, 4))
_MADS = ("madS", "mad_")


def _zero_registers(init: Any) -> bool:
    """init is toPrivate(copy) of a literal of zeros: the register blocks start at zero."""
    if not (isinstance(init, FunCall) and isinstance(init.f, P.ToPrivate) and len(init.args) == 1):
        return False
    z = init.args[0]
    return isinstance(z, Literal) and not np.any(np.asarray(z.value))


def _adds_products(f: Any) -> bool:
    """Every user function the loop's body calls copies or multiply-adds (acc + a·b): the body
    adds to its accumulator, so the parts' sums add up to the whole loop's."""
    funs = [n for n in walk(f) if isinstance(n, UserFun)]
    mads = [u for u in funs if u.name.startswith(_MADS)]
    copies = [u for u in funs if u.arity == 1 and u.body.replace(" ", "") == f"return{u.param_names[0]};"]
    return bool(mads) and len(mads) + len(copies) == len(funs)


def tile_loop(site: Site) -> Optional[Lambda]:
    """The loop's function when the site is the FFMA tile loop of mm-tiles-async: reduceSeq
    (exactly, not yet scheduled) over tile pairs, its function starting with toLocalAsync
    copies, inside mapWrg and no per-thread map, from zero registers, multiply-adding."""
    f = site.f
    if type(f) is not P.ReduceSeq or not isinstance(f.f, Lambda):
        return None
    if site.inside(P.MapLcl, P.MapGlb, P.MapSeq, P.MapSeqUnroll, P.AbstractReduce, P.ReduceMma):
        return None
    if not any(isinstance(p, P.MapWrg) for p in site.enclosing):
        return None
    if not any(isinstance(n, P.ToLocalAsync) for n in walk(f.f)):
        return None
    if not (_zero_registers(site.call.args[0]) and _adds_products(f.f)):
        return None
    return f.f


def _choices(site: Site) -> Options:
    if tile_loop(site) is None:
        return []
    out = []
    for parts, slots, bound in SCHEDULES:
        new = _build(site, parts, slots, bound)
        if not type_checks(site, new):
            return []
        out.append({"parts": parts, "slots": slots, "bound": bound})
    return out


def _build(site: Site, parts: int, slots: int, bound: int = 0) -> Any:
    f = unwrap_eta(site.f.f)  # type: ignore[attr-defined]
    return call(ReduceSplitTail(f, cst(parts), cst(slots), cst(bound)), *site.call.args)


MM_SPLIT_TAIL = make_rule(
    "mm-split-tail",
    "reduceSeq(λ(acc, t). (λ(x, y). acc += x·y)(toLocalAsync … $ get 0 t, toLocalAsync … $ get 1 "
    "t), zeros) → reduceSplitTail parts slots bound (same function, zeros)   (the last partial "
    "wave of `slots` tiles split along K into `parts`, partial sums added in order)",
    "issue 12 (wave quantisation of the tile grid: split-K of the tail, stream-K's fix-up)",
    _choices, _build, lowering=True)

# (parts, slots) offered to the DMMA tile loop: the H100's 132 SMs × 2 resident 128-thread
# blocks of 128×64 tiles at 255 registers (264; DGEMM 1024³'s 128 tiles are all tail there, so
# all run split: 256 half-depth blocks), × 3 for 64×64 tiles (396)
MMA_SCHEDULES = ((2, 264), (3, 264), (2, 396))


def _mma_choices(site: Site) -> Options:
    """The DMMA tile loop read ahead (reduceMmaF64K8AheadSpread, exactly) inside mapWrg, from
    a zero literal (each part then starts from zero, as the schedule's meaning folds them)."""
    from liftkit.ir.patterns.cuda import ReduceMmaF64K8AheadSpread

    f = site.f
    if type(f) is not ReduceMmaF64K8AheadSpread or not any(isinstance(p, P.MapWrg) for p in site.enclosing):
        return []
    z = site.call.args[0]
    if not (isinstance(z, Literal) and not np.any(np.asarray(z.value))):
        return []
    return [{"parts": p, "slots": s} for p, s in MMA_SCHEDULES]


def _mma_build(site: Site, parts: int, slots: int) -> Any:
    from liftkit.ir.patterns.cuda_schedule import ReduceMmaSplit

    f = site.f
    return call(ReduceMmaSplit(f.warps, f.f, cst(parts), cst(slots)), *site.call.args)  # type: ignore[attr-defined]


MMA_SPLIT_TAIL = make_rule(
    "mma-split-tail",
    "reduceMmaF64K8AheadSpread w (f, 0) → reduceMmaF64K8AheadSplit parts slots w (f, 0)   (the "
    "DMMA tile loop's last partial wave of `slots` tiles split along K into `parts`, partial sums "
    "added in order)",
    "issue 15 (DGEMM 1024: 128 tiles for 132 multiprocessors)", _mma_choices, _mma_build,
    lowering=True)

SCHEDULE_RULES: tuple[Rule, ...] = (MM_SPLIT_TAIL, MMA_SPLIT_TAIL)


def sgemm_schedule_derivation(m: int, n: int, k: int, tm: int, tn: int, tk: int, rm: int, rn: int,
                              stages: int, parts: int, slots: int, bound: int = 0) -> Any:
    """The replayable derivation of FP32 C = A·B from the bundled `mm`: mm-tiles-async(tm, tn,
    tk, rm, rn, stages), then mm-split-tail(parts, slots, bound)."""
    from liftkit.programs.apps import mm
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, MM_TILES_ASYNC
    from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
    from liftkit.rewrite.strategies import rule, seq, topdown

    if m % tm or n % tn or k % tk or stages < 2:
        raise ValueError(f"sgemm {m}x{n}x{k}: tiles {tm}x{tn}x{tk} must divide the sizes, and the "
                         f"split loop needs cp.async stages >= 2 (got {stages})")
    rules = {**CUDA_RULES_BY_NAME, MM_LOCAL_TILES.name: MM_LOCAL_TILES,
             MM_TILES_ASYNC.name: MM_TILES_ASYNC, MM_SPLIT_TAIL.name: MM_SPLIT_TAIL}
    step = seq(topdown(rule(MM_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages)),
               topdown(rule(MM_SPLIT_TAIL, parts=parts, slots=slots, bound=bound)))
    return step.derive(mm(), rules=rules,
                       name=f"sgemm-{tm}x{tn}x{tk}-{rm}x{rn}-s{stages}-t{parts}@{slots}"
                       + (f"b{bound}" if bound else ""))
