"""Write fp64-25b run 1's DGEMM odd-size winners into the H100 profile (issue 15, session 25,
helper H9). Each entry's per-call seconds = its row's cuBLAS median per call over the row's median
ratio to cuBLAS in the alternating rounds (as results/issue15/fp64-25/ship.py); the run was on an
H200 (the ratios beside cuBLAS on the same card are what carry over). Entries:

- NN 1000³: the guarded DMMA kernel of 128×64 tiles on 8 warps (edge-mma w8 ×4), an entry at
  those sizes (`gemm.profiled_edge` runs it there; 0.889x against the shipped w4 form's
  0.775x as generated before / 0.820x with the 16-byte guarded stores);
- NN 1023×1025×999: the split entry's rate re-measured (split w=64 on that kernel as its interior,
  0.864x against 0.769x before), and the interior's kernel as an entry via "here" at
  1023×1024×1024 (the interior's sizes; its seconds: the whole split call's, an upper bound).

The rows were generated with slot pointers on (`cuda_mma.SLOT_POINTERS`, since off by default:
they lost at 1024); the kernels as shipped read by element indices (README).

    python results/issue15/fp64-25b/ship.py [PROFILE.json]
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE = os.path.join(HERE, "..", "..", "..", "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")
W8 = "edge-mma(tm=128,tn=64,tk=16,warps=8,staged=4,lines=1,ik=8,ahead=2)"
INTERIOR = {"M": 1023, "N": 1024, "K": 1024}


def main(argv: list[str]) -> int:
    from liftkit.blas.codelets import Kind, Variant, lookup_variant
    from liftkit.blas.profile import size_class

    path = argv[0] if argv else PROFILE
    rows = {r["variant"]: r for r in map(json.loads, open(os.path.join(HERE, "run1", "fp64_25b.jsonl")))
            if r["layout"] == "NN"}
    kind = Kind("mm", "float64", "NN")
    w8 = lookup_variant(kind, W8).to_json()

    def entry(sizes: dict[str, int], variant: dict, row: dict, via: str = "") -> dict:
        seconds = row["cublas_median_s"] / row["ratio_median"]
        flops = 2.0 * sizes["M"] * sizes["N"] * sizes["K"]
        return {"op": "mm", "dtype": "float64", "layout": "NN", "size_class": size_class("mm", sizes),
                "sizes": dict(sizes), "variant": variant, "seconds": seconds,
                "rate": flops / seconds / 1e9, "unit": "GFLOP/s", **({"via": via} if via else {})}

    cube, odd = {"M": 1000, "N": 1000, "K": 1000}, {"M": 1023, "N": 1025, "K": 999}
    new = [entry(cube, w8, rows[W8]),
           entry(odd, Variant.of("split", w=64).to_json(), rows["split:" + W8], "split"),
           entry(INTERIOR, w8, rows["split:" + W8], "here")]
    with open(path) as f:
        prof = json.load(f)

    def replaced(e: dict) -> bool:
        return any(e["op"] == n["op"] and e["dtype"] == n["dtype"] and e["layout"] == n["layout"]
                   and e.get("sizes") == n["sizes"] and e.get("via", "") == n.get("via", "")
                   and (e["variant"] == n["variant"] or n.get("via") == "split")
                   for n in new)

    kept = [e for e in prof["entries"] if not replaced(e)]
    print(f"{len(prof['entries']) - len(kept)} entries replaced, {len(new)} written")
    prof["entries"] = kept + new
    prof["notes"]["fp64_25b"] = (
        "mm float64 NN at 1000³ (edge-mma 128×64 on 8 warps, 0.889x cuBLAS per call) and "
        "1023×1025×999 (split w=64 on that kernel as its interior, 0.864x; the interior's entry "
        "via here at 1023×1024×1024, the split call's seconds): results/issue15/fp64-25b run 1 "
        "(an H200, session 25; seconds = cuBLAS median / median ratio)")
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
