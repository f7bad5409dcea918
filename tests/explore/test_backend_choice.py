"""The backend as part of the search (`explore --backend any`): the tuning database's backend
column (new files, old files migrated on write and read as they are, committed files never
rewritten), the choice of the faster backend per candidate, the per-backend keys `run --tuned`
looks up, and `any` meaning OpenCL where no CUDA device is.

Without a GPU the CUDA side is a test double at the selection layer only: an OpenCL runner on
the CPU device under the name "cuda" (its own fingerprint, so its own key), its times given by
a stand-in timer. The real CUDA path is the GPU-marked test at the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices  # noqa: E402
from liftkit.explore import (  # noqa: E402
    EvalSettings, Evaluator, Record, SearchSettings, TuningDB, load_rule_space, make_problem,
    search,
)
from liftkit.explore.backends import BothBackends, cuda_twin  # noqa: E402
from liftkit.explore.db import _SCHEMA  # noqa: E402
from liftkit.rewrite import Choice  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="no OpenCL CPU device")
REPO = Path(__file__).resolve().parents[2]


class Renamed:
    """An OpenCL runner on the CPU under another device fingerprint: the 'cuda' backend of the
    selection tests (everything but the name is the real OpenCL runner)."""

    def __init__(self, inner: OpenCLRunner, platform: str = "fake-cuda") -> None:
        self.inner = inner
        self.device = dataclasses.replace(inner.device, platform=platform)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> OpenCLRunner:
    if not HAS_CPU:
        pytest.skip("no OpenCL CPU device")
    return OpenCLRunner("cpu", KernelCache(tmp_path_factory.mktemp("kernels")))


def both(runner: OpenCLRunner, problem: Any, opencl_s: float, cuda_s: float) -> BothBackends:
    settings = EvalSettings(repeat=1)
    return BothBackends({
        "opencl": Evaluator(problem, runner, settings, measure=lambda c: opencl_s),
        "cuda": Evaluator(problem, Renamed(runner), settings, measure=lambda c: cuda_s)})


# ---------------------------------------------------------------------------------------------
# the database


def _old_database(path: Path) -> None:
    """A database as liftkit wrote them before the backend column: one OpenCL and one CUDA key."""
    schema = _SCHEMA.replace(",\n    backend TEXT NOT NULL DEFAULT 'opencl'", "")
    assert "backend" not in schema
    with sqlite3.connect(path) as conn:
        conn.executescript(schema)
        conn.execute("PRAGMA journal_mode = WAL")
        for key, device in (("k-ocl", "NVIDIA CUDA|NVIDIA H100|580"), ("k-cuda", "cuda|NVIDIA H100|sm9.0|driver13000")):
            conn.execute("INSERT INTO keys VALUES (?, 'asum', 'p', '{}', ?, 0)", (key, device))
            conn.execute("INSERT INTO candidates (key, search_id, seq, step, derivation, low_level, "
                         "params, time, validity, reason, source, created) VALUES "
                         "(?, 's', 0, 0, '[]', 'prog', '{}', 0.001, 'ok', '', '', 0)", (key,))
    conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_old_database_reads_without_writing_and_migrates_on_write(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_database(path)
    before = _digest(path)
    with TuningDB(path) as db:  # a lookup: read-only, the backend derived from the device
        assert db.best("k-ocl").backend == "opencl"  # type: ignore[union-attr]
        assert db.best("k-cuda").backend == "cuda"  # type: ignore[union-attr]
        assert [k.key for k in db.keys()] == ["k-ocl", "k-cuda"]
        assert db.bandwidth("dev", 1 << 20) is None  # a table the old file lacks
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]  # no -wal, no -shm

    with TuningDB(path) as db:  # the first write adds the column, old rows keep their backend
        db.register_key("k-new", "asum", "p", {}, "cpu|x|1")
        rows = dict(db.conn.execute("SELECT key, backend FROM candidates").fetchall())
        assert rows == {"k-ocl": "opencl", "k-cuda": "cuda"}
        db.insert(Record((Choice("mapSeq", (0,)),), "prog2", "ok", 0.5, key="k-new",
                         search_id="s2", backend="cuda"))
        assert db.best("k-new").backend == "cuda"  # type: ignore[union-attr]
        assert db.best("k-cuda").backend == "cuda"  # type: ignore[union-attr]


def test_committed_databases_are_read_without_being_rewritten(tmp_path: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "*.sqlite"], cwd=REPO, capture_output=True,
                            text=True, check=False).stdout.split()
    if not listed:
        pytest.skip("not a git checkout")
    for name in listed:
        copy = tmp_path / Path(name).name.replace(".sqlite", f"-{len(list(tmp_path.iterdir()))}.sqlite")
        shutil.copyfile(REPO / name, copy)
        before = _digest(copy)
        with TuningDB(copy) as db:
            infos = list(db.keys())
            assert infos, name
            for info in infos:
                rec = db.best(info.key)
                if rec is not None:
                    assert rec.backend == ("cuda" if info.device.startswith("cuda|") else "opencl")
                db.candidates(info.key)
        assert _digest(copy) == before, name
        assert not list(tmp_path.glob("*-wal")) and not list(tmp_path.glob("*-shm")), name


def test_a_record_refuses_an_unknown_backend() -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        Record((), "p", "ok", 1.0, backend="metal")


# ---------------------------------------------------------------------------------------------
# which devices


@dataclasses.dataclass(frozen=True)
class _Dev:
    name: str
    is_gpu: bool = True
    label: str = "X / dev"


def test_a_cuda_device_has_the_same_filter_limits_as_its_opencl_twin() -> None:
    """On the H100 `--backend any` timed single-work-group candidates on CUDA (640 ms each)
    that OpenCL's too_few_work_items filter had rejected: CUDA devices reported no compute units."""
    from liftkit.backends.cuda.devices import Device as CudaDevice
    from liftkit.explore import DeviceLimits

    h100 = CudaDevice(ordinal=0, name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0),
                      driver_version=13000, multiprocessors=132, max_threads_per_block=1024,
                      max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535),
                      shared_memory_per_block=49152, total_memory=80 << 30)
    assert DeviceLimits.from_device(h100) == DeviceLimits(True, 49152, 1024, 132)


