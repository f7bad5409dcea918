"""Tuning, device profiles and the `liftkit blas` command on the CPU device (tiny runs)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, ProfileError, Session, Variant
from liftkit.blas.profile import Entry, file_name
from liftkit.blas.tune import kinds, measure, tune
from liftkit.cli.main import main


def test_measure_checks_then_times(session: Session) -> None:
    t = measure(session, Kind("gemv", "float32", "T"), Variant.of("rows", w=4), {"M": 64, "N": 48})
    assert not t.error and t.rate > 0 and t.seconds > 0 and t.unit == "GFLOP/s"


def test_variants_share_one_kinds_inputs_and_reference(session: Session) -> None:
    """A tuning run makes a kind's inputs and float64 reference once per size, not per variant;
    another size or kind makes new ones, and every variant is still checked against them."""
    from liftkit.blas.tune import Inputs

    inputs = Inputs()
    kind, sizes = Kind("gemv", "float32", "N"), {"M": 64, "N": 48}
    first = inputs.get(kind, sizes, 0)
    for v in (Variant.of("rows", w=4), Variant.of("glb")):
        t = measure(session, kind, v, sizes, inputs=inputs)
        assert not t.error and t.rate > 0
    assert inputs.get(kind, sizes, 0) is first
    other = inputs.get(kind, {"M": 32, "N": 48}, 0)
    assert other is not first and other[0][0].shape == (32, 48)
    want = 1.5 * other[0][0].astype(np.float64) @ other[0][1] - 0.5 * other[0][2]
    np.testing.assert_allclose(other[1], want)


@pytest.mark.parametrize("kind, variant, sizes", [
    (Kind("mm", "complex64", "CN"), Variant.of("glb"), {"M": 16, "N": 24, "K": 8}),
    (Kind("gemv", "complex128", "C"), Variant.of("group-rows", L=32, w=1), {"M": 40, "N": 64}),
    (Kind("dotc", "complex64"), Variant.of("chunks", n=64), {"N": 4096}),
    (Kind("asum", "complex128"), Variant.of("chunks", n=64), {"N": 4096}),
    (Kind("sumsq", "complex64"), Variant.of("chunks", n=64), {"N": 4096}),
])
def test_measure_complex_kinds(session: Session, kind: Kind, variant: Variant, sizes) -> None:  # type: ignore[no-untyped-def]
    t = measure(session, kind, variant, sizes)
    assert not t.error and t.rate > 0


def test_conjugating_complex_kernels_use_the_plain_layouts_tuned_variant(session: Session) -> None:
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    rows = Variant.of("group-rows", L=32, w=1)
    prof.add([Entry(Kind("gemv", "complex64", "T"), "small", {"M": 96, "N": 96}, rows, 1e-5, 1.0)])
    s = Session(session.device, profile=prof)
    assert s.choose(Kind("gemv", "complex64", "C"), {"M": 64, "N": 64}) == rows
    assert s.choose(Kind("gemv", "complex64", "R"), {"M": 64, "N": 50}).codelet == "glb"
    assert {k.layout for k in kinds(["mm"], ["complex128"])} == {"NN", "NT", "TN"}
    assert [k.dtype for k in kinds(["dotc"], ["float32", "complex64"])] == ["complex64"]


def test_tune_in_rounds_keeps_each_variants_best(session: Session) -> None:
    """rounds=3: every variant timed three times in turn, one entry each, with its best time."""
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    trials: list[Any] = []
    tune(session, kinds(["dot"], ["float32"]), ["small"], prof, progress=False, max_variants=2,
         peaks=None, rounds=3, on_trial=trials.append)
    assert len(trials) == 6 and [str(t.variant) for t in trials[:2]] == \
        [str(t.variant) for t in trials[2:4]]
    assert len(prof.entries) == 2
    for e in prof.entries:
        assert e.seconds == min(t.seconds for t in trials if t.variant == e.variant)


def test_tune_is_resumable_and_profiles_choose(session: Session) -> None:
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    saved: list[int] = []
    ks = kinds(["dot"], ["float32"])
    tune(session, ks, ["small"], prof, save=lambda p: saved.append(len(p.entries)),
         progress=False, max_variants=3, peaks=None)
    assert saved == [3] and len(prof.entries) == 3
    # resuming measures nothing again
    tune(session, ks, ["small"], prof, save=lambda p: saved.append(len(p.entries)),
         progress=False, max_variants=3, peaks=None)
    assert saved == [3]
    best = prof.ranked(Kind("dot", "float32"), "small")[0]
    s = Session(session.device, profile=prof)
    assert s.choose(Kind("dot", "float32"), {"N": 4096}) == best.variant
    x = np.arange(1.0, 101.0, dtype=np.float32)
    assert s.dot(x, x).result() == pytest.approx(float(x @ x), rel=1e-6)


def test_profile_choice_avoids_large_padding() -> None:
    prof = Profile("fp", "dev", "cpu")
    kind = Kind("dot", "float32")
    tree = Variant.of("tree", n=64, L=64)  # N a multiple of 4·64·64·256 = 2^22
    prof.add([Entry(kind, "large", {"N": 1 << 22}, tree, 1e-4, 50.0),
              Entry(kind, "large", {"N": 1 << 22}, Variant.of("chunks", n=1024), 2e-4, 25.0)])
    from liftkit.blas.codelets import multiples

    assert prof.choose(kind, {"N": 1 << 22}, multiples) == tree
    assert prof.choose(kind, {"N": 2_100_000}, multiples) == Variant.of("chunks", n=1024)
    assert prof.choose(kind, {"N": 1000}, multiples) is None  # nothing measured for "small"


def test_profile_json_round_trip_and_errors(tmp_path: Path) -> None:
    prof = Profile("fp|x", "dev", "gpu", [Entry(Kind("mm", "float64", "TN"), "large",
                                                {"M": 8, "N": 8, "K": 8}, Variant.of("glb"), 0.1, 2.0)])
    path = prof.save(tmp_path / "p.json")
    back = Profile.load(path)
    assert back.entries == prof.entries and back.fingerprint == "fp|x"
    (tmp_path / "bad.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ProfileError, match="not a liftkit BLAS profile"):
        Profile.load(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ProfileError, match="not JSON"):
        Profile.load(tmp_path / "broken.json")


def _cli(*argv: str) -> tuple[int, str]:
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def test_cli_tune_show_export_import(session: Session, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    monkeypatch.setenv("LIFTKIT_RUNTIME_PROFILES", str(tmp_path / "runtime"))
    code, text = _cli("blas", "tune", "--device", "cpu", "--ops", "scal", "--dtypes", "float64",
                      "--classes", "small", "--no-progress", "--max-variants", "2",
                      "--peaks", "quick", "--fresh")
    assert code == 0, text
    assert "scal/float64/-" in text and "peak float64: add" in text and "copy bandwidth" in text
    assert "opencl backend" in text and "compute queues:" in text
    # without the progress bar, a line per trial: when it ended, what it measured, how long
    trials = [ln for ln in text.splitlines() if " s  scal/float64/- small " in ln]
    assert len(trials) == 2 and all("GFLOP/s (" in ln for ln in trials), text
    assert ": 2 entries, 2 measurements in " in text  # (one entry per variant and class here)
    installed = tmp_path / "profiles" / file_name(session.device.fingerprint)
    assert installed.is_file()
    code, text = _cli("blas", "profile", "show", "--device", "cpu")
    assert code == 0 and "scal/float64/-" in text and "tuning time" in text
    assert "peak float32: add" in text and " fma " in text
    code, text = _cli("blas", "profile", "export", str(tmp_path / "mine.json"), "--device", "cpu")
    assert code == 0 and (tmp_path / "mine.json").is_file()
    installed.unlink()
    code, text = _cli("blas", "profile", "import", str(tmp_path / "mine.json"))
    assert code == 0 and installed.is_file()
    code, text = _cli("blas", "profile", "import", str(tmp_path / "missing.json"))
    assert code == 1 and text.count("\n") == 1 and "cannot read" in text
    code, text = _cli("blas", "tune", "--ops", "gemmm")
    assert code == 2 and "unknown operation gemmm" in text


def test_cli_tune_says_when_it_resumes_a_shipped_profile(session: Session, tmp_path: Path,
                                                         monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without --fresh, `tune` from an empty profile directory resumes the profile liftkit
    ships for the device, and says so (what --fresh would do instead) before measuring."""
    import liftkit.blas.profile as profile_mod

    fp = session.device.fingerprint
    shipped = Profile(fp, session.device.label, "cpu")
    shipped.add([Entry(Kind("scal", "float64"), "small", {"N": 4096},
                       Variant.of("glb"), 1e-6, 8.2, "GFLOP/s")])
    shipped.save(tmp_path / "shipped" / file_name(fp))
    monkeypatch.setattr(profile_mod, "SHIPPED", tmp_path / "shipped")
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    args = ("blas", "tune", "--device", "cpu", "--ops", "scal", "--dtypes", "float64",
            "--classes", "small", "--no-progress", "--max-variants", "1", "--peaks", "none")
    code, text = _cli(*args)
    mine = tmp_path / "profiles" / file_name(fp)
    assert code == 0 and "resuming the profile liftkit has for" in text and str(mine) in text
    assert "--fresh measures everything" in text and mine.is_file()
    code, text = _cli(*args)  # now the user's own: resumed without a word
    assert code == 0 and "resuming" not in text


