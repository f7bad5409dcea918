"""The `liftkit` command line: through `main(argv)` (fast, in-process) and through
`python -m liftkit` (the real entry point, exit codes and stderr as a user sees them)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

try:
    import liftkit.programs  # noqa: F401
except Exception as _err:  # noqa: BLE001 - the bundled set may be mid-edit
    pytest.skip(f"liftkit.programs cannot be imported: {_err}", allow_module_level=True)

from liftkit.cli.main import main, size_arg

BAD_ZIP = textwrap.dedent("""
    from liftkit.dsl import *

    N = size("N")
    bad = fun([float32[N], float32[2 * N]], lambda x, y: map(add) << zip(x, y))
    good = fun([float32[N], float32[N]], lambda x, y: map(add) << zip(x, y))
    not_a_program = 42
""")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "liftkit", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


@pytest.fixture()
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "progs.py"
    path.write_text(BAD_ZIP)
    return path


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("liftkit: error: "), err
    assert "Traceback" not in err
    return lines[0]


# -- list ----------------------------------------------------------------------------------------
def test_list_is_parseable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    by_name = {r[0]: r for r in rows}
    assert all(len(r) == 4 for r in rows)
    assert {"asum", "dot"} <= by_name.keys()
    assert by_name["asum"][1] in ("high", "low")
    assert by_name["dot"][3]


def test_list_via_python_m() -> None:
    r = cli("list")
    assert r.returncode == 0, r.stderr
    assert any(line.split("\t")[0] == "asum" for line in r.stdout.splitlines())


# -- check ---------------------------------------------------------------------------------------
def test_check_bundled(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "dot"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("dot : ([float]_N, [float]_N) -> "), out
    assert "float" in out.split("->")[1]


def test_check_user_file_ok(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", f"{user_file}:good"]) == 0
    assert capsys.readouterr().out.strip() == f"{user_file}:good : ([float]_N, [float]_N) -> [float]_N"


def test_check_type_error(user_file: Path) -> None:
    r = cli("check", f"{user_file}:bad")
    assert r.returncode == 1
    assert "zip: lengths N and 2*N differ" in one_error_line(r.stderr)
    assert r.stdout == ""


def test_check_module_attr(user_file: Path) -> None:
    r = cli("check", "progs:good", cwd=user_file.parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("progs:good : ")


def test_check_not_a_program(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", f"{user_file}:not_a_program"]) == 1
    assert "not a Lift program" in one_error_line(capsys.readouterr().err)
    assert main(["check", f"{user_file}:missing"]) == 1
    assert "no attribute" in one_error_line(capsys.readouterr().err)


def test_check_missing_module_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "no_such_module_xyz:prog"]) == 1
    assert "no_such_module_xyz" in one_error_line(capsys.readouterr().err)
    assert main(["check", f"{tmp_path / 'nope.py'}:prog"]) == 1
    assert "no such file" in one_error_line(capsys.readouterr().err)


def test_debug_reraises(user_file: Path) -> None:
    with pytest.raises(Exception, match="zip: lengths"):
        main(["--debug", "check", f"{user_file}:bad"])


# -- show ----------------------------------------------------------------------------------------
def test_show_and_pretty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "dot"]) == 0
    flat = capsys.readouterr().out.strip()
    assert "zip" in flat and "reduce" in flat and "\n" not in flat
    assert main(["show", "dot", "--pretty"]) == 0
    pretty = capsys.readouterr().out.strip()
    assert "zip" in pretty and "reduce" in pretty


# -- run -----------------------------------------------------------------------------------------
def test_run_generated_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "asum", "--size", "N=4096", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "N=4096" in out
    assert "matches" in out and "max abs error" in out


def test_run_input_output_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 3000).astype(np.float32)
    y = rng.uniform(-1, 1, 3000).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    result = tmp_path / "out.npy"
    argv = ["run", "dot", "--input", f"x={tmp_path / 'x.npy'}", f"y={tmp_path / 'y.npy'}",
            "--output", str(result)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "N=3000" in out and "matches" in out
    saved = np.load(result)
    assert saved.dtype == np.float32
    np.testing.assert_allclose(saved.reshape(-1)[0], np.dot(x.astype(np.float64), y), rtol=1e-4)


def test_run_one_input_given_other_generated(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.ones(500, np.float32))
    assert main(["run", "dot", "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    assert "N=500" in capsys.readouterr().out


def test_run_user_lambda_needs_all_inputs(user_file: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{user_file}:good"]) == 1
    assert "--input" in one_error_line(capsys.readouterr().err)
    a, b = np.arange(5, dtype=np.float32), np.full(5, 2, np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    argv = ["run", f"{user_file}:good", "--input", f"x={tmp_path / 'a.npy'}",
            "--input", f"y={tmp_path / 'b.npy'}", "--output", str(tmp_path / "r.npy")]
    assert main(argv) == 0
    assert "reference: none" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), a + b)


def test_run_shape_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.ones(10, np.float32))
    np.save(tmp_path / "y.npy", np.ones(12, np.float32))
    argv = ["run", "dot", "--input", f"x={tmp_path / 'x.npy'}", f"y={tmp_path / 'y.npy'}"]
    assert main(argv) == 1
    assert "y" in one_error_line(capsys.readouterr().err)


def test_run_unknown_input_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "z.npy", np.ones(10, np.float32))
    assert main(["run", "asum", "--input", f"z={tmp_path / 'z.npy'}"]) == 1
    assert "no parameter 'z'" in one_error_line(capsys.readouterr().err)


def test_run_missing_file(tmp_path: Path) -> None:
    r = cli("run", "asum", "--input", f"x={tmp_path / 'absent.npy'}")
    assert r.returncode == 1
    assert "no such file" in one_error_line(r.stderr)


@pytest.mark.parametrize("bad", ["N=abc", "N", "=5", "N=0", "N=-3"])
def test_run_bad_size(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "asum", "--size", bad]) == 2
    assert "--size" in one_error_line(capsys.readouterr().err)


def test_bad_size_via_python_m() -> None:
    r = cli("run", "asum", "--size", "N=abc")
    assert r.returncode == 2
    assert "N=abc" in one_error_line(r.stderr) or "'abc'" in r.stderr


def test_unknown_program() -> None:
    r = cli("run", "no_such_program")
    assert r.returncode == 1
    assert "no_such_program" in one_error_line(r.stderr)


def test_backend_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "asum", "--backend", "metal"]) == 2
    assert "interpreter" in one_error_line(capsys.readouterr().err)
    # a high-level program cannot be compiled yet: one clear error, on either backend
    for backend in ("opencl", "cuda"):
        assert main(["run", "asum", "--backend", backend]) == 1
        assert "high-level program" in one_error_line(capsys.readouterr().err)


def test_compile_for_cuda_prints_cuda_c_and_ptx(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "partial_dot", "--backend", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "in cuda" in out and '__global__ void KERNEL(' in out and "__syncthreads();" in out
    assert main(["compile", "partial_dot", "--backend", "cuda", "--ptx"]) == 0
    out = capsys.readouterr().out
    assert "// PTX from NVRTC" in out and ".entry KERNEL" in out
    assert main(["compile", "partial_dot", "--ptx"]) == 2
    assert "--backend cuda" in one_error_line(capsys.readouterr().err)


def test_run_on_cuda_without_a_gpu_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.backends.cuda import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is present")
    assert main(["run", "partial_dot", "--backend", "cuda"]) == 1
    assert "no CUDA device" in one_error_line(capsys.readouterr().err)


def test_run_compiled_on_pocl(capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.backends.opencl import select_device

    assert main(["run", "partial_dot", "--device", "cpu", "--size", "N=8192", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "backend: opencl" in out and f"device:    {select_device('cpu').label}" in out
    assert "median of 3" in out and "matches the NumPy reference" in out
    assert main(["run", "partial_dot", "--backend", "interpreter", "--size", "N=8192"]) == 0
    assert "backend: interpreter" in capsys.readouterr().out


def test_run_compiled_size_rule_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "vector_scal", "--device", "cpu", "--size", "N=1000"]) == 1
    err = one_error_line(capsys.readouterr().err)
    assert "1024" in err


def test_compile_prints_kernels_and_switches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "transpose"]) == 0
    out = capsys.readouterr().out
    assert "kernel void KERNEL(" in out and "x[l_id*N + wg_id]" in out
    assert main(["compile", "transpose", "--no-simplify-indices"]) == 0
    assert "x[l_id*N + wg_id]" not in capsys.readouterr().out
    assert main(["compile", "asum_nvidia", "--local-size", "64"]) == 0
    assert "local (64,)" in capsys.readouterr().out
    assert main(["compile", "transpose", "--local-size", "x"]) == 2
    one_error_line(capsys.readouterr().err)
    assert main(["compile", "scal"]) == 1
    assert "high-level pattern" in one_error_line(capsys.readouterr().err)


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    one_error_line(capsys.readouterr().err)
    assert main(["frobnicate"]) == 2
    one_error_line(capsys.readouterr().err)


def test_reference_mismatch_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec_file = tmp_path / "wrong.py"
    spec_file.write_text(textwrap.dedent("""
        import numpy as np
        from liftkit.programs import PROGRAMS
        from liftkit.programs.registry import ProgramSpec

        base = PROGRAMS["asum"]
        wrong = ProgramSpec(name="wrong", summary="asum checked against a wrong reference",
                            source="test", build=base.build, make_inputs=base.make_inputs,
                            reference=lambda x: np.sum(np.abs(x)) + 1.0, sizes=base.sizes)
    """))
    assert main(["run", f"{spec_file}:wrong", "--size", "N=1024"]) == 1
    captured = capsys.readouterr()
    assert "DOES NOT MATCH" in captured.out
    assert "does not match" in one_error_line(captured.err)


def test_size_arg_parses() -> None:
    assert size_arg("N=1048576") == ("N", 1048576)
    assert size_arg(" M = 64 ") == ("M", 64)


def test_unknown_program_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "asm"]) == 1
    assert "did you mean asum" in one_error_line(capsys.readouterr().err)


def test_save_output_tuple_and_structured(tmp_path: Path) -> None:
    from liftkit.cli.run import save_output

    written = save_output((np.arange(3, dtype=np.float32), np.ones(2, np.int32)), str(tmp_path / "t"))
    assert written.endswith(".npz")
    with np.load(written) as z:
        assert z.files == ["out0", "out1"]
        np.testing.assert_array_equal(z["out1"], np.ones(2, np.int32))
    rec = np.zeros(4, dtype=[("f0", np.float32), ("f1", np.float32)])
    written = save_output(rec, str(tmp_path / "rec.npy"))
    assert np.load(written).dtype == rec.dtype


def test_compare_reports_max_error() -> None:
    from liftkit.cli.run import compare

    ok = compare(np.array([1.0], np.float32), np.float64(1.00001), rtol=1e-4, atol=1e-4)
    assert ok.ok and ok.max_abs_err < 1e-4
    bad = compare(np.array([1.0, 2.0]), np.array([1.0, 2.5]), rtol=1e-4, atol=1e-4)
    assert not bad.ok and bad.max_abs_err == pytest.approx(0.5)
    assert not compare(np.zeros(3), np.zeros(4), 1e-4, 1e-4).ok
    assert compare((np.ones(2), np.zeros(1)), (np.ones(2), np.zeros(1)), 1e-4, 1e-4).ok


@pytest.mark.parametrize("args, needle", [
    (["--suite", "jit", "--no-derived"], "argument --no-derived: does not apply to --suite jit"),
    (["--suite", "jit", "--no-references"], "argument --no-references: does not apply to --suite jit"),
    (["--suite", "blas", "--no-derived"], "argument --no-derived: does not apply to --suite blas"),
    (["--suite", "blas", "--device", "cpu", "--no-references"],
     "argument --no-references: does not apply to --suite blas"),
    (["--suite", "jit", "--dtypes", "float64"], "argument --dtypes: does not apply to --suite jit"),
    (["--dtypes", "float64"], "argument --dtypes: does not apply to --suite lift"),
    (["--suite", "blas", "--seed", "0"], "argument --seed: does not apply to --suite blas"),
    (["--suite", "jit", "--device", "gpu"],
     "argument --device: does not apply to --suite jit (the @jit benchmarks run on the CPU)"),
])
def test_bench_refuses_another_suites_options(args: list[str], needle: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An option only one suite reads is refused by the others, in one line naming the option
    and the suite, before any run (nothing written), instead of being silently ignored."""
    out = tmp_path / "results"
    assert main(["bench", *args, "--size-set", "tiny", "--out", str(out)]) == 2
    assert one_error_line(capsys.readouterr().err) == f"liftkit: error: {needle}"
    assert not out.exists()
