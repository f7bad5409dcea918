"""Every operation against NumPy on random shapes 1…300, every layout and dtype (≥ 500 cases per
run). Kernels are built once per derivation, so a case costs an upload, a launch and a check.

Two sessions run the cases: the default derivations (any size, no padding) and one whose
profile ranks the padded derivations first (vectorised rows, chunked and tree reductions), so
the edge handling by padding is exercised on sizes that are not multiples of the tiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

DTYPES = (np.float32, np.float64)
PADDED = {  # op -> variant ranked first in the "padded" session
    ("gemv", "N"): Variant.of("rows", w=8), ("gemv", "T"): Variant.of("group-rows", L=32, w=4),
    ("dot", "-"): Variant.of("chunks", n=512), ("asum", "-"): Variant.of("tree", n=4, L=64),
    ("sumsq", "-"): Variant.of("chunks", n=64), ("scal", "-"): Variant.of("vec", w=8),
    ("axpy", "-"): Variant.of("chunks", n=16),
}


@pytest.fixture(scope="module")
def padded_session(session: Session) -> Session:
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add(Entry(Kind(op, dt, lay), cls, {"N": 1}, v, 1.0, 1e9)
             for (op, lay), v in PADDED.items() for dt in ("float32", "float64")
             for cls in ("small", "medium", "large"))
    # padding may add any amount here: the point is to run the padded paths
    import liftkit.blas.profile as pm

    s = Session(session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    return s


def _tol(dt: Any, k: int) -> dict[str, float]:
    return ({"rtol": 2e-4, "atol": 2e-5 * max(k, 1)} if dt == np.float32
            else {"rtol": 1e-10, "atol": 1e-12 * max(k, 1)})


def _mat(rng: np.random.Generator, shape: tuple[int, int], dt: Any, order: str) -> np.ndarray:
    return np.asarray(rng.uniform(-1, 1, shape), dtype=dt, order=order)


def _size(rng: np.random.Generator) -> int:
    # half the sizes small (1…16, where the edges are), the rest up to 300
    return int(rng.integers(1, 17)) if rng.random() < 0.5 else int(rng.integers(1, 301))


def _check(failures: list[str], what: str, got: Any, want: Any, **tol: float) -> None:
    try:
        np.testing.assert_allclose(got, want, **tol)
    except AssertionError as err:
        failures.append(f"{what}: {str(err).splitlines()[3] if len(str(err).splitlines()) > 3 else err}")


@pytest.mark.parametrize("seed", range(4))
def test_gemm(session: Session, seed: int) -> None:
    """60 random GEMMs per seed: dtypes, transposes, row/column-major A, B and C, α, β."""
    rng = np.random.default_rng(100 + seed)
    failures: list[str] = []
    for case in range(60):
        dt = DTYPES[case % 2]
        ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = _size(rng), _size(rng), _size(rng)
        A = _mat(rng, (k, m) if ta else (m, k), dt, oa)
        B = _mat(rng, (n, k) if tb else (k, n), dt, ob)
        alpha = float(rng.choice([1.0, -0.5, 2.0]))
        beta = float(rng.choice([0.0, 1.0, 0.25]))
        with_c = bool(rng.integers(2))
        C0 = _mat(rng, (m, n), dt, oc)
        opA, opB = (A.T if ta else A).astype(np.float64), (B.T if tb else B).astype(np.float64)
        want = alpha * opA @ opB + (beta * C0 if with_c else 0)
        C = C0.copy(order=oc) if with_c else None
        got = session.gemm(A, B, C, alpha=alpha, beta=beta if with_c else 0.0, trans_a=ta,
                           trans_b=tb).result()
        what = f"case {case}: {dt.__name__} {m}x{n}x{k} ta={ta} tb={tb} orders={oa}{ob}{oc} " \
               f"alpha={alpha} beta={beta} C={'given' if with_c else 'new'}"
        if with_c and got is not C:
            failures.append(f"{what}: C was not updated in place")
        _check(failures, what, got, want, **_tol(dt, k))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("padded", [False, True])
def test_gemv(session: Session, padded_session: Session, padded: bool) -> None:
    s = padded_session if padded else session
    rng = np.random.default_rng(7 + padded)
    failures: list[str] = []
    for case in range(60):
        dt, trans = DTYPES[case % 2], bool(rng.integers(2))
        order = str(rng.choice(["C", "F"]))
        m, n = _size(rng), _size(rng)
        A = _mat(rng, (m, n), dt, order)
        x = rng.uniform(-1, 1, m if trans else n).astype(dt)
        y0 = rng.uniform(-1, 1, n if trans else m).astype(dt)
        alpha, beta = float(rng.choice([1.0, -2.0])), float(rng.choice([0.0, 0.5]))
        with_y = bool(rng.integers(2))
        opA = (A.T if trans else A).astype(np.float64)
        want = alpha * opA @ x + (beta * y0 if with_y else 0)
        got = s.gemv(A, x, y0.copy() if with_y else None, alpha=alpha,
                     beta=beta if with_y else 0.0, trans=trans).result()
        _check(failures, f"case {case}: {dt.__name__} {m}x{n} trans={trans} order={order}", got,
               want, **_tol(dt, max(m, n)))
    assert not failures, "\n".join(failures)


def test_transpose(session: Session) -> None:
    rng = np.random.default_rng(3)
    failures: list[str] = []
    for case in range(60):
        dt, order = DTYPES[case % 2], str(rng.choice(["C", "F"]))
        A = _mat(rng, (_size(rng), _size(rng)), dt, order)
        got = session.transpose(A).result()
        if not np.array_equal(got, A.T):
            failures.append(f"case {case}: {A.shape} {order}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("padded", [False, True])
def test_blas1(session: Session, padded_session: Session, padded: bool) -> None:
    """scal, axpy, dot, asum, nrm2: 100 random vectors per session."""
    s = padded_session if padded else session
    rng = np.random.default_rng(11 + padded)
    failures: list[str] = []
    for case in range(100):
        dt = DTYPES[case % 2]
        n = _size(rng) * int(rng.choice([1, 1, 7]))
        x, y = rng.uniform(-1, 1, n).astype(dt), rng.uniform(-1, 1, n).astype(dt)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        a = float(rng.uniform(-2, 2))
        tol = _tol(dt, n)
        op = ("scal", "axpy", "dot", "asum", "nrm2")[case % 5]
        what = f"case {case}: {op} {dt.__name__} n={n}"
        if op == "scal":
            _check(failures, what, s.scal(a, x).result(), a * x64, **tol)
        elif op == "axpy":
            _check(failures, what, s.axpy(a, x, y).result(), a * x64 + y64, **tol)
        elif op == "dot":
            _check(failures, what, s.dot(x, y).result(), x64 @ y64, **tol)
        elif op == "asum":
            _check(failures, what, s.asum(x).result(), np.abs(x64).sum(), **tol)
        else:
            _check(failures, what, s.nrm2(x).result(), np.linalg.norm(x64), **tol)
    assert not failures, "\n".join(failures)
