"""Search a derivation of every benchmark's high-level program (issue 10 item 4): one
`liftkit explore` per distinct (high-level program, sizes) of the suite's entries at a size set,
all into one tuning database, each search's output in a log. `liftkit bench` then shows the
derived programs beside the hand-written ones (`--db`), and `python -m liftkit.explore.bundled
export` writes them to the bundled derivations.

    python benchmarks/derive_suite.py --device cpu --size-set cpu --budget 20 --seconds 100 \\
        --db results/issue10/derived-cpu/tuning.sqlite --logs results/issue10/derived-cpu

Nothing is lost to a time limit: every candidate is written to the database as it is evaluated,
each search's log as soon as it ends, a search that overruns `--seconds` by `--grace` is stopped
(its candidates stay in the database) and `--total` stops starting searches (or shortens the
last one) so that the whole run ends in time. `--seconds` may name a limit per program
(`--seconds 20 --seconds-for atax=30,gesummv=30`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

MIN_SEARCH_S = 5.0  # a search shorter than this is not started (--total)


def searches(size_set: str, programs: list[str] | None) -> list[tuple[str, dict[str, int]]]:
    """(high-level program, its sizes) of the selected suite entries, each pair once."""
    from liftkit.bench.suite import select
    from liftkit.explore.problem import size_names
    from liftkit.programs import PROGRAMS

    out: list[tuple[str, dict[str, int]]] = []
    for entry in select(programs):
        sizes = entry.sizes_for(size_set)
        if entry.high is None or sizes is None or entry.high not in PROGRAMS:
            continue
        names = size_names(PROGRAMS[entry.high].program)
        own = {k: int(v) for k, v in sizes.items() if k in names}
        if (entry.high, own) not in out:
            out.append((entry.high, own))
    return out


def per_program(text: str | None) -> dict[str, float]:
    """`atax=30,gesummv=40` -> {"atax": 30.0, "gesummv": 40.0} (high-level program names)."""
    out: dict[str, float] = {}
    for part in filter(None, (t.strip() for t in (text or "").split(","))):
        name, _, value = part.partition("=")
        out[name.strip()] = float(value)
    return out


def run_search(cmd: list[str], wall: float) -> tuple[str, Optional[int]]:
    """Run one `liftkit explore` in its own process group, stopped (with its children, the
    search's workers) after `wall` seconds: (its output, exit status or None when stopped)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=wall)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        return out or "", None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda", "auto"),
                   help="where candidates run (default opencl: what `liftkit bench` times)")
    p.add_argument("--size-set", default="cpu")
    p.add_argument("--programs", default=None, help="suite entries (default all)")
    p.add_argument("--rules", default=None, help="rule set (default: cpu or gpu by --device)")
    p.add_argument("--budget", type=int, default=20)
    p.add_argument("--seconds", type=float, default=100.0, help="each search's limit")
    p.add_argument("--seconds-for", default=None, metavar="P=S,...",
                   help="limits per high-level program, replacing --seconds for those")
    p.add_argument("--grace", type=float, default=30.0,
                   help="a search still running this long after its limit is stopped")
    p.add_argument("--total", type=float, default=None,
                   help="the whole run's limit in seconds (searches and their grace)")
    p.add_argument("--timeout", type=float, default=60.0, help="per candidate (explore's)")
    p.add_argument("--choices", type=int, default=8)
    p.add_argument("--walks", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="seed of the random walks (a second round)")
    p.add_argument("--db", required=True)
    p.add_argument("--logs", required=True, help="directory for one log per search")
    args = p.parse_args()
    rules = args.rules or ("gpu" if args.device == "gpu" else "cpu")
    limits = per_program(args.seconds_for)
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    todo = searches(args.size_set, args.programs.split(",") if args.programs else None)
    start = time.monotonic()
    for name, sizes in todo:
        seconds = limits.get(name, args.seconds)
        if args.total is not None:
            left = args.total - (time.monotonic() - start) - args.grace
            if left < MIN_SEARCH_S:
                print(f"derive_suite: {name} {sizes} not started: {left:.0f} s left of --total",
                      flush=True)
                continue
            seconds = min(seconds, left)
        size_args = [f"{k}={v}" for k, v in sizes.items()]
        stem = f"{name}-{'-'.join(size_args)}" + (f"-seed{args.seed}" if args.seed else "")
        cmd = [sys.executable, "-m", "liftkit", "explore", name, "--device", args.device, "--backend", args.backend,
               "--rules", rules, "--size", *size_args, "--budget", str(args.budget),
               "--seconds", f"{seconds:g}", "--timeout", f"{args.timeout:g}",
               "--choices", str(args.choices), "--walks", str(args.walks),
               "--seed", str(args.seed), "--db", args.db, "--quiet", "--out", str(logs / stem)]
        t0 = time.monotonic()
        out, rc = run_search(cmd, seconds + args.grace)
        took = time.monotonic() - t0
        end = f"exit {rc}" if rc is not None else \
            f"stopped after {took:.0f} s (limit {seconds:g} s + {args.grace:g} s grace); " \
            f"its candidates so far are in {args.db}"
        text = f"$ liftkit {' '.join(cmd[3:])}\n{out}{end}, {took:.1f} s\n"
        (logs / f"{stem}.log").write_text(text)
        print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
