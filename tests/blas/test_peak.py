"""The peak-rate micro-benchmarks (seed 003 §7.4.1) on the CPU device, with tiny settings, and
their place in the versioned device profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from liftkit.blas import Profile, ProfileError, Session
from liftkit.blas.peak import OPS, TINY, kernel_source, measure_peaks, peak_for
from liftkit.blas.profile import FORMAT, Peaks


def test_kernel_source_separates_mad_from_fma() -> None:
    src = kernel_source("float64", 4)
    assert "cl_khr_fp64" in src and "double4" in src and "FP_CONTRACT OFF" in src
    mad = src.split("peak_mad")[1].split("peak_fma")[0]
    assert "fma(" not in mad and "x0 = x0 * b; x0 = x0 + c;" in mad
    assert "fma(x0, b, c)" in src.split("peak_fma")[1]


def test_measure_peaks_on_the_cpu_device(session: Session) -> None:
    p = measure_peaks(session.context, session.queue, session.device.cl_device, settings=TINY)
    assert set(p.flops) <= {"float32", "float64"} and "float32" in p.flops
    for rates in p.flops.values():
        assert set(rates) == set(OPS) and all(0.01 < r < 1e6 for r in rates.values())
    assert 0.01 < p.copy < 1e5
    assert p.fma("float32") in (True, False) and p.fma("int8") is None
    assert peak_for(p, "complex64", "GFLOP/s") == max(p.flops["float32"]["fma"],
                                                      p.flops["float32"]["mad"])
    assert peak_for(p, "float32", "GB/s") == p.copy and peak_for(None, "float32", "GB/s") is None


def test_tune_measures_peaks_once(session: Session, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from liftkit.blas.tune import kinds, tune

    monkeypatch.setenv("LIFTKIT_RUNTIME_PROFILES", str(tmp_path / "runtime"))

    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    saves: list[object] = []
    tune(session, kinds(["scal"], ["float32"]), ["small"], prof, save=lambda p: saves.append(p.peaks),
         progress=False, max_variants=1, peaks=TINY)
    assert prof.peaks is not None and saves[0] is prof.peaks  # saved before the variants
    # the queue micro-benchmark (liftkit.runtime's calibration) ran once too
    q = prof.notes["queues"]
    assert q["queues"] in (1, 2, 4) and set(q["seconds"]) == {"1", "2", "4"}, q
    assert list((tmp_path / "runtime").glob("*.json"))  # the runtime's own profile, reused
    first = prof.peaks
    tune(session, kinds(["scal"], ["float32"]), ["small"], prof, progress=False, max_variants=1,
         peaks=TINY)
    assert prof.peaks is first  # resuming does not measure again


def test_profile_versions(tmp_path: Path) -> None:
    peaks = Peaks({"float32": {"add": 1.0, "mul": 1.0, "mad": 2.0, "fma": 4.0}}, 10.0)
    prof = Profile("fp", "dev", "cpu", peaks=peaks)
    back = Profile.load(prof.save(tmp_path / "p.json"))
    assert back.peaks == peaks and back.peaks.fma("float32") is True
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["format"] == FORMAT and data["peaks"]["copy_GBps"] == 10.0
    # a version-1 profile (before the peaks) still loads, without peaks
    data.update(format="liftkit-blas-profile/1")
    del data["peaks"]
    (tmp_path / "v1.json").write_text(json.dumps(data))
    assert Profile.load(tmp_path / "v1.json").peaks is None
    # a newer version is one clear error
    data.update(format="liftkit-blas-profile/9")
    (tmp_path / "v9.json").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="newer version"):
        Profile.load(tmp_path / "v9.json")
    data.update(format=FORMAT, peaks={"flops": {"float32": "fast"}, "copy_GBps": 1})
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="malformed profile"):
        Profile.load(tmp_path / "bad.json")


def test_shipped_profiles_load_and_are_named_by_their_device() -> None:
    from liftkit.blas.profile import SHIPPED, file_name

    files = sorted(SHIPPED.glob("*.json"))
    assert files, "liftkit ships the profiles of the devices it was tuned on"
    for f in files:
        prof = Profile.load(f)
        assert f.name == file_name(prof.fingerprint)
        assert prof.entries and "mm" in {e.kind.op for e in prof.entries}
        if prof.peaks is None:  # tuned before format 2 (the H100's GEMM-only profile)
            assert {e.kind.op for e in prof.entries} == {"mm"}
        elif "coverage" not in prof.notes:
            assert {e.kind.op for e in prof.entries} >= {"mm", "gemv", "transpose"}
        else:  # tuned in part (the H100's CUDA profile, cut by the device run's time; the
            # H200's OpenCL profile, GEMM only): says so, naming each kind left to the defaults
            note = prof.notes["coverage"]
            assert "defaults" in note
            for op in {"gemv", "transpose"} - {e.kind.op for e in prof.entries}:
                assert op in note.lower(), (f.name, op)
