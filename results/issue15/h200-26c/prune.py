"""The H200 CUDA profile's classes this refresh re-tunes (results/issue15/h200-26c), and the two
steps around the device run:

    python3 prune.py prune SHIPPED OUT     # SHIPPED less those classes -> OUT (the run's start)
    python3 prune.py merge SHIPPED TUNED   # SHIPPED (as it is now) less those classes, plus
                                           # TUNED's entries and notes of them -> SHIPPED

Re-tuned whole: GEMV float32/float64 N and T (the H100's `p=1` and `h=1` forms, gemv26b/c), ZGEMM
NN/NT/TN 4096³ (zmma, the real plan on mma lines=3: zgemm26). Re-tuned follow-ups only (the class
variants stay): the guarded forms and split-size plans of ZGEMM 1024³ (edge-zmma, odd26b) and
CGEMM 4096³ (swizzled guarded complex tiles at 4097×4095², oddc26). Everything else is kept as it
is in SHIPPED at merge time (h200-26b's prune.py with these classes).
"""

from __future__ import annotations

import sys

from liftkit.blas.profile import Profile

WHOLE = ("gemv/float32/N", "gemv/float32/T", "gemv/float64/N", "gemv/float64/T")
WHOLE_CLASSES = ("mm/complex128/NN|huge", "mm/complex128/NT|huge", "mm/complex128/TN|huge")
FOLLOWUPS = ("mm/complex128/NN|large", "mm/complex128/NT|large", "mm/complex128/TN|large",
             "mm/complex64/NN|huge", "mm/complex64/NT|huge", "mm/complex64/TN|huge")


def followup_variant(variant: str) -> bool:
    """Whether a variant is a guarded form or a split plan (what --edges measures)."""
    return variant.startswith(("edge-", "split"))


def retuned_entry(kind: str, cls: str, via: str, variant: str) -> bool:
    """Whether an entry (kind as `str(Kind)`) belongs to what this refresh re-tunes."""
    key = f"{kind}|{cls}"
    return kind in WHOLE or key in WHOLE_CLASSES or (
        key in FOLLOWUPS and (via in ("split", "here") or (not via and followup_variant(variant))))


def retuned_key(key: str, note: str) -> bool:
    """Whether a `notes[note]` key ("kind|class" or "kind|class|variant") is re-tuned here."""
    kind, cls = key.split("|")[:2]
    if kind in WHOLE or f"{kind}|{cls}" in WHOLE_CLASSES:
        return True
    if f"{kind}|{cls}" not in FOLLOWUPS:
        return False
    return note != "failed" or followup_variant(key.split("|", 2)[2])


def prune(prof: Profile) -> Profile:
    prof.entries = [e for e in prof.entries
                    if not retuned_entry(str(e.kind), e.size_class, e.via, str(e.variant))]
    for note in ("edges", "splits"):
        got = prof.notes.get(note, {})
        for key in [k for k in got if retuned_key(k, note)]:
            del got[key]
    prof.notes["failed"] = [f for f in prof.notes.get("failed", [])
                            if not retuned_key(f, "failed")]
    return prof


def merge(shipped: Profile, tuned: Profile) -> Profile:
    out = prune(shipped)
    out.add([e for e in tuned.entries
             if retuned_entry(str(e.kind), e.size_class, e.via, str(e.variant))])
    for note in ("edges", "splits"):
        got = tuned.notes.get(note, {})
        out.notes.setdefault(note, {}).update({k: v for k, v in got.items()
                                               if retuned_key(k, note)})
    out.notes["failed"] = sorted(set(out.notes.get("failed", [])) | {
        f for f in tuned.notes.get("failed", []) if retuned_key(f, "failed")})
    for note in ("seeded", "batch_timing"):  # the tuner's unions of classes
        if note in tuned.notes:
            out.notes[note] = tuned.notes[note]
    if "tuning_seconds" in tuned.notes:
        out.notes["tuning_seconds"] = tuned.notes["tuning_seconds"]
    return out


def main(action: str, a: str, b: str) -> None:
    if action == "prune":
        prof = Profile.load(a)
        before = len(prof.entries)
        prune(prof).save(b)
        print(f"{a}: {before} entries, {len(prof.entries)} kept -> {b}")
    elif action == "merge":
        shipped, tuned = Profile.load(a), Profile.load(b)
        before = len(shipped.entries)
        out = merge(shipped, tuned)
        out.save(a)
        print(f"{a}: {before} entries -> {len(out.entries)} ({b}'s re-tuned classes merged)")
    else:
        raise SystemExit(f"prune.py: unknown action {action!r} (prune or merge)")


if __name__ == "__main__":
    main(*sys.argv[1:4])
