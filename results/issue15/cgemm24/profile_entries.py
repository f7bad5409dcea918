"""The shipped H100 profile's complex64 GEMM entries (NN, NT, TN; large = 1024³, huge = 4096³,
giant = 8192³) from a cgemm24 run (rows.jsonl of bench_cgemm.py, every row checked against a
complex128 product first): each derivation timed in the alternating rounds, the `real` plan
(codelet real: the complex GEMM as one real GEMM) and the complex FFMA tiles (ctiles-async),
at its per-call rate (median of the rounds, complex flops 8mnk). The profile ranks them: the
faster one runs. The kind's earlier plain (not `via`) entries of those classes go; the `via`
"real" entries (which real kernel the real plan runs) stay.

    python3 results/issue15/cgemm24/profile_entries.py PROFILE.json run1/rows.jsonl
    python3 results/issue15/cgemm24/profile_entries.py PROFILE.json run2/rows.jsonl  # NT, TN
"""

from __future__ import annotations

import json
import sys

CLASSES = {1024: "large", 4096: "huge", 8192: "giant"}


def main(profile: str, jsonl: str) -> None:
    with open(profile) as f:
        prof = json.load(f)
    rows = [json.loads(line) for line in open(jsonl)]
    timed = [r for r in rows if "ratio" in r and r["n"] in CLASSES]
    measured = {(r["layout"], CLASSES[r["n"]]) for r in timed}
    entries = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e["dtype"] == "complex64" and not e.get("via")
        and (e["layout"], e["size_class"]) in measured)]
    for r in sorted(timed, key=lambda r: (r["layout"], r["n"], -r["liftkit"])):
        n = r["n"]
        entries.append({"op": "mm", "dtype": "complex64", "layout": r["layout"],
                        "size_class": CLASSES[n], "sizes": {"M": n, "N": n, "K": n},
                        "variant": r["variant"], "seconds": r["liftkit_s"],
                        "rate": r["liftkit"], "unit": "GFLOP/s"})
    prof["entries"] = entries
    prof["notes"]["cgemm24"] = (
        "complex64 GEMM at 1024/4096/8192: the real plan and the complex FFMA tiles "
        "(ctiles-async) per call beside cuBLAS, alternating rounds (results/issue15/cgemm24): NN "
        "from run1 (1024, 8192 on ctiles 128x64x16 8x4; 4096 real), NT/TN from run2 (the "
        "transposed operand tiled as stored, kt=1, NT's rows rotated; NT 4096 real)")
    with open(profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
