"""Split entries (via "split") for the shipped H100 profile from an odd25 run: for each real
dtype whose fastest split row (`split`, `split-rows`) at 1023×1025×999 was checked
against cuBLAS (both paths) and ran faster per call than the GEMM's own plan (`plain`) in the
same run, an entry at those very sizes with the split's per-call rate; liftkit.blas then runs
that split plan there and only there (`split.measured_split` through `Profile.at_sizes`). A dtype
where every split lost gets none (and any earlier one goes).

    python3 results/issue15/odd25/profile_entries.py PROFILE.json run1/odd25.json
"""

from __future__ import annotations

import json
import sys

SIZE = "1023x1025x999"
# (run 1's "split-side" row, the edge on a second stream, is not a form liftkit.blas has: removed)
FORMS = {"split": {}, "split-rows": {"gemv": 1}}


def main(profile: str, rows_json: str) -> None:
    with open(profile) as f:
        prof = json.load(f)
    rows = json.load(open(rows_json))
    m, n, k = (int(x) for x in SIZE.split("x"))
    won = {}
    for dt in ("float32", "float64"):
        got = {r["label"]: r for r in rows if r["size"] == SIZE and r["dtype"] == dt and r["ok"]}
        tried = [got[x] for x in FORMS if x in got]
        best = min(tried, key=lambda r: r["liftkit_us"]) if tried else None
        if best is not None and "plain" in got and best["liftkit_us"] < got["plain"]["liftkit_us"]:
            won[dt] = best
    prof["entries"] = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e.get("via") == "split" and e["dtype"] in ("float32", "float64"))]
    for dt, r in won.items():
        s = r["liftkit_us"] * 1e-6
        prof["entries"].append({
            "op": "mm", "dtype": dt, "layout": "NN", "size_class": "large",
            "sizes": {"M": m, "N": n, "K": k}, "variant": {"codelet": "split", "params": {
                "w": 64, **FORMS[r["label"]]}},
            "seconds": s, "rate": 2 * m * n * k / s * 1e-9, "unit": "GFLOP/s", "via": "split"})
    prof["notes"]["odd25"] = (
        "split plans (vector copies; gemv=1 a warp per row) "
        "at 1023x1025x999 per call beside the GEMM's own plan and cuBLAS, alternating rounds "
        f"(results/issue15/odd25): entries for {sorted(won) or 'none'}")
    with open(profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print({dt: (r["label"], round(r["ratio"], 3)) for dt, r in won.items()})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
