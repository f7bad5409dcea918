"""Seeded tuning (`liftkit blas tune --seed PROFILE`): another device's profile narrows the
exploration of this one. Tuning stays a measurement on this device — the seed only says which
derivations are worth measuring first: for each (kind, size class) the seed has measured, its
`top` fastest class variants are derived, checked and timed here at this device's
representative size (never copied: a seed variant this device cannot build or run simply fails
like any trial), and the tuner's follow-ups (guarded forms, the complex `real` plan's kernels,
the split plans) then start from what this device measured. A (kind, class) the seed has no
entries for is explored in full, as without a seed.

Why: a full GPU tune of every op × dtype × layout measures some 3,500 variants or more (3,545
on an H100/H200's limits when results/issue15/h200-26 counted them; the spaces have grown since), while a sibling device's profile already ranks them — the H200 is the
H100's GH100 with more memory bandwidth (results/issue15/h200-26).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from liftkit.blas.codelets import Kind, Variant
from liftkit.blas.profile import SHIPPED, Profile, ProfileError, profile_dir

# the seed's fastest class variants re-measured per (kind, class): its winner and the runners-up
# whose lead on the seed's device was small enough for another card to reverse it
SEED_TOP = 4


def seeded_variants(seed: Profile, kind: Kind, cls: str, top: int = SEED_TOP
                    ) -> Optional[list[Variant]]:
    """The seed's `top` fastest distinct class variants of (kind, class) (guarded forms and
    plans through another derivation apart: the tuner's follow-ups measure those), best first;
    None where the seed has none (the class is then explored in full)."""
    out: list[Variant] = []
    for e in seed.ranked(kind, cls):
        if e.variant not in out:
            out.append(e.variant)
        if len(out) == top:
            break
    return out or None


def seeded_space(seed: Optional[Profile], kind: Kind, cls: str, space: Sequence[Variant],
                 top: int = SEED_TOP) -> list[Variant]:
    """What a tuning run measures for (kind, class): the seed's top variants, else `space`."""
    picked = seeded_variants(seed, kind, cls, top) if seed is not None else None
    return list(space) if picked is None else picked


def find_seed(spec: str, backend: str, device_kind: str,
              directories: Optional[Sequence[Path]] = None) -> Profile:
    """The seed profile `spec` names: a profile file, or a piece of a stored profile's device
    label or fingerprint (the user's profiles, then the shipped ones) of this backend and
    device kind. One ProfileError saying what matched where none or several do."""
    p = Path(spec)
    if p.suffix == ".json" or p.is_file():
        seed = Profile.load(p)
    else:
        dirs = [Path(d) for d in (directories if directories is not None
                                  else (profile_dir(), SHIPPED))]
        found: dict[str, Profile] = {}
        for f in (f for d in dirs if d.is_dir() for f in sorted(d.glob("profile-*.json"))):
            try:
                prof = Profile.load(f)
            except ProfileError:
                continue
            text = f"{prof.label} {prof.fingerprint}".lower()
            if spec.lower() in text and backend_of(prof) == backend \
                    and prof.device_type == device_kind:
                found.setdefault(prof.fingerprint, prof)  # the user's copy before the shipped
        if len(found) != 1:
            names = ", ".join(sorted(pr.label for pr in found.values())) or "none"
            raise ProfileError(f"--seed {spec}: {len(found)} stored {backend} {device_kind} "
                               f"profiles match ({names}); name one profile or its file")
        seed = next(iter(found.values()))
    if seed.device_type != device_kind or backend_of(seed) != backend:
        raise ProfileError(f"--seed: {seed.label} is a {backend_of(seed)} {seed.device_type} "
                           f"profile; this run tunes a {backend} {device_kind} device")
    return seed


def backend_of(prof: Profile) -> str:
    """"cuda" for a CUDA device's profile (fingerprint `cuda|...`), else "opencl"."""
    return "cuda" if prof.fingerprint.startswith("cuda|") else "opencl"
