"""Candidates per second of `liftkit explore` with one host-stage worker against many (issue 16).

    python benchmarks/explore_rate.py --out DIR --device gpu --backend opencl \\
        --case gemv:N=4096,M=4096:16 --case mm:M=1024,N=1024,K=1024:12 --workers 1 16

For each case (program:sizes:budget) and each --workers value, runs `liftkit explore` with the
same seed and settings (a fresh tuning database per run, so no run finds another's results),
writes each run's --report under DIR/NAME-wN/, and prints a table: candidates, seconds,
candidates per second, the rate against the first --workers value, the best time, and how many
leading candidates (program texts, in search order) the run shares with the first run — the
same seed draws the same candidates until real timings rank two choices differently.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def _run(case: str, workers: int, args: argparse.Namespace, out: Path) -> dict:
    name, sizes, budget = case.split(":")
    tag = f"{name}-w{workers}"
    report = out / tag
    db = out / f"{tag}.sqlite"
    cmd = [sys.executable, "-m", "liftkit.cli.explore", name, "--device", args.device,
           "--backend", args.backend, "--rules", args.rules, "--budget", budget,
           "--seed", str(args.seed), "--workers", str(workers), "--db", str(db),
           "--report", str(report), "--out", str(out / f"{tag}-best"), "--quiet", "--no-bound",
           "--size", *sizes.split(",")]
    if args.seconds:
        cmd += ["--seconds", str(args.seconds)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    (out / f"{tag}.log").write_text(proc.stdout + proc.stderr)
    row = {"case": name, "sizes": sizes, "workers": workers, "rc": proc.returncode,
           "wall_seconds": round(wall, 2)}
    try:
        doc = json.loads((report / "report.json").read_text())["searches"][0]
    except (OSError, KeyError, IndexError, ValueError):
        row["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no report"]
        return row
    row.update({k: doc[k] for k in ("candidates", "seconds", "candidates_per_second", "best_ms",
                                    "counts", "duplicates", "stages", "time_to_95pct")})
    from liftkit.explore import TuningDB

    row["texts"] = [r.low_level for r in TuningDB(db).candidates(doc["key"], doc["search_id"])]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="gpu")
    p.add_argument("--backend", default="opencl")
    p.add_argument("--rules", default="gpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=None, help="cap per run")
    p.add_argument("--case", action="append", required=True, help="program:N=..,M=..:budget")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 16])
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in args.case:
        base = None
        for w in args.workers:
            row = _run(case, w, args, out)
            texts = row.pop("texts", None)
            if base is None:
                base = (row, texts)
            elif texts is not None and base[1] is not None:
                same = 0
                for a, b in zip(base[1], texts):
                    if a != b:
                        break
                    same += 1
                row["same_leading_candidates"] = same
                if base[0].get("candidates_per_second"):
                    row["rate_vs_first"] = round(row["candidates_per_second"]
                                                 / base[0]["candidates_per_second"], 2)
            rows.append(row)
            print(f"{row['case']:6s} w={w:<3d} " + (
                f"{row.get('candidates', '-')} candidates in {row.get('seconds', 0):.1f} s = "
                f"{row.get('candidates_per_second', 0):.2f}/s  x{row.get('rate_vs_first', 1.0)}  "
                f"best {row.get('best_ms')} ms  same leading {row.get('same_leading_candidates', '-')}"
                if "error" not in row else f"failed: {row['error']}"), flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
