"""benchmarks/derive_suite.py: what the GPU suite run relies on (a search that overruns is
stopped with its children and the run goes on; per-program limits; the searches' list)."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _suite():
    spec = importlib.util.spec_from_file_location("derive_suite", ROOT / "benchmarks" / "derive_suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_an_overrunning_search_is_stopped_with_its_children_and_its_output_kept() -> None:
    ds = _suite()
    code = ("import subprocess, sys, time; print('started', flush=True); "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)")
    t0 = time.monotonic()
    out, rc = ds.run_search([sys.executable, "-c", code], wall=1.5)
    assert rc is None and "started" in out
    assert time.monotonic() - t0 < 15
    out, rc = ds.run_search([sys.executable, "-c", "print('done')"], wall=30)
    assert rc == 0 and out.strip() == "done"


def test_limits_per_program_and_the_suites_searches() -> None:
    ds = _suite()
    assert ds.per_program("atax=30, gesummv=40.5") == {"atax": 30.0, "gesummv": 40.5}
    assert ds.per_program(None) == {}
    large = ds.searches("large", None)
    assert ("md", {"N": 12288, "M": 128}) in large and ("md", {"N": 73728, "M": 128}) in large
    assert len(large) == len({(n, tuple(sorted(s.items()))) for n, s in large}) == 16
    assert ds.searches("large", ["gemv_clblast"]) == [("gemv", {"M": 8192, "N": 8192})]
