"""The dot product of seed 000 §3.1, in two lines, checked against NumPy.

    python examples/dot_product.py
"""

import numpy as np

from liftkit.dsl import *  # noqa: F403
from liftkit.ir.printer import show
from liftkit.semantics import interpret

N = size("N")
dot = fun([float32[N], float32[N]], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 1 << 16), dtype=np.float32)
    print(show(dot))
    out = interpret(dot, x, y)
    print(f"lift: {out[0]:.4f}   numpy: {float(x @ y):.4f}")
    assert np.allclose(out[0], x @ y, rtol=1e-4)
