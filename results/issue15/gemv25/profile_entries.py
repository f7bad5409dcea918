"""The shipped H100 profile's GEMV entries from gemv23 runs 1-4, gemv24 runs 1-2 and gemv25's run
(kernel times, each variant's own call plan, checked against float64/complex128 first; a variant
timed in several runs keeps its best; two-kernel forms kept only where 1.5 % faster than the
best one-kernel form, as gemv24 did), replacing the profile's GEMV block in place.

    python3 results/issue15/gemv25/profile_entries.py src/liftkit/blas/profiles/profile-397cb6df054d2a73.json \\
        results/issue15/gemv23/run{1,2,3,4}/gemv.jsonl results/issue15/gemv24/run{1,2}/gemv.jsonl \\
        results/issue15/gemv25/run1/gemv.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemv23"))
from profile_entries import entries  # noqa: E402 - gemv23's
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "gemv24_entries", Path(__file__).resolve().parents[1] / "gemv24" / "profile_entries.py")
_g24 = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_g24)  # type: ignore[union-attr]

NOTE = ("gemv entries of float32/float64/complex64/complex128 N/T at large (4096²) and huge "
        "(8192²): kernel times on the H100 from results/issue15/gemv23 runs 1-4, gemv24 runs 1-2 "
        "and gemv25 (column-groups-last: one kernel, the last work-group of a column block "
        "summing its row chunks; each variant's own call plan, checked against float64, beside "
        "cuBLAS in the same run; a variant timed in several runs keeps its best; two-kernel "
        "forms kept only where 1.5 % faster than the best one-kernel form)")


def main(profile: str, runs: list[str]) -> None:
    with open(profile) as f:
        prof = json.load(f)
    idx = [i for i, e in enumerate(prof["entries"]) if e["op"] == "gemv"]
    assert idx == list(range(idx[0], idx[-1] + 1)), "the GEMV entries are not one block"
    prof["entries"][idx[0]:idx[-1] + 1] = _g24.one_kernel_first(entries(runs))
    prof["notes"].pop("gemv24", None)
    prof["notes"]["gemv25"] = NOTE
    with open(profile, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
