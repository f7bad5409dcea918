"""benchmarks/jit/pressure.py (issue 14's memory-pressure demonstration) as a smoke test on the
CPU OpenCL device: arrays together 1.5x a pretended device memory all live, evicted and written
back while being made, uploaded again for their update; checksums and samples against NumPy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "jit" / "pressure.py"
pytestmark = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device")


def _script():
    spec = importlib.util.spec_from_file_location("lk_bench_pressure", _SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lk_bench_pressure"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_pressure_workload_of_one_and_a_half_device_memories_is_correct(capsys):
    out = _script().main(["--backend", "opencl", "--device-bytes", "6M", "--arrays", "10"])
    assert out["workload_over_device"] == pytest.approx(1.5, rel=1e-3)
    assert out["ok_checksums_update"] and out["ok_checksums_stored"] and out["ok_samples"]
    assert out["evictions_while_filling"] >= 3 and out["writebacks"] >= 4
    assert out["peak_device_bytes"] <= out["runtime_limit_bytes"]
    assert out["cpu_tasks"] == 0
    assert "results correct" in capsys.readouterr().out


def test_pressure_reference_sums_match_a_direct_numpy_sum():
    m = _script()
    n = 3 * m.PERIOD + 12345
    import numpy as np
    i = np.arange(n, dtype=np.int64)
    assert m.checksum(n, 4) == int(np.sum(m.values(i, 4) * ((i & 1023) + 1), dtype=np.uint64))
