"""`liftkit run`'s checks of sizes and input files (issue 11, defects 4 and 5): unknown size
names, sizes beyond memory, empty inputs, divisibility facts, dtypes and `--cast`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from liftkit.cli.main import main

PROGRAMS = textwrap.dedent("""
    from liftkit.dsl import *

    N = size("N")
    halves = fun([float32[N]], lambda x: join << map(map(neg)) << split(2) << x)
    even = fun([float32[2 * (N // 2)]], lambda x: map(neg) << x)
    ints = fun([int32[N]], lambda x: map(INT.neg) << x)
    pairs = fun([ArrayType(tuple_of(float32, float32), N)], lambda x: map(add) << x)
    outer = fun([float32[N], float32[N]], lambda x, y: map(lambda a: map(lambda b: mult(a, b)) << y) << x)
""")


@pytest.fixture()
def progs(tmp_path: Path) -> Path:
    path = tmp_path / "progs.py"
    path.write_text(PROGRAMS)
    return path


def error_of(argv: list[str], capsys: pytest.CaptureFixture[str], status: int = 1) -> str:
    assert main(argv) == status
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("liftkit: error: "), err
    return err


def save(tmp_path: Path, name: str, value: object) -> str:
    path = tmp_path / name
    if isinstance(value, tuple):
        np.savez(path, *value)
    else:
        np.save(path, value)
    return str(path)


# -- 4. sizes --------------------------------------------------------------------------------------
def test_unknown_size_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(["run", "asum", "--size", "n=1024"], capsys)
    assert "no size n" in err and "its sizes: N" in err and "did you mean N?" in err
    err = error_of(["run", "gemv", "--size", "K=8"], capsys)
    assert "its sizes: M, N" in err


def test_unknown_size_name_in_compile_and_explore(capsys: pytest.CaptureFixture[str]) -> None:
    assert "no size M" in error_of(["compile", "partial_dot", "--size", "M=4"], capsys)
    assert "no size X" in error_of(["explore", "asum", "--size", "X=4", "--budget", "1"], capsys)


def test_size_beyond_memory_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(["run", "asum", "--size", "N=1000000000000"], capsys)
    assert "3.64 TiB" in err and "memory" in err and "N=1000000000000" in err


def test_memory_check_counts_generated_inputs_and_result() -> None:
    from liftkit.cli.resolve import CliError, resolve
    from liftkit.cli.sizes import check_memory
    from liftkit.ir.typecheck import check_program

    res = resolve("dot")
    out = check_program(res.program)
    check_memory(res.program, out, {"N": 1000}, ["x", "y"], "dot", available=8004)
    with pytest.raises(CliError, match=r"needs 7.82 KiB .* \(x: 3.91 KiB\), but only 7.81 KiB"):
        check_memory(res.program, out, {"N": 1000}, ["x", "y"], "dot", available=8000)
    # inputs read from files are already in memory: only the generated ones count
    check_memory(res.program, out, {"N": 1000}, ["y"], "dot", available=4004)


def test_empty_input_is_refused_like_size_zero(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(["run", "asum", "--input", f"x={save(tmp_path, 'e.npy', np.zeros(0, np.float32))}"],
                   capsys)
    assert "is empty" in err and "at least 1" in err
    assert "at least 1" in error_of(["run", "asum", "--size", "N=0"], capsys, status=2)


def test_pattern_divisibility_is_checked_when_sizes_are_bound(
        progs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x5 = save(tmp_path, "x5.npy", np.arange(5, dtype=np.float32))
    err = error_of(["run", f"{progs}:halves", "--input", f"x={x5}"], capsys)
    assert "split 2 needs a length divisible by 2, but N = 5" in err and "N=6" in err
    # a bundled program's size rule is quoted, and no input is generated first
    err = error_of(["run", "partial_dot", "--size", "N=100", "--backend", "interpreter"], capsys)
    assert "split 128 needs a length divisible by 128, but N = 100" in err
    assert "size rule: N a multiple of 128" in err


def test_type_division_is_a_divisibility_fact(progs: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    x5 = save(tmp_path, "x5.npy", np.arange(5, dtype=np.float32))
    x4 = save(tmp_path, "x4.npy", np.arange(4, dtype=np.float32))
    err = error_of(["run", f"{progs}:even", "--input", f"x={x5}", "--size", "N=5"], capsys)
    assert "the type [float]_(2*(N/2)) of input x needs N divisible by 2, but N = 5" in err
    # 2*(5/2) = 4 elements would be accepted by the shapes alone
    err = error_of(["run", f"{progs}:even", "--input", f"x={x4}", "--size", "N=5"], capsys)
    assert "N divisible by 2" in err
    assert main(["run", f"{progs}:even", "--input", f"x={x4}", "--size", "N=4"]) == 0
    capsys.readouterr()


def test_result_too_large_for_memory(progs: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.cli import sizes

    x = save(tmp_path, "x.npy", np.ones(1 << 12, np.float32))
    real = sizes.available_memory
    try:
        sizes.available_memory = lambda: 1 << 20  # type: ignore[assignment]
        err = error_of(["run", f"{progs}:outer", "--input", f"x={x}", f"y={x}"], capsys)
    finally:
        sizes.available_memory = real  # type: ignore[assignment]
    assert "the result: 64 MiB" in err


# -- 5. dtypes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16, np.int64])
def test_other_dtypes_are_refused(dtype: type, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = save(tmp_path, "x.npy", np.ones(64, dtype))
    err = error_of(["run", "asum", "--input", f"x={path}"], capsys)
    assert f"holds {np.dtype(dtype)} values" in err and "takes float32" in err and "--cast" in err


def test_cast_converts_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = np.linspace(-1, 1, 64)
    path = save(tmp_path, "x.npy", x)
    assert main(["run", "asum", "--input", f"x={path}", "--cast", "--output",
                 str(tmp_path / "r.npy")]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"liftkit: note: input x: converted {path} from float64 to "
                                    f"float32 (--cast)")
    assert "float32 (64,)" in captured.out
    np.testing.assert_allclose(np.load(tmp_path / "r.npy")[0], np.abs(x).sum(), rtol=1e-5)


@pytest.mark.parametrize("values, dtype, problem", [
    (np.array([1e300, 1.0]), np.float32, "beyond the float32 range"),
    (np.array([1.5, 2.0]), np.int32, "not integers"),
    (np.array([np.nan, 2.0]), np.int32, "not integers"),
    (np.array([2**40, 1], np.int64), np.int32, "outside the int32 range"),
    (np.array([1 + 2j]), np.float32, "complex128 values cannot be converted"),
])
def test_cast_refuses_lossy_conversions(values: np.ndarray, dtype: type, problem: str,
                                        tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        progs: Path) -> None:
    path = save(tmp_path, "x.npy", values)
    prog = "asum" if dtype is np.float32 else f"{progs}:ints"
    assert problem in error_of(["run", prog, "--input", f"x={path}", "--cast"], capsys)


def test_int_program_takes_int32_exactly(progs: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = save(tmp_path, "x.npy", np.arange(8, dtype=np.int64))
    assert "holds int64 values" in error_of(["run", f"{progs}:ints", "--input", f"x={path}"], capsys)
    assert main(["run", f"{progs}:ints", "--input", f"x={path}", "--cast",
                 "--output", str(tmp_path / "r.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), -np.arange(8, dtype=np.int32))
    capsys.readouterr()


def test_tuple_inputs_are_checked_per_component(progs: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    a = np.arange(4, dtype=np.float32)
    ok = save(tmp_path, "ok.npz", (a, a))
    assert main(["run", f"{progs}:pairs", "--input", f"x={ok}"]) == 0
    capsys.readouterr()
    mixed = save(tmp_path, "mixed.npz", (a, a.astype(np.float64)))
    err = error_of(["run", f"{progs}:pairs", "--input", f"x={mixed}"], capsys)
    assert "x (component 1)" in err and "float64" in err
    rec = np.zeros(4, dtype=[("a", np.float64), ("b", np.float32)])
    err = error_of(["run", f"{progs}:pairs", "--input", f"x={save(tmp_path, 'rec.npy', rec)}"], capsys)
    assert "component 0" in err and "float64" in err
    one = save(tmp_path, "one.npz", (a,))
    assert "2 components" in error_of(["run", f"{progs}:pairs", "--input", f"x={one}"], capsys)
    plain = save(tmp_path, "plain.npy", a)
    assert "tuple of 2 arrays" in error_of(["run", f"{progs}:pairs", "--input", f"x={plain}"], capsys)
