"""What run.sh's tuning measures, counted here before any device time: per tune command and
(kind, class) the variants left to measure (the seed's K fastest, or the whole space where the
command has no seed, less what the pruned profile holds) and the follow-ups at most
(`tune.planned_measurements`' bound: guarded forms, split plans, the complex plans' kernels),
with the H100/H200's multiprocessor limits (both GH100: 132 SMs).

    python3 plan.py PRUNED_PROFILE
"""

from __future__ import annotations

import sys

from liftkit.backends.cuda.occupancy import SMLimits
from liftkit.blas.codelets import Kind, space_at
from liftkit.blas.profile import SHIPPED, Profile, file_name
from liftkit.blas.seed import seeded_space
from liftkit.blas.tune import planned_measurements, sizes_for

GH100 = SMLimits(132, 65536, 233472, 2048, 32, 1024)
H100 = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"
CLASSES = ("large", "huge")
# run.sh's tune commands: (name, kinds, classes, seeded by the H100 profile, seed top)
COMMANDS = [
    ("dgemm", [Kind("mm", "float64", lay) for lay in ("NN", "TN")], CLASSES, True, 4),
    ("transpose", [Kind("transpose", dt) for dt in ("float32", "float64")], CLASSES, False, 0),
    ("gemv", [Kind("gemv", dt, lay) for dt in ("float32", "float64") for lay in "NT"], CLASSES,
     True, 8),
    ("odd", [Kind("mm", dt, "NN") for dt in ("float32", "complex64")], ("large",), True, 4),
]


def main(pruned: str) -> None:
    prof = Profile.load(pruned)
    seed = Profile.load(SHIPPED / file_name(H100))
    total = [0, 0]
    for name, kinds, classes, seeded, top in COMMANDS:
        n = 0
        for kind in kinds:
            for cls in classes:
                sizes = sizes_for(kind, cls, "gpu")
                vs = seeded_space(seed if seeded else None, kind, cls,
                                  space_at(kind, "gpu", "cuda", sizes, GH100), top)
                todo = [v for v in vs if v not in prof.measured(kind, cls)]
                n += len(todo)
                print(f"  {name:9s} {str(kind):22s} {cls:6s} {len(todo):3d} of {len(vs):3d}")
        _, more = planned_measurements(
            kinds, classes, "gpu", "cuda", GH100, True,
            skip=lambda k, c: f"{k}|{c}" in prof.notes.get("edges", {}))
        # classes whose split plans were measured before (notes.splits) measure none again
        print(f"{name}: {n} variants, at most {more} follow-ups")
        total[0] += n
        total[1] += more
    print(f"total: {total[0]} variants, at most {total[1]} follow-ups")


if __name__ == "__main__":
    main(sys.argv[1])