def test_cli_bench_checks_and_prints(session: Session, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path))
    code, text = _cli("blas", "bench", "--device", "cpu", "--sizes", "16,33", "--ops",
                      "gemm,transpose", "--dtypes", "float32", "--repeat", "1",
                      "--out", str(tmp_path / "rows.json"))
    assert code == 0, text
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [(r["op"], r["n"]) for r in rows] == [("gemm", 16), ("gemm", 33), ("transpose", 16),
                                                  ("transpose", 33)]
    assert all(r["reference_name"] == "NumPy BLAS" and r["liftkit"] > 0 for r in rows)


def test_cli_bench_on_a_device_that_cannot_build_is_one_line(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pyopencl as cl

    import liftkit.blas.bench as bench

    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram "
                              "failed\n\nBuild on <dev>:\n\nerror: unknown target CPU 'generic'")

    monkeypatch.setattr(bench, "run_bench", broken)
    code, text = _cli("blas", "bench", "--device", "cpu", "--sizes", "8")
    assert code != 0 and "Traceback" not in text
    assert text.strip().splitlines()[-1] == (
        "liftkit: error: blas bench: the OpenCL device failed (clBuildProgram failed: "
        "BUILD_PROGRAM_FAILURE; error: unknown target CPU 'generic')")


def test_cli_bench_complex(session: Session) -> None:
    code, text = _cli("blas", "bench", "--device", "cpu", "--sizes", "16", "--ops", "gemm,dot",
                      "--dtypes", "complex64,complex128", "--repeat", "1")
    assert code == 0, text
    assert "complex128" in text and "GFLOP/s" in text
    code, text = _cli("blas", "bench", "--dtypes", "complex32")
    assert code != 0 and "known: float32, float64, complex64, complex128" in text


