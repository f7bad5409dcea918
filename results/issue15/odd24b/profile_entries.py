"""Split entries (via "split") for the shipped H100 profile from an odd24b run: for each real
dtype whose faster split row (`split`, `split-rows`) at 1023×1025×999 was checked against cuBLAS and ran faster per call
than the library's own plan (`auto`) in the same run, an entry at those very sizes with the
split's per-call rate; liftkit.blas then runs the split plan there and only there
(`split.measured_split`). A dtype where the split lost gets none (and any earlier one goes).

    python3 results/issue15/odd24b/profile_entries.py PROFILE.json run1/odd24b.json
"""

from __future__ import annotations

import json
import sys

SIZE = "1023x1025x999"


def main(profile: str, rows_json: str) -> None:
    with open(profile) as f:
        prof = json.load(f)
    rows = json.load(open(rows_json))
    m, n, k = (int(x) for x in SIZE.split("x"))
    won = {}
    for dt in ("float32", "float64"):
        got = {r["label"]: r for r in rows if r["size"] == SIZE and r["dtype"] == dt and r["ok"]}
        tried = [got[x] for x in ("split", "split-rows") if x in got]
        best = min(tried, key=lambda r: r["liftkit_us"]) if tried else None
        if best is not None and "auto" in got and best["liftkit_us"] < got["auto"]["liftkit_us"]:
            won[dt] = best
    prof["entries"] = [e for e in prof["entries"] if not (
        e["op"] == "mm" and e.get("via") == "split" and e["dtype"] in ("float32", "float64"))]
    for dt, r in won.items():
        s = r["liftkit_us"] * 1e-6
        prof["entries"].append({
            "op": "mm", "dtype": dt, "layout": "NN", "size_class": "large",
            "sizes": {"M": m, "N": n, "K": k}, "variant": {"codelet": "split", "params": {
                "w": 64, **({"gemv": 1} if r["label"] == "split-rows" else {})}},
            "seconds": s, "rate": 2 * m * n * k / s * 1e-9, "unit": "GFLOP/s", "via": "split"})
    prof["notes"]["odd24b"] = (
        "split plan (interior M x N-1 x K' on the profile's kernel, the last column by a GEMV, "
        "hcat) at 1023x1025x999 per call beside the library's own plan and cuBLAS, alternating "
        f"rounds (results/issue15/odd24b): entries for {sorted(won) or 'none'}")
    with open(profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print({dt: round(r["ratio"], 3) for dt, r in won.items()})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
