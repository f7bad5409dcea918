"""Bundled derivations (liftkit.explore.bundled): the files read back, still fit the bundled
programs, and stand in for the tuning database in `run --tuned` and `bench`'s derived column."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.explore import TuningDB, explore
from liftkit.explore import bundled
from liftkit.explore.problem import program_text
from liftkit.programs import PROGRAMS

needs_cpu = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                               reason="no CPU OpenCL device")


def test_every_bundled_derivation_reads_back_and_fits_its_program() -> None:
    found = bundled.load_all()
    assert {d.kind for d in found} == {"cpu", "gpu"}
    for d in found:
        assert d.path is not None and d.path.read_text() == d.text(), d.path
        spec = PROGRAMS[d.program]
        # a bundled program changed since its search: its derivations must be searched again
        assert d.high_level == program_text(spec.program), f"{d.path} is stale"
        low = bundled.low_level_program(d, spec.program)  # read back, else replayed
        assert _unnumbered(program_text(low)) == _unnumbered(d.low_level), d.path
        assert d.path.parent.name == d.dir_name() and d.path.name == d.file_name()
        assert 0 < d.valid <= d.candidates and d.time > 0 and d.seconds_to_best <= d.search_seconds + 1


def test_derived_mm_reads_back_from_its_text() -> None:
    """The MM rules' multiply-adds are known to the parser: the derived mm does not depend on
    its steps still replaying under today's rules."""
    from liftkit.ir.parser import parse_program
    from liftkit.ir.printer import show

    mms = [d for d in bundled.load_all() if d.program == "mm"]
    assert mms
    for d in mms:
        assert "madS" in d.low_level
        assert show(parse_program(d.low_level, bundled._user_funs("mm"))) == d.low_level


def _unnumbered(text: str) -> str:
    """The text up to the numbering of variable names (a replay may number them apart)."""
    return re.sub(r"(_\d+)+\b", "", text)


def test_a_broken_file_is_one_error_naming_it(tmp_path: Path) -> None:
    d = bundled.load_all()[0]
    bad = tmp_path / "x" / "bad.lift"
    bad.parent.mkdir()
    bad.write_text(d.text().replace("kind: ", "kinds: "))
    with pytest.raises(bundled.DerivationFileError, match="bad.lift:.*unknown field 'kinds'"):
        bundled.load_all(tmp_path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, OpenCLRunner]:
    """A real search of scal at N=4096 on the CPU device (a few candidates): its database, and
    a directory with its exported derivation."""
    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no CPU OpenCL device")
    root = tmp_path_factory.mktemp("bundled")
    runner = OpenCLRunner("cpu", KernelCache(disk=False))
    db = TuningDB(root / "t.sqlite")
    result = explore("scal", {"N": 4096}, rules="cpu", budget=4, db=db, runner=runner)
    assert result.best is not None
    written = bundled.write(bundled.from_db(db, "cpu", origin="test"), root / "derivations")
    assert len(written) == 1 and written[0].name == "scal-N4096.lift"
    return root / "t.sqlite", root / "derivations", runner


@needs_cpu
def test_lookup_prefers_this_device_then_the_same_kind(tiny: tuple[Path, Path, OpenCLRunner],
                                                        tmp_path: Path) -> None:
    _, directory, runner = tiny
    prog = PROGRAMS["scal"].program
    hit = bundled.find(prog, {"N": 4096}, runner.device, directory)
    assert hit is not None and hit.same_device and "found on this device" in hit.describe()
    assert bundled.find(prog, {"N": 8192}, runner.device, directory) is None
    assert bundled.find(PROGRAMS["asum"].program, {"N": 4096}, runner.device, directory) is None
    other = replace(hit.derivation, device="Other|Some CPU|1.0")
    bundled.write([other], tmp_path)
    hit2 = bundled.find(prog, {"N": 4096}, runner.device, tmp_path)
    assert hit2 is not None and not hit2.same_device and "found on Other / Some CPU" in hit2.describe()
    gpu = replace(other, kind="gpu")
    bundled.write([gpu], tmp_path / "g")
    assert bundled.find(prog, {"N": 4096}, runner.device, tmp_path / "g") is None


