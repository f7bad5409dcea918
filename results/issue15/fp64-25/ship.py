"""Write DGEMM NN/NT/TN 1024's measurements of fp64-25's runs into the H100 profile as entries of
float64 mm, class large, at 1024³: each variant's per-call seconds as its row's cuBLAS median per
call over the variant's median ratio to cuBLAS in the alternating rounds. Only the kernels as
generated now (16-byte accumulator stores); the "scalar:" rows (the code before) are left out.
Each replaces the profile's entry of the same layout and variant (measured before with the
accumulators stored one double at a time: slower by 0.06-0.08x cuBLAS at 1024).
Where a run measured a variant more than once, the later run's figure is written.

    python results/issue15/fp64-25/ship.py [PROFILE.json] [RUN ...]   (default: run1 run2)
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE = os.path.join(HERE, "..", "..", "..", "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")


def _key(layout: str, variant: dict) -> str:
    return layout + json.dumps(variant, sort_keys=True)


def main(argv: list[str]) -> int:
    from liftkit.blas.codelets import Kind, lookup_variant

    path = argv[0] if argv else PROFILE
    runs = argv[1:] or ["run1", "run2"]
    with open(path) as f:
        prof = json.load(f)
    new: dict[str, dict] = {}
    for run in runs:
        rows = os.path.join(HERE, run, "fp64_25.jsonl")
        if not os.path.exists(rows):
            continue
        for line in open(rows):
            r = json.loads(line)
            if r["dtype"] != "float64" or r["size"] != 1024 or r["variant"].startswith("scalar:") \
                    or r["plan"] != "mma" or r["variant"] == "profile":
                continue
            v = lookup_variant(Kind("mm", "float64", r["layout"]), r["variant"]).to_json()
            n = r["size"]
            seconds = r["cublas_median_s"] / r["ratio_median"]
            new[_key(r["layout"], v)] = {
                "op": "mm", "dtype": "float64", "layout": r["layout"], "size_class": "large",
                "sizes": {"M": n, "N": n, "K": n}, "variant": v, "seconds": seconds,
                "rate": 2.0 * n ** 3 / seconds / 1e9, "unit": "GFLOP/s"}
    kept = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e["dtype"] == "float64" and e["size_class"] == "large"
        and e.get("sizes") == {"M": 1024, "N": 1024, "K": 1024} and "via" not in e
        and _key(e["layout"], e["variant"]) in new)]
    print(f"{len(prof['entries']) - len(kept)} entries replaced by {len(new)}")
    prof["entries"] = kept + list(new.values())
    prof["notes"]["fp64_25"] = (
        "mm float64 NN/NT/TN large (1024³): per-call seconds of results/issue15/fp64-25 "
        f"({', '.join(runs)}; H100, session 25; 7 alternating rounds beside cuBLAS, each row's "
        "cuBLAS median over its median ratio), the kernels with 16-byte accumulator stores; new "
        "there: k-permuted 16-byte fragment reads (mma pairs=1)")
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
