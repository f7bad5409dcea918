"""Stencils and the CGO convolution derived by the search from their high-level programs, timed
against the bundled hand-written low-level programs (issue 10 item 3).

For each pair (high-level program, hand-written low-level program) this runs one search from
scratch (fresh tuning database) on the device, then checks the search's best kernel and the
hand-written one against the NumPy reference on fresh random inputs and times both in the same
process, alternating, median of `--repeat` event-timed runs each round. Prints a table last and
writes everything to --out (search.json, the derived kernels, the tuning database).

    python benchmarks/stencil_search.py --device gpu --size 4096 --budget 40 --seconds 150 \\
        --out results/issue10/stencils-gpu
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from search_compare import check_then_time  # this folder (the script's path)

PAIRS = {  # high-level program -> (hand-written low-level program, sizes for --size S)
    "convolution": ("conv2d", lambda s: {"M": s, "N": s}),
    "stencil3": ("stencil1d_clamp", lambda s: {"N": s * s}),
}


def search_one(name: str, sizes: dict[str, int], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from liftkit.explore import SearchSettings, TuningDB, explore

    db = TuningDB(out / "tuning.sqlite")
    t0 = time.time()
    result = explore(name, sizes, args.device, rules=args.rules, db=db,
                     settings=SearchSettings(budget=args.budget, seconds=args.seconds,
                                             max_choices=args.choices))
    recs = result.records
    valid = [r for r in recs if r.ok]
    best = result.best
    info: dict[str, Any] = {
        "program": name, "sizes": sizes, "candidates": len(recs), "valid": len(valid),
        "valid_share": len(valid) / len(recs) if recs else 0.0, "search_seconds": result.elapsed,
        "stop_reason": result.stop_reason, "counts": result.counts(),
        "best_ms": best.time * 1e3 if best else None,  # type: ignore[operator]
        "best_candidate": best.seq + 1 if best else None,
        "seconds_to_best": best.created - t0 if best else None,
        "best_low_level": best.low_level if best else None,
        "key": result.key,
    }
    if best is not None:
        (out / f"{name}.cl").write_text(best.source)
        (out / f"{name}.lift").write_text(best.low_level + "\n")
    return info


def time_pair(name: str, info: dict[str, Any], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen import compile_program
    from liftkit.explore import TuningDB
    from liftkit.explore.tuned import best_for
    from liftkit.programs import PROGRAMS

    hand, _ = PAIRS[name]
    spec, hspec = PROGRAMS[name], PROGRAMS[hand]
    sizes = info["sizes"]
    runner = OpenCLRunner(args.device)
    derived = best_for(spec.program, sizes, runner.device, TuningDB(out / "tuning.sqlite"))
    progs = {"hand-written": compile_program(hspec.program)}
    if derived is not None:
        progs["derived"] = compile_program(derived[0])
    row: dict[str, Any] = {"program": name, "hand": hand}
    row.update(check_then_time(name, runner, spec, progs, sizes, args.rounds, args.repeat))
    if "derived" in progs:
        row["derived / hand-written"] = row["derived ms"] / row["hand-written ms"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--rules", default="gpu")
    ap.add_argument("--programs", default="convolution,stencil3")
    ap.add_argument("--size", type=int, default=4096, help="M = N for the convolution; N = S² for stencil3")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=150.0)
    ap.add_argument("--choices", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="results/issue10/stencils")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.programs.split(","):
        sizes = PAIRS[name][1](args.size)
        info = search_one(name, sizes, args, out)
        print(json.dumps(info, default=str), flush=True)
        row = info | (time_pair(name, info, args, out) if info["best_ms"] is not None else {})
        rows.append(row)
        (out / "search.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    print("\nprogram      | sizes            | cand | valid | to best s | search s | derived ms | hand ms | ratio")
    for r in rows:
        sz = " ".join(f"{k}={v}" for k, v in r["sizes"].items())
        print(f"{r['program']:<12} | {sz:<16} | {r['candidates']:>4} | {r['valid_share']:>5.0%} | "
              f"{(r['seconds_to_best'] or 0):>9.1f} | {r['search_seconds']:>8.1f} | "
              f"{r.get('derived ms', float('nan')):>10.4f} | {r.get('hand-written ms', float('nan')):>7.4f} | "
              f"{r.get('derived / hand-written', float('nan')):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
