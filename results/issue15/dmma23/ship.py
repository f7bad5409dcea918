"""Write the DGEMM measurements of runs 1 and 3 (results/issue15/dmma23/run*/dmma23.jsonl: NN and
TN on their DMMA derivations, NT on its own, rows `NTd`) into the H100 profile: one entry per
variant and size, its per-call seconds (10-20 calls back to back between CUDA events, host
path included, median of the batches), replacing the profile's entries of those variants in
those classes (their older kernel rates came from other runs). Rows of the nn plan (NT through
the transpose) and of complex GEMMs are not kernel entries and stay out.

    python results/issue15/dmma23/ship.py [PROFILE.json]
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE = os.path.join(HERE, "..", "..", "..", "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")


def main(argv: list[str]) -> int:
    from liftkit.blas.codelets import Kind, lookup_variant
    from liftkit.blas.profile import size_class

    path = argv[0] if argv else PROFILE
    with open(path) as f:
        prof = json.load(f)
    rows = [json.loads(line) for run in ("run1", "run3")
            for line in open(os.path.join(HERE, run, "dmma23.jsonl"))]
    new = []
    for r in rows:
        if r["dtype"] != "float64" or r["layout"] not in ("NN", "TN", "NTd") or "call_s" not in r:
            continue
        layout = r["layout"][:2]
        kind = Kind("mm", "float64", layout)
        v = lookup_variant(kind, r["variant"]).to_json()
        n = r["size"]
        sizes = {"M": n, "N": n, "K": n}
        new.append({"op": "mm", "dtype": "float64", "layout": layout,
                    "size_class": size_class("mm", sizes),
                    "sizes": sizes, "variant": v, "seconds": r["call_s"],
                    "rate": 2.0 * n ** 3 / r["call_s"] / 1e9, "unit": "GFLOP/s"})
    keys = {(e["layout"], e["size_class"], json.dumps(e["variant"], sort_keys=True)) for e in new}
    kept = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e["dtype"] == "float64" and
        (e["layout"], e["size_class"], json.dumps(e["variant"], sort_keys=True)) in keys)]
    print(f"{len(prof['entries']) - len(kept)} entries replaced by {len(new)}")
    prof["entries"] = kept + new
    prof["notes"].pop("dmma23_run1", None)
    prof["notes"]["dmma23"] = (
        "mm float64 NN, TN and NT, large (1024³), huge (4096³) and giant (8192³): per-call "
        "seconds through liftkit.blas (10-20 calls back to back between CUDA events, host path "
        "included, median of 3-5 batches) of results/issue15/dmma23/run1 and run3 (NT) (H100, "
        "session 23), each variant's entries replacing earlier ones of the same variant and "
        "class; new there: the grouped block order (mma group=g, rule wrg-row-groups), DMMA "
        "m16n8k8 read ahead (ik=8 ahead=2) at 1024 and for TN, NT on its own DMMA derivation "
        "(no transpose pass)")
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
