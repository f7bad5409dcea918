"""The H200 CUDA profile's classes this refresh re-tunes (results/issue15/h200-26b), and the two
steps around the device run:

    python3 prune.py prune SHIPPED OUT     # SHIPPED less those classes -> OUT (the run's start)
    python3 prune.py merge SHIPPED TUNED   # SHIPPED (as it is now) less those classes, plus
                                           # TUNED's entries and notes of them -> SHIPPED

Re-tuned: DGEMM NN and TN in every class the profile has (1024³, 4096³) with their guarded
forms and split plans; GEMV float32/float64 N and T; the float32/float64 transposes; the odd-size
follow-ups (split plans, balanced guarded tiles) of SGEMM NN and CGEMM NN at 1023×1025×999,
whose class variants stay. Everything else is kept as it is in SHIPPED at merge time (another
helper may have edited it since the run started).
"""

from __future__ import annotations

import sys

from liftkit.blas.profile import Profile

DGEMM = ("mm/float64/NN", "mm/float64/TN")
WHOLE = (*DGEMM, "gemv/float32/N", "gemv/float32/T", "gemv/float64/N", "gemv/float64/T",
         "transpose/float32/-", "transpose/float64/-")
FOLLOWUPS = ("mm/float32/NN|large", "mm/complex64/NN|large")  # split sizes 1023×1025×999


def retuned_entry(kind: str, cls: str, via: str) -> bool:
    """Whether an entry (kind as `str(Kind)`) belongs to what this refresh re-tunes."""
    return kind in WHOLE or (f"{kind}|{cls}" in FOLLOWUPS and via in ("split", "here"))


def retuned_key(key: str, note: str) -> bool:
    """Whether a `notes[note]` key ("kind|class" or "kind|class|variant") is re-tuned here."""
    kind, cls = key.split("|")[:2]
    return kind in WHOLE or (note in ("splits", "failed") and f"{kind}|{cls}" in FOLLOWUPS)


def prune(prof: Profile) -> Profile:
    prof.entries = [e for e in prof.entries
                    if not retuned_entry(str(e.kind), e.size_class, e.via)]
    for note in ("edges", "splits"):
        got = prof.notes.get(note, {})
        for key in [k for k in got if retuned_key(k, note)]:
            del got[key]
    prof.notes["failed"] = [f for f in prof.notes.get("failed", [])
                            if not retuned_key(f, "failed")]
    return prof


def merge(shipped: Profile, tuned: Profile) -> Profile:
    out = prune(shipped)
    out.add([e for e in tuned.entries if retuned_entry(str(e.kind), e.size_class, e.via)])
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
