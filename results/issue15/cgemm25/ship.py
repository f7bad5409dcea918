"""The shipped H100 profile's complex64 GEMM entries from a cgemm25 run (rows.jsonl of bench.py,
every row checked against cuBLAS's product, then timed per call beside cuBLAS in alternating
rounds), by cgemm24b's rule (`../cgemm24b/ship.py`: `winners`, `_check`): per layout and size
a candidate ships only where it beat the shipped choice timed in the same case and phase by at
least `--margin` (default 1 %) in the ratio cuBLAS time / liftkit time; its entry's rate is the
shipped choice's entry rate scaled by the two ratios, an earlier plain entry of the same
variant in that class goes, the winners are noted in the profile (`notes.cgemm25.won`, merged
over runs; tests/blas/test_ctiles_async.py reads it) and the profile is loaded back to check
that each class now chooses its winner.

    python3 results/issue15/cgemm25/ship.py src/liftkit/blas/profiles/profile-397cb6df054d2a73.json \\
        results/issue15/cgemm25/run1/rows.jsonl results/issue15/cgemm25/run2/rows.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any


def _rule() -> Any:
    """cgemm24b's ship module (its winners rule, classes and check)."""
    path = Path(__file__).resolve().parent.parent / "cgemm24b" / "ship.py"
    spec = importlib.util.spec_from_file_location("cgemm24b_ship", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def ship(profile: str, jsonl: str, margin: float = 0.01) -> dict[str, Any]:
    """Add one run's winners to the profile file; what was shipped (also in its notes)."""
    rule = _rule()
    with open(profile) as f:
        prof = json.load(f)
    rows = [json.loads(line) for line in open(jsonl) if line.strip()]
    won = rule.winners(rows, margin)
    notes: dict[str, Any] = {}
    entries = prof["entries"]
    for (lay, n), w in sorted(won.items()):
        cls, r, b = rule.CLASSES[n], w["row"], w["shipped"]
        plain = [e for e in entries if e["op"] == "mm" and e["dtype"] == "complex64"
                 and e["layout"] == lay and e["size_class"] == cls and not e.get("via")]
        old = [e for e in plain if e["variant"] == b["variant"]]
        rate = (old[0]["rate"] if old else b["liftkit"]) * w["gain"]
        rate = max([rate] + [e["rate"] * 1.0001 for e in plain if e["variant"] != r["variant"]])
        entries[:] = [e for e in entries if not (e in plain and e["variant"] == r["variant"])]
        entries.append({"op": "mm", "dtype": "complex64", "layout": lay, "size_class": cls,
                        "sizes": {"M": n, "N": n, "K": n}, "variant": r["variant"],
                        "seconds": 8.0 * n ** 3 / rate / 1e9, "rate": rate, "unit": "GFLOP/s"})
        notes[f"{lay}|{cls}"] = {"variant": r["variant"], "ratio": round(r["ratio"], 4),
                                 "shipped_was": b["variant"], "its_ratio": round(b["ratio"], 4),
                                 "card": r.get("card", "")}
    if notes:
        note = prof["notes"].setdefault("cgemm25", {"won": {}})
        note["what"] = ("complex64 GEMM per call beside cuBLAS, alternating rounds "
                        "(results/issue15/cgemm25): ctiles-async with rows swizzled in local "
                        "memory (rot=3: A's rows in 16-byte units, NT's Bᵀ too), shipped where "
                        f"it beat the shipped choice by {margin:.0%}; rate = the old choice's "
                        "entry rate x the ratio of ratios")
        note["won"].update(notes)
        with open(profile, "w") as f:
            json.dump(prof, f, indent=1)
            f.write("\n")
        rule._check(profile, notes)
    return notes


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("profile")
    p.add_argument("jsonl", nargs="+", help="one run's rows each, shipped in order")
    p.add_argument("--margin", type=float, default=0.01)
    args = p.parse_args(argv)
    for jsonl in args.jsonl:
        got = ship(args.profile, jsonl, args.margin)
        for key, w in got.items():
            print(f"{key}: {w['variant']} at {w['ratio']:.3f}x cuBLAS (was {w['shipped_was']} "
                  f"at {w['its_ratio']:.3f}x)")
        if not got:
            print(f"{jsonl}: nothing beat the shipped choices")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
