"""results/issue15/cgemm24b/ship.py: a cgemm24b run's rows become H100 profile entries only
where a candidate beat the shipped choice of its case (same phase) by the margin; the profile
then loads, chooses each winner (which derives), and keeps every other choice."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.blas.profile import SHIPPED, Profile, file_name

ROOT = Path(__file__).resolve().parents[2]
H100 = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"


def _ship():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "cgemm24b_ship", ROOT / "results" / "issue15" / "cgemm24b" / "ship.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _row(lay: str, n: int, v: Variant, ratio: float, shipped: bool = False, phase: int = 0,
         **more: object) -> dict[str, object]:
    t = 1e-3 * n ** 3 / 1024 ** 3
    return {"n": n, "layout": lay, "variant": v.to_json(), "shipped": shipped, "phase": phase,
            "liftkit_s": t, "cublas_s": t * ratio, "liftkit": 8.0 * n ** 3 / t / 1e9,
            "cublas": 8.0 * n ** 3 / t / ratio / 1e9, "ratio": ratio, **more}


def _before_cgemm24b(tmp_path: Path) -> Path:
    """The shipped H100 profile as it was before a cgemm24b run was shipped into it (its
    register-capped entries and notes taken out), so the test does not depend on that run."""
    prof_path = tmp_path / file_name(H100)
    prof = json.loads((SHIPPED / file_name(H100)).read_text())
    prof["entries"] = [e for e in prof["entries"] if not (
        e["dtype"] == "complex64" and e["variant"]["codelet"] == "ctiles-async"
        and "bound" in e["variant"].get("params", {}))]
    prof["notes"].pop("cgemm24b", None)
    prof_path.write_text(json.dumps(prof, indent=1) + "\n")
    return prof_path


def test_ship_adds_only_winners_and_the_profile_still_chooses_and_derives(tmp_path: Path) -> None:
    prof_path = _before_cgemm24b(tmp_path)
    before = Profile.load(prof_path)
    ct = lambda **kw: Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, **kw)  # noqa: E731
    nt, tn = ct(stages=2, kt=1, rot=1), ct(stages=2, kt=1)
    nt_b2 = ct(stages=3, kt=1, rot=1, bound=2, slots=264)
    nt_split = ct(stages=2, kt=1, rot=1, bound=2, slots=264, split=2)
    tn_b2 = ct(stages=2, kt=1, bound=2, slots=264)
    rows = [_row("NT", 1024, nt, 0.88, shipped=True), _row("NT", 1024, nt_b2, 0.90),
            _row("NT", 1024, nt, 0.85, shipped=True, phase=1),  # a slower moment, phase 1:
            _row("NT", 1024, nt_split, 0.865, phase=1),  # +1.8 % on its own phase, less above
            _row("TN", 1024, tn, 0.92, shipped=True), _row("TN", 1024, tn_b2, 0.925),  # < 1 %
            _row("NT", 4096, Variant.of("real"), 0.89, shipped=True),
            _row("NT", 4096, nt_b2, 0.93),
            {"n": 4096, "layout": "NT", "variant": ct(stages=2, kt=1, rot=1, bound=2,
                                                      slots=264).to_json(), "wrong": 0.5}]
    rows_path = tmp_path / "rows.jsonl"
    rows_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = _ship().ship(str(prof_path), str(rows_path))
    assert set(got) == {"NT|large", "NT|huge"}
    assert Variant.from_json(got["NT|large"]["variant"]) == nt_b2  # (2.3 % beats 1.8 %)
    after = Profile.load(prof_path)
    for lay, n, want in (("NT", 1024, nt_b2), ("NT", 4096, nt_b2), ("TN", 1024, tn)):
        kind, sizes = Kind("mm", "complex64", lay), {"M": n, "N": n, "K": n}
        assert after.choose(kind, sizes, multiples) == want, (lay, n)
        assert derive(kind, want).final is not None
    old = before.ranked(Kind("mm", "complex64", "NT"), "huge")[0]
    new = after.ranked(Kind("mm", "complex64", "NT"), "huge")[0]
    assert old.variant == Variant.of("real") and abs(new.rate / old.rate - 0.93 / 0.89) < 1e-9
    # every other entry is as it was
    rest = lambda p: sorted(json.dumps(e.to_json(), sort_keys=True) for e in p.entries  # noqa: E731
                            if not (e.kind.layout == "NT" and e.variant == nt_b2))
    assert rest(after) == rest(before)
    assert after.notes["cgemm24b"]["won"]["NT|huge"]["its_ratio"] == 0.89


def test_ship_leaves_the_profile_alone_when_nothing_wins(tmp_path: Path) -> None:
    prof_path = _before_cgemm24b(tmp_path)
    text = prof_path.read_text()
    v = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2)
    rows_path = tmp_path / "rows.jsonl"
    split = Variant.of("ctiles-async", **v.kw, split=2, bound=2, slots=264)
    rows = [_row("NN", 1024, v, 0.90, shipped=True), _row("NN", 1024, split, 0.89),
            # a run without the device's profile: its "shipped" choice was the default
            _row("TN", 1024, Variant.of("real"), 0.78, shipped=True, profiled=False),
            _row("TN", 1024, split, 0.93, profiled=False)]
    rows_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _ship().ship(str(prof_path), str(rows_path)) == {}
    assert prof_path.read_text() == text
