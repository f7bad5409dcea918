"""Where several profile entries were measured at a call's very sizes, the fastest runs
(`gemm.measured_here`, `gemm.plan_gemm`): the split plan, guarded forms (via "" or "here"),
complex kernels padded, the `real` plan on a real kernel, and the class's own variants measured
there; the tuner keeps one entry at the split sizes, the fastest (results/issue15/h200-26: the
H200 profile's SGEMM 1023×1025×999 ran its split entry, 21.2 TFLOP/s when tuned, beside balanced
guarded tiles measured at 25.1). And complex TN's `real` plan, padded where the transpose's
tiles do not divide the sizes, is measured as a call runs it (it was a failed trial per tune)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from liftkit.blas import split
from liftkit.blas.codelets import Kind, Variant
from liftkit.blas.gemm import measured_here
from liftkit.blas.profile import SHIPPED, Entry, Profile, size_class

NN32 = Kind("mm", "float32", "NN")
AT = {"M": 45, "N": 33, "K": 29}  # N one past a multiple of 16: the split plan applies (w=16)
SPLIT16 = Variant.of("split", w=16)
EDGE = Variant.of("edge-tiles", tm=32, tn=32, tk=16, rm=2, rn=2, w=1)  # (any sizes)
GLB = Variant.of("glb")
ODD = {"M": 1023, "N": 1025, "K": 999}
H100 = "profile-397cb6df054d2a73.json"
H200 = "profile-dc1c1a649d0d8e1d.json"


def _entry(kind: Kind, sizes: dict[str, int], v: Variant, rate: float, via: str = "") -> Entry:
    return Entry(kind, size_class("mm", sizes), dict(sizes), v, 1.0 / rate, rate, via=via)


@pytest.mark.parametrize("winner", ["split", "here", "class"])
def test_the_fastest_entry_measured_at_a_calls_sizes_runs(session: Any, winner: str) -> None:
    """A split entry, a guarded form via "here" and a class variant measured at 45×33×29: the
    fastest makes the plan (the class's own: `Session.choose`), whichever came first before;
    the call equals NumPy; other sizes run the class's choice."""
    from liftkit.blas import Session

    rates = {"split": 1.0, "here": 2.0, "class": 0.5}
    rates[winner] = 3.0
    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    prof.add([_entry(NN32, AT, SPLIT16, rates["split"], "split"),
              _entry(NN32, AT, EDGE, rates["here"], "here"),
              _entry(NN32, AT, GLB, rates["class"])])
    s = Session(session.device, profile=prof)
    found = measured_here(s, NN32, AT)
    assert [e.via for e in found] == {"split": ["split", "here"], "here": ["here", "split"],
                                      "class": []}[winner]
    plan = s.plan_gemm((45, 29), (29, 33), np.float32)
    assert isinstance(plan, split.SplitPlan) == (winner == "split")
    assert plan.variant == {"split": SPLIT16, "here": EDGE, "class": GLB}[winner]
    g = np.random.default_rng(5)
    a, b = g.standard_normal((45, 29)).astype(np.float32), g.standard_normal((29, 33)).astype(
        np.float32)
    np.testing.assert_allclose(s.gemm(a, b).result(), a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-4 * 29)
    assert measured_here(s, NN32, {**AT, "K": 30}) == []


def test_entries_that_do_not_apply_are_passed_over() -> None:
    """A split entry off its N (not one past a multiple of w), a codelet this liftkit does not
    know, a `real` entry of a real dtype: none runs, the next fastest does."""
    from types import SimpleNamespace

    p = Profile("dev", "dev", "gpu")
    p.add([_entry(NN32, AT, Variant.of("split", w=64), 9.0, "split"),
           _entry(NN32, AT, Variant.of("edge-future", tm=8), 8.0, "here"),
           _entry(NN32, AT, Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8,
                                       stages=2), 7.0, "real"),
           _entry(NN32, AT, EDGE, 1.0, "here")])
    assert [e.variant for e in measured_here(SimpleNamespace(profile=p), NN32, AT)] == [EDGE]  # type: ignore[arg-type]


