"""Search robustness: candidates are built and run in a worker process, so a kernel that
crashes the driver (a segfault, a trap) or hangs costs that candidate only — recorded in the
tuning database with its reason — and the search goes on with a fresh worker.

The crashing kernels are real: user functions whose OpenCL C writes through a null pointer,
executes a trap instruction, or never returns. On a CPU device each kills the process that
runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import OpenCLRunner, list_devices  # noqa: E402
from liftkit.backends.opencl.cache import KernelCache  # noqa: E402
from liftkit.codegen import compile_program  # noqa: E402
from liftkit.dsl import float32, fun, mapGlb, mapSeq, size  # noqa: E402
from liftkit.explore import (  # noqa: E402
    CandidateWorker,
    EvalSettings,
    Evaluator,
    Problem,
    RuleSpace,
    SearchSettings,
    TuningDB,
    WorkerCrash,
    search,
)
from liftkit.ir.nodes import user_fun  # noqa: E402
from liftkit.rewrite import Rule  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device (PoCL)")
N = size("N")

# the bodies read x so the compiler cannot hoist the fault out of the kernel
BODIES = {
    "ok": "return x + 1.0f;",
    "segv": "__global volatile float* p = (__global volatile float*)(ulong)(x != 12345.0f ? 0 : 8);"
            " *p = x; return x;",
    "trap": "if (x != 12345.0f) __builtin_trap(); return x;",
    "hang": "volatile int k = (x != 12345.0f); while (k) { } return x;",
}


def _fun(kind: str) -> Any:
    return user_fun(f"{kind}_one", [("x", float32)], float32, BODIES["ok"] if kind == "ok"
                    else BODIES[kind], lambda x: x + np.float32(1))


def _program(kind: str, low: bool = True) -> Any:
    f = _fun(kind)
    return fun([float32[N]], lambda xs: (mapGlb(f) if low else mapSeq(f)) << xs)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernels")


def test_worker_runs_like_the_runner_and_survives_crashes_and_hangs(cache: Path) -> None:
    xs = np.arange(64, dtype=np.float32)
    ok = compile_program(_program("ok"))
    want = OpenCLRunner("cpu", KernelCache(cache)).run(ok, xs)
    with CandidateWorker("cpu", cache_dir=cache, timeout=8) as w:
        np.testing.assert_array_equal(w.run(ok, xs), want)
        info = w.time(ok, xs, repeat=2)
        assert info.repeat == 2 and info.total_seconds > 0 and info.device is w.device
        for kind, words in (("segv", "SIGSEGV"), ("trap", "SIG"), ("hang", "timed out after 8 s")):
            with pytest.raises(WorkerCrash) as err:
                w.run(compile_program(_program(kind)), xs)
            assert words in str(err.value) and "running the kernels" in str(err.value), str(err.value)
            assert err.value.validity == "runtime-error"
            # the next job gets a fresh worker, which still has the device and the inputs
            np.testing.assert_array_equal(w.run(ok, xs), want)
        assert w.restarts == 3


def _variants(site: Any) -> list[dict[str, int]]:
    return [{"k": k} for k in range(4)] if type(site.f).__name__ == "Map" else []


def _lower(site: Any, k: int) -> Any:
    from liftkit.ir.nodes import FunCall

    kind = ("segv", "hang", "trap", "ok")[k]
    return FunCall(mapGlb(_fun(kind)), site.call.args)


def test_a_search_goes_on_past_crashing_and_hanging_candidates(cache: Path, tmp_path: Path) -> None:
    space = RuleSpace([Rule("lowerTo", "map f → mapGlb g (crash, hang, trap or ok)", _variants,
                            _lower, lowering=True)], [], "crashes")
    problem = Problem.from_program("crashy", _high(), {"N": 256})
    db = TuningDB(tmp_path / "t.sqlite")
    with CandidateWorker("cpu", cache_dir=cache, timeout=5) as w:
        ev = Evaluator(problem, w, EvalSettings(repeat=1))
        result = search(problem, space, ev, SearchSettings(budget=10, walks=4, max_choices=4), db)
    stored = {r.low_level: r for r in db.candidates(result.key)}
    assert len(stored) == 4, stored
    reasons = sorted(r.reason for r in stored.values() if not r.ok)
    assert len(reasons) == 3 and all(r.validity == "runtime-error" for r in stored.values() if not r.ok)
    assert any("SIGSEGV" in r for r in reasons) and any("timed out after 5 s" in r for r in reasons)
    assert result.best is not None and "ok_one" in result.best.low_level


def _high() -> Any:
    from liftkit.dsl import map as lmap

    f = _fun("ok")
    return fun([float32[N]], lambda xs: lmap(f) << xs)
