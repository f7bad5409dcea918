"""Declaring a user function (OpenCL C body + NumPy twin) and using it in a 3-point stencil
with slide and pad, then a 2D 3x3 blur built from the multi-dimensional helpers.

    python examples/stencil_user_function.py
"""

import numpy as np

from liftkit.dsl import *  # noqa: F403
from liftkit.ir.printer import show
from liftkit.semantics import interpret

N, M = size("N"), size("M")

# weighted sum of a window of three: 0.25*l + 0.5*c + 0.25*r
weighted3 = user_fun("weighted3", [("l", float32), ("c", float32), ("r", float32)], float32,
                     "return 0.25f * l + 0.5f * c + 0.25f * r;",
                     lambda l, c, r: np.float32(0.25) * l + np.float32(0.5) * c + np.float32(0.25) * r)

smooth = fun([float32[N]], lambda x:
             map(lambda w: weighted3(at(w, 0), at(w, 1), at(w, 2))) << slide(3, 1) << pad(1, 1, "mirror") << x)

blur = fun([float32[M][N]], lambda img:
           map(map(lambda win: map(lambda s: div(s, 9.0)) << reduce(add, 0.0) << join << win))
           << slide2D(3, 1) << pad2D(1, 1, "clamp") << img)

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    print(show(smooth))
    xp = np.pad(x, 1, mode="symmetric")
    assert np.allclose(interpret(smooth, x), 0.25 * xp[:-2] + 0.5 * xp[1:-1] + 0.25 * xp[2:], atol=1e-6)
    img = rng.standard_normal((32, 48)).astype(np.float32)
    out = interpret(blur, img)[..., 0]
    p = np.pad(img, 1, mode="edge")
    ref = sum(p[i:i + 32, j:j + 48] for i in range(3) for j in range(3)) / 9
    print(show(blur))
    print("blur max |error|:", float(np.abs(out - ref).max()))
    assert np.allclose(out, ref, atol=1e-5)