@pytest.fixture
def stub_h200(blas_host: Any, monkeypatch: Any) -> Any:
    """conftest's `stub_cuda` with the shipped H200 profile."""
    modules: dict = {}
    s = blas_host.stub_session(Profile.load(SHIPPED / H200), patch=monkeypatch.setattr,
                               modules=modules)
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return s


BALANCED_H200 = Variant.of("edge-tiles-async", tm=256, tn=32, tk=16, rm=16, rn=4, stages=2,
                           elems=1, rot=2, split=3, slots=396, bound=3)


def test_the_h200_runs_sgemm_1023_on_its_fastest_entry(blas_host: Any, stub_h200: Any) -> None:
    """The shipped H200 profile at SGEMM 1023×1025×999: one entry, the balanced guarded tiles
    (via "here", 25.3 TFLOP/s when re-tuned in results/issue15/h200-26b, 16×4 blocks; the split
    plan's 17.5, which lost to it, dropped as the tuner now does, and with it put back the tiles
    still run): one launch, no copies,
    first call and repeated one (its call plan) — where the split plan launched six kernels.
    DGEMM keeps its split entry, its only one there (22.8 against its own plan's 14.6)."""
    host, s = blas_host, stub_h200
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    note = s.profile.notes["splits"][f"{NN32}|large"]
    assert (note["entry"], note["via"]) == (str(BALANCED_H200), "here")
    assert [(e.via, e.variant) for e in measured_here(s, NN32, ODD)] == [("here", BALANCED_H200)]
    lost = Variant.of("split", w=64, gemv=1)
    s.profile.add([_entry(NN32, ODD, lost, note["split"][str(lost)], "split")])
    s.forget_choices()
    assert [e.via for e in measured_here(s, NN32, ODD)] == ["here", "split"]
    plan = s.plan_gemm((1023, 999), (999, 1025), np.float32)
    assert not isinstance(plan, split.SplitPlan) and plan.built.variant == BALANCED_H200
    A, B, C = (host.ndarray(sh, "float32") for sh in ((1023, 999), (999, 1025), (1023, 1025)))
    for _ in range(2):
        got.clear()
        host.COUNTS.clear()
        s.gemm(A, B, C)
        assert len(got) == 1 and host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    d = s.plan_gemm((1023, 999), (999, 1025), np.float64)
    assert isinstance(d, split.SplitPlan) and d.variant == Variant.of("split", w=64, gemv=1)


@pytest.mark.parametrize("dtype, sizes, codelet", [
    ("float32", ODD, "edge-tiles-async"), ("float64", ODD, "split"),
    ("complex64", ODD, "edge-ctiles-async"),
    ("complex64", {"M": 4097, "N": 4095, "K": 4095}, "edge-ctiles-async")])
def test_the_h100_keeps_its_odd_size_winners(stub_cuda: Any, dtype: str, sizes: dict[str, int],
                                             codelet: str) -> None:
    """The shipped H100 profile's entries at the odd sizes other helpers measured per call
    (results/issue15/odd26, oddc26, odd24b) run as before: each is the fastest entry measured
    there, of the codelet that won per call (DGEMM's split 27.0 TFLOP/s beside the guarded
    DMMA's 20.9, 0.75x against 0.71x cuBLAS per call; CGEMM's guarded tiles 41.0 beside the
    real plan's 35.6, 0.842x against 0.744x)."""
    s = stub_cuda
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    kind = Kind("mm", dtype, "NN")
    fastest = max((e for e in s.profile.entries if e.kind == kind and dict(e.sizes) == sizes),
                  key=lambda e: e.rate).variant
    plan = s.plan_gemm((m, k), (k, n), np.dtype(dtype))
    assert plan.variant == fastest and fastest.codelet == codelet


