"""The shipped H100 profile's complex128 GEMM entries (NN, NT, TN) from the zgemm25 runs (every
row checked against cuBLAS's complex128 product first): plain (not `via`) entries, the whole
call's per-call time, for the `real` plan (the shipped plan before: cembed + the real DMMA
kernel, TN's transpose) and the complex DMMA kernels (`zmma`). Class large from run 2 (1024³
and 2048³, after the 8-byte fragment reads), classes huge and giant from run 1 (4096³, 8192³:
the real plan only; run 1's zmma rows predate the fragment reads, and the real plan won there).
Each row's seconds are the median cuBLAS time of its (layout, size) rows over the row's median
ratio (alternating rounds), so entries of one size rank with each other. The profile ranks
them by rate: the faster plan runs. The kind's earlier plain entries of those classes go; the
`via` "real" entries (which real kernel the real plan runs) stay.

    python3 results/issue15/zgemm25/ship.py [PROFILE.json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE = os.path.join(HERE, "..", "..", "..", "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")
CLASSES = {1024: "large", 2048: "large", 4096: "huge", 8192: "giant"}
SOURCES = (("run2", (1024, 2048), True), ("run1", (4096, 8192), False))  # (run, sizes, zmma too)


def _variant(row: dict) -> dict:
    from liftkit.blas.codelets import Kind, lookup_variant

    if row["shipped"]:
        return {"codelet": "real", "params": {}}
    return lookup_variant(Kind("mm", "complex128", row["layout"]), row["variant"]).to_json()


def main(argv: list[str]) -> int:
    path = argv[0] if argv else PROFILE
    with open(path) as f:
        prof = json.load(f)
    new = []
    for run, sizes, zmma in SOURCES:
        rows = [json.loads(line) for line in open(os.path.join(HERE, run, "zgemm25.jsonl"))]
        rows = [r for r in rows if r["size"] in sizes and (zmma or r["shipped"])]
        for (lay, n) in sorted({(r["layout"], r["size"]) for r in rows}):
            mine = [r for r in rows if (r["layout"], r["size"]) == (lay, n)]
            ref = statistics.median(r["cublas_median_s"] for r in mine)
            for r in mine:
                seconds = ref / r["ratio_median"]
                new.append({"op": "mm", "dtype": "complex128", "layout": lay,
                            "size_class": CLASSES[n], "sizes": {"M": n, "N": n, "K": n},
                            "variant": _variant(r), "seconds": seconds,
                            "rate": 8.0 * n ** 3 / seconds / 1e9, "unit": "GFLOP/s"})
    measured = {(e["layout"], e["size_class"]) for e in new}
    kept = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e["dtype"] == "complex128" and not e.get("via")
        and (e["layout"], e["size_class"]) in measured)]
    print(f"{len(prof['entries']) - len(kept)} entries replaced by {len(new)}")
    prof["entries"] = kept + new
    prof["notes"]["zgemm25"] = (
        "complex128 GEMM NN/NT/TN, plain entries (whole calls): large from results/issue15/"
        "zgemm25 run2 (1024, 2048: the real plan and the complex DMMA kernels zmma, 5 alternating "
        "rounds beside cuBLAS, seconds = the size's median cuBLAS time / the median ratio), huge "
        "and giant from run1 (4096, 8192: the real plan)")
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
