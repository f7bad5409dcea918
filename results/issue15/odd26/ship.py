"""A profile entry for the shipped H100 profile from an odd26 run: odd25b's ship.py (the fastest
`edge-tiles-async` row at 1023×1025×999, checked against cuBLAS on both paths and faster per call
than the plan without entries by its MARGIN, becomes the entry at those very sizes, `via`
"here"; the session-25 entry is one of the rows, so a rotated form ships only where it beat it
too), with this run's note (key odd26).

    python3 results/issue15/odd26/ship.py RUN/odd26.json [PROFILE.json]
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("ship25b", os.path.join(HERE, "..", "odd25b",
                                                                       "ship.py"))
ship25b = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(ship25b)  # type: ignore[union-attr]


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else ship25b.PROFILE
    with open(path) as f:
        old = json.load(f)["notes"].get("odd25b")  # the session-25 note stays as shipped
    ship25b.main([argv[0], path])  # the entry (and odd25b's note, put back below)
    rows = json.load(open(argv[0]))
    with open(path) as f:
        prof = json.load(f)
    won = ship25b.winner(rows)
    cards = sorted({r.get("card", "?") for r in rows})
    prof["notes"]["odd26"] = (
        "float32 NN at 1023x1025x999 on guarded tiles with A's rows rotated or swizzled in "
        "shared memory (edge-tiles-async rot 1/2: 256x32, 128x64, 128x32 split along K, elems) "
        "beside the session-25 entry, the plan without entries and cuBLAS, 5 alternating "
        "rounds per call, measured on " + ", ".join(cards) + " (results/issue15/odd26): "
        + (f"entry {won['label']} ({won['ratio']:.3f}x, the plan without entries "
           f"{ship25b.auto_ratio(rows):.3f}x)" if won else "no entry"))
    if old is None:
        prof["notes"].pop("odd25b", None)
    else:
        prof["notes"]["odd25b"] = old
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
