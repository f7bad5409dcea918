"""The shipped H100 profile's GEMV entries from gemv23 runs 1-4, gemv24 runs 1-2, gemv25 runs 1-2,
gemv25b runs 1-2, gemv25c run 2 and gemv26's H100 runs (kernel times, each variant's own call
plan, checked against float64 first; a variant timed in several runs keeps its best; two-kernel
forms kept only where 1.5 % faster than the best one-kernel form), replacing the profile's GEMV
block in place (gemv25c's method, with the tree form's k and a and row-groups' u). A run whose
card.txt names another card than the H100 is refused.

    python3 results/issue15/gemv26/profile_entries.py src/liftkit/blas/profiles/profile-397cb6df054d2a73.json \\
        results/issue15/gemv23/run{1,2,3,4}/gemv.jsonl results/issue15/gemv24/run{1,2}/gemv.jsonl \\
        results/issue15/gemv25/run{1,2}/gemv.jsonl results/issue15/gemv25b/run{1,2}/gemv.jsonl \\
        results/issue15/gemv25c/run2/gemv.jsonl results/issue15/gemv26/run1/gemv.jsonl
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "gemv25c_entries", Path(__file__).resolve().parents[1] / "gemv25c" / "profile_entries.py")
_g25c = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_g25c)  # type: ignore[union-attr]

NOTE = ("gemv entries of float32/float64/complex64/complex128 N/T at large (4096²) and huge "
        "(8192²): kernel times on the H100 from results/issue15/gemv23 runs 1-4, gemv24 runs 1-2, "
        "gemv25 runs 1-2, gemv25b runs 1-2, gemv25c run 2 and gemv26 (column-groups-tree in "
        "512-work-item groups, k = 1, and with rows read a step ahead, a = 1; row-groups with u "
        "accumulators; each variant's own call plan, checked against float64, beside cuBLAS in "
        "the same run; a variant timed in several runs keeps its best; two-kernel forms kept "
        "only where 1.5 % faster than the best one-kernel form)")


def main(profile: str, runs: list[str]) -> None:
    for run in runs:
        card = Path(run).parent / "card.txt"
        if card.exists() and "H100" not in card.read_text():
            sys.exit(f"{run}: measured on {card.read_text().split(',')[0]}, not an H100")
    with open(profile) as f:
        prof = json.load(f)
    idx = [i for i, e in enumerate(prof["entries"]) if e["op"] == "gemv"]
    assert idx == list(range(idx[0], idx[-1] + 1)), "the GEMV entries are not one block"
    prof["entries"][idx[0]:idx[-1] + 1] = _g25c._g25._g24.one_kernel_first(_g25c._g25.entries(runs))
    prof["notes"].pop("gemv25c", None)
    prof["notes"]["gemv26"] = NOTE
    with open(profile, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
