"""`liftkit bench --suite blas` at tiny sizes on the CPU device: checked rows, the rate-vs-size
PNGs, and the percentage-of-peak table (seed 003 Fig. 8.2, Table 8.1)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from liftkit.blas import Session
from liftkit.blas.bench import Row
from liftkit.blas.peak import TINY
from liftkit.blas.profile import Peaks
from liftkit.blas.report import markdown, peak_table
from liftkit.cli.main import main


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def _bench(out: Path, *more: str) -> tuple[int, str]:
    return _cli("bench", "--suite", "blas", "--device", "cpu", "--size-set", "tiny", "--repeat",
                "2", "--allow-few-runs", "--out", str(out), *more)


def test_peak_table_takes_the_best_size_and_the_right_peak() -> None:
    peaks = Peaks({"float32": {"add": 1.0, "mul": 1.0, "mad": 80.0, "fma": 100.0}}, 20.0)
    rows = [Row("gemm", "complex64", 16, 10.0, 40.0, "NumPy BLAS", "GFLOP/s", "glb()", 0.0, 5.0),
            Row("gemm", "complex64", 33, 30.0, 50.0, "NumPy BLAS", "GFLOP/s", "glb()", 0.0, None),
            Row("transpose", "float32", 33, 5.0, 10.0, "NumPy BLAS", "GB/s", "glb()", 0.0)]
    gemm, tr = peak_table(rows, peaks)
    assert (gemm.peak, gemm.liftkit, gemm.liftkit_n, gemm.vendor, gemm.clblast) == \
        (100.0, 30.0, 33, 50.0, 5.0)
    assert gemm.percent(gemm.liftkit) == pytest.approx(30.0)
    assert tr.peak == 20.0 and tr.percent(tr.vendor) == pytest.approx(50.0)
    text = markdown([gemm, tr], "test")
    assert "| gemm | complex64 | 100.0 GFLOP/s | 30.00 (30 %) | 33 |" in text
    assert "5.00 (5 %)" in text and "| transpose | float32 | 20.0 GB/s |" in text


def test_suite_blas_writes_plots_and_the_peak_table(session: Session, tmp_path: Path,
                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # no profile anywhere: the peak is measured in the same run
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    monkeypatch.setattr("liftkit.blas.profile.SHIPPED", tmp_path / "none")
    monkeypatch.setattr("liftkit.blas.report.SAME_RUN_PEAKS", TINY)
    code, text = _bench(tmp_path / "out", "--programs", "gemm,transpose", "--dtypes", "float32")
    assert code == 0, text
    assert "percentage of peak" in text and "measured in this run" in text
    pngs = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert pngs == ["blas-gemm.png", "blas-transpose.png"]
    assert (tmp_path / "out" / "blas-gemm.png").read_bytes()[:4] == b"\x89PNG"
    data = json.loads((tmp_path / "out" / "bench-blas.json").read_text())
    assert [r["n"] for r in data["rows"]] == [16, 33, 16, 33]
    assert all(r["error"] < 1e-3 and r["liftkit"] > 0 and r["reference"] > 0 for r in data["rows"])
    gemm = data["table"][0]
    assert gemm["peak"] == max(data["peaks"]["flops"]["float32"]["fma"],
                               data["peaks"]["flops"]["float32"]["mad"])
    assert data["table"][1]["peak"] == data["peaks"]["copy_GBps"]
    assert "% of peak" in (tmp_path / "out" / "bench-blas.md").read_text()


def test_suite_blas_wrong_results_and_bad_arguments(session: Session, tmp_path: Path,
                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("liftkit.blas.bench._rel_error", lambda got, want: 1.0)
    code, text = _bench(tmp_path / "o", "--programs", "gemm", "--dtypes", "float64")
    # (a 'note:' line says when pyclblast is missing: no CLBlast column)
    assert code == 1 and [ln for ln in text.strip().splitlines() if not ln.startswith("note:")] == [
        "error: blas bench: gemm float64 n=16: liftkit's result differs from NumPy's "
        "(relative error 1.00e+00)"]
    code, text = _bench(tmp_path / "o", "--programs", "gemmm")
    assert code == 2 and "unknown BLAS operation(s) gemmm" in text
    code, text = _bench(tmp_path / "o", "--dtypes", "float16")
    assert code == 2 and "unknown float16" in text
    code, text = _cli("bench", "--suite", "blas", "--device", "cpu", "--repeat", "2")
    assert code == 2 and "at least" in text


def test_clblast_column_where_pyclblast_installs(session: Session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import liftkit.blas.bench as bench

    if bench._clblast_module() is not None:  # checked against NumPy, then timed
        rows = bench.run_bench(None, [16], ["gemm", "transpose"], ["float32"], 1, clblast=True,
                               session=session)
        assert rows[0].clblast and rows[0].clblast > 0 and rows[1].clblast is None
    monkeypatch.setattr(bench, "_clblast_module", lambda: None)
    lines: list[str] = []
    rows = bench.run_bench(None, [16], ["gemm"], ["float32"], 1, log=lines.append, clblast=True,
                           session=session)
    assert rows[0].clblast is None and any("pyclblast is not installed" in ln for ln in lines)
