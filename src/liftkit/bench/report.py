"""Reports of a benchmark run: a Markdown file (and a rich table on a terminal), a JSON file with
every number, and two PNG plots (matplotlib, Agg): speedup bars per program against its best
reference (as seed 000 Fig. 8) and a roofline against the measured ceilings."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional, TextIO

from liftkit.bench.harness import BenchResult, EntryResult

FILES = ("bench.md", "bench.json", "speedup.png", "roofline.png")


def _ms(s: Optional[float]) -> str:
    return f"{s * 1e3:.3f}" if s else "—"


def _num(x: Optional[float], fmt: str = ".1f") -> str:
    return format(x, fmt) if x is not None and not math.isnan(x) else "—"


def _x(x: Optional[float]) -> str:
    return f"{x:.2f}×" if x else "—"


def _refs_text(e: EntryResult) -> str:
    parts = []
    for r in e.references:
        if r.status == "ok":
            parts.append(f"{r.name} {_ms(r.seconds)} ms ({_x(r.speedup)})")
        else:
            parts.append(f"{r.name}: {r.status}")
    return "; ".join(parts) or "—"


def _status(e: EntryResult) -> str:
    return "ok" if e.status == "ok" else f"**{e.status.upper()}**" if e.status == "wrong" else e.status


def _sizes(e: EntryResult) -> str:
    return " ".join(f"{k}={v}" for k, v in e.sizes.items())


HEADERS = ("program", "run", "sizes", "status", "liftkit ms", "GB/s", "GFLOP/s", "of bw",
           "of SGEMM", "of roofline", "best reference", "speedup", "derived", "all references")


def _derived_cell(e: EntryResult) -> str:
    d = e.derived
    if d is None:
        return "—"
    if d.status == "ok":
        return f"{_ms(d.seconds)} ms ({_x(d.ratio)})"
    return f"**{d.status.upper()}**" if d.status == "wrong" else d.status


def rows(result: BenchResult) -> list[tuple[str, ...]]:
    out = []
    for e in result.entries:
        name = e.key + (" ¹" if e.cgo else "")
        run = f"{e.program} ({e.variant})" if e.program else "—"
        out.append((name, run, _sizes(e), _status(e), _ms(e.seconds), _num(e.gbs), _num(e.gflops),
                    _num(e.frac_bandwidth, ".2f"), _num(e.frac_peak, ".3f"),
                    _num(e.frac_roofline, ".2f") + (f" ({e.bound})" if e.bound else ""),
                    e.best_reference or "—", _x(e.speedup_best), _derived_cell(e), _refs_text(e)))
    return out


DERIVED_HEADERS = ("program", "high-level", "hand-written", "hand-written ms", "derived ms",
                   "hand ÷ derived", "search time", "candidates (valid)", "time to best", "from")


def derived_rows(result: BenchResult) -> list[tuple[str, ...]]:
    """Each entry's derivation from its high-level program beside the hand-written program."""
    out = []
    for e in result.entries:
        d = e.derived
        if d is None:
            continue
        derived = _ms(d.seconds) if d.status == "ok" else \
            (f"**{d.status.upper()}**" if d.status == "wrong" else d.status)
        search = f"{d.search_seconds:.1f} s" if d.search_seconds is not None else "—"
        cands = f"{d.candidates} ({d.valid / d.candidates:.0%})" if d.candidates else "—"
        best = f"{d.seconds_to_best:.1f} s" if d.seconds_to_best is not None else "—"
        where = " — ".join(x for x in (d.source, d.note) if x)
        hand = d.hand_seconds or e.seconds
        out.append((e.key, _high(e), e.program or "—", _ms(hand), derived, _x(d.ratio),
                    search, cands, best, where))
    return out


def _high(e: EntryResult) -> str:
    from liftkit.bench.suite import SUITE

    entry = SUITE.get(e.key)
    return (entry.high or "—") if entry is not None else "—"


BACKEND_HEADERS = ("program", "OpenCL ms", "CUDA ms", "CUDA speedup over OpenCL", "best reference",
                   "reference ms", "OpenCL ÷ reference", "CUDA ÷ reference", "CUDA check")


def backend_rows(result: BenchResult) -> list[tuple[str, ...]]:
    """With --backend both: each program's OpenCL and CUDA times side by side (empty else)."""
    out = []
    for e in result.entries:
        if not e.cuda:
            continue
        cu = e.cuda.get("seconds")
        ref = next((r for r in e.references if r.name == e.best_reference), None)
        ref_s = ref.seconds if ref is not None else None
        check = e.cuda.get("status", "—") + (f": {e.cuda['note']}" if e.cuda.get("note") else "")
        out.append((e.key, _ms(e.seconds), _ms(cu), _x(e.seconds / cu if e.seconds and cu else None),
                    e.best_reference or "—", _ms(ref_s), _x(ref_s / e.seconds if ref_s and e.seconds else None),
                    _x(ref_s / cu if ref_s and cu else None), check))
    return out


