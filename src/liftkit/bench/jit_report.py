"""Reports of the JIT suite: a Markdown table (a rich table on a terminal) with the summary
against the issue's targets and the ablation, and a JSON file with every number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, TextIO

from liftkit.bench.jit_suite import JitBenchResult, JitRow

FILES = ("jit.md", "jit.json")
HEADERS = ("bench", "NumPy ms", "@jit ms", "@jit par ms", "par ×", "Numba ms", "Numba par ms",
           "vs @njit", "vs par=True", "compile s", "1st call s", "Numba 1st s")
ABLATION_HEADERS = ("bench", "region spec. ×", "BCE ×", "bounds checks removed")


def _ms(s: Optional[float]) -> str:
    return f"{s * 1e3:.2f}" if s else "—"


def _s(s: Optional[float]) -> str:
    return f"{s:.3f}" if s is not None else "—"


def _x(x: Optional[float]) -> str:
    return f"{x:.2f}×" if x else "—"


def rows(result: JitBenchResult) -> list[tuple[str, ...]]:
    out = []
    for r in result.rows:
        if r.status != "ok":
            out.append((r.name, f"**{r.status.upper()}**: {r.note}", *["—"] * (len(HEADERS) - 2)))
            continue
        out.append((r.name, _ms(r.numpy), _ms(r.jit), _ms(r.jit_par), _x(r.ratio("jit", "jit_par")),
                    _ms(r.numba), _ms(r.numba_par), _x(r.ratio("numba", "jit")),
                    _x(r.ratio("numba_par", "jit_par")), _s(r.compile), _s(r.first),
                    _s(r.numba_first)))
    return out


def ablation_rows(result: JitBenchResult) -> list[tuple[str, ...]]:
    def checks(r: JitRow) -> str:
        return f"{r.checks[0]} of {r.checks[1]}" if r.checks else "—"
    return [(r.name, _x(r.ratio("nospec", "jit")), _x(r.ratio("nobce", "jit")), checks(r))
            for r in result.rows if r.status == "ok"]


def summary_lines(result: JitBenchResult) -> list[str]:
    s, m = result.summary, result.meta
    out = []
    if m.get("numba"):
        out.append(f"Serial: geomean vs Numba @njit {_x(s['geomean_vs_numba_njit'])} (target ≥ 1.0×, "
                   f"none under 0.7×; lowest {_x(s['min_vs_numba_njit'])}).")
        out.append(f"Parallel: geomean vs Numba parallel=True {_x(s['geomean_vs_numba_parallel'])} "
                   f"(target ≥ 1.0×).")
    else:
        out.append("Numba was not installed: no comparison with it in this run.")
    need = s.get("parallel_speedup_target")
    sp = ", ".join(f"{k} {_x(v)}" for k, v in s["parallel_speedup"].items())
    out.append(f"Parallel speedup over our serial code on {s['threads']} threads: {sp or '—'}"
               + (f" (target ≥ {need}×: met by {len(s['parallel_speedup_met'])} of "
                  f"{len(s['parallel_speedup'])})" if need else "") + ".")
    if m.get("numba"):
        out.append(f"First call at or under Numba's: {', '.join(s['first_call_not_over_numba']) or 'none'}.")
    if "geomean_region_specialisation" in s:
        out.append(f"Ablation (serial, time without ÷ time with): region specialisation "
                   f"{_x(s['geomean_region_specialisation'])} geomean, bounds-check elimination "
                   f"{_x(s['geomean_bounds_check_elimination'])}.")
    for label, key in (("Wrong results", "wrong"), ("Failed", "failed")):
        if s.get(key):
            out.append(f"{label}: {', '.join(s[key])}.")
    return out


def _table(headers: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
    return "\n".join(lines)


def markdown(result: JitBenchResult) -> str:
    m = result.meta
    out = [f"# liftkit JIT suite — {m['machine']}", "",
           f"- date: {m['date']}; {m['cores']} cores, parallel columns on {m['threads']} threads; "
           f"size set {m['size_set']} (scale {m['scale']}); medians of {m['repeat']} interleaved "
           f"runs after a warm-up; every variant checked against plain Python first",
           f"- Numba {m['numba'] or 'not installed'}"
           + (f" (threading layer {m['numba_threading_layer']})" if m.get("numba_threading_layer") else "")
           + "; "
           + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
           f"- regenerate: `{m.get('command') or 'liftkit bench --suite jit'}`", "",
           _table(HEADERS, rows(result)), "",
           "vs @njit = Numba time ÷ @jit time (> 1: @jit faster); par × = serial ÷ parallel; "
           "1st call = a fresh function's first call (compilation included, disk cache off); "
           "compile = 1st call − steady call.", ""]
    out += summary_lines(result)
    notes = [f"- {r.name}: {r.note}" for r in result.rows if r.note and r.status == "ok"]
    if notes:
        out += ["", "Notes:", *notes]
    if any(r.nospec for r in result.rows):
        out += ["", "## Ablation (serial; time without the pass ÷ time with it)", "",
                _table(ABLATION_HEADERS, ablation_rows(result))]
    return "\n".join(out) + "\n"


def print_table(result: JitBenchResult, out: TextIO) -> None:
    """A rich table on a terminal, else the Markdown."""
    if out.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            con = Console(file=out)
            t = Table(title=f"liftkit bench --suite jit — {result.meta['machine']} "
                            f"({result.meta['threads']} threads)")
            for h in HEADERS:
                t.add_column(h, no_wrap=h == "bench")
            for r in rows(result):
                t.add_row(*(c.replace("**", "") for c in r))
            con.print(t)
            if any(r.nospec for r in result.rows):
                ta = Table(title="ablation (serial, time without ÷ with)")
                for h in ABLATION_HEADERS:
                    ta.add_column(h)
                for r in ablation_rows(result):
                    ta.add_row(*r)
                con.print(ta)
            for line in summary_lines(result):
                con.print(line, markup=False)
            return
    print(markdown(result), file=out, end="")


def write_all(result: JitBenchResult, out_dir: Path) -> list[Path]:
    """jit.md and jit.json under out_dir (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = (out_dir / f for f in FILES)
    md.write_text(markdown(result))

    def default(o: Any) -> Any:
        return o.item() if hasattr(o, "item") else str(o)
    js.write_text(json.dumps(result.to_json(), indent=2, default=default))
    return [md, js]