def test_cuda_twin_is_the_same_gpu_by_name() -> None:
    h100 = _Dev("NVIDIA H100 80GB HBM3")
    assert cuda_twin(h100, [_Dev("NVIDIA A100"), _Dev("NVIDIA H100 80GB HBM3")])[0].name == h100.name
    assert cuda_twin(h100, [])[1] == "no CUDA device here"
    assert "no CUDA device is NVIDIA H100" in cuda_twin(h100, [_Dev("NVIDIA A100")])[1]
    assert "not a GPU" in cuda_twin(_Dev("EPYC", is_gpu=False, label="Intel / EPYC"), [h100])[1]


# ---------------------------------------------------------------------------------------------
# the search over both


@needs_cpu
@pytest.mark.parametrize("workers", [0, 1])
def test_each_candidate_is_recorded_with_the_faster_backend(runner: OpenCLRunner, tmp_path: Path,
                                                            workers: int) -> None:
    from liftkit.explore.pipeline import Pipeline, PipelineSettings

    problem = make_problem("asum", {"N": 4096})
    ev = both(runner, problem, opencl_s=2e-3, cuda_s=1e-3)
    db = TuningDB(tmp_path / "t.sqlite")
    pipeline = Pipeline(PipelineSettings(workers=1, dedup=False)) if workers else None
    result = search(problem, load_rule_space("default"), ev,
                    SearchSettings(budget=4, walks=1, max_choices=3, seed=1), db, False, pipeline)
    assert result.best is not None and result.best.backend == "cuda"
    assert result.best.time == pytest.approx(1e-3)
    ok = [r for r in result.records if r.ok]
    assert ok and all(r.backend == "cuda" for r in ok)
    for r in ok:  # both backends' outcomes kept with the winner
        assert r.params["backends"]["opencl"]["time"] == pytest.approx(2e-3)
    fps = ev.fingerprints()
    assert fps["opencl"] != fps["cuda"]
    cuda_key, ocl_key = problem.key(fps["cuda"]), problem.key(fps["opencl"])
    assert result.key == ocl_key  # the search is filed under the primary device
    assert db.best(cuda_key).backend == "cuda" and db.best(ocl_key) is None  # type: ignore[union-attr]
    assert len(db.candidates(result.key, result.search_id)) == len(result.records)


@needs_cpu
def test_a_failure_on_both_keeps_both_reasons(runner: OpenCLRunner) -> None:
    problem = make_problem("asum", {"N": 4096})
    ev = both(runner, problem, 1e-3, 1e-3)
    fail = {"opencl": Record((), "p", "compile-error", reason="refused in OpenCL"),
            "cuda": Record((), "p", "wrong-result", reason="at N=1024: 3 differ")}
    rec = ev.choose(fail)
    assert rec.validity == "wrong-result" and rec.backend == "cuda"
    assert "opencl: compile-error (refused in OpenCL)" in rec.reason and "cuda: wrong-result" in rec.reason
    one = ev.choose({"opencl": Record((), "p", "ok", 2e-3), "cuda": fail["cuda"]})
    assert one.backend == "opencl" and one.ok


