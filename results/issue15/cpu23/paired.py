"""liftkit before ÷ after per round (paired, the same minute's load) from rounds.sh's lines:
median [min–max] and the rounds where after was faster.

    python3 results/issue15/cpu23/paired.py results/issue15/cpu23/rounds_final.jsonl [before after]
"""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
b, a = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else ("before", "after")
d = {}
for r in rows:
    if r["side"] == "liftkit":
        d.setdefault((r["dtype"], r["n"]), {}).setdefault(r["tag"], {})[r["round"]] = \
            statistics.median(r["us"])
for k, g in sorted(d.items()):
    rounds = sorted(set(g[b]) & set(g[a]))
    pr = sorted(g[b][i] / g[a][i] for i in rounds)
    print(f"{k[0]} {k[1]}: {b} µs ÷ {a} µs per round median {statistics.median(pr):.3f} "
          f"[{pr[0]:.2f}–{pr[-1]:.2f}], {a} faster in {sum(p > 1 for p in pr)} of {len(pr)}")
