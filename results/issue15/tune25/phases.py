"""Where a tuning run's time went, from its log (`liftkit blas tune --no-progress`: a line per
trial, `  <seconds since start> s  <kind> <class> <variant>[ padded][ at MxNxK]: <rate> (<wall> s)`):
per kind and class, the variants' trials and the follow-ups' (padded, guarded, split: the lines
with " at "), when the class ended and how long since the previous one ended; the peaks' and
queues' lines as the tuner printed them.

    python results/issue15/tune25/phases.py tune.log
"""

from __future__ import annotations

import re
import sys

TRIAL = re.compile(r"^\s+([0-9.]+) s  (\S+) (\S+) (.*?): (.*) \(([0-9.]+) s\)$")


def main(path: str) -> int:
    rows: dict[tuple[str, str], list[float]] = {}  # (kind, class): [variants, follow-ups, end]
    errors = 0
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("  peak rates:") or line.startswith("  queues:"):
            print(line.rstrip())
        m = TRIAL.match(line)
        if not m:
            continue
        at, kind, cls, what, rate = float(m[1]), m[2], m[3], m[4], m[5]
        r = rows.setdefault((kind, cls), [0, 0, 0.0])
        r[1 if " at " in what else 0] += 1
        r[2] = max(r[2], at)
        errors += "GFLOP/s" not in rate and "GB/s" not in rate
    prev = 0.0  # the first class's time includes the peaks, the queues and the first builds
    print(f"{'kind':15s} {'class':7s} {'variants':>8s} {'follow-ups':>10s} {'ends at s':>9s} "
          f"{'took s':>7s}")
    for (kind, cls), (v, f, end) in rows.items():
        print(f"{kind:15s} {cls:7s} {v:8d} {f:10d} {end:9.1f} {end - prev:7.1f}")
        prev = end
    total = sum(int(v + f) for v, f, _ in rows.values())
    print(f"{total} trials in the log ({errors} without a rate: failed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
