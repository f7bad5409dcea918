"""The benchmark harness on the CPU (PoCL) with tiny sizes: end to end, reports, checks before
timing, the ablation and the command line's errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

try:
    from liftkit.programs import PROGRAMS
except Exception as _err:  # noqa: BLE001 - the bundled set may be mid-edit
    pytest.skip(f"liftkit.programs cannot be imported: {_err}", allow_module_level=True)

from liftkit.bench import ablation, references, suite
from liftkit.bench.harness import BenchConfig, difference, run_bench
from liftkit.bench.report import FILES, markdown, write_all
from liftkit.cli.main import main
from liftkit.programs.registry import ProgramSpec, Registry

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _cfg(**kw: object) -> BenchConfig:
    base = dict(device="cpu", size_set="tiny", repeat=3)
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_suite_has_the_18_programs_and_12_cgo() -> None:
    assert len(suite.ENTRIES) == 18
    assert len(suite.cgo_entries()) == 12
    for e in suite.ENTRIES:
        for size_set in ("cpu", "small", "large"):
            s = e.sizes_for(size_set)
            assert s is not None, (e.key, size_set)
            assert e.bytes_moved(s) > 0 and e.flops(s) > 0


def test_select_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="unknown benchmark"):
        suite.select(["scal", "nope"])


def test_end_to_end_and_reports(tmp_path: Path) -> None:
    result = run_bench(_cfg(programs=["scal", "asum", "gemv_clblast", "mm_nvidia"]),
                       log=lambda _m: None)
    by = {e.key: e for e in result.entries}
    for key in ("scal", "asum", "gemv_clblast", "mm_nvidia"):
        e = by[key]
        assert e.status == "ok", (key, e.note)
        assert e.seconds and e.seconds > 0 and len(e.runs) == 3
        assert e.gbs and e.gflops and e.frac_bandwidth is not None
        assert [r.name for r in e.references] == ["NumPy"]
        assert e.references[0].status == "ok" and e.speedup_best
    assert result.ceilings.bandwidth_gbs > 0 and (result.ceilings.sgemm_gflops or 0) > 0
    files = write_all(result, tmp_path / "out")
    assert [f.name for f in files] == list(FILES)
    data = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert data["meta"]["device_kind"] == "cpu" and data["meta"]["date"]
    assert {e["key"] for e in data["entries"]} == set(by)
    assert "| scal" in (tmp_path / "out" / "bench.md").read_text()
    for png in ("speedup.png", "roofline.png"):
        assert (tmp_path / "out" / png).read_bytes()[:4] == b"\x89PNG"


def _wrong_spec() -> ProgramSpec:
    good = PROGRAMS["scal_gpu"]
    return replace(good, name="scal_wrong", reference=lambda a, x: (2 * a * x).astype(np.float32))


def test_wrong_program_is_reported_and_not_timed() -> None:
    reg = Registry([_wrong_spec()])
    entry = replace(suite.SUITE["scal"], key="scal_wrong", low=("scal_wrong",), cpu_low=())
    result = run_bench(_cfg(entries=[entry], registry=reg), log=lambda _m: None)
    e = result.entries[0]
    assert e.status == "wrong"
    assert e.seconds is None and not e.runs and e.speedup_best is None
    assert "differ" in e.note
    assert result.summary["wrong"] == ["scal_wrong"]
    assert "**WRONG**" in markdown(result)


def test_not_bundled_and_missing_sizes_are_reported() -> None:
    missing = replace(suite.SUITE["scal"], key="ghost", low=("no_such_program",), cpu_low=())
    result = run_bench(_cfg(entries=[missing, suite.SUITE["dot"]]), log=lambda _m: None)
    assert [e.status for e in result.entries] == ["not bundled", "no sizes"]
    assert result.summary["not_bundled"] == ["ghost"]


def test_check_at_smaller_sizes_then_cross_check() -> None:
    entry = replace(suite.SUITE["nbody_amd"], check_at={"N": 128})
    result = run_bench(_cfg(entries=[entry]), log=lambda _m: None)
    e = result.entries[0]
    assert e.status == "ok", e.note
    assert "N=128" in e.check
    assert e.references[0].status == "ok"


def test_ablation_has_four_columns(tmp_path: Path) -> None:
    entries = [suite.SUITE["convolution"], suite.SUITE["md_shoc"]]
    result = run_bench(_cfg(entries=entries, ablation=True), log=lambda _m: None)
    assert result.ablation is not None and len(result.ablation) == 2
    labels = [c[0] for c in ablation.CONFIGS]
    assert len(labels) == 4
    for row in result.ablation:
        assert list(row["configs"]) == labels, row
        assert row["configs"][labels[-1]]["relative"] == pytest.approx(1.0)
        assert row["source_bytes_no_index_simplification"] >= row["source_bytes_all_on"] > 0
    text = markdown(result)
    assert "## Ablation" in text and all(lb in text for lb in labels)


def test_difference_tuple_vs_structured() -> None:
    s = np.zeros(3, dtype=[("f0", np.float32), ("f1", np.float32)])
    s["f1"] = 1
    assert difference((np.zeros(3), np.ones(3)), s, 1e-5, 1e-5)[0] == ""
    assert difference((np.zeros(3), np.zeros(3)), s, 1e-5, 1e-5)[0]


def test_numpy_references_match_specs() -> None:
    """The xp-style references written here agree with the specs' references (NumPy)."""
    for key, prog in (("scal", "scal"), ("asum", "asum"), ("dot", "dot"), ("gemv", "gemv"),
                      ("blackscholes", "blackscholes"), ("md", "md"), ("nbody", "nbody"),
                      ("mm", "mm"), ("conv2d", "conv2d")):
        spec = PROGRAMS[prog]
        inputs = spec.inputs(seed=1)
        got = references.XP_REFERENCES[key](np, *inputs)
        d, _ = difference(got, spec.reference(*inputs), spec.rtol, max(spec.atol, 1e-3))
        assert d == "", (key, d)


