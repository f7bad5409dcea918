"""What a tuning run measures after a GEMM class's variants (`liftkit.blas.tune`): the guarded
forms at an odd size against the class's choice run padded, the complex `real` plan on the real
dtype's best kernels, and the split plan beside the GEMM's own plan — each a `Task` whose
winner becomes a profile entry of its own kind (`Profile.guarded`, `via` "real", `via` "split").
The class sizes are tune.py's (imported where used: tune.py builds on this module).

Guarded forms (rules/mm_edges.py, `codelets.edge_forms`): those of the class's EDGE_TOP fastest
variants, timed at a size off every tile against the class's choice run padded (its operands
and product copied, as a call runs it); the faster ones become the profile's guarded entries
(`gemm.profiled_edge`). For complex tiles (ctiles-async, zmma) their guarded forms against the
`real` plan that the choice becomes there (`ctiles_edge_tasks`, `gemm.measured_here`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from liftkit.blas.codelets import Kind, Variant, padded_sizes
from liftkit.blas.gemm import REAL_OF
from liftkit.blas.profile import Profile, size_class
from liftkit.blas.session import Session

EDGE_TOP = 2
# the odd representative size: the class's n − 24, a multiple of 8 (float4, double2 and DMMA
# chunks fit, so the vector forms compete) but ≡ 40 mod 64, which no tile divides (1000 for
# 1024; results/issue15/odd23 measured the shipped guarded entries at 1000³ and 1999³)
EDGE_OFF = 24
# the complex `real` plan's own real kernel: the real dtype's REAL_TOP fastest variants in the
# class of the real product (M×2N×2K) and in the complex class, each timed as the whole plan
# (complex NN; the other layouts' plans look the NN entries up too, `gemm.real_choice`)
REAL_TOP = 2


@dataclass(frozen=True)
class Task:
    """One measurement of a tuning run: `variant` at `sizes`; mode "" the kernel alone, "plan"
    the kernel as a call runs it (padded copies where its tiles do not divide the sizes), "real"
    the complex kind's `real` plan on the real kernel `variant`."""

    variant: Variant
    sizes: dict[str, int]
    mode: str = ""

    @property
    def key(self) -> str:
        return f"{self.mode}:{self.variant}" if self.mode else str(self.variant)


def odd_sizes(kind: Kind, cls: str, device_kind: str) -> dict[str, int]:
    """The GEMM sizes a class's guarded forms are measured at (`EDGE_OFF`)."""
    from liftkit.blas.tune import SIZES

    n = max(8, SIZES[device_kind]["mm"][cls] - EDGE_OFF)
    return {"M": n, "N": n, "K": n}


def edge_tasks(prof: Profile, kind: Kind, cls: str, device_kind: str) -> list[Task]:
    """The padded plan of the class's choice, then the guarded forms of its EDGE_TOP fastest
    variants that fit the odd sizes with no padding (forms copying whole vectors first); none
    where the choice has no guarded form or its tiles divide the odd sizes."""
    from liftkit.blas.codelets import EDGE_FORMS, CodeletError, edge_forms, fit_choice, multiples

    ranked = prof.ranked(kind, cls)
    odd = odd_sizes(kind, cls, device_kind)
    if ranked and ranked[0].variant.codelet in ("ctiles-async", "zmma"):
        return ctiles_edge_tasks(kind, ranked, odd)
    if not ranked or not edge_forms(ranked[0].variant):
        return []
    try:  # the choice as the library runs it at these sizes (no grouped order that pads more)
        choice = fit_choice(kind, ranked[0].variant, odd)
        if choice.codelet not in EDGE_FORMS or padded_sizes(odd, multiples(kind, choice)) == odd:
            return []
    except (CodeletError, ValueError):
        return []
    forms: list[Variant] = []
    for e in ranked[:EDGE_TOP]:
        for v in edge_forms(e.variant):
            try:
                fits = padded_sizes(odd, multiples(kind, v)) == odd
            except (CodeletError, ValueError):  # this kind has no such guarded form
                continue
            if fits and v not in forms:
                forms.append(v)
    if not forms:
        return []
    forms.sort(key=lambda v: bool(v.kw.get("elems")) or (v.codelet == "edge-mma"
                                                         and not v.kw.get("lines")))
    return [Task(choice, odd, "plan")] + [Task(v, odd) for v in forms]


def ctiles_edge_tasks(kind: Kind, ranked: list, odd: dict[str, int]) -> list[Task]:
    """A complex class whose choice is complex tiles with no guarded form in the class's space
    (complex64's ctiles-async, complex128's zmma: off their tiles the library runs the `real`
    plan, `codelets.fit_choice`): that plan timed as a call at the odd sizes, then the guarded
    forms (`edge-ctiles-async`, `edge-zmma`) of the EDGE_TOP fastest such variants; those
    faster than the plan become entries at the odd sizes, which the library runs there
    (`gemm.measured_here`; on the H100 CGEMM 1000³ 0.85x cuBLAS against the real plan's 0.76x,
    results/issue15/oddc25; ZGEMM 1000³ 1.01x, results/issue15/odd26b)."""
    from liftkit.blas.codelets import CodeletError, multiples
    from liftkit.blas.mm_cedge import edge_ctiles
    from liftkit.blas.mm_zmma import edge_zmma

    guarded = {"ctiles-async": edge_ctiles, "zmma": edge_zmma}
    try:
        if padded_sizes(odd, multiples(kind, ranked[0].variant)) == odd:
            return []
    except (CodeletError, ValueError):
        return []
    forms = list(dict.fromkeys(guarded[e.variant.codelet](e.variant) for e in ranked[:EDGE_TOP]
                               if e.variant.codelet in guarded))
    return [Task(Variant.of("real"), odd, "plan")] + [Task(v, odd) for v in forms]