def test_huge_class_falls_back_to_large() -> None:
    """GEMMs above n = 2048 are their own class (a GPU's tiles for 1024 and 4096 differ); a
    profile without it serves them with the large class's choice."""
    from liftkit.blas import Kind, Profile, Variant
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import Entry, size_class

    k = Kind("mm", "float32", "NN")
    big, small = Variant.of("tiles", tm=64, tn=64, tk=16, rm=8, rn=8), Variant.of("glb")
    prof = Profile("fp", "dev", "gpu")
    prof.add([Entry(k, "large", {"M": 1024}, small, 1.0, 1.0)])
    assert size_class("mm", {"M": 1024, "N": 1024, "K": 1024}) == "large"
    assert size_class("mm", {"M": 4096, "N": 4096, "K": 4096}) == "huge"
    assert prof.choose(k, {"M": 4096, "N": 4096, "K": 4096}, multiples) == small
    prof.add([Entry(k, "huge", {"M": 4096}, big, 1.0, 2.0)])
    assert prof.choose(k, {"M": 4096, "N": 4096, "K": 4096}, multiples) == big
    assert prof.choose(k, {"M": 1024, "N": 1024, "K": 1024}, multiples) == small


def test_giant_gemms_keep_their_own_winner() -> None:
    """GEMMs from n = 6144 on are `giant` (the H100's split tail differs at 4096 and 8192):
    without giant entries they run huge's choice; with them, each class its own, whatever the
    rates (a higher rate at 8192 no longer serves 4096)."""
    from liftkit.blas import Kind, Profile, Variant
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import Entry, size_class
    from liftkit.blas.tune import CLASSES, classes_of, sizes_for

    k = Kind("mm", "float32", "NN")
    four, eight = (Variant.of("tiles", tm=64, tn=64, tk=16, rm=8, rn=8),
                   Variant.of("tiles", tm=64, tn=64, tk=32, rm=8, rn=8))
    n4, n8 = ({"M": n, "N": n, "K": n} for n in (4096, 8192))
    assert (size_class("mm", n4), size_class("mm", n8)) == ("huge", "giant")
    assert size_class("gemv", {"M": 8192, "N": 8192}) == "huge"
    prof = Profile("fp", "dev", "gpu")
    prof.add([Entry(k, "huge", n4, four, 1.0, 1.0)])
    assert prof.choose(k, n8, multiples) == four
    prof.add([Entry(k, "giant", n8, eight, 1.0, 2.0)])
    assert prof.choose(k, n8, multiples) == eight and prof.choose(k, n4, multiples) == four
    assert sizes_for(k, "giant", "gpu") == n8
    assert classes_of(k, CLASSES) == list(CLASSES)
    assert "giant" not in classes_of(Kind("gemv", "float32", "N"), CLASSES)


