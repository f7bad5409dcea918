#!/usr/bin/env python
"""Hunt for silent wrong answers beyond the CI window of tests/codegen/test_random_programs.py.

    python results/issue11/hunt_random_programs.py FIRST LAST [--all-switches] [--allow FLAG ...]
        [--device cpu] [--jobs 2] [--chunk 100] [--log FILE.jsonl]

Each seed in [FIRST, LAST) is generated, compiled and run against the interpreter with every
optimisation on and, as the test does, with switch k off on the seeds (seed - FIRST) % 8 == k
(--all-switches: each switch off on every seed). Seeds run in child processes of `--chunk` seeds,
`--jobs` at a time: a seed that kills its process (a device compiler that crashes) is recorded
as `crash` and the chunk resumes after it. Every finding is one JSON line in --log and one line
here, with its replay command; the last line counts seeds, findings by stage, crashes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace


def child(first: int, last: int, base: int, all_switches: bool, allow: list[str], device: str) -> None:
    """Check seeds [first, last), printing `start SEED`, a JSON line per finding, `done SEED`."""
    from liftkit.backends.opencl import KernelCache, OpenCLRunner
    from liftkit.codegen import CompileOptions
    from liftkit.testing import SWITCHES, check_case, replay_command
    from liftkit.testing.random_programs import DEFAULT_FLAGS, generate

    runner = OpenCLRunner(device, KernelCache(disk=False))
    flags = replace(DEFAULT_FLAGS, **{f: False for f in allow})
    for seed in range(first, last):
        print(f"start {seed}", flush=True)
        case = generate(seed, flags)
        k = (seed - base) % (2 * len(SWITCHES))
        options = [None] + [CompileOptions(**{s: False}) for i, s in enumerate(SWITCHES)
                            if all_switches or i == k]
        for o in options:
            out = check_case(case, runner, o)
            if not out.ok:
                print(json.dumps({"seed": seed, "stage": out.stage, "options": o.key() if o else "default",
                                  "detail": out.detail[:400], "replay": replay_command(case, o)}), flush=True)
        print(f"done {seed}", flush=True)


def run_chunk(first: int, last: int, args: argparse.Namespace) -> list[dict]:
    """Findings of one chunk, a crash of the child recorded and stepped over."""
    found: list[dict] = []
    while first < last:
        cmd = [sys.executable, __file__, str(first), str(last), "--child", "--base", str(args.first),
               "--device", args.device, *(["--all-switches"] if args.all_switches else []),
               *[a for f in args.allow for a in ("--allow", f)]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        current = None
        for line in proc.stdout.splitlines():
            if line.startswith("start "):
                current = int(line.split()[1])
            elif line.startswith("done "):
                current, first = None, int(line.split()[1]) + 1
            elif line.startswith("{"):
                found.append(json.loads(line))
        if proc.returncode == 0:
            break
        seed = current if current is not None else first
        found.append({"seed": seed, "stage": "crash", "options": "?", "detail":
                      f"the process ended with status {proc.returncode}: {proc.stderr.strip()[-300:]}",
                      "replay": f"python scripts/replay_random_program.py {seed}"
                      + "".join(f" --allow {f}" for f in args.allow)})
        first = seed + 1
    return found


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first", type=int)
    ap.add_argument("last", type=int)
    ap.add_argument("--all-switches", action="store_true")
    ap.add_argument("--allow", action="append", default=[], metavar="FLAG")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--log", default="/tmp/random-hunt.jsonl")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--base", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.first, args.last, args.base, args.all_switches, args.allow, args.device)
        return 0
    chunks = [(a, min(a + args.chunk, args.last)) for a in range(args.first, args.last, args.chunk)]
    stages: Counter[str] = Counter()
    with ThreadPoolExecutor(args.jobs) as pool, open(args.log, "a") as log:
        for found in pool.map(lambda c: run_chunk(*c, args), chunks):
            for f in found:
                stages[f["stage"]] += 1
                log.write(json.dumps(f) + "\n")
                print(f"{f['seed']} {f['stage']} {f['options']}: {f['detail'][:160]}\n  {f['replay']}",
                      flush=True)
    print(f"seeds {args.first}-{args.last - 1} ({args.last - args.first}): "
          f"{sum(stages.values())} findings {dict(stages)}")
    return 1 if stages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