@needs_cpu
def test_run_tuned_uses_the_backend_that_won(runner: OpenCLRunner, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import liftkit.cli.explore as cx
    from liftkit.cli.resolve import resolve

    problem = make_problem("asum", {"N": 4096})
    db_path = tmp_path / "t.sqlite"
    for ocl_s, cuda_s, want in ((2e-3, 1e-3, "cuda"), (1e-3, 3e-3, "opencl")):
        if db_path.exists():
            db_path.unlink()
        ev = both(runner, problem, ocl_s, cuda_s)
        search(problem, load_rule_space("default"), ev, SearchSettings(budget=3, walks=1, seed=1),
               TuningDB(db_path))
        devices = {"opencl": runner.device, "cuda": Renamed(runner).device}
        monkeypatch.setattr(cx, "lookup_devices", lambda backend, spec: devices)
        found = cx.tuned_choice(resolve("asum"), {"N": 4096}, "cpu", str(db_path), "any")
        assert found.backend == want
        assert f"on {want} (" in capsys.readouterr().err
    before = _digest(db_path)
    cx.tuned_choice(resolve("asum"), {"N": 4096}, "cpu", str(db_path), "any")
    assert _digest(db_path) == before  # a lookup writes nothing


def _spread(base: float, salt: str) -> Any:
    """A stand-in timer giving each kernel source its own time in [base, 2·base) (the salt: an
    order of its own)."""
    return lambda c: base * (1 + int(hashlib.md5((salt + c.source).encode()).hexdigest()[:4],
                                     16) / 65536)


@needs_cpu
def test_a_one_backend_lookup_sees_the_candidates_the_other_backend_won(
        runner: OpenCLRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """After a search over both backends, the best candidate for one backend is the fastest
    of every candidate timed on it, including those stored under the other backend's key
    because they were faster there (their time on this backend from `params.backends`):
    `run --tuned --backend opencl` runs the best OpenCL candidate found, and says the other
    backend ran it faster; `auto` still picks the overall winner."""
    import liftkit.cli.explore as cx
    from liftkit.cli.resolve import resolve
    from liftkit.explore.tuned import best_record

    problem = make_problem("asum", {"N": 4096})
    settings = EvalSettings(repeat=1)
    fake = Renamed(runner, platform="cuda")  # a `cuda|` fingerprint, as a CUDA device has
    ev = BothBackends({"opencl": Evaluator(problem, runner, settings, measure=_spread(1e-3, "o")),
                       "cuda": Evaluator(problem, fake, settings, measure=_spread(0.5e-3, "c"))})
    db_path = tmp_path / "t.sqlite"
    result = search(problem, load_rule_space("default"), ev,
                    SearchSettings(budget=6, walks=1, max_choices=3, seed=2), TuningDB(db_path))
    ok = [r for r in result.records if r.ok]
    assert len({r.low_level for r in ok}) > 1 and all(r.backend == "cuda" for r in ok)
    db = TuningDB(db_path)
    devices = {"opencl": runner.device, "cuda": fake.device}
    for b, dev in devices.items():
        want = min(ok, key=lambda r: r.params["backends"][b]["time"])
        got = db.best_measured(result.keys[b], b)
        assert got is not None and got.backend == b and got.key == result.keys[b]
        assert got.time == pytest.approx(want.params["backends"][b]["time"])
        assert got.low_level == want.low_level
        rec = best_record(problem.program, {"N": 4096}, dev, db)  # the backend from the key
        assert rec is not None and rec.time == got.time
    assert db.best(result.keys["opencl"]) is None  # what OpenCL won: nothing
    # the best OpenCL candidate is not CUDA's best
    assert db.best_measured(result.keys["opencl"], "opencl").low_level != result.best.low_level
    assert "won_elsewhere" in db.best_measured(result.keys["opencl"], "opencl").params
    assert "won_elsewhere" not in db.best_measured(result.keys["cuda"], "cuda").params
    before = _digest(db_path)
    monkeypatch.setattr(cx, "lookup_devices", lambda backend, spec: {
        b: d for b, d in devices.items() if backend in ("auto", "any", b)})
    found = cx.tuned_choice(resolve("asum"), {"N": 4096}, "cpu", str(db_path), "opencl")
    err = capsys.readouterr().err
    best_ocl = db.best_measured(result.keys["opencl"], "opencl")
    assert found.backend == "opencl" and found.derivation == best_ocl.derivation
    assert f"from the tuning database {db_path}, on opencl ({best_ocl.time * 1e3:.4g} ms; cuda ran " \
           "it in" in err
    found = cx.tuned_choice(resolve("asum"), {"N": 4096}, "cpu", str(db_path), "any")
    assert found.backend == "cuda" and f"on cuda ({result.best.time * 1e3:.4g} ms; opencl " in \
        capsys.readouterr().err
    assert _digest(db_path) == before  # lookups write nothing


def test_exported_derivations_are_each_devices_best_of_a_search_over_both() -> None:
    """The H100 search over both backends (results/issue12/backend-any): the derivation
    exported for the CUDA key is the fastest timed on CUDA, one OpenCL won (0.043 ms on CUDA),
    not the fastest CUDA won (0.21 ms); the committed file is only read."""
    from liftkit.explore import bundled

    path = REPO / "results/issue12/backend-any/t.sqlite"
    before = _digest(path)
    db = TuningDB(path)
    timed = [r for info in db.keys() for r in db.candidates(info.key) if r.ok]
    exported = {d.device.split("|")[0]: d for d in bundled.from_db(db, "gpu")}
    cuda = exported["cuda"]
    best = min(timed, key=lambda r: r.params["backends"]["cuda"]["time"])
    assert best.backend == "opencl" and cuda.low_level == best.low_level
    assert cuda.time == pytest.approx(best.params["backends"]["cuda"]["time"])
    assert cuda.time < min(r.time for r in timed if r.backend == "cuda") / 4
    db.close()
    assert _digest(path) == before


@needs_cpu
def test_cli_explore_any_without_cuda_means_opencl_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from liftkit.cli.main import main

    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "t.sqlite"
    rc = main(["explore", "asum", "--device", "cpu", "--backend", "any", "--size", "N=4096",
               "--budget", "3", "--workers", "0", "--quiet", "--db", str(db), "--out", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.err.count("--backend any:") == 1 and "OpenCL only" in captured.err
    assert "on opencl" in captured.out
    with TuningDB(db) as tdb:
        assert {r[0] for r in tdb.conn.execute("SELECT backend FROM candidates")} == {"opencl"}
    import gc

    gc.collect()  # the search's connection, closed: its -wal folded into the file
    files = sorted(p.name for p in tmp_path.glob("t.sqlite*"))
    before = _digest(db)
    rc = main(["run", "asum", "--device", "cpu", "--backend", "any", "--tuned", "--size", "N=4096",
               "--db", str(db)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "on opencl" in captured.err and captured.err.count("--backend any:") == 1
    assert _digest(db) == before  # read, not written
    assert sorted(p.name for p in tmp_path.glob("t.sqlite*")) == files == ["t.sqlite"]
    # compile --tuned takes `any` as run does: the winner's language, said once on stderr
    rc = main(["compile", "asum", "--device", "cpu", "--backend", "any", "--tuned", "--size",
               "N=4096", "--db", str(db)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "on opencl" in captured.err and captured.err.count("--backend any:") == 1
    assert "kernel(s) in opencl" in captured.out and "kernel void" in captured.out
    assert _digest(db) == before
    for argv, needle in ((["--backend", "any"], "argument --backend: any means the backend a "
                          "tuned derivation won on; add --tuned"),
                         (["--backend", "any", "--tuned", "--ptx"], "the tuned derivation won "
                          "on opencl: use --backend cuda")):
        assert main(["compile", "asum", "--device", "cpu", "--size", "N=4096", "--db", str(db),
                     *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("liftkit: error: argument ") and needle in err, err


@pytest.mark.gpu
def test_explore_any_on_the_gpu_times_both_backends(tmp_path: Path) -> None:
    """On a CUDA GPU: every timed candidate has both backends' outcomes, and --tuned runs the
    winner on its backend."""
    from liftkit.backends.cuda import cuda_available
    from liftkit.explore.backends import AnyBackendRunners

    if not cuda_available():
        pytest.skip("no CUDA GPU")
    problem = make_problem("asum", {"N": 1 << 20})
    with AnyBackendRunners("gpu", 60.0) as runners:
        assert runners.cuda is not None, runners.note
        ev = runners.evaluator(problem, EvalSettings(repeat=3))
        db = TuningDB(tmp_path / "t.sqlite")
        result = search(problem, load_rule_space("gpu"), ev,
                        SearchSettings(budget=8, walks=1, max_choices=4, seed=0), db)
    assert result.best is not None
    timed = [r for r in result.records if r.ok]
    assert all(set(r.params["backends"]) == {"opencl", "cuda"} for r in timed)
    assert {r.backend for r in timed} <= {"opencl", "cuda"}
    print("winners:", {b: sum(r.backend == b for r in timed) for b in ("opencl", "cuda")},
          "best", result.best.backend, result.best.time)
