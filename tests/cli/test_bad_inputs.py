"""A corpus of bad inputs (issue 11, defect 8): command lines, user programs, .npy files, tuning
databases and cache entries a user may get wrong. Each must end with exactly one line
`liftkit: error: ...` on stderr that says what is wrong in the user's words, a non-zero status
and no traceback. The CLI runs in-process (liftkit.cli.main.main) so the corpus stays fast; only
the closed-pipe cases need a subprocess.

Programs live in tests/cli/bad_inputs/; data files are made per session in a temporary
directory ({d} in the command lines below; {p} is tests/cli/bad_inputs).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from liftkit.cli.main import main

PROGS = Path(__file__).parent / "bad_inputs"
P = f"{PROGS}/programs.py"
S = f"{PROGS}/specs.py"


class Bad(NamedTuple):
    argv: str | tuple[str, ...]  # a string is split on spaces; {d}/{p} are filled in
    says: str  # a fragment the error line must contain
    status: int = 1  # 2 for bad command-line syntax


CASES: dict[str, Bad] = {
    # -- command lines ---------------------------------------------------------------------------
    "no-command": Bad("", "required: COMMAND", 2),
    "unknown-command": Bad("frobnicate", "invalid choice: 'frobnicate'", 2),
    "run-without-program": Bad("run", "required: PROGRAM", 2),
    "unknown-program": Bad("run asumm", "no bundled program named 'asumm'; did you mean asum", 1),
    "unknown-option": Bad("run asum --sise N=4", "unrecognized arguments: --sise", 2),
    "size-without-value": Bad("run asum --size N", "expected NAME=INT", 2),
    "size-not-integer": Bad("run asum --size N=1k", "size N must be an integer, got '1k'", 2),
    "size-zero": Bad("run asum --size N=0", "size N must be at least 1, got 0", 2),
    "size-negative": Bad("run asum --size N=-8", "size N must be at least 1, got -8", 2),
    "size-unknown-name": Bad("run asum --size n=1024", "asum has no size n (its sizes: N)"),
    "size-given-twice": Bad("run asum --size N=4 N=8", "N is given twice (4 and 8)", 2),
    "size-beyond-memory": Bad("run asum --size N=1000000000000", "of memory is available"),
    "size-not-divisible": Bad("run partial_dot --size N=100 --backend interpreter",
                              "split 128 needs a length divisible by 128, but N = 100"),
    "seed-negative": Bad("run asum --seed -1", "argument --seed: must be at least 0, got -1", 2),
    "seed-not-integer": Bad("run asum --seed one", "argument --seed: invalid int value", 2),
    "device-empty": Bad("run asum --device=", "argument --device: empty", 2),
    "device-blank": Bad(("run", "asum", "--device", " "), "argument --device: empty", 2),
    "repeat-zero": Bad("run asum --repeat 0", "argument --repeat: must be at least 1", 2),
    "backend-unknown": Bad("run asum --backend vulkan", "invalid choice: 'vulkan'", 2),
    "local-size-text": Bad("run partial_dot --local-size big",
                           "argument --local-size: expected integers", 2),
    "local-size-zero": Bad("run partial_dot --local-size 0",
                           "argument --local-size: one to three positive integers", 2),
    "input-unknown-parameter": Bad("run asum --input y={d}/f32.npy",
                                   "the program has no parameter 'y' (parameters: x)"),
    "input-given-twice": Bad("run asum --input x={d}/f32.npy x={d}/f32.npy",
                             "argument --input: x is given twice", 2),
    "input-missing-file": Bad("run asum --input x={d}/absent.npy", "no such file"),
    "output-no-directory": Bad("run asum --size N=8 --output {d}/absent/r.npy",
                               "--output {d}/absent/r.npy: no such directory"),
    "output-is-directory": Bad("run asum --size N=8 --output {d}", "is a directory"),
    "high-level-on-opencl": Bad("run asum --size N=8 --backend opencl",
                                "asum is a high-level program"),
    "compile-ptx-without-cuda": Bad("compile partial_dot --ptx", "add --backend cuda", 2),
    "compile-unknown-size": Bad("compile partial_dot --size M=4", "partial_dot has no size M"),
    "explore-budget-zero": Bad("explore asum --budget 0", "argument --budget: must be at least 1"),
    "explore-seconds-negative": Bad("explore asum --seconds -1",
                                    "argument --seconds: must be at least 0"),
    "explore-timeout-zero": Bad("explore asum --timeout 0", "argument --timeout: must be positive"),
    "explore-seed-negative": Bad("explore asum --seed -3", "argument --seed: must be at least 0",
                                 2),
    "explore-unknown-rules": Bad("explore asum --rules nonsense --db {d}/new.sqlite",
                                 "unknown rule set"),
    "explore-plot-unwritable": Bad("explore asum --plot {d}/f32.npy/plot.png",
                                   "--plot {d}/f32.npy/plot.png: cannot be created"),
    "explore-out-is-file": Bad("explore asum --out {d}/f32.npy",
                               "--out {d}/f32.npy: exists and is not a directory"),
    "explore-walks-zero": Bad("explore asum --walks 0", "argument --walks: must be at least 1"),
    "explore-size-beyond-memory": Bad("explore asum --size N=1000000000000 --db {d}/new.sqlite",
                                      "of memory is available; use smaller --size values"),
    "explore-size-not-divisible": Bad("explore partial_dot --size N=100 --db {d}/new.sqlite",
                                      "split 128 needs a length divisible by 128, but N = 100"),
    "explore-size-unknown-name": Bad("explore asum --size X=4", "asum has no size X"),
    "check-unknown-program": Bad("check nosuch", "no bundled program named 'nosuch'"),
    "show-without-program": Bad("show", "required: PROGRAM", 2),
    "compile-high-level": Bad("compile asum", "map is a high-level pattern: lower it first"),
    "size-wrong-case": Bad("run gemv --size m=8", "gemv has no size m (its sizes: M, N); did you "
                                                   "mean M?"),
    "bench-device-empty": Bad("bench --device=", "argument --device: empty", 2),
    "bench-unknown-program": Bad("bench --programs nosuch", "unknown benchmark(s) nosuch", 2),
    "bench-few-runs": Bad("bench --repeat 1", "argument --repeat: at least", 2),
    "blas-tune-out-unwritable": Bad("blas tune --device cpu --out {d}/f32.npy/p.json",
                                    "--out {d}/f32.npy/p.json: cannot be created"),
    "blas-unknown-op": Bad("blas tune --ops gemmm", "unknown operation gemmm", 2),
    # -- user programs ---------------------------------------------------------------------------
    "program-no-module": Bad("check no_such_module_xyz:prog", "no module named 'no_such_module_xyz'"),
    "program-no-file": Bad("check {d}/absent.py:prog", "no such file"),
    "program-bad-reference": Bad("check :prog", "expected NAME, module:attribute"),
    "program-syntax-error": Bad("check {p}/syntax_error.py:prog",
                                "SyntaxError: '(' was never closed"),
    "program-raises-on-import": Bad("check {p}/raises_at_import.py:prog",
                                    "RuntimeError: this module fails while it is imported"),
    "program-undefined-name": Bad("check {p}/undefined_name.py:prog",
                                  "NameError: name 'mapp' is not defined"),
    "program-no-attribute": Bad(f"check {P}:nosuch", "has no attribute 'nosuch'"),
    "program-not-a-lambda": Bad(f"check {P}:not_a_program", "is a int, not a Lift program"),
    "program-zip-lengths": Bad(f"check {P}:zip_lengths", "zip: lengths N and M differ"),
    "program-arity": Bad(f"check {P}:arity", "user function add takes 2 argument(s), got 1"),
    "program-join-flat": Bad(f"run {P}:flat_join --input x={{d}}/f32.npy",
                             "join: expects an array of arrays"),
    "program-scalar-fun-on-pairs": Bad(f"check {P}:neg_pairs",
                                       "user function neg: parameter x has type float, got "
                                       "(float, float)"),
    "program-get-out-of-range": Bad(f"check {P}:bad_get", "index out of range for a 2-tuple"),
    "program-split-zero": Bad(f"check {P}:split_zero", "division by zero"),
    "program-iterate-changes-type": Bad(f"check {P}:iterate_nests",
                                        "the function must map arrays to arrays of the same"),
    "program-type-error-on-run": Bad(f"run {P}:zip_lengths --input x={{d}}/f32.npy "
                                     f"y={{d}}/f32.npy", "zip: lengths N and M differ"),
    "program-inputs-missing": Bad(f"run {P}:dot --input x={{d}}/f32.npy",
                                  "every input must be given with --input"),
    "program-lengths-differ": Bad(f"run {P}:dot --input x={{d}}/f32.npy y={{d}}/f32_5.npy",
                                  "input y: length N = 64 but the array has 5 elements"),
    "program-not-divisible": Bad(f"run {P}:halves --input x={{d}}/f32_5.npy",
                                 "split 2 needs a length divisible by 2, but N = 5 (e.g. N=6)"),
    "program-python-twin-fails": Bad(f"run {P}:python_fails --input x={{d}}/f32.npy",
                                     "user function broken_impl: its Python implementation "
                                     "failed (AttributeError:"),
    "program-c-body-fails": Bad(f"run {P}:c_fails --input x={{d}}/f32.npy --device cpu",
                                "error: expected expression (at `return x +;`)"),
    "spec-build-fails": Bad(f"run {S}:build_fails", "its build function failed "
                                                     "(ZeroDivisionError"),
    "spec-build-not-lambda": Bad(f"run {S}:build_not_lambda", "builds a str, not a Lambda"),
    "spec-inputs-fail": Bad(f"run {S}:inputs_fail", "its input maker failed at N=64 "
                                                    "(AttributeError"),
    "spec-inputs-float64": Bad(f"run {S}:inputs_float64",
                               "input x: float64 values, but [float]_N takes float32"),
    "spec-inputs-too-few": Bad(f"run {S}:inputs_too_few", "makes 0 input(s) for 1 parameter(s)"),
    "spec-reference-fails": Bad(f"run {S}:reference_fails", "its NumPy reference failed "
                                                            "(LinAlgError"),
    "spec-explore-inputs-fail": Bad(f"explore {S}:inputs_fail --db {{d}}/new.sqlite",
                                    "its input maker failed at N=64"),
    "spec-explore-inputs-float64": Bad(f"explore {S}:inputs_float64 --db {{d}}/new.sqlite",
                                       "its generated inputs do not fit the program: input x: "
                                       "float64 values"),
    "spec-explore-inputs-too-few": Bad(f"explore {S}:inputs_too_few --db {{d}}/new.sqlite",
                                       "the program takes 1 input(s) (x), got 0"),
    # -- .npy files ------------------------------------------------------------------------------
    "npy-float64": Bad("run asum --input x={d}/f64.npy",
                       "holds float64 values, but [float]_N takes float32; save the file as "
                       "float32 or pass --cast"),
    "npy-int32": Bad("run asum --input x={d}/i32.npy", "holds int32 values"),
    "npy-float16": Bad("run asum --input x={d}/f16.npy", "holds float16 values"),
    "npy-complex-cast": Bad("run asum --input x={d}/c64.npy --cast",
                            "complex64 values cannot be converted to float32"),
    "npy-overflow-cast": Bad("run asum --input x={d}/huge.npy --cast",
                             "value(s) beyond the float32 range"),
    "npy-fraction-cast-to-int": Bad(f"run {P}:ints --input x={{d}}/f64.npy --cast",
                                    "not integers within the int32 range"),
    "npy-int64-for-int32": Bad(f"run {P}:ints --input x={{d}}/i64.npy", "holds int64 values, "
                                                                         "but [int]_N takes int32"),
    "npy-2d-for-1d": Bad("run asum --input x={d}/f32_2d.npy",
                         "[float]_N takes a 1-dimensional array, but {d}/f32_2d.npy holds one "
                         "of shape (8, 8)"),
    "npy-0d-for-1d": Bad("run asum --input x={d}/f32_0d.npy", "of shape ()"),
    "npy-empty-array": Bad("run asum --input x={d}/f32_empty.npy",
                           "is empty (shape (0,)); sizes are at least 1"),
    "npy-random-bytes": Bad("run asum --input x={d}/random.npy",
                            "is neither a .npy nor an .npz file"),
    "npy-text": Bad("run asum --input x={d}/numbers.txt", "is neither a .npy nor an .npz file"),
    "npy-empty-file": Bad("run asum --input x={d}/zero_bytes.npy", "is an empty file"),
    "npy-truncated": Bad("run asum --input x={d}/truncated.npy",
                         "cannot read {d}/truncated.npy as NumPy data (Failed to read all data"),
    "npy-bad-header": Bad("run asum --input x={d}/bad_header.npy", "Cannot parse header"),
    "npy-object-array": Bad("run asum --input x={d}/objects.npy",
                            "Object arrays cannot be loaded when allow_pickle=False"),
    "npy-directory": Bad("run asum --input x={d}", "is a directory, not a .npy or .npz file"),
    "npy-structured-for-plain": Bad("run asum --input x={d}/records.npy",
                                    "takes plain values, but {d}/records.npy holds a structured"),
    "npz-for-plain": Bad("run asum --input x={d}/two.npz", "takes one array, but {d}/two.npz is "
                                                             "an .npz file with 2 array(s)"),
    "npz-corrupt": Bad("run asum --input x={d}/broken.npz", "File is not a zip file"),
    "npz-component-count": Bad(f"run {P}:pairs --input x={{d}}/one.npz", "has 2 components"),
    "npz-component-dtype": Bad(f"run {P}:pairs --input x={{d}}/mixed.npz",
                               "x (component 1): {d}/mixed.npz holds float64 values"),
    "npy-plain-for-pairs": Bad(f"run {P}:pairs --input x={{d}}/f32.npy", "tuple of 2 arrays"),
    # -- tuning databases ------------------------------------------------------------------------
    "db-missing-tuned": Bad("run asum --tuned --db {d}/absent.sqlite --size N=64",
                            "no tuning database at {d}/absent.sqlite"),
    "db-not-sqlite": Bad("run asum --tuned --db {d}/random.npy --size N=64",
                         "cannot be read as SQLite (file is not a database)"),
    "db-empty-file": Bad("run asum --tuned --db {d}/zero_bytes.npy --size N=64",
                         "holds no liftkit tuning results"),
    "db-other-tables": Bad("run asum --tuned --db {d}/other.sqlite --size N=64",
                           "holds no liftkit tuning results (no table keys)"),
    "db-wrong-schema": Bad("run asum --tuned --db {d}/wrong_schema.sqlite --size N=64",
                           "not one liftkit explore wrote (table candidates lacks"),
    "db-directory": Bad("run asum --tuned --db {d} --size N=64", "is a directory"),
    "db-explore-not-sqlite": Bad("explore asum --db {d}/random.npy",
                                 "cannot be read as SQLite"),
    "db-explore-wrong-schema": Bad("explore asum --db {d}/wrong_schema.sqlite",
                                   "not one liftkit explore wrote"),
    "db-bench-missing": Bad("bench --db {d}/absent.sqlite", "no tuning database at"),
    "db-nothing-tuned": Bad("compile asum --tuned --db {d}/liftkit.sqlite --device cpu",
                            "nothing is tuned for asum at --size N=4096"),
    # -- caches and profiles ---------------------------------------------------------------------
    "profile-not-json": Bad("blas profile show {d}/profile.json", "not JSON"),
    "profile-missing": Bad("blas profile show {d}/absent.json", "cannot read {d}/absent.json"),
    "profile-import-not-json": Bad("blas profile import {d}/profile.json", "not JSON"),
}


@pytest.fixture(scope="session")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bad (and a few good) data files the corpus names."""
    d = tmp_path_factory.mktemp("bad_inputs")
    f32 = np.linspace(-1, 1, 64, dtype=np.float32)
    np.save(d / "f32.npy", f32)
    np.save(d / "f32_5.npy", f32[:5])
    np.save(d / "f64.npy", f32.astype(np.float64))
    np.save(d / "i32.npy", np.arange(64, dtype=np.int32))
    np.save(d / "i64.npy", np.arange(64, dtype=np.int64))
    np.save(d / "f16.npy", f32.astype(np.float16))
    np.save(d / "c64.npy", f32.astype(np.complex64) * 1j)
    np.save(d / "huge.npy", np.array([1e300, 1.0]))
    np.save(d / "f32_2d.npy", np.ones((8, 8), np.float32))
    np.save(d / "f32_0d.npy", np.float32(1))
    np.save(d / "f32_empty.npy", np.zeros(0, np.float32))
    np.save(d / "objects.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    np.save(d / "records.npy", np.zeros(4, dtype=[("a", np.float32), ("b", np.float32)]))
    np.savez(d / "two.npz", f32, f32)
    np.savez(d / "one.npz", f32)
    np.savez(d / "mixed.npz", f32, f32.astype(np.float64))
    (d / "random.npy").write_bytes(np.random.default_rng(0).bytes(256))
    (d / "numbers.txt").write_text("1 2 3\n")
    (d / "zero_bytes.npy").write_bytes(b"")
    whole = (d / "f32.npy").read_bytes()
    (d / "truncated.npy").write_bytes(whole[: len(whole) // 2])
    (d / "bad_header.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{garbage header}")
    (d / "broken.npz").write_bytes(b"PK\x03\x04" + b"not really a zip archive")
    (d / "profile.json").write_text("{not json")
    with sqlite3.connect(d / "other.sqlite") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    with sqlite3.connect(d / "wrong_schema.sqlite") as conn:
        conn.execute("CREATE TABLE candidates (id INTEGER, what TEXT)")
    from liftkit.explore import TuningDB

    with TuningDB(d / "liftkit.sqlite") as db:  # a real, empty tuning database
        db.count()
    return d


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing the corpus runs may write outside a temporary directory (explore's default --out,
    the default tuning database, BLAS profiles)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIFTKIT_TUNING_DB", str(tmp_path / "default-tuning.sqlite"))
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    return tmp_path


def _argv(argv: str | tuple[str, ...], data: Path) -> list[str]:
    words = argv if isinstance(argv, tuple) else argv.split(" ")
    return [w.format(d=data, p=PROGS) for w in words if w]


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_one_clear_line(case: str, data: Path, isolated: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = CASES[case]
    status = main(_argv(bad.argv, data))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert lines[0].startswith("liftkit: error: "), err
    assert bad.says.format(d=data, p=PROGS) in lines[0], lines[0]
    assert status == bad.status, (status, lines[0])


# ---------------------------------------------------------------------------------------------
# what must not be an error: a damaged cache is rebuilt without a word


def test_corrupt_kernel_cache_entries_are_rebuilt_quietly(
        data: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.backends.opencl import list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no CPU OpenCL device")
    cache = isolated / "kernels"
    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(cache))
    argv = ["run", "partial_dot", "--size", "N=1024", "--device", "cpu"]
    assert main(argv) == 0
    entries = list(cache.glob("*.bin"))
    assert entries, "the first run stores its kernel"
    for e in entries:
        e.write_bytes(b"\x00garbage, not a device binary")
    capsys.readouterr()
    assert main(argv) == 0  # a different process would see the same: a fresh build
    out, err = capsys.readouterr()
    assert "matches the NumPy reference" in out and err == ""
    assert all(e.read_bytes() != b"\x00garbage, not a device binary" for e in entries)


def test_kernel_cache_entry_copied_over_another_is_rebuilt(
        isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A cache entry swapped for another kernel's (same kernel name, other arguments) used to
    fail the launch (clSetKernelArg: INVALID_ARG_SIZE) and blame the size rule."""
    from liftkit.backends.opencl import list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no CPU OpenCL device")
    cache = isolated / "kernels"
    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(cache))
    first = ["run", "partial_dot", "--size", "N=1024", "--device", "cpu"]
    second = ["run", "vector_scal", "--size", "N=1024", "--device", "cpu"]
    assert main(first) == 0
    (other,) = list(cache.glob("*.bin"))
    assert main(second) == 0
    (mine,) = [e for e in cache.glob("*.bin") if e != other]
    mine.write_bytes(other.read_bytes())
    capsys.readouterr()
    assert main(second) == 0
    out, err = capsys.readouterr()
    assert "matches the NumPy reference" in out and err == ""
    assert mine.read_bytes() != other.read_bytes()


def test_unwritable_kernel_cache_is_no_error(data: Path, isolated: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.backends.opencl import list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no CPU OpenCL device")
    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(data / "f32.npy"))  # a file, not a directory
    assert main(["run", "partial_dot", "--size", "N=1024", "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert "matches the NumPy reference" in out and err == ""


# ---------------------------------------------------------------------------------------------
# a closed pipe (needs a real process: the reader goes away)


@pytest.mark.parametrize("argv", [["list"], ["compile", "mm_tiled"], ["show", "mm_tiled", "--pretty"]])
@pytest.mark.parametrize("reader", ["reads-one-line", "gone-before-start"])
def test_closed_pipe_ends_quietly(argv: list[str], reader: str, tmp_path: Path) -> None:
    """`liftkit list | head -1`: status 0 and nothing on stderr, whenever the reader leaves."""
    read_end, write_end = os.pipe()
    if reader == "gone-before-start":
        os.close(read_end)  # every write the command makes fails with EPIPE
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as usual
    proc = subprocess.Popen([sys.executable, "-m", "liftkit", *argv], stdout=write_end,
                            stderr=subprocess.PIPE, cwd=tmp_path, env=env)
    os.close(write_end)
    if reader == "reads-one-line":
        with os.fdopen(read_end, "rb") as r:
            assert r.readline()
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 0 and err == "", err


def test_verbose_shows_the_log(capsys: pytest.CaptureFixture[str], isolated: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from liftkit.backends.opencl import list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no CPU OpenCL device")
    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(isolated / "kernels"))
    argv = ["run", "partial_dot", "--size", "N=1024", "--device", "cpu"]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""
    assert main(["--verbose", *argv]) == 0
    assert "liftkit: INFO: liftkit.cache: kernel cache hit" in capsys.readouterr().err


def test_run_tuned_does_not_create_the_database(isolated: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = isolated / "missing.sqlite"
    assert main(["run", "asum", "--tuned", "--db", str(db), "--size", "N=64"]) == 1
    assert not db.exists() and not list(isolated.glob("missing.sqlite*"))
    assert "no tuning database" in capsys.readouterr().err


def test_env_and_data_files_are_not_touched(data: Path) -> None:
    """The corpus reads its data files; none may have been rewritten by a run."""
    assert np.load(data / "f32.npy").dtype == np.float32
    assert (data / "profile.json").read_text() == "{not json"
    assert zipfile.is_zipfile(data / "two.npz") and not zipfile.is_zipfile(data / "broken.npz")
    assert os.path.getsize(data / "zero_bytes.npy") == 0


# ---------------------------------------------------------------------------------------------
# the Python API: the same mistakes give the same kind of one-line error


API_CASES = {
    "float64": ((np.ones(256),), "input x: float64 values, but [float]_N takes float32"),
    "int32": ((np.ones(256, np.int32),), "input x: int32 values, but [float]_N takes float32"),
    "complex": ((np.ones(256, np.complex64),), "input x: complex64 values"),
    "rank": ((np.ones((16, 16), np.float32),), "expected 1 dimension(s) for type [float]_N"),
    "count": ((), "the program takes 2 input(s) (x, y), got 0"),
    "lengths": ((np.ones(256, np.float32), np.ones(128, np.float32)),
                "input y: length N = 256 but the array has 128 elements"),
    "empty": ((np.zeros(0, np.float32),), "input x is empty (N = 0); sizes are at least 1"),
    "not-divisible": ((np.ones(100, np.float32),), "100"),  # split 128 / N a multiple of 128
}


@pytest.mark.parametrize("case", list(API_CASES), ids=list(API_CASES))
@pytest.mark.parametrize("api", ["interpret", "opencl"])
def test_python_api_errors_are_one_clear_line(case: str, api: str) -> None:
    from liftkit.programs import PROGRAMS
    from liftkit.semantics import EvaluationError

    args, says = API_CASES[case]
    if len(args) == 1:
        args = (args[0], np.ones(len(args[0]), np.float32))
    program = PROGRAMS["partial_dot"].program
    if api == "interpret":
        from liftkit.semantics import interpret

        call = lambda: interpret(program, *args)  # noqa: E731
    else:
        from liftkit.backends.opencl import OpenCLRunner, list_devices
        from liftkit.codegen import compile_program

        if not any(d.type == "cpu" for d in list_devices()):
            pytest.skip("no CPU OpenCL device")
        compiled = compile_program(program)
        call = lambda: OpenCLRunner("cpu").run(compiled, *args)  # noqa: E731
    with pytest.raises((EvaluationError, ValueError)) as err:
        call()
    text = str(err.value)
    assert len(text.strip().splitlines()) == 1 and says in text, text
    if case == "not-divisible":
        assert "128" in text
