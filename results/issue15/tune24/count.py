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
    failed = len(n.get("failed", []))
    print(f"{path}: {len(p['entries']) - won + failed + trials} measurements = "
          f"{len(p['entries'])} entries ({won} guarded) + {failed} failed + {trials} guarded/padded "
          f"trials; "
          f"{len(edges)} classes' guarded forms, tuning seconds "
          f"{n.get('tuning_seconds')}, peaks {'yes' if p.get('peaks') else 'no'}, queues "
          f"{'yes' if 'queues' in n else 'no'}")
    for f in n.get("failed", []):
        print(f"  failed: {f}")
