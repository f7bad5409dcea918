"""Hybrid CPU+GPU GEMM: correct for every split (two sessions on the CPU device stand in for the
GPU and the CPU here; the GPU machine runs the real pair)."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.blas import BlasError, Profile, Session
from liftkit.blas.hybrid import PARTS, hybrid_gemm, tune_hybrid


@pytest.fixture(scope="module")
def second(_shared_session: Session) -> Session:
    dev = _shared_session.device
    return Session(dev, profile=Profile(dev.fingerprint, "second", "cpu"))


@pytest.mark.parametrize("host_blas", [False, True])
def test_every_split_is_correct(session: Session, second: Session, host_blas: bool) -> None:
    rng = np.random.default_rng(5)
    for pg in range(PARTS + 1):
        m, n, k = (int(v) for v in rng.integers(1, 40, 3))
        dt = (np.float32, np.float64)[pg % 2]
        ta, tb = bool(pg % 3 == 0), bool(pg % 4 == 1)
        A = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(dt)
        B = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(dt)
        C = rng.uniform(-1, 1, (m, n)).astype(dt)
        want = 2.0 * (A.T if ta else A).astype(np.float64) @ (B.T if tb else B) + 0.5 * C
        r = hybrid_gemm(session, A, B, C, cpu=None if host_blas else second, alpha=2.0,
                        beta=0.5, trans_a=ta, trans_b=tb, gpu_parts=pg)
        assert r.gpu_parts == pg and r.C is C
        np.testing.assert_allclose(C, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("host_blas", [False, True])
def test_complex_conjugate_transposes_at_every_split(session: Session, second: Session,
                                                     host_blas: bool) -> None:
    rng = np.random.default_rng(9)
    for pg in range(PARTS + 1):
        m, n, k = (int(v) for v in rng.integers(1, 40, 3))
        dt = (np.complex64, np.complex128)[pg % 2]
        ta, tb = ("C", False, "T")[pg % 3], ("N", "C")[pg % 2]
        A = (rng.uniform(-1, 1, (m, k) if ta is False else (k, m)) * (1 - 2j)).astype(dt)
        B = (rng.uniform(-1, 1, (k, n) if tb == "N" else (n, k)) * (2 + 1j)).astype(dt)
        C = (rng.uniform(-1, 1, (m, n)) + 1j).astype(dt)
        opA = A.conj().T if ta == "C" else A.T if ta == "T" else A
        opB = B.conj().T if tb == "C" else B
        want = (1 - 1j) * opA.astype(np.complex128) @ opB + 0.5j * C
        r = hybrid_gemm(session, A, B, C, cpu=None if host_blas else second, alpha=1 - 1j,
                        beta=0.5j, trans_a=ta, trans_b=tb, gpu_parts=pg)
        np.testing.assert_allclose(r.C, want, rtol=1e-4, atol=1e-4)


def test_tune_hybrid_stores_the_fastest_split(session: Session, second: Session) -> None:
    times = tune_hybrid(session, second, "float32", n=32, repeat=1)
    assert sorted(times) == list(range(PARTS + 1))
    assert session.profile.notes["hybrid"]["float32"] == min(times, key=times.__getitem__)
    del session.profile.notes["hybrid"]


def test_bad_split_is_one_error(session: Session) -> None:
    with pytest.raises(BlasError, match="gpu_parts must be 0…8"):
        hybrid_gemm(session, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                    gpu_parts=9)
