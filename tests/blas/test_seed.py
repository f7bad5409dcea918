"""Seeded tuning (`liftkit.blas.seed`, `liftkit blas tune --seed`) on the CPU device: another
device's profile picks which variants a size class explores; every one is measured here."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, ProfileError, Session, Variant
from liftkit.blas.codelets import space_at
from liftkit.blas.profile import Entry, file_name
from liftkit.blas.seed import find_seed, seeded_space, seeded_variants
from liftkit.blas.tune import sizes_for, tune
from liftkit.cli.main import main

SGEMM, TRANSPOSE = Kind("mm", "float32", "NN"), Kind("transpose", "float32")
SMALL = {"M": 64, "N": 64, "K": 64}
# the seed's ranking of SGEMM small, fastest first: a CUDA-only codelet (cannot run on the CPU
# device: a seed is never copied, its variants are measured), then two the CPU device derives
ASYNC = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
TILES = Variant.of("tiles", tm=32, tn=32, tk=16, rm=2, rn=2, w=1)
GLB = Variant.of("glb")
LAST = Variant.of("tiles", tm=16, tn=16, tk=16, rm=1, rn=1, w=1)


def other_device(device_type: str = "cpu", fingerprint: str = "other|seed CPU|1") -> Profile:
    seed = Profile(fingerprint, "OpenCL / seed CPU", device_type)
    seed.add([Entry(SGEMM, "small", SMALL, v, 1e-6, rate) for v, rate in
              ((GLB, 500.0), (ASYNC, 9000.0), (LAST, 100.0), (TILES, 800.0))])
    # a guarded form and a plan through another derivation: follow-ups', not the class's
    seed.add([Entry(SGEMM, "small", {"M": 40, "N": 40, "K": 40},
                    Variant.of("edge-tiles", tm=32, tn=32, tk=16, rm=2, rn=2, w=1), 1e-6, 1e4),
              Entry(SGEMM, "small", SMALL, Variant.of("glb"), 1e-6, 1e5, via="split")])
    return seed


def test_seeded_variants_are_the_seeds_fastest_of_the_class() -> None:
    seed = other_device()
    assert seeded_variants(seed, SGEMM, "small", 3) == [ASYNC, TILES, GLB]
    assert seeded_variants(seed, SGEMM, "medium") is None
    space = space_at(SGEMM, "cpu", "opencl", SMALL)
    assert seeded_space(seed, SGEMM, "small", space, 2) == [ASYNC, TILES]
    assert seeded_space(seed, SGEMM, "medium", space) == space  # nothing seeded: everything
    assert seeded_space(None, SGEMM, "small", space) == space


def test_seeded_tune_measures_the_seeds_choices_here(session: Session) -> None:
    """SGEMM small explores the seed's 3 fastest (the CUDA-only one fails here and is not an
    entry; the other two carry this device's own rates); transpose small, which the seed has
    not measured, explores its whole space."""
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    trials: list[Any] = []
    tune(session, [SGEMM, TRANSPOSE], ["small"], prof, progress=False, peaks=None,
         edges=False, seed=other_device(), seed_top=3, on_trial=trials.append)
    measured = [t.variant for t in trials if t.kind == SGEMM]
    assert measured == [ASYNC, TILES, GLB]
    assert trials[0].error and not trials[1].error and not trials[2].error
    assert {e.variant for e in prof.ranked(SGEMM, "small")} == {TILES, GLB}
    for e in prof.ranked(SGEMM, "small"):  # this device's timing, not the seed's figure
        t = next(t for t in trials if t.variant == e.variant)
        assert e.rate == t.rate and e.rate not in (800.0, 500.0) and e.sizes == SMALL
    assert not prof.guarded(SGEMM, "small") and not prof.at_sizes(SGEMM, SMALL, "split")
    space = space_at(TRANSPOSE, "cpu", "opencl", sizes_for(TRANSPOSE, "small", "cpu"))
    assert [t.variant for t in trials if t.kind == TRANSPOSE] == space
    assert prof.notes["seeded"]["other|seed CPU|1"] == {
        "label": "OpenCL / seed CPU", "classes": [f"{SGEMM}|small"], "top": 3}
    # resuming measures nothing again
    again: list[Any] = []
    tune(session, [SGEMM, TRANSPOSE], ["small"], prof, progress=False, peaks=None,
         edges=False, seed=other_device(), seed_top=3, on_trial=again.append)
    assert again == []


def test_find_seed_by_file_or_name(tmp_path: Path) -> None:
    cpu = other_device()
    cpu.save(tmp_path / "a" / file_name(cpu.fingerprint))
    gpu = other_device("gpu", "cuda|seed GPU|sm9.0|driver13000")
    gpu.label = "CUDA / seed GPU (device 0)"
    gpu.save(tmp_path / "b" / file_name(gpu.fingerprint))
    dirs = [tmp_path / "a", tmp_path / "b"]
    assert find_seed("seed", "opencl", "cpu", dirs).fingerprint == cpu.fingerprint
    assert find_seed("SEED gpu", "cuda", "gpu", dirs).fingerprint == gpu.fingerprint
    path = tmp_path / "b" / file_name(gpu.fingerprint)
    assert find_seed(str(path), "cuda", "gpu").fingerprint == gpu.fingerprint
    with pytest.raises(ProfileError, match="0 stored cuda gpu profiles match"):
        find_seed("H100", "cuda", "gpu", dirs)
    with pytest.raises(ProfileError, match="is a cuda gpu profile; this run tunes a opencl cpu"):
        find_seed(str(path), "opencl", "cpu")
    twin = other_device(fingerprint="other|seed CPU|2")
    twin.save(tmp_path / "a" / file_name(twin.fingerprint))
    with pytest.raises(ProfileError, match="2 stored opencl cpu profiles match"):
        find_seed("seed", "opencl", "cpu", dirs)


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def test_cli_tune_with_a_seed(session: Session, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    seed_file = tmp_path / "seed.json"
    other_device().save(seed_file)
    out = tmp_path / "tuned.json"
    code, text = _cli("blas", "tune", "--device", "cpu", "--ops", "mm", "--dtypes", "float32",
                      "--layouts", "NN", "--classes", "small", "--no-progress", "--peaks", "none",
                      "--edges", "off", "--fresh", "--seed", str(seed_file), "--seed-top", "2",
                      "--timing", "batch", "--out", str(out))
    assert code == 0, text
    assert "seeded by the profile of OpenCL / seed CPU: its 2 fastest" in text
    assert ": 1 entries, 2 measurements in " in text  # tiles-async failed here
    data = json.loads(out.read_text())
    assert [e["variant"]["codelet"] for e in data["entries"]] == ["tiles"]
    assert data["device"]["fingerprint"] == session.device.fingerprint
    assert data["notes"]["batch_timing"] == {"seconds": 1e-3, "classes": [f"{SGEMM}|small"]}
    code, text = _cli("blas", "tune", "--device", "cpu", "--seed-top", "2")
    assert code == 1 and text.count("\n") == 1 and "--seed-top needs --seed" in text
    code, text = _cli("blas", "tune", "--device", "cpu", "--seed", "no such device")
    assert code == 1 and text.count("\n") == 1 and "0 stored opencl cpu profiles match" in text



class _Stream:
    """A fake queue whose runs take `device` seconds each, where a run enqueued on an empty
    stream (after a wait) first waits `host` seconds for the host's launch: one launch between
    two events times host + device, n back to back host + n·device."""

    def __init__(self, host: float, device: float) -> None:
        self.host, self.device, self.t, self.idle = host, device, 0.0, True

    def run(self) -> Any:
        from liftkit.blas.tune import _Span

        first = self.t
        self.t = first + (self.host if self.idle else 0.0) + self.device
        self.idle = False
        return _Span(self, first, self.t)

    def wait(self, events: Any) -> None:
        self.idle = True

    def seconds(self, first: float, last: float) -> float:
        return last - first


@pytest.mark.parametrize("batch, per_run", [(0.0, 70e-6), (1e-3, 56e-6)])
def test_batch_timing_leaves_the_hosts_launch_out(batch: float, per_run: float) -> None:
    """One launch per timed run counts the host's launch (15 us beside a 55 us kernel here);
    batch timing (`measure(batch=...)`, `tune --timing batch`) times ceil(1 ms / 70 us) = 15
    runs enqueued back to back, of which only the first waits for the host."""
    from liftkit.blas.tune import BATCH, Trial, _check_then_time

    assert BATCH == 1e-3
    stream, want = _Stream(15e-6, 55e-6), np.zeros(4)
    t = _check_then_time(Trial(SGEMM, "large", GLB), want, want.copy(), {"M": 2, "N": 2, "K": 1},
                         stream.run, 5, 2.0, batch=batch)
    assert not t.error and t.seconds == pytest.approx(per_run, rel=1e-6)
    assert t.rate == pytest.approx(2 * 4 / per_run / 1e9)


def test_batch_timing_on_the_cpu_device(session: Session) -> None:
    from liftkit.blas.tune import measure

    kind = Kind("dot", "float32")
    t = measure(session, kind, Variant.of("chunks", n=64), {"N": 4096}, batch=1e-3)
    assert not t.error and t.rate > 0 and t.seconds > 0
