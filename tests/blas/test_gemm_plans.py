"""GEMM plans over several derived kernels, run for real on the CPU device at sizes off every
kernel's multiples: the `nn` plan (NT/TN as a transpose of the stored operand, then the NN
kernel), here with the blocked GPU transpose `tiles-t`, whose kernels need multiples of their
tile: the stored operand is padded first, then transposed into the NN kernel's padded operand."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

from .test_properties import _mat

TILES_T = Variant.of("tiles-t", r=32, k=4)
CLASSES = ("small", "medium", "large", "huge")
REALS = ("float32", "float64")


def _everywhere(op: str, dtypes: tuple[str, ...], layouts: tuple[str, ...],
                variant: Variant) -> list[Entry]:
    """Profile entries choosing `variant` for `op` on each of `dtypes` and `layouts` in every
    size class."""
    ones = {"M": 1, "N": 1} if op == "transpose" else {"M": 1, "N": 1, "K": 1}
    return [Entry(Kind(op, dt, lay), c, ones, variant, 1.0, 1e9)
            for dt in dtypes for lay in layouts for c in CLASSES]


def _profiled(session: Session, entries: list[Entry]) -> Session:
    """The CPU device of `session` with a profile of just `entries`."""
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add(entries)
    return Session(session.device, profile=prof)


@pytest.fixture(scope="module")
def nn_session(_shared_session: Session) -> Session:
    """The CPU device with a profile that runs NT and TN through the `nn` plan and transposes
    with tiles-t at every size (as the CUDA defaults do where the padding stays small)."""
    return _profiled(_shared_session, _everywhere("transpose", REALS, ("-",), TILES_T)
                     + _everywhere("mm", REALS, ("NT", "TN"), Variant.of("nn")))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nn_plan_at_any_size(nn_session: Session, dt: type) -> None:
    s = nn_session
    rng = np.random.default_rng(11)
    tol = 1e-4 if dt == np.float32 else 1e-11
    for case in range(12):
        # just off multiples of the transposes' tiles (32): padding small enough for tiles-t
        m, n, k = (int(32 * j - r) for j, r in zip(rng.integers(1, 5, 3), rng.integers(0, 4, 3)))
        ta, tb = [(False, True), (True, False)][case % 2]
        oa, ob, oc = ("CCC", "FCC", "CFC", "CCF", "FFC", "CFF")[case % 6]
        A = _mat(rng, (k, m) if ta else (m, k), dt, oa)
        B = _mat(rng, (n, k) if tb else (k, n), dt, ob)
        C = _mat(rng, (m, n), dt, oc)
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa,
                           order_b=ob, order_c=oc)
        if plan.layout != "NN":
            assert str(plan.variant) == "nn()"
            preps = [t for t in (plan.embed.a_prep, plan.embed.b_prep) if t is not None]
            assert preps and all(t.variant == TILES_T for t in preps)
        alpha, beta = (1.0, 0.0) if case < 6 else (1.5, -0.5)
        want = alpha * ((A.T if ta else A).astype(np.float64) @ (B.T if tb else B)) + beta * C
        got = s.gemm(A, B, C, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.fixture(scope="module")
def real_session(_shared_session: Session) -> Session:
    """The CPU device with a profile that runs complex GEMMs through one real GEMM (`real`)
    on `glb` (no multiples of its own: only the transposes' pad the sizes) and transposes
    with tiles-t at every size: op(A) = Aᵀ by the transpose kernel."""
    complexes = ("complex64", "complex128")
    return _profiled(_shared_session, _everywhere("mm", REALS, ("NN",), Variant.of("glb"))
                     + _everywhere("transpose", complexes, ("-",), TILES_T)
                     + _everywhere("mm", complexes, ("NN", "NT", "TN", "CN", "TC"),
                                   Variant.of("real")))


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_real_plan_transposes_a_at_any_size(real_session: Session, dt: type) -> None:
    s = real_session
    rng = np.random.default_rng(12)
    tol = 1e-4 if dt == np.complex64 else 1e-11
    transposed = 0
    for case in range(8):
        m, n, k = (int(32 * j - r) for j, r in zip(rng.integers(1, 4, 3), rng.integers(0, 4, 3)))
        ta, tb = [(True, False), ("C", False), (True, "C"), (False, True)][case % 4]
        oa, ob = ("CC", "CF", "FC", "FF")[case // 2 % 4]
        A = _mat(rng, (k, m) if ta else (m, k), dt, oa)
        B = _mat(rng, (n, k) if tb else (k, n), dt, ob)
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa, order_b=ob)
        assert str(plan.variant) == "real()"
        if plan.layout[0] == "T":
            assert plan.embed.a_prep.variant == TILES_T
            transposed += 1
        alpha = 1.0 if case < 4 else 0.5 - 1j
        opA = A.conj().T if ta == "C" else A.T if ta else A
        opB = B.conj().T if tb == "C" else B.T if tb else B
        got = s.gemm(A, B, alpha=alpha, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(got, alpha * (opA.astype(np.complex128) @ opB), rtol=tol,
                                   atol=tol * np.sqrt(k))
    assert transposed >= 2


def test_workspace_bytes_is_what_a_call_takes(session: Session, nn_session: Session,
                                              real_session: Session) -> None:
    """A plan's `workspace_bytes` is the workspace a call with an epilogue fills: packed,
    padded, transposed and embedded operands, the product and its compacted copy."""
    rng = np.random.default_rng(13)
    cases = [(session, np.float32, (250, 300, 250), (False, False)),
             (nn_session, np.float64, (61, 95, 30), (False, True)),
             (nn_session, np.float32, (64, 64, 64), (True, False)),
             (real_session, np.complex64, (61, 30, 93), (True, False)),
             (real_session, np.complex128, (20, 33, 7), ("C", True)),
             (real_session, np.complex64, (40, 50, 60), (False, False))]
    for s, dt, (m, n, k), (ta, tb) in cases:
        A = _mat(rng, (k, m) if ta else (m, k), dt)
        B = _mat(rng, (n, k) if tb else (k, n), dt)
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
        ws = plan.workspace()
        C = _mat(rng, (m, n), dt)
        plan.run(plan.pack("A", A, ws), plan.pack("B", B, ws), C, alpha=2.0, beta=0.5,
                 workspace=ws).result()
        assert ws.nbytes == plan.workspace_bytes, (plan.variant, plan.layout, m, n, k)
        ws.release()