@needs_cpu
def test_run_tuned_falls_back_to_the_bundled_derivations(
        tiny: tuple[Path, Path, OpenCLRunner], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.cli.main import main

    db, directory, _ = tiny
    monkeypatch.setattr(bundled, "BUNDLED_DIR", directory)
    monkeypatch.setenv("LIFTKIT_TUNING_DB", str(tmp_path / "none.sqlite"))  # no database yet
    assert main(["run", "scal", "--tuned", "--device", "cpu", "--size", "N=4096"]) == 0
    out = capsys.readouterr()
    assert "scal: bundled derivation scal-N4096.lift (found on this device" in out.err
    assert "matches the NumPy reference" in out.out
    assert not (tmp_path / "none.sqlite").exists()
    # a database without this key: the bundled one, said so
    empty = tmp_path / "empty.sqlite"
    TuningDB(empty).count()
    assert main(["run", "scal", "--tuned", "--device", "cpu", "--size", "N=4096", "--db", str(empty)]) == 0
    assert "bundled derivation scal-N4096.lift" in capsys.readouterr().err
    # the database's own derivation comes first
    assert main(["run", "scal", "--tuned", "--device", "cpu", "--size", "N=4096", "--db", str(db)]) == 0
    assert f"from the tuning database {db}" in capsys.readouterr().err
    # nothing anywhere: one line naming what is bundled
    assert main(["run", "scal", "--tuned", "--device", "cpu", "--size", "N=8192"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nothing is tuned for scal at --size N=8192" in err
    assert "bundled derivations of scal: N=4096 on cpu" in err


@needs_cpu
def test_bench_derived_column(tiny: tuple[Path, Path, OpenCLRunner],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The derived column on the CPU device at tiny sizes: from --db, from the bundled
    derivations, none, and a wrong derivation reported as wrong and not timed."""
    from liftkit.bench.harness import BenchConfig, run_bench
    from liftkit.bench.report import markdown

    db, directory, _ = tiny
    cfg = BenchConfig(device="cpu", size_set="tiny", repeat=3, programs=["scal", "mm_nvidia"])
    result = run_bench(replace(cfg, db=str(db)), log=lambda _m: None)
    scal, mm = result.entries
    d = scal.derived
    assert scal.status == "ok" and scal.program == "scal_gpu"
    assert d is not None and d.status == "ok", d
    assert d.seconds and d.hand_seconds and d.ratio == pytest.approx(d.hand_seconds / d.seconds)
    assert len(d.runs) == 3 * 3  # rounds alternating with the hand-written program
    assert d.check == "NumPy reference" and d.candidates and d.search_seconds is not None
    assert d.source == f"tuning database {db}"
    assert mm.derived is not None and mm.derived.status == "none"
    text = markdown(result)
    assert "## Derived from the high-level programs" in text
    row = next(ln for ln in text.split("## Derived")[1].splitlines() if ln.startswith("| scal |"))
    assert f"{d.ratio:.2f}×" in row and "scal_gpu" in row
    assert result.summary["derived_ok"] == ["scal"] and result.summary["derived_none"] == ["mm_nvidia"]

    monkeypatch.setattr(bundled, "BUNDLED_DIR", directory)
    result = run_bench(replace(cfg, programs=["scal"]), log=lambda _m: None)
    d = result.entries[0].derived
    assert d is not None and d.status == "ok"
    assert "bundled derivation scal-N4096.lift" in d.source

    good = bundled.load_all(directory)[0]
    assert "mult(" in good.low_level
    wrong = replace(good, low_level=good.low_level.replace("mult(", "add(", 1), steps=())
    bundled.write([wrong], directory.parent / "wrong")
    monkeypatch.setattr(bundled, "BUNDLED_DIR", directory.parent / "wrong")
    result = run_bench(replace(cfg, programs=["scal"]), log=lambda _m: None)
    d = result.entries[0].derived
    assert d is not None and d.status == "wrong" and d.seconds is None and not d.runs
    assert result.summary["derived_wrong"] == ["scal"] and "**WRONG**" in markdown(result)


@needs_cpu
def test_bench_without_the_derived_column() -> None:
    from liftkit.bench.harness import BenchConfig, run_bench
    from liftkit.bench.report import markdown

    result = run_bench(BenchConfig(device="cpu", size_set="tiny", repeat=3, programs=["nn"],
                                   derived=False), log=lambda _m: None)
    assert result.entries[0].status == "ok" and result.entries[0].derived is None
    assert "## Derived" not in markdown(result)


@needs_cpu
def test_bench_without_references_times_the_programs_only() -> None:
    """--no-references: the hand-written (and derived) programs checked and timed, no
    reference run (the GPU suite's CuPy N-Body alone takes minutes)."""
    from liftkit.bench.harness import BenchConfig, run_bench

    cfg = BenchConfig(device="cpu", size_set="tiny", repeat=3, programs=["nn"], derived=False)
    with_refs = run_bench(cfg, log=lambda _m: None).entries[0]
    without = run_bench(replace(cfg, references=False), log=lambda _m: None).entries[0]
    assert with_refs.references and with_refs.speedup_best
    assert without.status == "ok" and without.seconds and without.references == []
    assert without.speedup_best is None