def real_tasks(prof: Profile, kind: Kind, cls: str, device_kind: str) -> list[Task]:
    """The real kernels a complex NN class's `real` plan is timed on (`REAL_TOP`): none before
    the plan itself was measured, nor for other kinds."""
    from liftkit.blas.codelets import CodeletError, multiples
    from liftkit.blas.tune import sizes_for

    if kind.op != "mm" or kind.dtype not in REAL_OF or kind.layout != "NN" \
            or Variant.of("real") not in prof.measured(kind, cls):
        return []
    sizes = sizes_for(kind, cls, device_kind)
    want = {"M": sizes["M"], "N": 2 * sizes["N"], "K": 2 * sizes["K"]}
    rk = Kind("mm", REAL_OF[kind.dtype], "NN")
    out: list[Variant] = []
    for c in dict.fromkeys((size_class("mm", want), cls)):
        for e in prof.ranked(rk, c)[:REAL_TOP]:
            try:
                fits = padded_sizes(want, multiples(rk, e.variant)) == want
            except (CodeletError, ValueError):
                continue
            if fits and e.variant not in out:
                out.append(e.variant)
    return [Task(v, sizes, "real") for v in out]


def split_sizes(kind: Kind, cls: str, device_kind: str) -> Optional[dict[str, int]]:
    """Where a class's split plan is measured (`liftkit.blas.split`): M = n − 1, N = n + 1,
    K = n − 25 for the class's n (1023×1025×999 at 1024: N one past the tiles, K off 8), None
    where those sizes fall in another class or the kind has no split plan."""
    from liftkit.blas.split import splittable
    from liftkit.blas.tune import SIZES

    n = SIZES[device_kind]["mm"][cls]
    sizes = {"M": n - 1, "N": n + 1, "K": max(1, n - 25)}
    if not splittable(kind, sizes) or size_class("mm", sizes) != cls:
        return None
    return sizes


def split_tasks(session: Session, prof: Profile, kind: Kind, cls: str,
                limits: Any = None) -> list[Task]:
    """The split plans at `split_sizes` (the edge GEMV the profile's, and a warp per row:
    gemv=1) beside the GEMM's own plan there (the kernel `gemm.mm_kernel` picks, timed as a
    call runs it: mode "split-base"), then the guarded tiles whose grid fills the GPU there
    (`balanced_tasks`, mode "here"); for complex64 NN the `real` plan at `fill_sizes` beside
    the guarded complex tiles whose grid fills the GPU (`fill_ctiles_tasks`); none where
    measured before (`notes["splits"]`). The fastest of the split plans and the balanced
    tiles becomes the one entry there (via "split" or "here": for those sizes alone), only
    where it beat the GEMM's own plan (a slower one would never run: `gemm.measured_here`)."""
    from liftkit.blas.gemm import mm_kernel
    from liftkit.blas.split import SPLIT_W

    sizes = split_sizes(kind, cls, session.device_kind)
    fill = fill_sizes(kind, cls, session.device_kind) if sizes is None else None
    if (sizes is None and fill is None) or f"{kind}|{cls}" in prof.notes.get("splits", {}):
        return []
    if fill is not None:  # complex64: no split plan; the real plan, then the complex tiles
        tiles = fill_ctiles_tasks(kind, fill, limits)
        return [Task(Variant.of("real"), fill, "split-base"), *tiles] if tiles else []
    assert sizes is not None
    try:
        base = mm_kernel(session, kind, sizes).variant
    except Exception:  # noqa: BLE001 - no kernel for these sizes: nothing to compare with
        return []
    return [Task(base, sizes, "split-base"), Task(Variant.of("split", w=SPLIT_W), sizes, "split"),
            Task(Variant.of("split", w=SPLIT_W, gemv=1), sizes, "split"),
            *balanced_tasks(kind, sizes, limits)]


# guarded FFMA tilings tried where their grid, split along K, gives every multiprocessor the
# same number of resident parts (results/issue15/odd25b: SGEMM 1023×1025×999 on the H100/H200,
# 256×32×16 tiles — 132, one per multiprocessor — in 3 parts 0.753x cuBLAS per call, in 4
# parts 0.725x, against the 136 tiles of 128×64's 0.711x); with A's rows swizzled (rot=2, 8×8
# and 16×4 blocks) 0.803x / 0.805x in 3 parts (results/issue15/odd26, H100)
BALANCED_TILES = ((256, 32, 16, 8, 8, 2, 0), (256, 32, 16, 8, 8, 2, 2),
                  (256, 32, 16, 16, 4, 2, 2))  # tm, tn, tk, rm, rn, stages, rot


