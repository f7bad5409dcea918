"""The CPU table of README.md from `liftkit blas bench --out` files of alternating rounds.

    python results/issue15/cpu-final/table.py "results/issue15/cpu-final/final_default_*.json" \
        "results/issue15/cpu-final/final_1thread_*.json"

Per (op, dtype, n): liftkit's and NumPy's median rate over the rounds of each mode (NumPy with
its default threads; with one), the median of the rounds' ratios, and liftkit's median from the
one-thread rounds over NumPy's from the default rounds (liftkit's runtime threads then do not
share the two cores with OpenBLAS's idle-spinning ones, while NumPy runs with both).
"""
import glob
import json
import statistics
import sys


def load(pattern):
    rows = {}
    for f in sorted(glob.glob(pattern)):
        d = json.load(open(f))
        for r in (d["rows"] if isinstance(d, dict) else d):
            rows.setdefault((r["op"], r["dtype"], r["n"]), []).append(r)
    return rows


default, single = load(sys.argv[1]), load(sys.argv[2])
print("| op | dtype | n | unit | liftkit (1-thread rounds) | NumPy 2 threads | ratio | ratio per "
      "round, NumPy 2 threads | NumPy 1 thread | ratio per round, NumPy 1 thread (median) | derivation |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(default):
    op, dt, n = key
    d, s = default[key], single.get(key, [])
    lk1 = statistics.median(r["liftkit"] for r in s) if s else float("nan")
    np2 = statistics.median(r["reference"] for r in d)
    np1 = statistics.median(r["reference"] for r in s) if s else float("nan")
    each2 = ", ".join(f"{r['liftkit'] / r['reference']:.2f}" for r in d)
    r1 = statistics.median(r["liftkit"] / r["reference"] for r in s) if s else float("nan")
    print(f"| {op} | {dt} | {n} | {d[0]['unit']} | {lk1:.1f} | {np2:.1f} | {lk1 / np2:.2f}x | "
          f"{each2} | {np1:.1f} | {r1:.2f}x | {d[0]['variant']} |")
