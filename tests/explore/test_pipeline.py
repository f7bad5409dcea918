"""The search's pipeline (liftkit.explore.pipeline): host stages in worker processes, timing in
the driver, the same candidates in the same order whatever the number of workers."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from liftkit.backends.opencl import list_devices
from liftkit.explore import CandidateWorker, EvalSettings, Evaluator, SearchSettings, TuningDB, search
from liftkit.explore.pipeline import Bound, Pipeline, PipelineSettings

from tests.explore.test_explore import asum_problem, space

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device (PoCL)")

SETTINGS = SearchSettings(budget=10, walks=2, max_choices=3, seed=5)


def _fake_time(compiled: Any) -> float:
    """A deterministic stand-in timer: shorter kernels 'run faster'."""
    return 1e-6 * (len(compiled.source) + 100 * len(compiled.kernels))


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with CandidateWorker("cpu", cache_dir=tmp_path_factory.mktemp("kernels")) as w:
        yield w


def _run(worker: Any, workers: int, db: Any = None, measure: Any = _fake_time,
         settings: PipelineSettings | None = None) -> Any:
    problem = asum_problem(1 << 12)
    ev = Evaluator(problem, worker, EvalSettings(repeat=1), measure=measure)
    pipe = Pipeline(settings or PipelineSettings(workers=workers)) if workers else None
    return search(problem, space(), ev, SETTINGS, db, pipeline=pipe), pipe


def _trace(result: Any) -> list[tuple[Any, ...]]:
    return [(r.low_level, r.derivation, r.validity, r.time) for r in result.records]


def test_two_workers_find_what_one_worker_and_the_plain_search_find(worker: Any) -> None:
    plain, _ = _run(worker, 0)
    one, _ = _run(worker, 1)
    two, _ = _run(worker, 2)
    assert plain.best is not None and len(plain.records) >= 5
    assert _trace(one) == _trace(plain)
    assert _trace(two) == _trace(plain)
    assert two.best.derivation == plain.best.derivation  # type: ignore[union-attr]
    # the host stages were timed in the workers, timing here
    stages = two.records[-1].params["stages"]
    assert {"derive", "generate", "time"} <= set(stages)


def test_a_killed_worker_loses_no_finished_candidate(worker: Any, tmp_path: Path) -> None:
    want, _ = _run(worker, 0)
    calls = {"n": 0}
    holder: dict[str, Any] = {}

    def killing_timer(compiled: Any) -> float:
        calls["n"] += 1
        if calls["n"] == 2:  # mid-search: kill a host worker while it may hold jobs
            os.kill(holder["pipe"].engine.pids()[0], signal.SIGKILL)
        return _fake_time(compiled)

    problem = asum_problem(1 << 12)
    ev = Evaluator(problem, worker, EvalSettings(repeat=1), measure=killing_timer)
    pipe = Pipeline(PipelineSettings(workers=2))
    holder["pipe"] = pipe
    restarts: list[int] = []
    real_close = pipe.close

    def close() -> None:
        restarts.append(pipe.engine.restarts)  # type: ignore[union-attr]
        real_close()

    pipe.close = close  # type: ignore[method-assign]
    db = TuningDB(tmp_path / "t.sqlite")
    got = search(problem, space(), ev, SETTINGS, db, pipeline=pipe)
    assert calls["n"] >= 2 and restarts and restarts[0] >= 1
    assert _trace(got) == _trace(want)
    assert len(db.candidates(got.key)) == len(got.records)


def test_duplicates_are_timed_once_and_bound_skips_are_recorded(worker: Any) -> None:
    timed: list[str] = []

    def counting_timer(compiled: Any) -> float:
        timed.append(compiled.source)
        return _fake_time(compiled)

    res, _ = _run(worker, 1, measure=counting_timer)
    dups = [r for r in res.records if "duplicate_of" in r.params]
    assert len(timed) == len(set(timed))  # no kernel timed twice
    for r in dups:
        first = res.records[r.params["duplicate_of"]]
        assert first.source == r.source and first.time == r.time and r.ok

    # a bandwidth so low that no candidate can beat the first valid one: the rest are skipped
    slow = PipelineSettings(workers=1, bound=Bound(bandwidth_gbs=1e-9, calibrate=False))
    res, _ = _run(worker, 1, settings=slow)
    skipped = [r for r in res.records if r.validity == "skipped"]
    assert res.best is not None and skipped
    assert all("lower bound" in r.reason and r.params["lower_bound"] > 0 for r in skipped)
    first_ok = next(r.seq for r in res.records if r.ok)
    assert all(r.seq > first_ok for r in skipped)


def test_ray_cluster_finds_what_the_plain_search_finds(worker: Any) -> None:
    """A local Ray cluster of 2 CPUs: host stages in host actors, timing in the timing actor."""
    ray = pytest.importorskip("ray")
    from liftkit.explore import load_rule_space
    from liftkit.explore.distributed import RayEngine

    problem = asum_problem(1 << 12)
    ev = Evaluator(problem, worker, EvalSettings(repeat=1), measure=_fake_time)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        # the bundled rule set: the actors import it by name (the test's own rules live in a
        # module Ray's workers need not find)
        space_ = load_rule_space("default")
        want = search(problem, space_, ev, SETTINGS)
        pipe = Pipeline(PipelineSettings(), lambda s: RayEngine(s, "local", "cpu", "opencl", 60.0))
        got = search(problem, space_, ev, SETTINGS, pipeline=pipe)
    finally:
        ray.shutdown()
    assert got.best is not None and _trace(got) == _trace(want)


def test_ray_missing_is_one_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.cli.explore import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as where it is absent
    assert main(["asum", "--ray", "auto", "--budget", "2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["liftkit: error: --ray needs Ray, which is not installed: "
                   "pip install 'liftkit[distributed]'"]


def test_report_has_stage_rates_time_to_95_percent_and_the_seeds_plot(worker: Any, tmp_path: Path) -> None:
    from liftkit.explore.report import time_to_fraction, write_report

    results = [_run(worker, 2)[0]]
    files = write_report(results, [5], tmp_path, "asum", 2)
    doc = json.loads((tmp_path / "report.json").read_text())
    row = doc["searches"][0]
    assert row["candidates"] == len(results[0].records) and row["candidates_per_second"] > 0
    assert row["stages"]["derive"]["candidates"] > 0 and row["stages"]["time"]["per_worker_per_second"] > 0
    t95 = time_to_fraction(results[0])
    best = results[0].best
    assert t95 is not None and results[0].records[t95["candidate"] - 1].time * 0.95 <= best.time  # type: ignore[union-attr]
    assert "| seed | workers |" in (tmp_path / "report.md").read_text()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "search.png").stat().st_size > 1000 and len(files) == 3


def test_numeric_parameters_tuned_by_tpe_and_by_random_sampling(worker: Any, tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    from liftkit.explore.tune import tune_numeric

    db = TuningDB(tmp_path / "t.sqlite")
    res, _ = _run(worker, 0, db=db)
    problem = asum_problem(1 << 12)
    ev = Evaluator(problem, worker, EvalSettings(repeat=1), measure=_fake_time)
    for sampler in ("tpe", "random"):
        t = tune_numeric(problem, space(), ev, res.best, sampler, 4, seed=1, db=db, key=res.key,
                         search_id=res.search_id)
        assert t["sampler"] == sampler and t["trials"] == 4 and len(t["curve_ms"]) == 4
        # the first trial is the derivation as found: tuning never reports worse than it
        assert t["best_ms"] is not None and t["best_ms"] <= res.best.time * 1e3 + 1e-12  # type: ignore[union-attr]
    assert len(db.searches(res.key)) == 3


def test_an_interrupted_search_resumes_without_losing_or_rerunning_candidates(
        worker: Any, tmp_path: Path) -> None:
    want, _ = _run(worker, 0)
    db = TuningDB(tmp_path / "t.sqlite")
    timed: list[int] = []

    def interrupted(compiled: Any) -> float:
        timed.append(1)
        if len(timed) == 4:
            raise KeyboardInterrupt  # the user's Ctrl-C (or a killed machine) mid-search
        return _fake_time(compiled)

    problem = asum_problem(1 << 12)
    with pytest.raises(KeyboardInterrupt):
        search(problem, space(), Evaluator(problem, worker, EvalSettings(repeat=1), measure=interrupted),
               SETTINGS, db, pipeline=Pipeline(PipelineSettings(workers=2)))
    (info,) = db.searches(want.key)
    kept = db.candidates(want.key, info.search_id)
    assert len(kept) >= 3 and not db.is_finished(info.search_id)
    from liftkit.cli.explore import _previous

    same = argparse.Namespace(seed=SETTINGS.seed, budget=SETTINGS.budget, walks=SETTINGS.walks,
                              choices=SETTINGS.max_choices, seconds=None)
    assert _previous(db, want.key, same, "test") == (info.search_id, False)  # tune-suite resumes it

    timed.clear()
    ev = Evaluator(problem, worker, EvalSettings(repeat=1), measure=lambda c: timed.append(1) or _fake_time(c))
    got = search(problem, space(), ev, SETTINGS, db, pipeline=Pipeline(PipelineSettings(workers=2)),
                 resume=info.search_id)
    assert _trace(got) == _trace(want) and db.is_finished(info.search_id)
    assert [r.created for r in got.records[:len(kept)]] == [r.created for r in kept]
    assert len(timed) <= sum(1 for r in want.records[len(kept):] if r.ok)  # the kept ones not re-timed
    assert len(db.candidates(want.key, info.search_id)) == len(got.records)
    assert _previous(db, want.key, same, "test") == (info.search_id, True)  # and then skips it


def test_a_runner_the_workers_cannot_clone_checks_and_times_in_the_search_process(worker: Any) -> None:
    """As with CUDA in the search's process: the workers derive and generate, the search's
    process builds, checks and times; the candidates are the same."""
    from liftkit.backends.opencl import KernelCache, OpenCLRunner

    plain, _ = _run(worker, 0)
    problem = asum_problem(1 << 12)
    ev = Evaluator(problem, OpenCLRunner("cpu", KernelCache(disk=False)), EvalSettings(repeat=1),
                   measure=_fake_time)
    got = search(problem, space(), ev, SETTINGS, pipeline=Pipeline(PipelineSettings(workers=2)))
    assert _trace(got) == _trace(plain)
    assert all("check" in r.params["stages"] for r in got.records
               if r.validity in ("ok", "wrong-result") and "check_sizes" in r.params)
