"""Per-call µs of GEMV from gemv_ab.sh's files: liftkit before and after (the rounds where NumPy
ran one thread, so OpenBLAS's threads do not share the cores with the OpenCL runtime's), NumPy
with its default threads in a process of its own, and the ratios (NumPy µs ÷ liftkit µs),
medians over the rounds.

    python3 results/issue15/cpu-final/ab_table.py results/issue15/cpu-final
"""
import glob
import json
import statistics
import sys

D = sys.argv[1] if len(sys.argv) > 1 else "results/issue15/cpu-final"


def per_call(pattern, key):
    got = {}
    for f in sorted(glob.glob(f"{D}/{pattern}")):
        d = json.load(open(f))
        for r in (d["rows"] if isinstance(d, dict) else d):
            if "seconds" in r:
                got.setdefault((r["dtype"], r["n"]), []).append(r["seconds"] * 1e6)
            else:  # GFLOP/s of 2·n² flops
                got.setdefault((r["dtype"], r["n"]), []).append(2 * r["n"] ** 2 / (r[key] * 1e3))
    return got


before, after = per_call("ab_before_1thread_*.json", "liftkit"), per_call("ab_after_1thread_*.json", "liftkit")
numpy = per_call("ab_numpy_*.json", None)
print("| dtype | n | NumPy (default threads, own process) µs | liftkit before µs | after µs | "
      "NumPy ÷ liftkit before | after | rounds |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(after):
    nb, b, a = (statistics.median(v[k]) for v in (numpy, before, after))
    print(f"| {k[0]} | {k[1]} | {nb:.1f} | {b:.1f} | {a:.1f} | {nb / b:.2f}x | **{nb / a:.2f}x** | "
          f"{len(after[k])} |")
