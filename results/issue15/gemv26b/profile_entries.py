"""The shipped H100 profile's GEMV block from every H100 GEMV run (gemv26's profile_entries.py:
each run's times scaled by its own cuBLAS kernel time for the case, a variant timed in several
runs keeping its best) with gemv26b's runs added: their checked variants' kernel times (GEMV T;
the hand-edited diagnostic rows, `what`, are not variants and are left out).

    python3 results/issue15/gemv26b/profile_entries.py src/liftkit/blas/profiles/profile-397cb6df054d2a73.json \\
        results/issue15/gemv23/run{1,2,3,4}/gemv.jsonl results/issue15/gemv24/run{1,2}/gemv.jsonl \\
        results/issue15/gemv25/run{1,2}/gemv.jsonl results/issue15/gemv25b/run{1,2}/gemv.jsonl \\
        results/issue15/gemv25c/run2/gemv.jsonl results/issue15/gemv26/run{1,2}/gemv.jsonl \\
        results/issue15/gemv26b/run1/gemv.jsonl
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "gemv26_entries", Path(__file__).resolve().parents[1] / "gemv26" / "profile_entries.py")
_g26 = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_g26)  # type: ignore[union-attr]

NOTE = _g26.NOTE.replace("and gemv26 runs 1-2 (", "gemv26 runs 1-2 and gemv26b run 1 (y's block "
                         "read into local memory beside the rows, p = 1; ")


def _ours(path: str, tmp: Path) -> str:
    """gemv26b's rows in gemv26's form: GEMV T, no diagnostic rows."""
    out = tmp / (Path(path).parent.name + ".jsonl")
    with open(path) as f, open(out, "w") as g:
        for line in f:
            r = json.loads(line)
            if "what" not in r and "kernel_us" in r:
                g.write(json.dumps(dict(r, layout="T")) + "\n")
    return str(out)


def main(profile: str, runs: list[str]) -> None:
    for run in runs:
        card = Path(run).parent / "card.txt"
        if card.exists() and "H100" not in card.read_text():
            sys.exit(f"{run}: measured on {card.read_text().split(',')[0]}, not an H100")
    with tempfile.TemporaryDirectory() as d:
        runs = [_ours(r, Path(d)) if "gemv26b" in r else r for r in runs]
        with open(profile) as f:
            prof = json.load(f)
        idx = [i for i, e in enumerate(prof["entries"]) if e["op"] == "gemv"]
        assert idx == list(range(idx[0], idx[-1] + 1)), "the GEMV entries are not one block"
        prof["entries"][idx[0]:idx[-1] + 1] = _g26._g25c._g25._g24.one_kernel_first(_g26.entries(runs))
    prof["notes"].pop("gemv26", None)
    prof["notes"]["gemv26b"] = NOTE
    with open(profile, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
