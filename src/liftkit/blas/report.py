"""`liftkit bench --suite blas`: the liftkit.blas report of seed 003 §8.6 — rate vs size plots
like Fig. 8.2 (one PNG per operation, a panel per dtype: liftkit beside the vendor library of
the device, NumPy's BLAS on the CPU or cuBLAS through CuPy on a GPU, and CLBlast through
pyclblast where it is installed) and a Table 8.1 of the best rate of each as a percentage of the
device's peak.

The rows come from `liftkit.blas.bench.run_bench` (every result checked before it is timed).
The peak is the device profile's (`liftkit blas tune` measures it) or, with no profile peaks,
measured in the same run; transposes are given against the copy bandwidth.

    liftkit bench --suite blas --device cpu --size-set cpu --out bench-results
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, TextIO

from liftkit.blas.bench import OPS, Row
from liftkit.blas.peak import PeakSettings, measure_peaks, peak_for
from liftkit.blas.profile import Peaks

SIZE_SETS = {"tiny": (16, 33), "cpu": (128, 256, 512, 1024), "small": (256, 1024, 2048),
             "large": (1024, 2048, 4096, 8192)}
DTYPES = ("float32", "float64", "complex64", "complex128")
# a quicker measurement than tuning's when the profile has no peaks (it runs beside the bench)
SAME_RUN_PEAKS = PeakSettings(items_per_unit=2048, min_seconds=0.01, copy_bytes=32 << 20)


@dataclass(frozen=True)
class PeakRow:
    """Table 8.1's line: the best rate over the sizes of each library, and the peak."""

    op: str
    dtype: str
    unit: str
    peak: Optional[float]
    liftkit: float
    liftkit_n: int
    vendor: Optional[float]
    vendor_name: str
    clblast: Optional[float]

    def percent(self, rate: Optional[float]) -> Optional[float]:
        return 100.0 * rate / self.peak if rate and self.peak else None


def peak_table(rows: list[Row], peaks: Optional[Peaks]) -> list[PeakRow]:
    out = []
    keys = list(dict.fromkeys((r.op, r.dtype) for r in rows))
    for op, dt in keys:
        rs = [r for r in rows if (r.op, r.dtype) == (op, dt)]
        best = max(rs, key=lambda r: r.liftkit)
        vend = [r.reference for r in rs if r.reference]
        clb = [r.clblast for r in rs if r.clblast]
        out.append(PeakRow(op, dt, best.unit, peak_for(peaks, dt, best.unit), best.liftkit,
                           best.n, max(vend) if vend else None, rs[0].reference_name,
                           max(clb) if clb else None))
    return out


