"""Compiler and driver output of OpenCL builds stays off the terminal unless asked for (issue 11,
defect 7): pyopencl's CompilerWarning and what the driver prints on fd 2 ("1 warning
generated.") are logged on `liftkit.opencl.build`; PYOPENCL_COMPILER_OUTPUT lets them through."""

from __future__ import annotations

import logging
import os
import uuid
import warnings

import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl.buildlog import quiet_build  # noqa: E402
from liftkit.backends.opencl.cache import KernelCache, build_from_source  # noqa: E402
from liftkit.backends.opencl.devices import OpenCLError, build_problem, select_device  # noqa: E402

# casts a pointer to a smaller integer: every clang-based OpenCL compiler warns, and it builds
WARNING_SOURCE = ("kernel void noisy(global float* x) { float* p = (float*)1; "
                  "x[get_global_id(0)] = (float)(int)p; }")


def _device():
    try:
        d = select_device("cpu")
    except OpenCLError:
        pytest.skip("no CPU OpenCL device")
    if build_problem(d) is not None:
        pytest.skip(f"the CPU device cannot build here: {build_problem(d)}")
    return d


def test_driver_prints_on_stderr_are_logged_not_shown(capfd: pytest.CaptureFixture[str],
                                                      caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    with caplog.at_level(logging.INFO, logger="liftkit.opencl.build"):
        with quiet_build("test build"):
            os.write(2, b"3 warnings generated.\n")
    assert capfd.readouterr().err == ""
    assert any("3 warnings generated." in r.getMessage() for r in caplog.records)


def test_driver_prints_pass_with_pyopencl_compiler_output(capfd: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    with quiet_build("test build"):
        os.write(2, b"3 warnings generated.\n")
    assert "3 warnings generated." in capfd.readouterr().err


def test_a_build_with_warnings_is_quiet(capfd: pytest.CaptureFixture[str],
                                        caplog: pytest.LogCaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    d = _device()
    ctx = cl.Context([d.cl_device])
    source = WARNING_SOURCE + f"\n// {uuid.uuid4().hex}\n"  # in no cache yet (pyopencl has one)
    with caplog.at_level(logging.DEBUG, logger="liftkit.opencl.build"), \
            warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        cache = KernelCache(tmp_path, disk=True)
        cache.get(ctx, d, source)
        cache.clear_memory()
        cache.get(ctx, d, source)  # the binary from disk: its load is quiet too
    assert [str(w.message) for w in shown] == []  # pytest would catch them before stderr
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert cache.stats().disk_hits == 1
    assert any("build log" in r.getMessage() and "warning" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_pyopencl_compiler_output_shows_the_warning(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path) -> None:
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    d = _device()
    ctx = cl.Context([d.cl_device])
    with pytest.warns(cl.CompilerWarning):
        build_from_source(ctx, d, WARNING_SOURCE + f"\n// {uuid.uuid4().hex}\n")


def test_other_warnings_are_not_swallowed() -> None:
    with pytest.warns(UserWarning, match="not a compiler's"):
        with quiet_build("test build"):
            warnings.warn("not a compiler's", UserWarning)


def test_stderr_can_be_kept_for_a_log_reader(capfd: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's worker keeps fd 2: its log holds a crashing driver's last words."""
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    monkeypatch.setenv("LIFTKIT_DRIVER_STDERR", "keep")
    with quiet_build("test build"):
        os.write(2, b"driver: about to crash\n")
    assert "about to crash" in capfd.readouterr().err