def test_tune_measures_guarded_forms_against_the_padded_plan(session: Session) -> None:
    """edges=True (the default on GPUs): after the class's variants, the class's choice is timed
    at an odd size (n − 24) as a call runs it, padded copies included, and beside it the guarded
    forms of its fastest variants, each checked first; the faster ones become guarded entries;
    what was measured is noted, and a resumed run measures nothing again."""
    kind = Kind("mm", "float32", "NN")
    tiles = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add([Entry(kind, "small", {"M": 64, "N": 64, "K": 64}, tiles, 1e-6, 1e3)])
    trials: list[Any] = []
    tune(session, [kind], ["small"], prof, progress=False, max_variants=1, peaks=None,
         edges=True, on_trial=trials.append)
    odd = [t for t in trials if t.sizes == {"M": 40, "N": 40, "K": 40}]
    assert [str(t.variant) for t in odd] == [
        str(tiles), "edge-tiles(rm=4,rn=1,tk=16,tm=32,tn=32,w=1)"]
    assert all(not t.error and t.rate > 0 for t in odd)
    note = prof.notes["edges"]["mm/float32/NN|small"]
    assert note["sizes"] == {"M": 40, "N": 40, "K": 40} and note["padded"]["variant"] == str(tiles)
    assert note["entries"] == ([str(odd[1].variant)] if odd[1].seconds < odd[0].seconds else [])
    assert [e.variant for e in prof.guarded(kind, "small")] == \
        [odd[1].variant for _ in note["entries"]]
    trials.clear()
    tune(session, [kind], ["small"], prof, progress=False, max_variants=1, peaks=None,
         edges=True, on_trial=trials.append)
    assert trials == []
    # off on the CPU device unless asked
    other = Profile(session.device.fingerprint, session.device.label, "cpu")
    other.add([Entry(kind, "small", {"M": 64, "N": 64, "K": 64}, tiles, 1e-6, 1e3)])
    tune(session, [kind], ["small"], other, progress=False, max_variants=1, peaks=None,
         on_trial=trials.append)
    assert all(t.sizes["M"] == 64 for t in trials) and "edges" not in other.notes


def test_complex_plans_real_kernel_has_entries_of_its_own(session: Session) -> None:
    """The `real` plan timed on a given real kernel names it (`via` "real"); a profile's complex
    entries with via "real" choose the plan's real kernel before the real dtype's entries (every
    layout from NN's), where they need no padding at the real product's sizes; the product is
    right either way."""
    from liftkit.blas.gemm import real_choice

    c64, s32 = Kind("mm", "complex64", "NN"), Kind("mm", "float32", "NN")
    own = Variant.of("tiles", tm=32, tn=32, tk=16, rm=2, rn=2, w=1)
    theirs = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)
    sizes = {"M": 64, "N": 64, "K": 64}
    t = measure(session, c64, Variant.of("real"), sizes, real=own)
    assert not t.error and t.rate > 0 and t.via == "real" and t.variant == own
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add([Entry(s32, "small", sizes, theirs, 1e-6, 1e3),
              Entry(c64, "small", sizes, Variant.of("real"), 1e-6, 1e3),
              Entry(c64, "small", sizes, own, t.seconds, t.rate, via="real")])
    assert prof.ranked(c64, "small") == [prof.entries[1]]  # via entries apart
    assert prof.ranked(c64, "small", "real")[0].variant == own
    assert prof.measured(c64, "small", via="real") == {own}
    back = Profile.from_json(json.loads(prof.dumps()))
    assert back.entries == prof.entries and '"via": "real"' in prof.dumps()
    s = Session(session.device, profile=prof)
    rng = np.random.default_rng(1)
    for shape, tb in (((64, 64), False), ((64, 64), True), ((40, 48), False)):
        A = (rng.standard_normal((shape[0], 64)) + 1j * rng.standard_normal((shape[0], 64))
             ).astype(np.complex64)
        B = (rng.standard_normal((shape[1], 64) if tb else (64, shape[1]))
             + 1j * rng.standard_normal((shape[1], 64) if tb else (64, shape[1]))
             ).astype(np.complex64)
        plan = s.plan_gemm(A.shape, B.shape, np.complex64, trans_b=tb,
                           variant=Variant.of("real"))
        # 40 rows: the real product 40×96×128 is off own's 32-row tiles, the real dtype's runs
        want = own if shape[0] % 32 == 0 else plan.built.variant
        assert plan.built.variant == want and (shape[0] % 32 == 0) == (want == own)
        got = s.gemm(A, B, trans_b=tb).result()
        ref = A.astype(np.complex128) @ (B.T if tb else B).astype(np.complex128)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)
    assert real_choice(s, Kind("mm", "complex64", "CN"), sizes,
                       {"M": 64, "N": 128, "K": 128}) == own
    assert real_choice(Session(session.device, profile=Profile("x", "x", "cpu")), c64, sizes,
                       {"M": 64, "N": 128, "K": 128}) is None


