"""Fixtures shared by the test folders."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional

import pytest

_CUDA_STUB = Path(__file__).resolve().parents[1] / "benchmarks" / "jit" / "cuda_stub.py"


@pytest.fixture
def cuda_stub() -> ModuleType:
    """benchmarks/jit/cuda_stub.py, the stubbed CUDA driver the host-path tests (runtime, jit)
    count calls against without a GPU, loaded afresh for each test."""
    pytest.importorskip("cuda.bindings")
    spec = importlib.util.spec_from_file_location("lk_cuda_stub", _CUDA_STUB)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lk_cuda_stub"] = mod
    spec.loader.exec_module(mod)
    return mod


class _NVRTC:
    """Why NVRTC cannot compile here (cuda-python or its NVRTC library missing), asked once
    per test session, on the first compile."""

    def __init__(self) -> None:
        self._asked = False
        self._problem: Optional[str] = None

    def problem(self) -> Optional[str]:
        if not self._asked:
            self._asked = True
            try:
                import cuda.bindings.nvrtc  # noqa: F401 - the binding itself

                from liftkit.backends.cuda import nvrtc_version

                nvrtc_version()
            except Exception as err:  # noqa: BLE001 - ImportError, or no NVRTC library
                first = str(err).splitlines()[0] if str(err) else type(err).__name__
                self._problem = f"needs NVRTC ({first})"
        return self._problem


@pytest.fixture(scope="session")
def _nvrtc_here() -> _NVRTC:
    return _NVRTC()


@pytest.fixture
def compile_cuda(_nvrtc_here: _NVRTC) -> Callable[..., Any]:
    """`liftkit.backends.cuda.compile_cuda` for tests that compile generated CUDA C with NVRTC
    (no GPU needed). Where cuda-python or the NVRTC library is missing, the first call skips the
    test, so the checks of the source text before it still run."""

    def compile_(*args: Any, **kw: Any) -> Any:
        problem = _nvrtc_here.problem()
        if problem is not None:
            pytest.skip(problem)
        from liftkit.backends.cuda import compile_cuda as nvrtc_compile

        return nvrtc_compile(*args, **kw)

    return compile_
