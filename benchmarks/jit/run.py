"""Benchmark liftkit's @jit on the thesis' Python benchmarks against CPython+NumPy and Numba:
a thin script over liftkit.bench.jit_suite, the same as `liftkit bench --suite jit`.

    PYTHONPATH=src python benchmarks/jit/run.py [--size-set cpu] [--repeat 10] [--ablation]
                                                [--only lud srad ...] [--json out.json]

Numba is optional (pip install 'liftkit[bench]'); its columns read '—' without it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from liftkit.bench.jit_report import markdown
from liftkit.bench.jit_suite import SCALES, JitBenchConfig, run_jit_bench


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-set", choices=tuple(SCALES), default="cpu")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--ablation", action="store_true",
                    help="also time without region specialisation and without bounds-check "
                         "elimination (serial)")
    ap.add_argument("--json", type=Path, help="write every number here")
    a = ap.parse_args()
    res = run_jit_bench(JitBenchConfig(programs=a.only, size_set=a.size_set, repeat=a.repeat,
                                       ablation=a.ablation,
                                       log=lambda s: print(s, file=sys.stderr, flush=True)))
    print(markdown(res), end="")
    if a.json:
        a.json.write_text(json.dumps(res.to_json(), indent=2, default=str))
    return 1 if res.summary["wrong"] or res.summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