def write_plots(rows: list[Row], peaks: Optional[Peaks], out_dir: Path, label: str
                ) -> list[Path]:
    """One PNG per operation: rate vs n, a panel per dtype (seed 003 Fig. 8.2)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for op in dict.fromkeys(r.op for r in rows):
        dts = list(dict.fromkeys(r.dtype for r in rows if r.op == op))
        fig, axes = plt.subplots(1, len(dts), figsize=(4.2 * len(dts), 3.6), squeeze=False)
        for ax, dt in zip(axes[0], dts):
            rs = sorted((r for r in rows if (r.op, r.dtype) == (op, dt)), key=lambda r: r.n)
            ns = [r.n for r in rs]
            ax.plot(ns, [r.liftkit for r in rs], "o-", label="liftkit")
            if any(r.reference for r in rs):
                ax.plot(ns, [r.reference or float("nan") for r in rs], "s--",
                        label=rs[0].reference_name)
            if any(r.clblast for r in rs):
                ax.plot(ns, [r.clblast or float("nan") for r in rs], "^:", label="CLBlast")
            peak = peak_for(peaks, dt, rs[0].unit)
            if peak:
                ax.axhline(peak, color="grey", lw=0.8, ls="-.",
                           label="copy bandwidth" if rs[0].unit == "GB/s" else "peak")
            ax.set_xscale("log", base=2)
            ax.set_xticks(ns, [str(n) for n in ns])
            ax.set_title(f"{op} {dt}")
            ax.set_xlabel("n")
            ax.set_ylabel(rs[0].unit)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
        fig.suptitle(label, fontsize=8)
        fig.tight_layout()
        path = out_dir / f"blas-{op}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def _fmt(rate: Optional[float], pct: Optional[float]) -> str:
    if not rate:
        return "-"
    return f"{rate:.2f}" + (f" ({pct:.0f} %)" if pct is not None else "")


def markdown(table: list[PeakRow], peaks_from: str) -> str:
    lines = [f"Best rate over the sizes and its percentage of the device's peak ({peaks_from}; "
             "GFLOP/s against the dtype's best multiply-add rate, GB/s against the copy "
             "bandwidth).", "",
             "| op | dtype | peak | liftkit (% of peak) | at n | vendor (% of peak) | "
             "CLBlast (% of peak) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in table:
        lines.append(f"| {t.op} | {t.dtype} | {f'{t.peak:.1f} {t.unit}' if t.peak else '-'} | "
                     f"{_fmt(t.liftkit, t.percent(t.liftkit))} | {t.liftkit_n} | "
                     f"{_fmt(t.vendor, t.percent(t.vendor))} {t.vendor_name if t.vendor else ''}"
                     f" | {_fmt(t.clblast, t.percent(t.clblast))} |")
    return "\n".join(lines) + "\n"


def print_peak_table(table: list[PeakRow], out: TextIO, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    tab = Table(title=title)
    for col in ("op", "dtype", "peak", "liftkit", "n", "vendor", "CLBlast"):
        tab.add_column(col, justify="left" if col in ("op", "dtype") else "right")
    for t in table:
        tab.add_row(t.op, t.dtype, f"{t.peak:.1f} {t.unit}" if t.peak else "-",
                    _fmt(t.liftkit, t.percent(t.liftkit)), str(t.liftkit_n),
                    _fmt(t.vendor, t.percent(t.vendor)), _fmt(t.clblast, t.percent(t.clblast)))
    Console(file=out, width=130).print(tab)


def cmd_bench_blas(args: argparse.Namespace, out: TextIO) -> int:
    """Exit status 1 when a result is wrong (liftkit's or a vendor's), 0 otherwise."""
    import warnings

    import pyopencl as cl

    from liftkit.blas.bench import print_table, run_bench
    from liftkit.blas.session import Session
    from liftkit.cli.common import check_report_options, refuse_options
    from liftkit.cli.main import UsageError

    refuse_options("blas", (("--backend", args.backend != "opencl"), ("--db", args.db is not None),
                            ("--ablation", args.ablation or args.only_ablation)))
    ops = [t.strip() for t in (args.programs or ",".join(OPS)).split(",") if t.strip()]
    bad = [o for o in ops if o not in OPS]
    if not ops or bad:
        raise UsageError(f"argument --programs: unknown BLAS operation(s) {', '.join(bad)} "
                         f"(known: {', '.join(OPS)})")
    dtypes = [t.strip() for t in (args.dtypes or "float32,float64").split(",") if t.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if not dtypes or bad:
        raise UsageError(f"argument --dtypes: unknown {', '.join(bad)} (known: "
                         f"{', '.join(DTYPES)})")
    check_report_options(args)
    out_dir = Path(args.out)
    session = Session(args.device, warn=False)
    gpu = session.device.is_gpu
    sizes = list(SIZE_SETS[args.size_set or ("large" if gpu else "cpu")])
    log = lambda line: print(line, file=out, flush=True)  # noqa: E731
    with warnings.catch_warnings():  # pyopencl's own fill kernels: driver build logs
        warnings.simplefilter("ignore", cl.CompilerWarning)
        try:
            rows = run_bench(None, sizes, ops, dtypes, args.repeat, log=log, clblast=True,
                             session=session)
        except RuntimeError as err:  # a wrong result: the message names op, dtype and size
            print(f"error: {err}", file=out)
            return 1
        peaks = session.profile.peaks if session.profile is not None else None
        peaks_from = "the device profile's measured peak"
        if peaks is None:
            from liftkit.blas.tune import peak_target

            target = peak_target(session)  # a CUDA session: the same GPU through OpenCL
            peaks = measure_peaks(*target, settings=SAME_RUN_PEAKS) if target else None
            peaks_from = "peak measured in this run (no tuned profile)"
    table = peak_table(rows, peaks)
    out_dir.mkdir(parents=True, exist_ok=True)
    label = session.device.label
    files = write_plots(rows, peaks, out_dir, label)
    md = out_dir / "bench-blas.md"
    md.write_text(f"# liftkit.blas on {label}\n\n{markdown(table, peaks_from)}")
    js = out_dir / "bench-blas.json"
    js.write_text(json.dumps({"device": label, "sizes": sizes, "peaks_from": peaks_from,
                              "peaks": peaks.to_json() if peaks else None,
                              "rows": [asdict(r) for r in rows],
                              "table": [asdict(t) for t in table]}, indent=1) + "\n")
    print_table(rows, out)
    print_peak_table(table, out, f"percentage of peak on {label} ({peaks_from})")
    print(f"\nwritten: {', '.join(str(f) for f in [md, js, *files])}", file=out)
    return 0
