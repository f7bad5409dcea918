"""Run 2's starting profile: run 1's H200 profile less what run 2 measures again with batch
timing (`liftkit blas tune --timing batch`): every GEMV and transpose entry, and the GEMMs'
large class (1024³: kernels of 50-250 us, where one launch between two events also timed the
host's launch) with its follow-ups (guarded forms, split plans, the complex plans' real
kernels); the huge class (4096³, runs of 2.7 ms and more: batch timing times them alike) stays.

    python3 prune.py RUN1_PROFILE OUT_PROFILE
"""

from __future__ import annotations

import sys

from liftkit.blas.profile import Profile


def again(op: str, cls: str) -> bool:
    return op in ("gemv", "transpose") or (op == "mm" and cls == "large")


def main(src: str, dst: str) -> None:
    prof = Profile.load(src)
    before = len(prof.entries)
    prof.entries = [e for e in prof.entries if not again(e.kind.op, e.size_class)]
    for key in ("edges", "splits"):  # follow-ups noted per "kind|class"
        notes = prof.notes.get(key, {})
        for k in [k for k in notes if again(k.split("/")[0], k.split("|")[1])]:
            del notes[k]
    prof.notes["failed"] = [f for f in prof.notes.get("failed", [])
                            if not again(f.split("/")[0], f.split("|")[1])]
    prof.save(dst)
    print(f"{src}: {before} entries, {len(prof.entries)} kept for run 2 -> {dst}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
