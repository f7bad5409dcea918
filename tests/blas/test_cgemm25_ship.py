"""results/issue15/cgemm25/ship.py: the rows of cgemm25's two H100 runs, shipped into the H100
profile as it was before them, give the profile that ships (each class whose candidate beat its
shipped choice by 1 % chooses that candidate, which derives; every other choice unchanged)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.blas.profile import SHIPPED, Profile, file_name

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "results" / "issue15" / "cgemm25"
H100 = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"
SIZES = {1024: "large", 4096: "huge", 8192: "giant"}


def _ship():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cgemm25_ship", RUNS / "ship.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_the_runs_shipped_into_the_profile_before_them_give_the_shipped_choices(
        tmp_path: Path) -> None:
    shipped = Profile.load(SHIPPED / file_name(H100))
    won = shipped.notes["cgemm25"]["won"]
    prof = json.loads((SHIPPED / file_name(H100)).read_text())
    prof["entries"] = [e for e in prof["entries"] if not (
        e["dtype"] == "complex64" and e["variant"] == won.get(
            f"{e['layout']}|{e['size_class']}", {}).get("variant"))]
    prof["notes"].pop("cgemm25")
    path = tmp_path / file_name(H100)
    path.write_text(json.dumps(prof, indent=1) + "\n")
    before = Profile.load(path)
    ship = _ship()
    got: dict = {}
    for run in ("run1", "run2"):
        got.update(ship.ship(str(path), str(RUNS / run / "rows.jsonl")))
    assert got == won
    after = Profile.load(path)
    for lay in ("NN", "NT", "TN"):
        kind = Kind("mm", "complex64", lay)
        for n, cls in SIZES.items():
            sizes = {"M": n, "N": n, "K": n}
            want = (Variant.from_json(won[f"{lay}|{cls}"]["variant"]) if f"{lay}|{cls}" in won
                    else before.choose(kind, sizes, multiples))
            assert after.choose(kind, sizes, multiples) == shipped.choose(kind, sizes, multiples) \
                == want, (lay, n)
    assert all(derive(Kind("mm", "complex64", k.split("|")[0]), Variant.from_json(w["variant"]))
               for k, w in won.items())
