"""Listing 1 of seed 000: the partial dot product as an OpenCL-level (low-level) Lift program.

Each work-group reduces 128 pairs: threads multiply-and-add pairs into local memory, `iterate`
halves the partial sums six times, and one thread writes the group's result.

    python examples/partial_dot_listing1.py
"""

import numpy as np

from liftkit.dsl import *  # noqa: F403
from liftkit.ir.printer import pretty
from liftkit.ir.typecheck import check_program
from liftkit.semantics import interpret

N = size("N")
partialDot = fun([float32[N], float32[N]], lambda x, y:
    join << mapWrg(0)(
        join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1)
        << iterate(6, join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(add, 0.0)) << split(2))
        << join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(multAndSumUp, 0.0)) << split(2)
    ) << split(128) << zip(x, y))

if __name__ == "__main__":
    print(pretty(partialDot))
    print("type:", check_program(partialDot))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 128 * 64), dtype=np.float32)
    out = interpret(partialDot, x, y)
    ref = (x * y).reshape(-1, 128).sum(axis=1)
    print("max |error| vs NumPy:", float(np.abs(out - ref).max()))
    assert np.allclose(out, ref, rtol=1e-4, atol=1e-4)
