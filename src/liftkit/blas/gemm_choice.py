"""Which of the device profile's entries a GEMM runs at its sizes: the guarded forms measured for
the sizes' class (`profiled_edge`), the entries measured at a call's very sizes
(`measured_here`) and the real kernel of a complex `real` plan (`real_choice`). blas/gemm.py
plans the calls with them (`mm_kernel`, `plan_gemm`) and re-exports these names."""

from __future__ import annotations

import math
from typing import Mapping, Optional

from liftkit.blas.codelets import CodeletError, Kind, Variant, multiples, padded_sizes
from liftkit.blas.profile import EDGE_CODELETS, Entry, size_class
from liftkit.blas.session import Session

REAL_OF = {"complex64": "float32", "complex128": "float64"}


def _element_wise(v: Variant) -> bool:
    """A guarded form whose tiles are copied element by element (FFMA `elems`, DMMA without
    `lines`): it takes any sizes, and is slower than the vector form where that fits."""
    return bool(v.kw.get("elems")) or (v.codelet == "edge-mma" and not v.kw.get("lines"))


def _distance(a: Mapping[str, int], b: Mapping[str, int]) -> float:
    """How far apart two GEMM shapes are: the sum of |log(a_d / b_d)| over M, N, K."""
    return sum(abs(math.log(max(a.get(d, 1), 1) / max(b.get(d, 1), 1))) for d in "MNK")


def profiled_edge(session: Session, kind: Kind, sizes: dict[str, int]) -> Optional[Variant]:
    """The device profile's guarded form (`edge-*` entries, measured at sizes off the tiles)
    for these sizes' class: the fastest measured at these very sizes (also one whose vectors
    need the operands padded: SGEMM 1023×1025×999's float4 form on operands padded by pad2d),
    else one that needs no padding at them: forms copying whole vectors before
    those copying elements, then the one measured at the shape nearest these sizes (a guarded
    kernel's speed turns on how its tile grid fills the GPU: SGEMM 1000³ and CGEMM 1000³'s real
    1000×2000×2000 were fastest on different tilings), then the fastest; None where none fits."""
    prof = getattr(session, "profile", None)
    if prof is None:
        return None
    # the fastest measured here, padded to its vectors or not (its pad2d/crop2d copies timed
    # with it); entries via "here" serve these sizes alone, not their class (a grid split to
    # fill the GPU at them: SGEMM 1023×1025×999 on 256×32 tiles in 3 parts, odd25b)
    here = prof.at_sizes(kind, sizes) + prof.at_sizes(kind, sizes, "here")
    for e in sorted(here, key=lambda e: -e.rate):
        if e.variant.codelet in EDGE_CODELETS:
            return e.variant
    ranked = prof.guarded(kind, size_class(kind.op, sizes))  # (fastest first)
    for e in sorted(ranked, key=lambda e: (_element_wise(e.variant),
                                           round(_distance(e.sizes, sizes), 6))):
        try:
            need = multiples(kind, e.variant)
        except (CodeletError, ValueError):  # a codelet this liftkit does not know
            continue
        if padded_sizes(sizes, need) == sizes:
            return e.variant
    return None


# what a call's very sizes may hold besides its class's variants, each timed as a call runs it:
# guarded forms ("", and "here": for those sizes alone), complex kernels on padded copies
# ("padded"), the split plan ("split"), the `real` plan on a real kernel ("real")
HERE_VIAS = ("", "here", "padded", "split", "real")


def measured_here(session: Session, kind: Kind, sizes: dict[str, int]) -> list[Entry]:
    """The device profile's entries measured at these very sizes that a call of `kind` runs as
    timed, fastest first, those faster than every class variant measured there (which
    `Session.choose` then runs): `plan_gemm` runs the fastest. Guarded forms (also on operands
    padded to their vectors), the split plan where it applies, complex kernels padded, the
    `real` plan's real kernels; a conjugating layout also from its plain one's entries.
    (Until this rule, results/issue15/h200-26: SGEMM 1023×1025×999 on the H200 ran its split
    entry, 21.2 TFLOP/s and 0.73x cuBLAS per call, not the guarded tiles measured at 25.1.)"""
    from liftkit.blas.split import splittable

    prof = getattr(session, "profile", None)
    if prof is None:
        return []
    plain = kind.layout.replace("R", "N").replace("C", "T")
    kinds, want = {kind, Kind(kind.op, kind.dtype, plain)}, dict(sizes)
    own, found = 0.0, []
    for e in prof.entries:
        if e.kind not in kinds or e.via not in HERE_VIAS or dict(e.sizes) != want:
            continue
        v = e.variant
        if e.via == "" and v.codelet not in EDGE_CODELETS:
            own = max(own, e.rate)  # the class's variants here
        elif e.via == "split":
            if v.codelet == "split" and splittable(kind, sizes, v.kw.get("w", 64)):
                found.append(e)
        else:
            try:  # (a codelet this liftkit does not know: skipped)
                multiples(Kind("mm", REAL_OF[kind.dtype], "NN") if e.via == "real" else e.kind, v)
            except (CodeletError, ValueError, KeyError):
                continue
            found.append(e)
    return sorted((e for e in found if e.rate > own), key=lambda e: -e.rate)


def real_choice(session: Session, kind: Kind, sizes: dict[str, int], want: dict[str, int]
                ) -> Optional[Variant]:
    """The real kernel the profile measured for this complex kind's `real` plan (entries of the
    complex dtype with `via` "real", the class of the complex sizes; a conjugating layout also
    from its plain one, every layout from NN's, which is what tuning measures: the real product
    is the same NN GEMM): the fastest measured at these very sizes (padded or not: CGEMM
    1023×1025×999's padded 64×64 tiles, results/issue15/odd24), else one that needs no
    padding at the real product's sizes `want`; None: the real
    dtype's own choice runs (the real product M×2N×2K often falls in another class of its
    dtype than the complex GEMM does: CGEMM 4096 is a giant SGEMM)."""
    prof = getattr(session, "profile", None)
    if prof is None:
        return None
    rk = Kind("mm", REAL_OF[kind.dtype], "NN")

    def mult(_: Kind, v: Variant) -> dict[str, int]:
        return multiples(rk, v)

    plain = kind.layout.replace("R", "N").replace("C", "T")
    kinds = tuple(dict.fromkeys((kind, Kind("mm", kind.dtype, plain), Kind("mm", kind.dtype, "NN"))))
    for k in kinds:  # measured at these very sizes: the fastest, padded or not
        exact = prof.at_sizes(k, sizes, "real")
        if exact:
            return exact[0].variant
    for k in kinds:
        v = prof.choose(k, sizes, mult, via="real", at=want)
        if v is not None and padded_sizes(want, multiples(rk, v)) == want:
            return v
    return None
