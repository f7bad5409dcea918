"""Measurements of a tuning log (`liftkit blas tune --no-progress`: a line per trial): per
operation and size class the class's variants and the follow-ups (trials at other sizes: the
choice padded, guarded forms, split plans, the complex plans' real kernels), failures apart.

    python3 count.py tune.log
"""

from __future__ import annotations

import re
import sys
from collections import Counter

TRIAL = re.compile(r"^\s*[\d.]+ s  (\S+) (\w+) (.*?): (.*) \([\d.]+ s\)$")


def main(path: str) -> None:
    variants: Counter[str] = Counter()
    more: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        m = TRIAL.match(line.rstrip("\n"))
        if not m:
            continue
        kind, cls, what, got = m.groups()
        key = f"{kind.split('/')[0]} {cls}"
        (more if " at " in what or "real plan" in what else variants)[key] += 1
        if not re.match(r"[\d.]+ (GFLOP/s|GB/s)$", got):
            failed[key] += 1
    print(f"{'class':18s} {'variants':>8s} {'follow-ups':>10s} {'failed':>6s}")
    for key in sorted(set(variants) | set(more)):
        print(f"{key:18s} {variants[key]:8d} {more[key]:10d} {failed[key]:6d}")
    print(f"{'total':18s} {sum(variants.values()):8d} {sum(more.values()):10d} "
          f"{sum(failed.values()):6d}")


if __name__ == "__main__":
    main(sys.argv[1])
