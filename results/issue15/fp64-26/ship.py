"""Write fp64-26's winners into the H100 profile (issue 15, session 26, helper H4). Per GEMM row
(layout, n) of run1/fp64_26.jsonl: where a forced variant's median ratio to cuBLAS beats the
profile's own choice (the "profile" row) by more than MARGIN, an entry at the row's sizes for the
winner and one for the profile's choice, both from this run (seconds = the row's cuBLAS median
per call / its median ratio, as results/issue15/fp64-25/ship.py), replacing the entries of the
same kind, class and variant (`Profile.add`'s rule: an entry of the class's top rate is what the
library runs for the whole class). Rows listed in SKIP are not shipped (see the README).

    python results/issue15/fp64-26/ship.py [PROFILE.json] [--dry]
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE = os.path.join(HERE, "..", "..", "..", "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")
MARGIN = 0.005
SKIP: set[tuple[str, int]] = set()


def _kind(lay: str) -> tuple[str, str]:
    return ("complex64", lay[1:]) if lay.startswith("c") else ("float64", lay)


def main(argv: list[str]) -> int:
    from liftkit.blas.codelets import Kind, lookup_variant
    from liftkit.blas.profile import size_class

    dry = "--dry" in argv
    argv = [a for a in argv if a != "--dry"]
    path = argv[0] if argv else PROFILE
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for line in open(os.path.join(HERE, "run1", "fp64_26.jsonl")):
        r = json.loads(line)
        groups[r["layout"], r["size"][0]].append(r)
    new = []
    for (lay, n), rows in sorted(groups.items()):
        base = next((r for r in rows if r["variant"] == "profile"), None)
        best = max(rows, key=lambda r: r["ratio_median"])
        if base is None or best is base or best["ran"] == base["ran"] or (lay, n) in SKIP \
                or best["ratio_median"] < base["ratio_median"] + MARGIN:
            print(f"{lay} {n}: keeps {base and base['ran']} ({base and base['ratio_median']:.3f})")
            continue
        dtype, layout = _kind(lay)
        kind = Kind("mm", dtype, layout)
        sizes = {"M": n, "N": n, "K": n}
        flops = (8.0 if dtype.startswith("complex") else 2.0) * n ** 3
        for r in (best, base):
            seconds = r["cublas_median_s"] / r["ratio_median"]
            new.append({"op": "mm", "dtype": dtype, "layout": layout,
                        "size_class": size_class("mm", sizes), "sizes": sizes,
                        "variant": lookup_variant(kind, r["ran"]).to_json(), "seconds": seconds,
                        "rate": flops / seconds / 1e9, "unit": "GFLOP/s"})
        print(f"{lay} {n}: {best['ran']} {best['ratio_median']:.3f} over {base['ran']} "
              f"{base['ratio_median']:.3f}")
    if dry or not new:
        return 0
    with open(path) as f:
        prof = json.load(f)

    def key(e: dict) -> tuple:
        return (e["op"], e["dtype"], e["layout"], e["size_class"], json.dumps(e["variant"], sort_keys=True),
                e.get("via", ""))

    keys = {key(e) for e in new}
    kept = [e for e in prof["entries"] if key(e) not in keys]
    print(f"{len(prof['entries']) - len(kept)} entries replaced, {len(new)} written")
    prof["entries"] = kept + new
    prof["notes"]["fp64_26"] = (
        "mm float64 TN/NN with the operands copied as k rows kept in blocks of 4 rows (mma "
        "lines=2) and complex64 TN capped at two blocks per SM, where they beat the profile's "
        "choice per call: results/issue15/fp64-26 run 1 (H100, session 26; seconds = cuBLAS "
        "median / median ratio; the profile's choice re-entered from the same run)")
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
