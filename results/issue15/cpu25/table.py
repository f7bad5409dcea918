"""The table of run.sh's JSON lines (issue 15's CPU targets): per op, dtype and n, NumPy's and
liftkit's per-call µs (each process's median batch, then the median over rounds), NumPy ÷
liftkit from those, per round as median [q1–q3], how many rounds reach the target, the rate,
and the derivation liftkit ran; the rounds' load average first.

    python3 results/issue15/cpu25/table.py [--min] results/issue15/cpu25/rounds.jsonl

--min takes each process's fastest batch instead of its median batch (what each side reaches
while the neighbours leave it the cores; on a loaded machine the medians are bimodal).
"""

from __future__ import annotations

import json
import statistics
import sys

TARGET = {"gemm": 0.5, "gemv": 0.8, "transpose": 1.0}  # NumPy ÷ liftkit time, at least
NAME = {"gemm": "GEMM NN", "gemv": "GEMV N", "transpose": "transpose"}


def _rate(op: str, dtype: str, n: int, us: float) -> str:
    item = 4 if dtype == "float32" else 8
    if op == "gemm":
        return f"{2 * n ** 3 / us / 1e3:.1f} GFLOP/s"
    if op == "gemv":
        return f"{2 * n * n / us / 1e3:.1f} GFLOP/s"
    return f"{2 * n * n * item / us / 1e3:.1f} GB/s"  # read + written


def main(args: list[str]) -> int:
    stat = statistics.median
    if args and args[0] == "--min":
        stat, args = min, args[1:]
    rows = [json.loads(line) for f in args for line in open(f) if line.strip()]
    if not rows:
        print("no rounds")
        return 1
    sides: dict[tuple[str, str, int], dict[str, dict[int, float]]] = {}
    variants: dict[tuple[str, str, int], str] = {}
    for r in rows:
        key = (r["op"], r["dtype"], r["n"])
        sides.setdefault(key, {}).setdefault(r["side"], {})[r["round"]] = stat(r["us"])
        if r["side"] == "liftkit":
            variants[key] = r.get("variant", "")
    loads = [r["load"] for r in rows]
    print(f"{'fastest' if stat is min else 'median'} batch per process; load average (1 min) "
          f"over the rounds {min(loads):.2f}-{max(loads):.2f}, median {statistics.median(loads):.2f}")
    print("| op | dtype | n | NumPy µs | liftkit µs | NumPy ÷ liftkit | target | per round: median "
          "[q1–q3] | rounds at target | liftkit rate | derivation |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    order = {op: i for i, op in enumerate(TARGET)}
    for key in sorted(sides, key=lambda k: (order.get(k[0], 9), k[1], k[2])):
        op, dt, n = key
        nump, lift = sides[key].get("numpy", {}), sides[key].get("liftkit", {})
        rounds = sorted(set(nump) & set(lift))
        if not rounds:
            continue
        nu = statistics.median(nump[i] for i in rounds)
        lk = statistics.median(lift[i] for i in rounds)
        pr = sorted(nump[i] / lift[i] for i in rounds)
        q1, mid, q3 = statistics.quantiles(pr, n=4) if len(pr) > 1 else pr * 3
        t = TARGET[op]
        ratio = nu / lk
        print(f"| {NAME[op]} | {dt} | {n} | {nu:.1f} | {lk:.1f} | **{ratio:.2f}x** "
              f"{'met' if ratio >= t else 'NOT met'} | ≥ {t} | {mid:.2f} [{q1:.2f}–{q3:.2f}]"
              f" | {sum(p >= t for p in pr)} of {len(pr)} | {_rate(op, dt, n, lk)} | "
              f"{variants.get(key, '')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
