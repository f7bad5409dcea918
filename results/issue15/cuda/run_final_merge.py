"""The H100 profile after run_final.sh: the shipped CUDA profile of the device with every
(kind, size class) that a new profile of the run measured replaced by the new entries.

    python3 results/issue15/cuda/run_final_merge.py OUT_DIR NEW.json [NEW.json ...]

Writes OUT_DIR/<the device's profile file name> (where LIFTKIT_BLAS_PROFILES=OUT_DIR finds it)
and prints what it replaced.
"""

from __future__ import annotations

import sys
from pathlib import Path

from liftkit.blas.profile import SHIPPED, Profile, file_name, find_profile_any_driver


def main(argv: list[str]) -> int:
    out_dir, news = Path(argv[0]), [Profile.load(p) for p in argv[1:] if Path(p).is_file()]
    if not news:
        print("merge: no new profile")
        return 1
    fp = news[0].fingerprint
    base = find_profile_any_driver(fp, [SHIPPED]) or Profile(fp, news[0].label, "gpu")
    base.fingerprint, base.label = fp, news[0].label
    for new in news:
        keys = {(e.kind, e.size_class) for e in new.entries}
        dropped = [e for e in base.entries if (e.kind, e.size_class) in keys]
        base.entries = [e for e in base.entries if (e.kind, e.size_class) not in keys] + new.entries
        print(f"merge: {len(new.entries)} entries for {len(keys)} (kind, class) pairs replace "
              f"{len(dropped)}")
        secs = new.notes.get("tuning_seconds", {})
        base.notes.setdefault("run_final", []).append(
            {"kinds": sorted({str(k) for k, _ in keys}), "tuning_seconds": secs})
    target = base.save(out_dir / file_name(fp))
    print(f"merge: {len(base.entries)} entries -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
