"""The shipped H100 profile's GEMV entries (large = 4096², huge = 8192²; float32/float64, N/T)
from a gemv23 run's kernel times (gemv.jsonl: call plans cleared per variant, each checked
against float64): every measured variant's entry replaces that kind's entries of its class.

    python3 results/issue15/gemv23/profile_entries.py PROFILE.json results/issue15/gemv23/run1/gemv.jsonl
"""

from __future__ import annotations

import json
import sys


def main(profile: str, runs: list[str]) -> None:
    with open(profile) as f:
        prof = json.load(f)
    best: dict[tuple[str, str, int, str], float] = {}
    for path in runs:
        for line in open(path):
            r = json.loads(line)
            if "kernel_us" not in r:
                continue
            k = (r["dtype"], r["layout"], r["size"], r["variant"])
            best[k] = min(best.get(k, float("inf")), r["kernel_us"] * 1e-6)
    classes = {4096: "large", 8192: "huge"}
    measured = {(dt, lay, classes[n]) for dt, lay, n, _ in best}
    entries = [e for e in prof["entries"] if not (
        e["op"] == "gemv" and (e["dtype"], e["layout"], e["size_class"]) in measured)]
    for (dt, lay, n, vtext), sec in sorted(best.items()):
        name, _, rest = vtext.partition("(")
        params = {k: int(v) for k, v in (p.split("=") for p in rest.rstrip(")").split(",") if p)}
        entries.append({"op": "gemv", "dtype": dt, "layout": lay, "size_class": classes[n],
                        "sizes": {"M": n, "N": n}, "variant": {"codelet": name, "params": params},
                        "seconds": sec, "rate": 2.0 * n * n / sec / 1e9, "unit": "GFLOP/s"})
    prof["entries"] = entries
    prof["notes"]["gemv23"] = (
        "gemv entries of float32/float64 N/T at large (4096²) and huge (8192²): kernel times on "
        "the H100 from results/issue15/gemv23 (each variant's own call plan, checked against "
        "float64, beside cuBLAS in the same run)")
    with open(profile, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
