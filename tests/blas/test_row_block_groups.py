"""Codelet `row-block-groups` (rule gemv-row-block-groups: gemv-row-blocks in work-groups of L
work-items) on the CPU device: padded where r·L does not divide M or w does not divide N, run
through the general path and the call plan, every result NumPy's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl.array as cla
import pytest

from liftkit.blas import Kind, Session, Variant


@pytest.mark.parametrize("dt,tol", [("float32", 1e-4), ("float64", 1e-12)])
def test_row_block_groups_match_numpy(session: Session, dt: str, tol: float) -> None:
    rng = np.random.default_rng(11)
    saved: Any = session.__dict__.get("choose")
    try:
        for v, (m, n) in ((Variant.of("row-block-groups", r=2, w=16, L=32), (64, 48)),
                          (Variant.of("row-block-groups", r=4, w=16, L=64), (300, 70)),
                          (Variant.of("row-block-groups", r=2, w=16, L=128), (37, 16))):
            session.choose = lambda kind, sizes, v=v: v  # type: ignore[method-assign]
            session.calls.clear()
            A, x = rng.uniform(-1, 1, (m, n)).astype(dt), rng.uniform(-1, 1, n).astype(dt)
            dA, dx = cla.to_device(session.queue, A), cla.to_device(session.queue, x)
            for call in range(3):  # the general path, then the plan
                y = rng.uniform(-1, 1, m).astype(dt)
                dy = cla.to_device(session.queue, y)
                got = session.gemv(dA, dx, dy, alpha=1.5, beta=-0.5 * call).result().get()
                want = 1.5 * (A.astype(np.float64) @ x) - 0.5 * call * y
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{v} {call}")
            assert session.kernel(Kind("gemv", dt, "N"), {"M": m, "N": n}).variant == v
    finally:
        if saved is None:
            session.__dict__.pop("choose", None)
        else:
            session.choose = saved  # type: ignore[method-assign]
        session.calls.clear()
