"""Fixtures shared by the test folders."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
