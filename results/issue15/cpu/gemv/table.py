"""The GEMV table of README.md from the blas bench JSON files: medians over the runs.

    python results/issue15/cpu/gemv/table.py "results/issue15/cpu/gemv/bench_[0-9].json" \
        "results/issue15/cpu/gemv/bench_numpy1thread_*.json"
"""
import json, glob, statistics, sys
def load(pat):
    rows = {}
    for f in sorted(glob.glob(pat)):
        d = json.load(open(f))
        for r in (d["rows"] if isinstance(d, dict) else d):
            rows.setdefault((r["dtype"], r["n"]), []).append(r)
    return rows
for name, pat in (("default threads", sys.argv[1]), ("1 thread", sys.argv[2])):
    rows = load(pat)
    for (dt, n), rs in sorted(rows.items()):
        fl = 2.0*n*n
        lk = statistics.median(fl / (r["liftkit"]*1e9) * 1e3 for r in rs)
        npy = statistics.median(fl / (r["reference"]*1e9) * 1e3 for r in rs)
        each = ", ".join("%.2f" % (r["liftkit"] / r["reference"]) for r in rs)
        print(f"| {n} | {dt} | {name} | {lk:.3f} | {npy:.3f} | {npy/lk:.2f}x | {each} | {rs[0]['variant']} |")
