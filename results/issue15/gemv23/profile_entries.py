"""The shipped H100 profile's GEMV entries (large = 4096², huge = 8192²) from gemv23 runs' kernel
times (gemv.jsonl: call plans cleared per variant, each checked against float64/complex128):
every measured variant gets an entry (a variant timed in several runs keeps its best time),
replacing the profile's GEMV entries in place (they are one block); nothing else changes.

    python3 results/issue15/gemv23/profile_entries.py src/liftkit/blas/profiles/profile-397cb6df054d2a73.json \\
        results/issue15/gemv23/run{1,2,3,4}/gemv.jsonl
"""

from __future__ import annotations

import json
import sys

NOTE = ("gemv entries of float32/float64/complex64/complex128 N/T at large (4096²) and huge "
        "(8192²): kernel times on the H100 from results/issue15/gemv23 runs 1-4 (each variant's "
        "own call plan, checked against float64, beside cuBLAS in the same run; a variant timed "
        "in several runs keeps its best)")


def entries(runs: list[str]) -> list[dict]:
    best: dict[tuple[str, str, int, str], float] = {}
    for path in runs:
        for line in open(path):
            r = json.loads(line)
            if "kernel_us" in r:
                k = (r["dtype"], r["layout"], r["size"], r["variant"])
                best[k] = min(best.get(k, float("inf")), r["kernel_us"] * 1e-6)
    classes = {4096: "large", 8192: "huge"}
    out = []
    for (dt, lay, n, vtext), sec in sorted(best.items()):
        name, _, rest = vtext.partition("(")
        params = {k: int(v) for k, v in (p.split("=") for p in rest.rstrip(")").split(",") if p)}
        out.append({"op": "gemv", "dtype": dt, "layout": lay, "size_class": classes[n],
                    "sizes": {"M": n, "N": n}, "variant": {"codelet": name, "params": params},
                    "seconds": sec, "rate": 2.0 * n * n / sec / 1e9, "unit": "GFLOP/s"})
    return out


def main(profile: str, runs: list[str]) -> None:
    with open(profile) as f:
        prof = json.load(f)
    idx = [i for i, e in enumerate(prof["entries"]) if e["op"] == "gemv"]
    if idx:
        assert idx == list(range(idx[0], idx[-1] + 1)), "the GEMV entries are not one block"
        prof["entries"][idx[0]:idx[-1] + 1] = entries(runs)
    else:
        prof["entries"] += entries(runs)
    prof["notes"]["gemv23"] = NOTE
    with open(profile, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
