"""How a tuning run times a size class (`tune.class_timing`, `liftkit blas tune --timing`): by
default back to back on GPUs (runs under 1 ms; results/issue15/h200-26: launch timing ranked
first a SGEMM 1024 tiling that ran 0.94x cuBLAS per call, batch timing one that ran 1.02x),
one launch per timed run on CPUs, and a class the profile already holds launch-timed entries of
keeps launch timing, so that its new variants are ranked as its old ones were."""

from __future__ import annotations

from typing import Any

import pytest

from liftkit.blas.codelets import Kind, Variant
from liftkit.blas.profile import Entry, Profile
from liftkit.blas.session import Session
from liftkit.blas.tune import BATCH, class_timing

NN32, NN64 = Kind("mm", "float32", "NN"), Kind("mm", "float64", "NN")
SMALL = {"M": 128, "N": 128, "K": 128}


def _launch_timed() -> Profile:
    """A profile holding an entry of float64 NN small measured with launch timing."""
    p = Profile("dev", "dev", "gpu")
    p.add([Entry(NN64, "small", SMALL, Variant.of("glb"), 1e-3, 1.0)])
    return p


def test_class_timing_by_device_and_profile() -> None:
    p = _launch_timed()
    assert class_timing(p, NN32, "small", None, "gpu") == BATCH  # nothing measured yet
    assert class_timing(p, NN64, "small", None, "gpu") == 0.0  # launch-timed entries
    assert class_timing(p, NN64, "large", None, "gpu") == BATCH
    assert class_timing(p, NN32, "small", None, "cpu") == 0.0
    assert class_timing(p, NN64, "small", 2e-3, "gpu") == 2e-3  # asked for: as asked
    assert class_timing(p, NN32, "small", 0.0, "gpu") == 0.0
    p.notes["batch_timing"] = {"seconds": BATCH, "classes": [f"{NN64}|small"]}
    assert class_timing(p, NN64, "small", None, "gpu") == BATCH  # timed back to back before


@pytest.mark.parametrize("device_kind, batch, want32, want64", [
    ("gpu", None, BATCH, 0.0), ("cpu", None, 0.0, 0.0), ("gpu", 0.0, 0.0, 0.0),
    ("gpu", BATCH, BATCH, BATCH)])
def test_tune_times_each_class_as_class_timing_says(session: Any, monkeypatch: Any,
                                                    device_kind: str, batch: Any, want32: float,
                                                    want64: float) -> None:
    """`tune` on a GPU (the CPU device's session marked so) with no timing asked for: float32
    NN small back to back, float64 NN small (launch-timed entries) one launch per run; the
    profile notes the classes timed back to back (measure replaced: nothing is timed)."""
    from liftkit.blas import tune as tune_mod

    seen: list[tuple[Kind, float]] = []

    def fake(s: Any, kind: Kind, variant: Variant, sizes: dict[str, int], batch: float = 0.0,
             **_: Any) -> Any:
        seen.append((kind, batch))
        t = tune_mod.Trial(kind, "small", variant, dict(sizes))
        t.seconds, t.rate = 1e-3, 1.0
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = _launch_timed()
    s = Session(session.device, profile=prof)
    s.device_kind = device_kind
    kw = {} if batch is None else {"batch": batch}
    tune_mod.tune(s, [NN32, NN64], ["small"], prof, progress=False, peaks=None, max_variants=2,
                  edges=False, **kw)
    assert {b for k, b in seen if k == NN32} == {want32}
    assert {b for k, b in seen if k == NN64} == {want64}
    timed = sorted(f"{k}|small" for k, w in ((NN32, want32), (NN64, want64)) if w > 0)
    assert prof.notes.get("batch_timing", {}).get("classes", []) == timed
