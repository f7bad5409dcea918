"""The module-level functions' sessions (`liftkit.blas.SESSIONS`): one per device spec or
pyopencl context, made once even where threads race to their first call, dropped by `clear`;
`gemm` without a session runs on the registry's session for its device."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import numpy as np
import pytest

import liftkit.blas as lb


def test_one_session_per_key_even_when_threads_race(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[Optional[str], Any]] = []

    class Slow:  # a session that takes a while to make, as a real one does
        def __init__(self, device: Optional[str] = None, *, context: Any = None) -> None:
            time.sleep(0.02)
            made.append((device, context))

    monkeypatch.setattr(lb, "Session", Slow)
    reg = lb.DefaultSessions()
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: reg.get("cpu"), range(8)))
    assert made == [("cpu", None)] and all(g is got[0] for g in got)
    ctx = object()  # a pyopencl context selects a session of its own
    assert reg.get(None, ctx) is not got[0] and made[-1] == (None, ctx)
    assert reg.get(None, ctx) is reg.get(None, ctx) and len(made) == 2
    reg.clear()
    assert reg.get("cpu") is not got[0] and len(made) == 3


def test_module_functions_run_on_the_registrys_session(session: lb.Session) -> None:
    """(The `session` fixture skips where there is no CPU device.)"""
    s = lb.default_session("cpu")
    assert s is lb.SESSIONS.get("cpu") and s is lb.default_session("cpu")
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((33, 17)).astype(np.float32), rng.standard_normal((17, 9)).astype(
        np.float32)
    np.testing.assert_allclose(lb.gemm(A, B, device="cpu").result(), A.astype(np.float64) @ B,
                               rtol=1e-4, atol=1e-4)
