"""What the search benchmarks (mm_search.py, stencil_search.py) share: every kernel checked on
fresh inputs first, then timed in rounds that alternate between the kernels, so that a load which
comes and goes on the machine shifts them all alike."""

from __future__ import annotations

import statistics
import time
from typing import Any, Mapping

import numpy as np


def rel_error(got: Any, want: Any) -> float:
    """‖got − want‖ / ‖want‖ over all elements (inf when the shapes differ)."""
    g, w = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    if g.shape != w.shape:
        return float("inf")
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def check_then_time(what: str, runner: Any, spec: Any, progs: Mapping[str, Any],
                    sizes: dict[str, int], rounds: int, repeat: int) -> dict[str, Any]:
    """`{label} rel_error`, `{label} ms` (median of the rounds) and `{label} ms rounds` for each
    compiled program; a wrong one ends the benchmark with one line."""
    row: dict[str, Any] = {}
    for label, compiled in progs.items():  # correct first, on fresh inputs, every output written
        inputs = spec.inputs(sizes, seed=int(time.time()) % 10_000)
        err = rel_error(runner.run(compiled, *inputs, sizes=sizes), spec.reference(*inputs))
        row[f"{label} rel_error"] = err
        if not err < 1e-4:
            raise SystemExit(f"{what}: the {label} kernel is wrong (relative error {err:.3g})")
    inputs = spec.inputs(sizes, seed=1)
    times: dict[str, list[float]] = {k: [] for k in progs}
    for _ in range(rounds):  # alternate, so drift hits all alike
        for label, compiled in progs.items():
            _, run = runner.run_with_info(compiled, *inputs, sizes=sizes, timing=True,
                                          repeat=repeat)
            times[label].append(run.total_seconds)
    for label, ts in times.items():
        row[f"{label} ms"] = statistics.median(ts) * 1e3
        row[f"{label} ms rounds"] = [t * 1e3 for t in ts]
    return row
