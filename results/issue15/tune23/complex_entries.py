"""The H100 profile's entries of the complex `real` plan's own real kernel (complex64/complex128
NN, `via` "real", keyed by the complex GEMM's size class: CGEMM 4096's real product
4096×8192×8192 is a `giant` SGEMM, so the real dtype's entries could not give it its own
choice). Each is a row of a GPU run that timed the whole complex call on one real kernel,
checked against a complex128 product first, per call (host path included; median of the
batches), rate in complex flops (8mnk):

- complex64 (results/issue15/sgemm23/run1/gemm.jsonl, benchmarks/blas_cuda.py, H3): every
  complex64 NN row: 1024 (64×64×16, split 2/3 @ 924), 4096 (split 4 and 5 @ 396 b3, group 8),
  8192 (split 4): CGEMM 4096 now runs split 5 (0.91x cuBLAS per call against 0.90x with the
  real dtype's giant choice, split 4).
- complex128 (results/issue15/dmma23/run1/dmma23.jsonl, H2): every complex128 NN row at 1024,
  4096, 8192 (the DMMA tilings, ahead, groups): the same choices the float64 entries give
  (128×64 ahead=2 at 1024, in groups of 4 at 4096 and 8192), now the complex kind's own.

The complex kinds' earlier `via` entries go; nothing else changes.

    python results/issue15/tune23/complex_entries.py [PROFILE.json]
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
PROFILE = os.path.join(ROOT, "src", "liftkit", "blas", "profiles",
                       "profile-397cb6df054d2a73.json")
CLASSES = {1024: "large", 4096: "huge", 8192: "giant"}


def _rows() -> list[tuple[str, int, str, float]]:
    """(dtype, n, real variant text, per-call GFLOP/s) of every complex NN row measured."""
    out = []
    for line in open(os.path.join(ROOT, "results/issue15/sgemm23/run1/gemm.jsonl")):
        r = json.loads(line)
        if r["dtype"] == "complex64" and r["layout"] == "NN" and int(r["size"]) in CLASSES:
            out.append(("complex64", int(r["size"]), r["variant"].split(" on ", 1)[1].split(" [")[0],
                        r["liftkit"]))
    for line in open(os.path.join(ROOT, "results/issue15/dmma23/run1/dmma23.jsonl")):
        r = json.loads(line)
        if r["dtype"] == "complex128" and r["layout"] == "NN" and "call_tflops" in r:
            out.append(("complex128", r["size"], r["variant"], r["call_tflops"] * 1e3))
    return out


def main(argv: list[str]) -> int:
    from liftkit.blas.codelets import Kind, lookup_variant

    path = argv[0] if argv else PROFILE
    with open(path) as f:
        prof = json.load(f)
    best: dict[tuple[str, int, str], float] = {}
    for dt, n, vtext, rate in _rows():
        best[dt, n, vtext] = max(best.get((dt, n, vtext), 0.0), rate)
    new = []
    for (dt, n, vtext), rate in sorted(best.items(), key=lambda x: (x[0][0], x[0][1], -x[1])):
        real = "float32" if dt == "complex64" else "float64"
        v = lookup_variant(Kind("mm", real, "NN"), vtext).to_json()
        new.append({"op": "mm", "dtype": dt, "layout": "NN", "size_class": CLASSES[n],
                    "sizes": {"M": n, "N": n, "K": n}, "variant": v,
                    "seconds": 8.0 * n ** 3 / rate / 1e9, "rate": rate, "unit": "GFLOP/s",
                    "via": "real"})
    prof["entries"] = [e for e in prof["entries"] if not e.get("via")] + new
    prof["notes"]["complex_real23"] = (
        "complex64/complex128 NN entries with via 'real': the real kernel of the complex "
        "`real` plan measured as the whole call per call (H100; results/issue15/tune23)")
    with open(path, "w") as f:
        f.write(json.dumps(prof, indent=1, sort_keys=False) + "\n")
    print(f"{len(new)} complex entries written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
