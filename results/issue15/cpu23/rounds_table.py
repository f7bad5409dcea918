"""The table of rounds.sh's JSON lines: per dtype, n and liftkit tree (tag), NumPy's and liftkit's per-call
µs (median of each round's batches, then the median over rounds), NumPy ÷ liftkit from those
medians, and per round (paired) as median [first quartile–third quartile], with the load.

    python3 results/issue15/cpu23/rounds_table.py [--min] results/issue15/cpu23/rounds.jsonl

--min takes each process's fastest batch instead of its median batch (what a side reaches
when the neighbours leave it the cores; on a loaded machine the medians are bimodal).
"""
import json
import statistics
import sys

args = sys.argv[1:]
stat = statistics.median
if args and args[0] == "--min":  # each process's fastest batch: its uncontended moments
    stat, args = min, args[1:]
rows = [json.loads(l) for f in args for l in open(f) if l.strip()]
groups, numpy = {}, {}
for r in rows:
    if r["side"] == "numpy":
        numpy.setdefault((r["dtype"], r["n"]), {})[r["round"]] = stat(r["us"])
    else:
        groups.setdefault((r["tag"], r["dtype"], r["n"]), {})[r["round"]] = stat(r["us"])
loads = [r["load"] for r in rows]
print(f"load average (1 min) over the rounds: {min(loads):.2f}-{max(loads):.2f}, "
      f"median {statistics.median(loads):.2f}")
print("| tag | dtype | n | NumPy µs | liftkit µs | NumPy ÷ liftkit | per round: median [q1–q3] | "
      "rounds ≥ 0.8 | rounds |")
print("|---|---|---|---|---|---|---|---|---|")
for (tag, dt, n), g in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    nump = numpy.get((dt, n), {})
    rounds = sorted(set(nump) & set(g))
    if not rounds:
        continue
    nu = statistics.median(nump[i] for i in rounds)
    lk = statistics.median(g[i] for i in rounds)
    pr = sorted(nump[i] / g[i] for i in rounds)
    q = lambda f: pr[int(f * (len(pr) - 1))]  # noqa: E731
    print(f"| {tag} | {dt} | {n} | {nu:.1f} | {lk:.1f} | **{nu / lk:.2f}x** | {q(.5):.2f} "
          f"[{q(.25):.2f}–{q(.75):.2f}] | {sum(p >= 0.8 for p in pr)} | {len(rounds)} |")
