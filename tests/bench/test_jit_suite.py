"""`liftkit bench --suite jit` at tiny sizes: every benchmark checked then timed, reports
(Markdown, JSON), the ablation and bounds-check counts, Numba's columns (skipped when it is not
installed, with one line saying so), wrong results reported and not timed, argument errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from liftkit.bench import jit_programs, jit_suite
from liftkit.bench.jit_report import FILES, markdown
from liftkit.bench.jit_suite import JitBenchConfig, run_jit_bench
from liftkit.cli.main import main


def test_all_eight_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_suite, "load_numba", lambda: None)
    lines: list[str] = []
    res = run_jit_bench(JitBenchConfig(size_set="tiny", repeat=2, threads=2, log=lines.append))
    assert lines[0] == jit_suite.NUMBA_MISSING
    assert [r.name for r in res.rows] == list(jit_programs.NAMES)
    for r in res.rows:
        assert r.status == "ok", (r.name, r.note)
        assert r.numpy and r.jit and r.first and r.compile is not None and r.nospec is None
        assert (r.jit_par is not None) == r.parallel
        assert r.numba is None and len(r.runs["jit"]) == 2
    checks = {r.name: r.checks for r in res.rows}
    for name in ("lud", "srad", "growcut", "julia", "pairwise"):  # every affine loop nest
        removed, total = checks[name]
        assert total > 0 and removed == total, name
    text = markdown(res)
    assert "| lud |" in text and "## Ablation" not in text and "Numba was not installed" in text
    assert res.summary["parallel_speedup_target"] == 1.8 and not res.summary["wrong"]


def test_ablation_times_without_each_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_suite, "load_numba", lambda: None)
    res = run_jit_bench(JitBenchConfig(programs=["pairwise"], size_set="tiny", repeat=2,
                                       ablation=True))
    r = res.rows[0]
    assert r.nospec and r.nobce and len(r.runs["nospec"]) == 2
    assert res.summary["geomean_region_specialisation"] and "## Ablation" in markdown(res)


def test_numba_columns_when_installed() -> None:
    pytest.importorskip("numba")
    res = run_jit_bench(JitBenchConfig(programs=["julia", "fft"], size_set="tiny", repeat=2))
    julia, fft = res.rows
    assert julia.numba and julia.numba_par and julia.numba_first
    assert fft.numba and fft.numba_par is None
    assert res.summary["geomean_vs_numba_njit"] and res.meta["numba"]


def test_wrong_result_is_reported_and_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_suite, "load_numba", lambda: None)
    bad = replace(jit_programs.PROGRAMS["pairwise"], numpy=lambda X: X[:, :1] * 0)
    monkeypatch.setitem(jit_suite.PROGRAMS, "pairwise", bad)
    res = run_jit_bench(JitBenchConfig(programs=["pairwise"], size_set="tiny", repeat=2))
    row = res.rows[0]
    assert row.status == "wrong" and "numpy" in row.note and row.jit is None
    assert res.summary["wrong"] == ["pairwise"] and "**WRONG**" in markdown(res)


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res"
    assert main(["bench", "--suite", "jit", "--size-set", "tiny", "--programs", "julia,spmv",
                 "--repeat", "3", "--allow-few-runs", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "| julia |" in printed.out and "written:" in printed.out
    assert "bench: julia: ok" in printed.err
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    data = json.loads((out / "jit.json").read_text())
    assert [r["name"] for r in data["rows"]] == ["julia", "spmv"]
    assert data["meta"]["command"].startswith("liftkit bench --suite jit")


@pytest.mark.parametrize("args, needle", [
    (["--programs", "lud,nope"], "unknown JIT benchmark(s) nope"),
    (["--backend", "cuda"], "--backend: does not apply to --suite jit"),
    (["--repeat", "3"], "at least 10"),
])
def test_cli_bad_input_one_line(args: list[str], needle: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--suite", "jit", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("liftkit: error: ") and needle in err[0]


def test_library_never_imports_numba() -> None:
    code = ("import sys, liftkit, liftkit.jit, liftkit.bench.jit_suite, liftkit.cli.bench; "
            "sys.exit('numba' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_numba_wrong_result_leaves_its_columns_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    def njit(fn=None, parallel=False):  # a stand-in "Numba" whose parallel build is wrong
        if fn is None:
            return lambda g: (lambda *a: g(*a) * 0 + 1)
        return fn
    fake = types.SimpleNamespace(njit=njit, prange=range, __version__="0.0-fake",
                                 set_num_threads=lambda n: None, threading_layer=lambda: "fake",
                                 config=types.SimpleNamespace(NUMBA_NUM_THREADS=2))
    monkeypatch.setattr(jit_suite, "load_numba", lambda: fake)
    res = run_jit_bench(JitBenchConfig(programs=["pairwise"], size_set="tiny", repeat=2))
    r = res.rows[0]
    assert r.status == "ok" and r.numba and r.numba_first and r.numba_par is None
    assert "numba_par result differs" in r.note and res.meta["numba"] == "0.0-fake"


def test_rich_table_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from liftkit.bench.jit_report import print_table

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True
    monkeypatch.setattr(jit_suite, "load_numba", lambda: None)
    res = run_jit_bench(JitBenchConfig(programs=["julia"], size_set="tiny", repeat=2,
                                       ablation=True))
    out = Tty()
    print_table(res, out)
    text = out.getvalue()
    assert "julia" in text and "region spec." in text and "|---" not in text
