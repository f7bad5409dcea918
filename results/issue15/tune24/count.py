"""What a (partly) tuned profile holds: entries, failures, guarded-form notes, tuning seconds,
peaks and queue notes (issue 15, session 24)."""

import json
import sys

for path in sys.argv[1:]:
    p = json.load(open(path))
    n = p["notes"]
    edges = n.get("edges", {})
    trials = sum(len(e.get("guarded", {})) + (e.get("padded") is not None) for e in edges.values())
    won = sum(len(e.get("entries", [])) for e in edges.values())
    splits = n.get("splits", {})  # the split plan beside the GEMM's own plan (odd sizes)
    trials += sum((e.get("plan") is not None) + (e.get("split") is not None)
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
