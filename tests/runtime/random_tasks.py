"""The runtime tests' small kernels and their random task streams (kernels, host writes,
deferred copies, reads) checked against NumPy, shared by test_queues.py and test_lazy_events.py."""

from __future__ import annotations

import numpy as np

from liftkit.runtime import Kernel, Runtime

SCALE = Kernel("scale", {"opencl": """kernel void scale(global double* x, long xo, double a) {
    long i = get_global_id(0); x[xo + i] *= a; }"""})
ADD = Kernel("add", {"opencl": """kernel void add(global const double* x, long xo,
        global double* y, long yo) { long i = get_global_id(0); y[yo + i] += x[xo + i]; }"""})


def random_task_stream(rt: Runtime, rng: np.random.Generator, steps: int, scales: int,
                       scale_reads: bool) -> None:
    """`steps` random tasks on five (up to nine) arrays of 32 doubles, each read back against
    NumPy's answer: of `scales + 4` equally likely kinds, `scales` scale an array (declared as a
    read too with `scale_reads`), then an add, a host write, a copy (while fewer than nine), a
    read."""
    ref = [rng.standard_normal(32) for _ in range(5)]
    vs = [rt.submit(r.copy()) for r in ref]
    for step in range(steps):
        op = rng.integers(scales + 4)
        i, j = (int(k) for k in rng.choice(len(vs), 2, replace=False))
        if op < scales:
            a = float(rng.choice([0.5, 2.0, -1.0]))
            declared = {"reads": [vs[i]]} if scale_reads else {}  # (without: reads left to infer)
            rt.launch(SCALE, (32,), [vs[i], a], writes=[vs[i]], **declared)
            ref[i] = ref[i] * a
        elif op == scales:
            rt.launch(ADD, (32,), [vs[i], vs[j]], reads=[vs[i], vs[j]], writes=[vs[j]])
            ref[j] = ref[j] + ref[i]
        elif op == scales + 1:
            new = rng.standard_normal(32)
            rt.write(vs[i], new)
            ref[i] = new
        elif op == scales + 2 and len(vs) < 9:
            vs.append(rt.copy(vs[i]))
            ref.append(ref[i].copy())
        else:
            np.testing.assert_allclose(rt.read(vs[i]), ref[i], err_msg=f"step {step}")
    for v, r in zip(vs, ref):
        np.testing.assert_allclose(rt.read(v), r)