def balanced_tasks(kind: Kind, sizes: dict[str, int], limits: Any) -> list[Task]:
    """`edge-tiles-async` of BALANCED_TILES (A's rows swizzled or not) split along K where
    tiles × parts equals the slots
    that the register bound fixes on this GPU (`occupancy.bounded_slots`; (parts, slots,
    bound) among mm-split-tail's SCHEDULES), element copies where 4 divides not N and K;
    none without the GPU's multiprocessor limits or for other kinds."""
    from liftkit.backends.cuda.occupancy import bounded_slots
    from liftkit.blas.mm_codelets import tiles_async_footprint
    from liftkit.rewrite.rules.mm_schedule import SCHEDULES

    if limits is None or kind != Kind("mm", "float32", "NN"):
        return []
    elems = {"elems": 1} if sizes["N"] % 4 or sizes["K"] % 4 else {}
    out = []
    for tm, tn, tk, rm, rn, stages, rot in BALANCED_TILES:
        tiles = -(-sizes["M"] // tm) * -(-sizes["N"] // tn)
        threads, shared = tiles_async_footprint(tm, tn, tk, rm, rn, stages)
        for parts, slots, bound in SCHEDULES:
            if bound and parts > 1 and tiles * parts == slots \
                    and bounded_slots(limits, threads, shared, bound) == slots:
                out.append(Task(Variant.of("edge-tiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn,
                                           stages=stages, **elems, **({"rot": rot} if rot else {}),
                                           split=parts, slots=slots, bound=bound), sizes, "here"))
    return out


# guarded complex tilings, A's rows swizzled (rot=3), tried at a complex64 NN class's split sizes
# where their grid is one wave of as many blocks on every multiprocessor (results/issue15/
# oddc26, CGEMM 1023×1025×999 on the H100: 256×32 8×4 — 132 tiles, one per multiprocessor —
# 0.842x cuBLAS per call, 128×32 4×4 three stages deep — 264, two each — 0.802x, the real plan
# 0.744x in session 25)
FILL_CTILES = ((256, 32, 16, 8, 4, 2), (128, 32, 16, 4, 4, 3))  # tm, tn, tk, rm, rn, stages


def fill_sizes(kind: Kind, cls: str, device_kind: str) -> Optional[dict[str, int]]:
    """`split_sizes`' shape (M = n − 1, N = n + 1, K = n − 25 for the class's n) for complex64
    NN, which has no split plan but guarded complex tiles (`fill_ctiles_tasks`); None for other
    kinds or where those sizes fall in another class."""
    from liftkit.blas.tune import SIZES

    if kind != Kind("mm", "complex64", "NN"):
        return None
    n = SIZES[device_kind]["mm"][cls]
    sizes = {"M": n - 1, "N": n + 1, "K": max(1, n - 25)}
    return sizes if size_class("mm", sizes) == cls else None


def fill_ctiles_tasks(kind: Kind, sizes: dict[str, int], limits: Any) -> list[Task]:
    """`edge-ctiles-async` of FILL_CTILES with rot=3 whose tile grid at `sizes` is a multiple of
    the multiprocessors, no more blocks on each than its shared memory and threads hold (one
    wave, every multiprocessor alike), timed as calls (mode "here"); none without the GPU's
    multiprocessor limits or for other kinds."""
    from liftkit.backends.cuda.occupancy import resident_blocks
    from liftkit.blas.mm_codelets import tiles_async_footprint

    if limits is None or kind != Kind("mm", "complex64", "NN"):
        return []
    out = []
    for tm, tn, tk, rm, rn, stages in FILL_CTILES:
        tiles = -(-sizes["M"] // tm) * -(-sizes["N"] // tn)
        threads, shared = tiles_async_footprint(tm, tn, tk, rm, rn, stages, size=8)
        per_sm, rest = divmod(tiles, limits.multiprocessors)
        if not rest and 1 <= per_sm <= resident_blocks(limits, threads, 0, shared):
            out.append(Task(Variant.of("edge-ctiles-async", tm=tm, tn=tn, tk=tk, rm=rm, rn=rn,
                                       stages=stages, rot=3), sizes, "here"))
    return out


def followups(prof: Profile, kind: Kind, cls: str, device_kind: str, edges: bool
              ) -> tuple[list[Task], bool]:
    """(what is left to measure after the class's variants, whether guarded forms are among
    them): the guarded forms where this (kind, class) has none measured yet (`notes["edges"]`),
    the complex plan's real kernels not measured yet."""
    out: list[Task] = []
    edge = edges and kind.op == "mm" and f"{kind}|{cls}" not in prof.notes.get("edges", {})
    if edge:
        out += edge_tasks(prof, kind, cls, device_kind)
    done = prof.measured(kind, cls, via="real")
    out += [t for t in real_tasks(prof, kind, cls, device_kind) if t.variant not in done]
    return out, edge
