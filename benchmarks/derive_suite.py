"""Search a derivation of every benchmark's high-level program (issue 10 item 4): one
`liftkit explore` per distinct (high-level program, sizes) of the suite's entries at a size set,
all into one tuning database, each search's output in a log. `liftkit bench` then shows the
derived programs beside the hand-written ones (`--db`), and `python -m liftkit.explore.bundled
export` writes them to the bundled derivations.

    python benchmarks/derive_suite.py --device cpu --size-set cpu --budget 20 --seconds 100 \\
        --db results/issue10/derived-cpu/tuning.sqlite --logs results/issue10/derived-cpu
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--size-set", default="cpu")
    p.add_argument("--programs", default=None, help="suite entries (default all)")
    p.add_argument("--rules", default=None, help="rule set (default: cpu or gpu by --device)")
    p.add_argument("--budget", type=int, default=20)
    p.add_argument("--seconds", type=float, default=100.0)
    p.add_argument("--choices", type=int, default=8)
    p.add_argument("--seed", type=int, default=0, help="seed of the random walks (a second round)")
    p.add_argument("--db", required=True)
    p.add_argument("--logs", required=True, help="directory for one log per search")
    args = p.parse_args()
    rules = args.rules or ("gpu" if args.device == "gpu" else "cpu")
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    todo = searches(args.size_set, args.programs.split(",") if args.programs else None)
    for name, sizes in todo:
        size_args = [f"{k}={v}" for k, v in sizes.items()]
        stem = f"{name}-{'-'.join(size_args)}" + (f"-seed{args.seed}" if args.seed else "")
        cmd = ["liftkit", "explore", name, "--device", args.device, "--rules", rules,
               "--size", *size_args, "--budget", str(args.budget), "--seconds", str(args.seconds),
               "--choices", str(args.choices), "--seed", str(args.seed), "--db", args.db,
               "--quiet", "--out", str(logs / stem)]
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        text = f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}exit {done.returncode}, " \
               f"{time.monotonic() - t0:.1f} s\n"
        (logs / f"{stem}.log").write_text(text)
        print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
