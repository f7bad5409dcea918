"""The search report (`liftkit explore --report DIR`): how fast a search went, stage by stage,
how soon it found its best, and the search-efficiency plot of seed 002 Fig. 12 for several
seeds on one figure.

Stage rates come from the seconds each candidate spent in each stage (`params["stages"]`,
measured where the stage ran: derive, generate, build and check in the host workers, time in
the driver): `per_worker` is candidates over those seconds, what one process does; the search's
own rate is candidates over its wall-clock time, what the pipeline achieved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

STAGES = ("derive", "generate", "build", "check", "time")


def stage_rates(records: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Per stage: candidates that went through it, their seconds, candidates per second."""
    out: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        secs = [float(r.params.get("stages", {}).get(stage)) for r in records
                if isinstance(r.params.get("stages"), dict) and r.params["stages"].get(stage) is not None]
        total = sum(secs)
        out[stage] = {"candidates": len(secs), "seconds": round(total, 6),
                      "per_worker_per_second": round(len(secs) / total, 3) if total > 0 else 0.0}
    return out


def time_to_fraction(result: Any, fraction: float = 0.95) -> Optional[dict[str, float]]:
    """When the search first had a candidate within `fraction` of its final best (time at
    most best / fraction): seconds since its start and the candidate's position."""
    best = result.best
    if best is None or best.time is None:
        return None
    for r in result.records:
        if r.ok and r.time is not None and r.time * fraction <= best.time:
            return {"seconds": round(max(0.0, r.created - result.started), 3),
                    "candidate": r.seq + 1}
    return None


def summary(result: Any, workers: int) -> dict[str, Any]:
    """One search's figures for the report."""
    n = len(result.records)
    return {
        "problem": result.problem, "seed": _seed(result), "workers": workers,
        "key": result.key, "search_id": result.search_id,
        "candidates": n, "seconds": round(result.elapsed, 3),
        "candidates_per_second": round(n / result.elapsed, 3) if result.elapsed > 0 else 0.0,
        "best_ms": result.best.time * 1e3 if result.best and result.best.time else None,
        "time_to_95pct": time_to_fraction(result),
        "counts": result.counts(),
        "duplicates": sum(1 for r in result.records if "duplicate_of" in r.params),
        "skipped_by_bound": sum(1 for r in result.records if r.validity == "skipped"),
        "stages": stage_rates(result.records),
        "stop_reason": result.stop_reason,
    }


def _seed(result: Any) -> Any:
    return getattr(result, "seed", None)


def write_report(results: Sequence[Any], seeds: Sequence[int], out_dir: Path, title: str,
                 workers: int, extra: Optional[dict[str, Any]] = None) -> list[Path]:
    """report.json, report.md and (with matplotlib) search.png: best so far against
    candidates and against seconds, one line per seed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed, res in zip(seeds, results):
        row = summary(res, workers)
        row["seed"] = seed
        rows.append(row)
    doc = {"title": title, "searches": rows} | (extra or {})
    files = [out_dir / "report.json", out_dir / "report.md"]
    files[0].write_text(json.dumps(doc, indent=2, default=str) + "\n")
    files[1].write_text(_markdown(doc))
    png = _plot(results, seeds, out_dir / "search.png", title)
    if png is not None:
        files.append(png)
    return files


def _markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Search report: {doc['title']}", "",
             "| seed | workers | candidates | seconds | candidates/s | best ms | to 95% of best (s, candidate) | duplicates | skipped by bound |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["searches"]:
        t95 = r["time_to_95pct"]
        t95s = f"{t95['seconds']:.2f} s, #{t95['candidate']}" if t95 else "-"
        best = f"{r['best_ms']:.4g}" if r["best_ms"] is not None else "-"
        lines.append(f"| {r['seed']} | {r['workers']} | {r['candidates']} | {r['seconds']:.1f} | "
                     f"{r['candidates_per_second']:.2f} | {best} | {t95s} | {r['duplicates']} | "
                     f"{r['skipped_by_bound']} |")
    lines += ["", "Stages (candidates per second of one process; host stages ran in the workers, "
              "timing in the driver):", "", "| seed | " + " | ".join(STAGES) + " |",
              "| --- |" + " --- |" * len(STAGES)]
    for r in doc["searches"]:
        cells = [f"{r['stages'][s]['per_worker_per_second']:.1f} ({r['stages'][s]['candidates']})"
                 for s in STAGES]
        lines.append(f"| {r['seed']} | " + " | ".join(cells) + " |")
    if doc.get("tuning"):
        lines += ["", "Numeric parameters of the best structure, tuned afterwards:", "",
                  "| sampler | trials | best ms | trials to its best |", "| --- | --- | --- | --- |"]
        for t in doc["tuning"]:
            best = f"{t['best_ms']:.4g}" if t.get("best_ms") is not None else "-"
            lines.append(f"| {t['sampler']} | {t['trials']} | {best} | {t.get('best_trial', '-')} |")
    return "\n".join(lines) + "\n"


def _plot(results: Sequence[Any], seeds: Sequence[int], path: Path, title: str) -> Optional[Path]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    from liftkit.explore.plot import best_so_far

    fig = Figure(figsize=(11, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    by_n, by_t = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for seed, res in zip(seeds, results):
        best = best_so_far(res.records)
        pts = [(i + 1, b * 1e3, r.created - res.started) for i, (b, r) in enumerate(zip(best, res.records))
               if b is not None]
        if not pts:
            continue
        ok = [(i + 1, r.time * 1e3) for i, r in enumerate(res.records) if r.ok]
        line = by_n.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=f"seed {seed}")
        by_n.scatter([p[0] for p in ok], [p[1] for p in ok], s=6, alpha=0.35, color=line[0].get_color())
        by_t.step([p[2] for p in pts], [p[1] for p in pts], where="post", label=f"seed {seed}")
    for ax, xl in ((by_n, "evaluated candidates (search order)"), (by_t, "seconds since the start")):
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel("best kernel time so far [ms]")
        ax.grid(True, which="both", axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
