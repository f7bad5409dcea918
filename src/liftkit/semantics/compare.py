"""Comparing a result with the expected one, the way every checker in liftkit reports it:
tuples and arrays of tuples component by component, shapes first, then values within tolerances
(NaN equal to NaN). One function, so the interpreter checks of the runtime tests, the
exploration and derivation verification all say the same thing."""

from __future__ import annotations

from typing import Any

import numpy as np


def difference(got: Any, want: Any, rtol: float = 0.0, atol: float = 0.0) -> str:
    """'' when got ≈ want, else a short description of the first difference."""
    if isinstance(want, tuple) or isinstance(got, tuple):
        if not (isinstance(want, tuple) and isinstance(got, tuple)) or len(got) != len(want):
            return "the result has a different tuple structure"
        for k, (g, w) in enumerate(zip(got, want)):
            d = difference(g, w, rtol, atol)
            if d:
                return f"component {k}: {d}"
        return ""
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.names or w.dtype.names:
        if g.dtype.names != w.dtype.names:
            return "the result has different tuple fields"
        return difference(tuple(g[n] for n in g.dtype.names), tuple(w[n] for n in w.dtype.names),
                          rtol, atol)
    if g.shape != w.shape:
        return f"shape {g.shape}, expected {w.shape}"
    wide = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
    g64, w64 = g.astype(wide), w.astype(wide)
    bad = ~np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (f"{int(bad.sum())} of {bad.size} values differ (e.g. [{i}]: "
                f"{g64.flat[i]:.6g}, expected {w64.flat[i]:.6g})")
    return ""