def _table(headers: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
    esc = [tuple(c.replace("|", "\\|") for c in r) for r in body]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(lines)


def ablation_rows(result: BenchResult) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    from liftkit.bench.ablation import CONFIGS

    labels = [c[0] for c in CONFIGS]
    headers = ("program", *[f"{lb} (time ÷ all-on)" for lb in labels],
               "source bytes, no index simpl.", "source bytes, all on")
    body = []
    for row in result.ablation or []:
        cells = []
        for lb in labels:
            c = row["configs"].get(lb)
            if c is None:
                cells.append(row["status"])
            elif c["status"] != "ok":
                cells.append(c["status"])
            else:
                cells.append(f"{c['relative']:.2f} ({c['seconds'] * 1e3:.3f} ms)"
                             if c.get("relative") else f"{c['seconds'] * 1e3:.3f} ms")
        no_si = row.get("source_bytes_no_index_simplification")
        all_on = row.get("source_bytes_all_on")
        body.append((row["key"], *cells, str(no_si) if no_si else "—", str(all_on) if all_on else "—"))
    return headers, body


def markdown(result: BenchResult) -> str:
    m, c, s = result.meta, result.ceilings, result.summary
    out = [f"# liftkit benchmarks — {m['device']}", "",
           f"- date: {m['date']}; commit: {m.get('commit') or 'unknown'}",
           f"- device: {m['device']} ({m['device_type']}), driver {m['driver']}",
           f"- size set: {m['size_set']}; medians of {m['repeat']} event-timed runs after a warm-up; "
           f"every result checked before timing",
           f"- ceilings measured in this run: copy bandwidth {_num(c.bandwidth_gbs)} GB/s "
           f"(OpenCL copy {_num(c.opencl_copy_gbs)} GB/s"
           + (f", library copy {_num(c.library_copy_gbs)} GB/s" if c.library_copy_gbs else "")
           + f"); SGEMM {_num(c.sgemm_gflops)} GFLOP/s ({c.sgemm_library or 'none'}, "
             f"{c.sgemm_size}²)",
           f"- regenerate: `{m.get('command') or 'liftkit bench'}`", ""]
    if c.notes:
        out += [f"- note: {n}" for n in c.notes] + [""]
    out += [_table(HEADERS, rows(result)), "",
            "¹ one of the 12 programs of seed 000 Table 1 (CGO). Speedup = reference time ÷ "
            "liftkit time (> 1: liftkit faster). \"of bw\" = achieved GB/s ÷ copy bandwidth; "
            "\"of roofline\" = achieved GFLOP/s ÷ min(SGEMM, bandwidth × flops/byte).", ""]
    gm = s.get("cgo_geomean_speedup")
    out.append(f"CGO programs measured: {s.get('cgo_measured', 0)}; geomean speedup vs best "
               f"reference: {_x(gm)}; below 0.9×: {', '.join(s.get('cgo_below_0.9', [])) or 'none'}.")
    for k, v in s.items():
        if k.endswith("_of_sgemm"):
            out.append(f"{k[:-len('_of_sgemm')]}: {v:.2f}× of the SGEMM ceiling.")
    for label, key in (("Not bundled", "not_bundled"), ("Wrong results", "wrong"), ("Failed", "failed")):
        if s.get(key):
            out.append(f"{label}: {', '.join(s[key])}.")
    notes = [f"- {e.key}: {e.note}" for e in result.entries if e.note]
    notes += [f"- {e.key} / {r.name}: {r.status}: {r.note}" for e in result.entries
              for r in e.references if r.note]
    if notes:
        out += ["", "Notes:", *notes]
    drows = derived_rows(result)
    if drows:
        gm = s.get("derived_geomean_ratio")
        out += ["", "## Derived from the high-level programs", "",
                "The search's best derivation of each entry's high-level program (from the tuning "
                "database given with --db, else the bundled derivations), checked like the "
                "hand-written program, then timed in rounds alternating with it (medians of all "
                "rounds' runs, so the hand-written time here can differ from the main table's); "
                "\"hand ÷ derived\" > 1: the derived program is faster. Search time, candidates "
                "and time to best are the search's own.", "", _table(DERIVED_HEADERS, drows), "",
                f"Derived: {len(s.get('derived_ok', []))} of {len(drows)} timed; geomean hand ÷ "
                f"derived {_x(gm)}; no derivation yet: "
                f"{', '.join(s.get('derived_none', [])) or 'none'}."]
        if s.get("derived_wrong"):
            out.append(f"Derived programs with wrong results: {', '.join(s['derived_wrong'])}.")
    both = backend_rows(result)
    if both:
        out += ["", f"## OpenCL and CUDA ({result.meta.get('second_device') or 'CUDA'})", "",
                "The same low-level program compiled to OpenCL C and to CUDA C (NVRTC), each "
                "checked before it is timed; \"÷ reference\" = reference time ÷ liftkit time.", "",
                _table(BACKEND_HEADERS, both)]
    if result.ablation is not None:
        h, b = ablation_rows(result)
        out += ["", "## Ablation (seed 000 Fig. 8)", "",
                "Each configuration adds one code-generator optimisation; times relative to all on "
                "(> 1: slower without).", "", _table(h, b)]
    return "\n".join(out) + "\n"


def print_table(result: BenchResult, out: TextIO) -> None:
    """A rich table on a terminal, else the Markdown."""
    if out.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            con = Console(file=out)
            t = Table(title=f"liftkit bench — {result.meta['device']} ({result.meta['size_set']})")
            for h in HEADERS[:-1]:
                t.add_column(h, no_wrap=h in ("program", "sizes"))
            for r in rows(result):
                t.add_row(*(x.replace("**", "") for x in r[:-1]))
            con.print(t)
            drows = derived_rows(result)
            if drows:
                td = Table(title="derived from the high-level programs (hand ÷ derived > 1: derived faster)")
                for col in DERIVED_HEADERS:
                    td.add_column(col)
                for r in drows:
                    td.add_row(*(x.replace("**", "") for x in r))
                con.print(td)
            both = backend_rows(result)
            if both:
                tb = Table(title="OpenCL and CUDA")
                for col in BACKEND_HEADERS:
                    tb.add_column(col)
                for r in both:
                    tb.add_row(*r)
                con.print(tb)
            if result.ablation is not None:
                h, b = ablation_rows(result)
                ta = Table(title="ablation (time ÷ all-on)")
                for col in h:
                    ta.add_column(col)
                for r in b:
                    ta.add_row(*r)
                con.print(ta)
            return
    print(markdown(result), file=out, end="")


def write_json(result: BenchResult, path: Path) -> None:
    def default(o: Any) -> Any:
        if hasattr(o, "item"):
            return o.item()
        return str(o)

    path.write_text(json.dumps(result.to_json(), indent=2, default=default, allow_nan=True))


def plot_speedups(result: BenchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    es = [e for e in result.entries if e.speedup_best]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(es) + 2), 4))
    if es:
        xs = range(len(es))
        colors = ["#8b0000" if e.cgo else "#4a6fa5" for e in es]
        ax.bar(xs, [e.speedup_best for e in es], color=colors)
        ax.set_xticks(list(xs), [e.key for e in es], rotation=45, ha="right")
        for x, e in zip(xs, es):
            ax.annotate(f"{e.speedup_best:.2f}× vs {e.best_reference}", (x, e.speedup_best or 1),
                        ha="center", va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                        textcoords="offset points")
        ax.set_yscale("log")
        top = max(e.speedup_best or 1 for e in es)
        bottom = min(e.speedup_best or 1 for e in es)
        ax.set_ylim(min(0.5, bottom / 1.5), max(2.0, top * 4))
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color="#8b0000", label="seed 000 Table 1 (CGO)"),
                           Patch(color="#4a6fa5", label="seed 002")], fontsize=7, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no timed programs", ha="center", transform=ax.transAxes)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.9, color="gray", linewidth=0.6, linestyle="--")
    ax.set_ylabel("speedup vs best reference")
    ax.set_title(f"liftkit vs best reference — {result.meta['device']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_roofline(result: BenchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    c = result.ceilings
    pts = [e for e in result.entries if e.gflops and e.intensity]
    fig, ax = plt.subplots(figsize=(7, 5))
    lo = min([e.intensity for e in pts] + [0.05])  # type: ignore[type-var]
    hi = max([e.intensity for e in pts] + [100.0])  # type: ignore[type-var]
    ai = np.logspace(math.log10(lo / 2), math.log10(hi * 2), 200)
    bw, peak = c.bandwidth_gbs, c.peak_gflops
    if bw and not math.isnan(bw):
        roof = bw * ai
        if peak and not math.isnan(peak):
            roof = np.minimum(roof, peak)
        ax.plot(ai, roof, color="black", label=f"copy {bw:.0f} GB/s, SGEMM {_num(peak, '.0f')} GFLOP/s")
    for e in pts:
        ax.scatter([e.intensity], [e.gflops], color="#8b0000" if e.cgo else "#4a6fa5", s=18)
        ax.annotate(e.key, (e.intensity, e.gflops), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"roofline — {result.meta['device']}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_all(result: BenchResult, out_dir: Path) -> list[Path]:
    """bench.md, bench.json, speedup.png and roofline.png under out_dir (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js, sp, rf = (out_dir / f for f in FILES)
    md.write_text(markdown(result))
    write_json(result, js)
    plot_speedups(result, sp)
    plot_roofline(result, rf)
    return [md, js, sp, rf]