def test_shipped_h100_profile_gives_complex_gemm_its_own_real_kernel() -> None:
    """The H100 profile's complex NN entries with via "real" (results/issue15/tune23): CGEMM
    4096 runs its real product (a giant SGEMM) split 5 ways as measured for CGEMM (0.91x cuBLAS
    per call against 0.90x on the giant SGEMM choice, split 4), ZGEMM 4096 DMMA in groups of 4;
    a size whose real product the entries' tiles do not divide keeps the real dtype's choice."""
    from types import SimpleNamespace

    from liftkit.blas.gemm import real_choice
    from liftkit.blas.profile import SHIPPED

    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")
    s: Any = SimpleNamespace(profile=prof)

    def at(n: int) -> tuple[dict[str, int], dict[str, int]]:
        return {"M": n, "N": n, "K": n}, {"M": n, "N": 2 * n, "K": 2 * n}

    got = real_choice(s, Kind("mm", "complex64", "NN"), *at(4096))
    assert got == Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, split=5,
                             slots=396, bound=3)
    for lay in ("NT", "CN"):  # other layouts from NN's entries
        assert real_choice(s, Kind("mm", "complex64", lay), *at(4096)) == got
    assert real_choice(s, Kind("mm", "complex128", "NN"), *at(4096)) == Variant.of(
        "mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2, group=4)
    assert real_choice(s, Kind("mm", "complex64", "NN"), *at(1024)) == Variant.of(
        "tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    assert real_choice(s, Kind("mm", "complex64", "NN"), *at(1000)) is None


def test_cli_tune_measures_guarded_forms_when_asked(session: Session, tmp_path: Path,
                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`--edges on` on the CPU device (auto: GPUs only): the GEMM class's guarded step runs
    and is noted in the profile; the trial lines say the odd sizes and which one ran padded."""
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "profiles"))
    out = tmp_path / "p.json"
    code, text = _cli("blas", "tune", "--device", "cpu", "--ops", "mm", "--dtypes", "float32",
                      "--layouts", "NN", "--classes", "small", "--no-progress",
                      "--max-variants", "2", "--peaks", "none", "--fresh", "--out", str(out),
                      "--edges", "on")
    assert code == 0, text
    prof = Profile.load(out)
    note = prof.notes["edges"]["mm/float32/NN|small"]
    if note["padded"] is not None:  # the class's choice had a guarded form: timed at 40³
        assert " padded at 40×40×40: " in text and "edge-tiles(" in text
    code, text = _cli("blas", "tune", "--device", "cpu", "--ops", "mm", "--dtypes", "float32",
                      "--layouts", "NN", "--classes", "small", "--no-progress",
                      "--max-variants", "2", "--peaks", "none", "--fresh", "--out", str(out))
    assert code == 0 and "edges" not in Profile.load(out).notes and " at 40×" not in text


def test_profile_show_lists_the_entries_measured_at_odd_sizes() -> None:
    """`profile show` prints, beside the class table, the fastest entry measured at each odd
    size (guarded, padded and split forms: what a call at those sizes runs)."""
    from liftkit.blas.profile import SHIPPED

    code, text = _cli("blas", "profile", "show",
                      str(SHIPPED / "profile-397cb6df054d2a73.json"))  # the H100's
    assert code == 0, text
    head, _, odd = text.partition("measured at their very sizes")
    assert odd and "1023×1025×999" in odd and "1023×1025×999" not in head
    assert "edge-zmma" in odd and "split(w=64) via split" in odd