def test_a_faster_real_entry_runs_the_real_plan_on_its_kernel(stub_cuda: Any) -> None:
    """A `real` plan measured at CGEMM 1023×1025×999 faster than the guarded complex tiles
    there: the plan is `real` on that entry's kernel; slower, the guarded tiles run."""
    s = stub_cuda
    kind = Kind("mm", "complex64", "NN")
    rv = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    for rate, want in ((1e9, "real"), (1.0, "edge-ctiles-async")):
        s.profile.add([_entry(kind, ODD, rv, rate, "real")])
        s.forget_choices()
        plan = s.plan_gemm((1023, 999), (999, 1025), np.complex64)
        assert plan.variant.codelet == want
        if want == "real":
            assert plan.embed is not None and plan.embed.real.variant == rv  # (as timed)


@pytest.mark.parametrize("faster", ["split", "here", "neither"])
def test_the_tuner_keeps_one_entry_at_the_split_sizes(session: Any, monkeypatch: Any,
                                                      faster: str) -> None:
    """`tune --edges` with the GPU's limits times the split plans and the balanced tiles at
    1023×1025×999 beside the GEMM's own plan: the fastest of them becomes the one entry there
    (via its mode) where it beat the plan; the one that lost to it is not kept (measure
    replaced: nothing is timed for real)."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas import Session
    from liftkit.blas import tune as tune_mod

    from .test_odd_sgemm import H100 as LIMITS

    def fake(s: Any, kind: Kind, variant: Variant, sizes: dict[str, int], **_: Any) -> Any:
        t = tune_mod.Trial(kind, size_class(kind.op, sizes), variant, dict(sizes))
        mode = ("split" if variant.codelet == "split" else
                "here" if variant.kw.get("tm") == 256 else "")
        t.rate = (1.0 if not mode else {"split": 2.0, "here": 1.5}[mode] if faster == "split"
                  else {"split": 1.5, "here": 2.0}[mode] if faster == "here" else 0.5)
        t.rate += variant.kw.get("gemv", 0) / 10 + variant.kw.get("rm", 0) / 100
        t.seconds = 1.0 / t.rate
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    s = Session(session.device, profile=prof)
    tune_mod.tune(s, [NN32], ["large"], prof, progress=False, peaks=None, max_variants=1,
                  edges=True, limits=SMLimits(**LIMITS))
    kept = [(e.via, e.variant) for via in ("split", "here") for e in prof.at_sizes(NN32, ODD, via)]
    note = prof.notes["splits"][f"{NN32}|large"]
    assert len(note["split"]) == 2 and len(note["here"]) == 6
    if faster == "neither":
        assert kept == [] and note["entry"] is None and note["via"] is None
        return
    assert len(kept) == 1 and kept[0][0] == faster
    assert note["entry"] == str(kept[0][1]) and note["via"] == faster
    if faster == "split":
        assert kept[0][1] == Variant.of("split", w=64, gemv=1)
    assert measured_here(s, NN32, ODD)[0].variant == kept[0][1]


def test_complex_tn_real_plan_is_measured_padded(session: Any) -> None:
    """The `real` plan of complex64 TN on a real kernel whose tiles do not divide the sizes
    (on the H100/H200 the transpose kernel's 32×32 tiles pad 1000 and 4072, the odd sizes of
    the ctiles edge follow-up): padded, and measured as a call runs it (checked against NumPy,
    then timed), for every layout; it was refused ("padded: measured at sizes its kernels
    divide only") and logged as a failed trial on every tune."""
    from liftkit.blas import tune as tune_mod

    rv = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4, w=1)
    sizes = {"M": 37, "N": 40, "K": 35}
    for lay in ("TN", "NN", "NT"):
        kind = Kind("mm", "complex64", lay)
        a = (35, 37) if lay[0] == "T" else (37, 35)
        b = (40, 35) if lay[1] == "T" else (35, 40)
        plan = session.plan_gemm(a, b, np.complex64, trans_a=lay[0] == "T",
                                 trans_b=lay[1] == "T", variant=Variant.of("real"), real=rv)
        assert plan.padded != plan.sizes
        t = tune_mod.measure(session, kind, Variant.of("real"), sizes, plan=True, repeat=1,
                             real=rv)
        assert not t.error and t.rate > 0 and (t.variant, t.via) == (rv, "real")
