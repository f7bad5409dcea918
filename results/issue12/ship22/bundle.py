"""Rewrite the bundled H100 SGEMM derivations of 4096³, 8192³ and 1024×1024×8192
(src/liftkit/derivations/gpu-cuda-nvidia-h100-80gb-hbm3) to mm-tiles-async then mm-split-tail
(the same tiles as before), the schedules that ran
fastest in results/issue12/sgemm22/run1 (H100, beside cuBLAS in the same run). Run from the
repository root: python results/issue12/ship22/bundle.py"""

from __future__ import annotations

import dataclasses

from liftkit.explore import bundled
from liftkit.ir.printer import show
from liftkit.rewrite.core import Choice
from liftkit.rewrite.rules.mm_schedule import sgemm_schedule_derivation

RUN = "results/issue12/sgemm22/run1/sgemm.log"
# ((m, n, k), (tm, tn, tk, stages), parts, slots, bound, ms, cuBLAS ms in the same run)
SHIPPED = (((4096, 4096, 4096), (128, 64, 32, 2), 5, 396, 3, 2.849, 2.709),
           ((8192, 8192, 8192), (128, 64, 32, 2), 4, 396, 3, 22.142, 21.362),
           ((1024, 1024, 8192), (64, 64, 16, 3), 4, 924, 0, 0.408, 0.397))


def main() -> None:
    have = {(d.program, tuple(sorted(d.sizes.items())), d.kind): d for d in bundled.load_all()
            if d.device.startswith("cuda|NVIDIA H100")}
    for (m, n, k), (tm, tn, tk, st), parts, slots, bound, ms, cublas in SHIPPED:
        old = have[("mm", (("K", k), ("M", m), ("N", n)), "gpu")]
        d = sgemm_schedule_derivation(m, n, k, tm, tn, tk, 8, 8, st, parts, slots, bound)
        steps = tuple(Choice.from_json({k: v for k, v in s.to_json().items()
                                        if k in ("rule", "path", "params")}) for s in d.steps)
        if [c.to_json() for c in old.steps] == [c.to_json() for c in steps]:
            continue  # written already
        assert [c.to_json() for c in steps[:2]] == [c.to_json() for c in old.steps], "tiles changed"
        new = dataclasses.replace(
            old, steps=steps, low_level=show(d.final), time=ms / 1e3, candidates=12,
            valid=12, search_seconds=0.0, seconds_to_best=0.0, best_candidate=1,
            origin=(f"mm-split-tail t{parts}@{slots}{f'b{bound}' if bound else ''} on the "
                    f"{tm}x{tn}:{tk}:8x8:{st} tiles, "
                    f"results/issue12/sgemm22 on NVIDIA H100 80GB HBM3 ({RUN}: 12 schedules; "
                    f"cuBLAS {cublas} ms in the same run: {cublas / ms:.3f}x; "
                    f"replaces {old.time * 1e3:.4g} ms, {old.origin})"))
        print(*bundled.write([new]))


if __name__ == "__main__":
    main()
