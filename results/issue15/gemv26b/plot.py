"""gemv26b run 1's figure: cuBLAS time / liftkit's, by kernel and per call, for every checked
variant and the hand-edited diagnostics (float32 GEMV T 4096² on the H100; float64 beside).

    python results/issue15/gemv26b/plot.py results/issue15/gemv26b/run1
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(run: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in open(Path(run) / "gemv.jsonl")]
    rows = [r for r in rows if r.get("what") != "rounds"]

    def label(r: dict) -> str:
        v = r["variant"].replace("column-groups-tree", "tree").replace(",k=1", ",k")
        return f"{r['dtype'][-2:]} {r.get('what', '')} {v}".replace("  ", " ")

    fig, axes = plt.subplots(1, 2, figsize=(13, 0.32 * len(rows) + 1.5), sharey=True)
    ys = range(len(rows))
    for ax, key, title in ((axes[0], "x_kernel", "by kernel"), (axes[1], "x_call", "per call")):
        colors = ["tab:gray" if "what" in r else "tab:green" if "p=1" in r["variant"]
                  else "tab:blue" for r in rows]
        ax.barh(list(ys), [r[key] for r in rows], color=colors)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_xlim(0.95, 1.05)
        ax.set_title(f"cuBLAS / liftkit, {title} (H100)")
    axes[0].set_yticks(list(ys))
    axes[0].set_yticklabels([label(r) for r in rows], fontsize=7)
    axes[0].invert_yaxis()
    fig.tight_layout()
    fig.savefig(Path(run).parent / "fig_run1.png", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
