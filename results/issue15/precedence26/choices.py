"""The shipped CUDA profiles' GEMM choices at every shape they measured (and the odd sizes of the
per-call tables), on the stubbed CUDA queue (benchmarks/blas_host.py: no GPU; kernels compiled
by NVRTC, launches recorded): one JSON line per profile, dtype, layout and shape, with the plan
`plan_gemm` makes and the entries measured at those very sizes (via, rate, variant), fastest
first. Run it at two commits and compare the files to see which choices a change moves:

    python results/issue15/precedence26/choices.py > after.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import blas_host  # noqa: E402

from liftkit.blas.profile import SHIPPED, Profile  # noqa: E402

PROFILES = {"H100": "profile-397cb6df054d2a73.json", "H200": "profile-dc1c1a649d0d8e1d.json"}
ODD = ((1023, 1025, 999), (4097, 4095, 4095), (1000, 1000, 1000), (4095, 4097, 4071))
FLAG = {"N": False, "T": True, "C": "C"}


def main() -> None:
    for card, name in PROFILES.items():
        prof = Profile.load(SHIPPED / name)
        s = blas_host.stub_session(profile=prof)
        shapes = {(e.kind.dtype, e.kind.layout, e.sizes["M"], e.sizes["N"], e.sizes["K"])
                  for e in prof.entries if e.kind.op == "mm"}
        shapes |= {(dt, lay, *sz) for dt in ("float32", "float64", "complex64", "complex128")
                   for lay in ("NN", "NT", "TN") for sz in ODD}
        for dt, lay, M, N, K in sorted(shapes):
            ta, tb = FLAG[lay[0]], FLAG[lay[1]]
            a, b = ((K, M) if ta else (M, K)), ((N, K) if tb else (K, N))
            try:
                p = s.plan_gemm(a, b, np.dtype(dt), trans_a=ta, trans_b=tb)
                plan = f"{p.variant} | {p.built.variant}"
            except Exception as err:  # noqa: BLE001 - reported, not raised
                plan = f"error: {err}"
            here = sorted((e for e in prof.entries if e.kind.op == "mm" and e.kind.dtype == dt
                           and e.kind.layout == lay and dict(e.sizes) == {"M": M, "N": N, "K": K}),
                          key=lambda e: -e.rate)
            print(json.dumps({"card": card, "dtype": dt, "layout": lay, "sizes": [M, N, K],
                              "plan": plan, "entries": [[e.via, round(e.rate), str(e.variant)]
                                                        for e in here[:6]]}))


if __name__ == "__main__":
    main()
