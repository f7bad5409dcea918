"""What a (partly) tuned profile holds: entries, failures, guarded-form notes, tuning seconds,
peaks and queue notes (issue 15, session 24; session 25: every split form the note records).

    python results/issue15/tune24/count.py PROFILE.json ...
"""

import json
import sys
from typing import Any


def _split_trials(split: Any) -> int:
    """The split plans a class's note records as timed: {variant: rate} since the tuner
    times several forms (`followups.SPLIT_FORMS`: 2, then 3 with side=1); one rate in session
    24's profiles (one form); None where none was timed."""
    if isinstance(split, dict):
        return len(split)
    return int(split is not None)


for path in sys.argv[1:]:
    p = json.load(open(path))
    n = p["notes"]
    edges = n.get("edges", {})
    trials = sum(len(e.get("guarded", {})) + (e.get("padded") is not None) for e in edges.values())
    won = sum(len(e.get("entries", [])) for e in edges.values())
    splits = n.get("splits", {})  # the split plans beside the GEMM's own plan (odd sizes)
    trials += sum((e.get("plan") is not None) + _split_trials(e.get("split"))
                  for e in splits.values())
    won += sum(bool(e.get("entry")) for e in splits.values())
    failed = len(n.get("failed", []))
    print(f"{path}: {len(p['entries']) - won + failed + trials} measurements = "
          f"{len(p['entries'])} entries ({won} guarded or split) + {failed} failed + {trials} "
          f"guarded/padded/split trials; "
          f"{len(edges)} classes' guarded forms, {len(splits)} split plans, tuning seconds "
          f"{n.get('tuning_seconds')}, peaks {'yes' if p.get('peaks') else 'no'}, queues "
          f"{'yes' if 'queues' in n else 'no'}")
    for f in n.get("failed", []):
        print(f"  failed: {f}")
