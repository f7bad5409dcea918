"""Issue 16's second target: from the high-level program alone, each search reaches >= 0.95x the
best derivation the tuning database knew (results/issue4/tuning.sqlite, H100) within its time.

    python results/issue16/from_scratch.py --out DIR [--seconds 55] [--workers 16]

Runs `liftkit explore` from a fresh database per program (NVIDIA OpenCL, --rules gpu), then
prints program, best known ms, best found ms, ratio (known / found), time to the best, candidates.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CASES = [("scal", "N=134217728"), ("asum", "N=134217728"), ("dot", "N=134217728"),
         ("gemv", "M=16384 N=8192"), ("gemv", "M=4096 N=4096"), ("blackscholes", "N=4194304")]
KNOWN = Path(__file__).resolve().parents[1] / "issue4" / "tuning.sqlite"


def best(db: Path, name: str, sizes: dict) -> tuple[float, float, int]:
    """(best ms, seconds from the first candidate to the best, candidates) for one program."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = [r for r in c.execute(
        "select c.time, c.created, c.validity, k.sizes from candidates c join keys k on c.key = k.key "
        "where k.name = ?", (name,)) if json.loads(r[3]) == sizes]
    if not rows:
        return float("nan"), float("nan"), 0
    start = min(r[1] for r in rows)
    ok = [r for r in rows if r[2] == "ok" and r[0] is not None]
    if not ok:
        return float("nan"), float("nan"), len(rows)
    b = min(ok, key=lambda r: r[0])
    return b[0] * 1e3, b[1] - start, len(rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=55)
    ap.add_argument("--workers", type=int, default=16)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, size in CASES:
        sizes = {k: int(v) for k, v in (s.split("=") for s in size.split())}
        db = args.out / f"{name}-{'x'.join(map(str, sizes.values()))}.sqlite"
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "liftkit", "explore", name, "--device", "gpu", "--backend", "opencl",
               "--rules", "gpu", "--choices", "12", "--size", *size.split(), "--budget", "400",
               "--seconds", str(args.seconds), "--workers", str(args.workers), "--db", str(db), "--quiet",
               "--out", str(args.out / f"{name}-best")]
        with open(args.out / f"{db.stem}.log", "w") as log:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
        wall = time.perf_counter() - t0
        found, to_best, n = best(db, name, sizes)
        known, _, _ = best(KNOWN, name, sizes)
        rows.append((name, size, known, found, known / found, to_best, n, wall))
    print("| program | sizes | best known ms | found ms | known/found | time to best s | candidates | search s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.4f} | {r[3]:.4f} | {r[4]:.2f}x | {r[5]:.1f} | {r[6]} | {r[7]:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
