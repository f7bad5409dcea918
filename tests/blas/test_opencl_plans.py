"""Call plans on the OpenCL backend (the CPU device): a repeat call of a kind runs the steps the
first call planned, on pyopencl arrays of the session's queue and on NumPy arrays, with each
call's own operands and scalars; arrays the plans do not cover take the general path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Session


@pytest.fixture()
def fresh(session: Session) -> Session:
    """The shared CPU session with no plans yet (each test sees its first calls planned)."""
    session.calls.clear()
    return session


def _planned(s: Session) -> list[Any]:
    return [k for k, v in s.calls._plans.items() if v]


def _dev(s: Session, x: np.ndarray) -> Any:
    import pyopencl.array as cla

    return cla.to_device(s.queue, x)


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("shape", [(64, 96), (37, 50)])  # the second is padded
def test_repeat_gemv_on_device_arrays(fresh: Session, trans: bool, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(1)
    A = _dev(fresh, np.zeros(shape, np.float32))
    x = _dev(fresh, np.zeros(shape[0] if trans else shape[1], np.float32))
    y = _dev(fresh, np.zeros(shape[1] if trans else shape[0], np.float32))
    for call in range(4):
        An = rng.uniform(-1, 1, shape).astype(np.float32)
        xn = rng.uniform(-1, 1, x.shape).astype(np.float32)
        yn = rng.uniform(-1, 1, y.shape).astype(np.float32)
        A.set(An), x.set(xn), y.set(yn)
        alpha, beta = 1.5 + call, (0.0, -0.5)[call % 2]
        got = fresh.gemv(A, x, y, alpha=alpha, beta=beta, trans=trans).result()
        want = alpha * (An.T if trans else An).astype(np.float64) @ xn + beta * yn
        assert got is y
        np.testing.assert_allclose(y.get(), want, rtol=1e-4, atol=1e-4, err_msg=str(call))
    assert len(_planned(fresh)) == 2  # β = 0 and β ≠ 0 are two kinds


def test_plans_sharing_a_kernel_alternate(fresh: Session) -> None:
    """Two sizes run one built kernel (sizes are its arguments) on two plans, with general-path
    calls between them: each launch holds its own sizes and buffers (a repeat launch of one
    plan sets only its slots), every result matches NumPy."""
    rng = np.random.default_rng(5)
    shapes = [(64, 96), (128, 32), (64, 96)]
    arrays = [(rng.uniform(-1, 1, sh).astype(np.float32), rng.uniform(-1, 1, sh[1]).astype(np.float32))
              for sh in shapes]
    dev = [(_dev(fresh, a), _dev(fresh, x)) for a, x in arrays]
    for call in range(3):
        for (An, xn), (A, x) in zip(arrays, dev):
            got = fresh.gemv(A, x).result()
            np.testing.assert_allclose(got.get(), An.astype(np.float64) @ xn, rtol=1e-4, atol=1e-4)
            # the general path (a strided view) launches the same kernel with its own arguments
            got = fresh.gemv(An[::2].copy(), xn).result()
            np.testing.assert_allclose(got, An[::2].astype(np.float64) @ xn, rtol=1e-4, atol=1e-4)
    assert len(_planned(fresh)) >= 2


def test_repeat_transpose_and_gemm_on_device_arrays(fresh: Session) -> None:
    rng = np.random.default_rng(2)
    for call in range(3):
        An = rng.uniform(-1, 1, (48, 80)).astype(np.float64)
        Bn = rng.uniform(-1, 1, (80, 40)).astype(np.float64)
        A, B = _dev(fresh, An), _dev(fresh, Bn)
        T = fresh.transpose(A).result()
        assert np.array_equal(T.get(), An.T)
        C = fresh.gemm(A, B).result()
        np.testing.assert_allclose(C.get(), An @ Bn, rtol=1e-12, atol=1e-12)
    assert {k[0] for k in _planned(fresh)} >= {"transpose"}


def test_repeat_calls_on_numpy_arrays(fresh: Session) -> None:
    rng = np.random.default_rng(3)
    for call in range(3):
        A = rng.uniform(-1, 1, (40, 24))
        x = rng.uniform(-1, 1, 24)
        np.testing.assert_allclose(fresh.gemv(A, x).result(), A @ x, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(fresh.transpose(A).result(), A.T)
    assert len(_planned(fresh)) == 2


def test_arrays_of_another_queue_take_the_general_path(fresh: Session) -> None:
    import pyopencl as cl
    import pyopencl.array as cla

    other = cl.CommandQueue(fresh.context)
    An = np.arange(12.0).reshape(3, 4)
    A = cla.to_device(other, An)
    for _ in range(2):
        assert np.array_equal(fresh.transpose(A).result().get(), An.T)
    assert not _planned(fresh)


def test_repeat_scalars_set_only_when_their_bits_change(fresh: Session) -> None:
    """A plan reuses its casts of α and β while the caller passes the same objects, and a
    launch compares a new scalar's bits: equal values in new objects, a changed value, and
    -0.0 after 0.0 (equal as numbers, not as bits: y = α·Ax + β·y keeps the sign of a zero)
    all give NumPy's result, signs of zeros included."""
    rng = np.random.default_rng(7)
    An = rng.uniform(0.5, 1, (32, 48)).astype(np.float32)  # A·x > 0
    xn = rng.uniform(0.5, 1, 48).astype(np.float32)
    A, x = _dev(fresh, An), _dev(fresh, xn)
    y = _dev(fresh, np.zeros(32, np.float32))
    one = 1.0
    for alpha, beta in [(2.0, one), (2.0, one), (float("2.0"), 1.0), (3.5, one), (0.0, one),
                        (-0.0, one), (-0.0, one), (0.0, one), (np.float32(-0.0), one)]:
        yn = np.full(32, -0.0, np.float32)
        y.set(yn)
        fresh.gemv(A, x, y, alpha=alpha, beta=beta).result()
        want = np.float32(alpha) * (An @ xn) + np.float32(beta) * yn
        got = y.get()
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=str(alpha))
        assert (np.signbit(got) == np.signbit(want)).all(), (alpha, got[:3])
    assert len(_planned(fresh)) >= 1