def test_references_for_cpu_is_numpy_only() -> None:
    refs = references.references_for("mm", ["mm"], "cpu")
    assert [r.name for r in refs] == ["NumPy"]
    assert references.references_for("nothing_known", [], "cpu") == []


# -- command line ---------------------------------------------------------------------------------
def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("liftkit: error: ")
    return lines[0]


@pytest.mark.parametrize("args, needle", [
    (["--programs", "scal,bogus"], "unknown benchmark(s) bogus"),
    (["--programs", ","], "at least one name"),
    (["--repeat", "3"], "at least 10"),
    (["--size-set", "huge"], "invalid choice"),
])
def test_cli_bad_input_one_line(args: list[str], needle: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--device", "cpu", *args]) == 2
    assert needle in _one_error_line(capsys.readouterr().err)


def test_cli_unknown_device_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--device", "no-such-device-xyz", "--out", str(tmp_path / "o")]) == 1
    _one_error_line(capsys.readouterr().err)


def test_cli_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["bench", "--device", "cpu", "--out", str(f)]) == 2
    assert "not a directory" in _one_error_line(capsys.readouterr().err)


def test_cli_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "liftkit", "bench", "--device", "cpu",
                           "--size-set", "tiny", "--programs", "scal,nn", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| scal" in proc.stdout and "written:" in proc.stdout
    assert "bench: scal: ok" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)


def test_cuda_times_beside_opencl_in_the_report() -> None:
    """`--backend both`: each program's CUDA time in a table beside OpenCL's."""
    result = run_bench(_cfg(programs=["scal"]), log=lambda _m: None)
    result.entries[0].cuda = {"backend": "cuda", "status": "ok", "seconds": result.entries[0].seconds / 2}
    text = markdown(result)
    assert "## OpenCL and CUDA" in text
    section = text[text.index("## OpenCL and CUDA"):]
    row = next(line for line in section.splitlines() if line.startswith("| scal |"))
    assert "2.00×" in row and "| ok |" in row


def test_cuda_without_a_gpu_is_one_clear_error() -> None:
    from liftkit.backends.cuda import CUDAError, cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(CUDAError, match="no CUDA device"):
        run_bench(_cfg(programs=["scal"], backend="both"), log=lambda _m: None)


@pytest.mark.gpu
def test_both_backends_on_the_gpu(tmp_path: Path) -> None:
    """`liftkit bench --backend both`: OpenCL and CUDA (NVRTC) in one process."""
    from liftkit.backends.cuda import cuda_available

    if not cuda_available():
        pytest.skip("no CUDA GPU")
    r = subprocess.run([sys.executable, "-m", "liftkit", "bench", "--device", "gpu", "--backend",
                        "both", "--programs", "scal,asum", "--size-set", "small", "--repeat", "10",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((tmp_path / "bench.json").read_text())
    for e in data["entries"]:
        assert e["status"] == "ok" and e["cuda"]["status"] == "ok", (e["key"], e["note"], e["cuda"])
        assert e["cuda"]["seconds"] > 0
    assert "## OpenCL and CUDA" in (tmp_path / "bench.md").read_text()
