"""The search-efficiency plot of seed 002 Fig. 12: every evaluated candidate's time in search
order, the best-so-far line, vertical bars where the search fixed another derivation step, and
invalid candidates marked along the top. Drawn with matplotlib's Agg canvas directly, so no
global backend is switched (matplotlib is an optional dependency: only this module needs it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from liftkit.explore.db import Record

_INVALID_STYLE = {  # validity -> (marker, colour)
    "wrong-result": ("x", "tab:red"),
    "compile-error": ("s", "tab:purple"),
    "runtime-error": ("^", "tab:orange"),
    "filtered": ("|", "tab:gray"),
    "skipped": ("v", "tab:olive"),  # its lower bound could not beat the best (not timed)
}


def best_so_far(records: Sequence[Record]) -> list[Optional[float]]:
    """For each position, the fastest valid time up to and including it (None before any)."""
    out: list[Optional[float]] = []
    best: Optional[float] = None
    for r in records:
        if r.ok and (best is None or r.time < best):  # type: ignore[operator]
            best = r.time
        out.append(best)
    return out


def plot_search(records: Sequence[Record], path: Union[str, Path], title: str = "",
                unit: str = "ms") -> Path:
    """Write the plot as PNG to `path` and return it. Times in `unit` (ms or us), log scale."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError("plotting needs matplotlib (pip install 'matplotlib>=3.7')") from err

    scale = {"ms": 1e3, "us": 1e6, "s": 1.0}[unit]
    fig = Figure(figsize=(9.5, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(1, len(records) + 1))
    ok = [(x, r.time * scale) for x, r in zip(xs, records) if r.ok]  # type: ignore[operator]
    if ok:
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=14, color="tab:blue",
                   label=f"valid ({len(ok)})", zorder=3)
        best = best_so_far(records)
        bx: list[float] = [x for x, b in zip(xs, best) if b is not None]
        by = [b * scale for b in best if b is not None]
        bx.append(len(records) + 0.5)  # the line runs to the end of the search
        by.append(by[-1])
        ax.step(bx, by, where="post", color="red", linewidth=1.5, label="best so far", zorder=4)
        ax.set_yscale("log")
        top = max(p[1] for p in ok) * 1.6
    else:
        top = 1.0
    for validity, (marker, colour) in _INVALID_STYLE.items():
        bad = [x for x, r in zip(xs, records) if r.validity == validity]
        if bad:
            ax.scatter(bad, [top] * len(bad), marker=marker, color=colour, s=22,
                       label=f"{validity} ({len(bad)})", zorder=2, clip_on=False)
    for x, (prev, cur) in zip(xs[1:], zip(records, records[1:])):
        if cur.step != prev.step:
            ax.axvline(x - 0.5, color="0.75", linewidth=0.8, zorder=1)
    ax.set_xlabel("evaluated candidates (search order); bars: derivation steps fixed")
    ax.set_ylabel(f"kernel time [{unit}]")
    ax.set_xlim(0.5, max(len(records), 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title or "search efficiency")
    if records:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
