"""Every operation against NumPy on random shapes 1…300, every layout, op flag (N, T and the
conjugate transpose C) and dtype, real and complex (≥ 500 cases per run: 1,300). Kernels are
built once per derivation, so a case costs an upload, a launch and a check.

Two sessions run the cases: the default derivations (any size, no padding) and one whose
profile ranks the padded derivations first (vectorised rows, chunked and tree reductions), so
the edge handling by padding is exercised on sizes that are not multiples of the tiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
REAL = ("float32", "float64")
PADDED = {  # op -> variant ranked first in the "padded" session
    ("gemv", "N"): Variant.of("rows", w=8), ("gemv", "T"): Variant.of("group-rows", L=32, w=4),
    ("dot", "-"): Variant.of("chunks", n=512), ("asum", "-"): Variant.of("tree", n=4, L=64),
    ("sumsq", "-"): Variant.of("chunks", n=64), ("scal", "-"): Variant.of("vec", w=8),
    ("axpy", "-"): Variant.of("chunks", n=16),
}
# float32 GEMMs: the tiled derivations (rules/mm.py), padded to their tiles at every size
PADDED_SGEMM = {("mm", "NN"): Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
                ("mm", "TN"): Variant.of("blocks", rm=4, rn=8, wx=8, wy=8)}
# the other dtypes' GEMMs on the tiled derivations too (double2 or scalar blocks; complex
# numbers scalars), every layout (conjugating complex kernels take their plain layout's entry)
PADDED_GEMM = {
    "float64": {("mm", "NN"): Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
                ("mm", "NT"): Variant.of("blocks", rm=4, rn=4, wx=8, wy=8),
                ("mm", "TN"): Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)},
    "complex64": {("mm", "NN"): Variant.of("tiles", tm=16, tn=16, tk=16, rm=1, rn=1),
                  ("mm", "NT"): Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1),
                  ("mm", "TN"): Variant.of("blocks", rm=2, rn=8, wx=4, wy=8)},
    "complex128": {("mm", "NN"): Variant.of("blocks", rm=4, rn=4, wx=8, wy=8),
                   ("mm", "NT"): Variant.of("tiles", tm=16, tn=16, tk=16, rm=1, rn=1),
                   ("mm", "TN"): Variant.of("tiles", tm=32, tn=32, tk=16, rm=2, rn=2)},
}
# complex numbers have no vector forms: padded derivations of vector width 1
PADDED_COMPLEX = {
    ("gemv", "N"): Variant.of("group-rows", L=16, w=1),
    ("gemv", "R"): Variant.of("group-rows", L=16, w=1),
    ("gemv", "T"): Variant.of("group-rows", L=32, w=1),
    ("gemv", "C"): Variant.of("group-rows", L=32, w=1),
    ("dot", "-"): Variant.of("chunks", n=512), ("dotc", "-"): Variant.of("chunks", n=128),
    ("asum", "-"): Variant.of("chunks", n=256), ("sumsq", "-"): Variant.of("chunks", n=64),
    ("scal", "-"): Variant.of("chunks", n=32), ("axpy", "-"): Variant.of("chunks", n=16),
}


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu),
                                        pytest.param("cuda", marks=pytest.mark.gpu)])
def dev_session(request: Any) -> Session:
    """The CPU device's session, and (tests marked gpu) the GPU's on OpenCL and on CUDA."""
    return request.getfixturevalue({"cpu": "_shared_session", "gpu": "gpu_session",
                                    "cuda": "cuda_session"}[request.param])


@pytest.fixture(scope="module")
def padded_session(dev_session: Session) -> Session:
    session = dev_session
    prof = Profile(session.device.fingerprint, session.device.label, session.device_kind)
    prof.add(Entry(Kind(op, dt, lay), cls, {"N": 1}, v, 1.0, 1e9)
             for dt in ("float32", "float64", "complex64", "complex128")
             for (op, lay), v in (PADDED if dt in REAL else PADDED_COMPLEX).items()
             for cls in ("small", "medium", "large"))
    prof.add(Entry(Kind(op, "float32", lay), cls, {"N": 1}, v, 1.0, 1e9)
             for (op, lay), v in PADDED_SGEMM.items() for cls in ("small", "medium", "large"))
    prof.add(Entry(Kind(op, dt, lay), cls, {"N": 1}, v, 1.0, 1e9)
             for dt, table in PADDED_GEMM.items() for (op, lay), v in table.items()
             for cls in ("small", "medium", "large"))
    # padding may add any amount here: the point is to run the padded paths
    import liftkit.blas.profile as pm

    s = Session(session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    return s


def _tol(dt: Any, k: int) -> dict[str, float]:
    return ({"rtol": 2e-4, "atol": 4e-5 * max(k, 1)} if dt in (np.float32, np.complex64)
            else {"rtol": 1e-10, "atol": 2e-12 * max(k, 1)})


def _mat(rng: np.random.Generator, shape: Any, dt: Any, order: str = "C") -> np.ndarray:
    x = rng.uniform(-1, 1, shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return np.asarray(x, dtype=dt, order=order)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _op(x: np.ndarray, flag: Any) -> np.ndarray:
    """op(X) in float64/complex128 for a BLAS flag (False/"N", True/"T", "C")."""
    x = _wide(x)
    return x if flag in (False, "N") else x.T if flag in (True, "T") else x.conj().T


def _flag(rng: np.random.Generator) -> Any:
    return [False, True, "N", "T", "C", "C"][int(rng.integers(6))]


def _scalar(rng: np.random.Generator, dt: Any, choices: list[float]) -> Any:
    v = float(rng.choice(choices))
    if np.dtype(dt).kind == "c" and rng.random() < 0.7:
        return complex(v, float(rng.choice([0.5, -1.0])))
    return v


def _size(rng: np.random.Generator) -> int:
    # half the sizes small (1…16, where the edges are), the rest up to 300
    return int(rng.integers(1, 17)) if rng.random() < 0.5 else int(rng.integers(1, 301))


def _check(failures: list[str], what: str, got: Any, want: Any, **tol: float) -> None:
    try:
        np.testing.assert_allclose(got, want, **tol)
    except AssertionError as err:
        failures.append(f"{what}: {str(err).splitlines()[3] if len(str(err).splitlines()) > 3 else err}")


@pytest.mark.parametrize("seed", range(4))
def test_gemm(dev_session: Session, seed: int) -> None:
    """120 random GEMMs per seed: dtypes, op flags (N, T, C), row/column-major A, B and C, α,
    β (complex ones for complex types)."""
    rng = np.random.default_rng(100 + seed)
    failures: list[str] = []
    for case in range(120):
        dt = DTYPES[case % 4]
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = _size(rng), _size(rng), _size(rng)
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), dt, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), dt, ob)
        alpha = _scalar(rng, dt, [1.0, -0.5, 2.0])
        beta = _scalar(rng, dt, [0.0, 1.0, 0.25])
        with_c = bool(rng.integers(2))
        C0 = _mat(rng, (m, n), dt, oc)
        want = alpha * _op(A, ta) @ _op(B, tb) + (beta * _wide(C0) if with_c else 0)
        C = C0.copy(order=oc) if with_c else None
        got = dev_session.gemm(A, B, C, alpha=alpha, beta=beta if with_c else 0.0, trans_a=ta,
                           trans_b=tb).result()
        what = f"case {case}: {dt.__name__} {m}x{n}x{k} ta={ta} tb={tb} orders={oa}{ob}{oc} " \
               f"alpha={alpha} beta={beta} C={'given' if with_c else 'new'}"
        if with_c and got is not C:
            failures.append(f"{what}: C was not updated in place")
        _check(failures, what, got, want, **_tol(dt, k))
    assert not failures, "\n".join(failures)


def test_sgemm_tiled_at_any_size(padded_session: Session) -> None:
    """60 random float32 GEMMs on the tiled derivations (local-memory tiles, register blocks),
    every size padded to the tiles; NT runs the default derivation."""
    rng = np.random.default_rng(42)
    failures: list[str] = []
    for case in range(60):
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = _size(rng), _size(rng), _size(rng)
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), np.float32, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), np.float32, ob)
        C0 = _mat(rng, (m, n), np.float32, oc)
        got = padded_session.gemm(A, B, C0.copy(order=oc), alpha=-0.5, beta=0.25, trans_a=ta,
                                  trans_b=tb).result()
        want = -0.5 * _op(A, ta) @ _op(B, tb) + 0.25 * _wide(C0)
        _check(failures, f"case {case}: {m}x{n}x{k} ta={ta} tb={tb} orders={oa}{ob}{oc}", got,
               want, **_tol(np.float32, k))
    assert not failures, "\n".join(failures)


def test_gemm_tiled_other_dtypes_at_any_size(padded_session: Session) -> None:
    """45 random float64, complex64 and complex128 GEMMs on the tiled derivations (local-memory
    tiles or register blocks, double2 or scalar), every op flag (N, T, C), sizes 1…80 padded to
    the tiles."""
    rng = np.random.default_rng(7)
    failures: list[str] = []
    for case in range(45):
        dt = (np.float64, np.complex64, np.complex128)[case % 3]
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = (int(rng.integers(1, 81)) for _ in range(3))
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), dt, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), dt, ob)
        C0 = _mat(rng, (m, n), dt, oc)
        alpha, beta = _scalar(rng, dt, [1.0, -0.5]), _scalar(rng, dt, [0.0, 0.25])
        got = padded_session.gemm(A, B, C0.copy(order=oc), alpha=alpha, beta=beta, trans_a=ta,
                                  trans_b=tb).result()
        want = alpha * _op(A, ta) @ _op(B, tb) + beta * _wide(C0)
        _check(failures, f"case {case}: {dt.__name__} {m}x{n}x{k} ta={ta} tb={tb} "
               f"orders={oa}{ob}{oc}", got, want, **_tol(dt, k))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("padded", [False, True])
def test_gemv(dev_session: Session, padded_session: Session, padded: bool) -> None:
    s = padded_session if padded else dev_session
    rng = np.random.default_rng(7 + padded)
    failures: list[str] = []
    for case in range(120):
        dt, trans = DTYPES[case % 4], _flag(rng)
        order = str(rng.choice(["C", "F"]))
        m, n = _size(rng), _size(rng)
        A = _mat(rng, (m, n), dt, order)
        t = trans not in (False, "N")
        x, y0 = _mat(rng, m if t else n, dt), _mat(rng, n if t else m, dt)
        alpha, beta = _scalar(rng, dt, [1.0, -2.0]), _scalar(rng, dt, [0.0, 0.5])
        with_y = bool(rng.integers(2))
        want = alpha * _op(A, trans) @ x + (beta * _wide(y0) if with_y else 0)
        got = s.gemv(A, x, y0.copy() if with_y else None, alpha=alpha,
                     beta=beta if with_y else 0.0, trans=trans).result()
        _check(failures, f"case {case}: {dt.__name__} {m}x{n} trans={trans} order={order}", got,
               want, **_tol(dt, max(m, n)))
    assert not failures, "\n".join(failures)


def test_transpose(dev_session: Session) -> None:
    rng = np.random.default_rng(3)
    failures: list[str] = []
    for case in range(120):
        dt, order = DTYPES[case % 4], str(rng.choice(["C", "F"]))
        A = _mat(rng, (_size(rng), _size(rng)), dt, order)
        got = dev_session.transpose(A).result()
        if not np.array_equal(got, A.T):
            failures.append(f"case {case}: {A.shape} {order}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("padded", [False, True])
def test_blas1(dev_session: Session, padded_session: Session, padded: bool) -> None:
    """scal, axpy, dot, dotc, asum, nrm2: 240 random vectors per session (complex asum and
    nrm2 are BLAS's scasum = Σ|re|+|im| and scnrm2, reals)."""
    s = padded_session if padded else dev_session
    rng = np.random.default_rng(11 + padded)
    failures: list[str] = []
    for case in range(240):
        dt = DTYPES[case % 4]
        n = _size(rng) * int(rng.choice([1, 1, 7]))
        x, y = _mat(rng, n, dt), _mat(rng, n, dt)
        x64, y64 = _wide(x), _wide(y)
        a = float(rng.uniform(-2, 2))
        if np.dtype(dt).kind == "c" and case % 3:
            a = complex(a, float(rng.uniform(-2, 2)))
        tol = _tol(dt, n)
        op = ("scal", "axpy", "dot", "dotc", "asum", "nrm2")[(case // 4) % 6]
        what = f"case {case}: {op} {dt.__name__} n={n}"
        real = np.dtype(dt).type(0).real.dtype
        if op == "scal":
            _check(failures, what, s.scal(a, x).result(), a * x64, **tol)
        elif op == "axpy":
            _check(failures, what, s.axpy(a, x, y).result(), a * x64 + y64, **tol)
        elif op == "dot":
            _check(failures, what, s.dot(x, y).result(), x64 @ y64, **tol)
        elif op == "dotc":
            _check(failures, what, s.dotc(x, y).result(), np.vdot(x64, y64), **tol)
        elif op == "asum":
            got = s.asum(x).result()
            if got.dtype != real:
                failures.append(f"{what}: asum is {got.dtype}, expected {real}")
            _check(failures, what, got, np.abs(x64.real).sum() + np.abs(x64.imag).sum(), **tol)
        else:
            got = s.nrm2(x).result()
            if got.dtype != real:
                failures.append(f"{what}: nrm2 is {got.dtype}, expected {real}")
            _check(failures, what, got, np.linalg.norm(x64), **tol)
    assert not failures, "\n".join(failures)


def test_gemm_on_profiled_guarded_forms_at_any_size(dev_session: Session) -> None:
    """40 random float32/float64 GEMMs (every op flag and order, sizes 1…300) in a session
    whose profile ranks a tiled variant first and holds guarded forms (`edge-tiles` entries,
    vector and element by element): where the tiles do not divide the sizes the plan runs the
    guarded entry that fits (gemm.profiled_edge), no padded copies."""
    import liftkit.blas.profile as pm
    from liftkit.blas.gemm import plan_gemm

    tiles = dict(tm=32, tn=32, tk=16, rm=4, rn=4)
    prof = Profile(dev_session.device.fingerprint, dev_session.device.label,
                   dev_session.device_kind)
    for dt, w in (("float32", 4), ("float64", 2)):
        kind = Kind("mm", dt, "NN")
        for cls in ("small", "medium"):
            prof.add([Entry(kind, cls, {"N": 64}, Variant.of("tiles", **tiles), 1.0, 1e9),
                      Entry(kind, cls, {"M": 100, "N": 100, "K": 100},
                            Variant.of("edge-tiles", **tiles, w=w), 1.0, 1e9),
                      Entry(kind, cls, {"M": 99, "N": 99, "K": 99},
                            Variant.of("edge-tiles", **tiles, w=w, elems=1), 1.0, 2e9)])
    s = Session(dev_session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    rng = np.random.default_rng(15)
    failures: list[str] = []
    seen: set[str] = set()
    for case in range(40):
        dt = (np.float32, np.float64)[case % 2]
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = _size(rng), _size(rng), _size(rng)
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), dt, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), dt, ob)
        C0 = _mat(rng, (m, n), dt, oc)
        plan = plan_gemm(s, A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa,
                         order_b=ob, order_c=oc)
        seen.add(plan.built.variant.codelet + ("/elems" if plan.built.variant.kw.get("elems")
                                               else ""))
        got = s.gemm(A, B, C0.copy(order=oc), alpha=-0.5, beta=0.25, trans_a=ta,
                     trans_b=tb).result()
        want = -0.5 * _op(A, ta) @ _op(B, tb) + 0.25 * _wide(C0)
        _check(failures, f"case {case}: {np.dtype(dt).name} {m}x{n}x{k} ta={ta} tb={tb} "
               f"orders={oa}{ob}{oc} [{plan.built.variant}]", got, want, **_tol(dt, k))
    assert not failures, "\n".join(failures)
    assert {"edge-tiles", "edge-tiles/elems"} <= seen, seen


def test_gemm_split_plans_at_random_shapes(dev_session: Session) -> None:
    """40 random float32/float64 GEMMs (every op flag and order, α, β, sizes 1…300 with M and N
    one past a multiple of 8) in a session whose profile holds a split entry (via "split") at
    each case's kernel sizes: where the kernel is NN the plan is the split plan (interior,
    GEMV column, hcat: liftkit.blas.split), elsewhere the usual one; against NumPy."""
    from liftkit.blas.profile import size_class
    from liftkit.blas.split import SplitPlan

    prof = Profile(dev_session.device.fingerprint, dev_session.device.label,
                   dev_session.device_kind)
    s = Session(dev_session.device, profile=prof)
    rng = np.random.default_rng(23)
    failures: list[str] = []
    split = 0
    for case in range(40):
        dt = (np.float32, np.float64)[case % 2]
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n = (8 * int(rng.integers(1, 38)) + 1 for _ in range(2))
        k = _size(rng)
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), dt, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), dt, ob)
        C0 = _mat(rng, (m, n), dt, oc)
        plain = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa,
                            order_b=ob, order_c=oc)
        kind = Kind("mm", np.dtype(dt).name, plain.layout)
        prof.add([Entry(kind, size_class("mm", plain.sizes), dict(plain.sizes),
                        Variant.of("split", w=8), 1.0, 1e9, via="split")])
        s.forget_choices()
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa,
                           order_b=ob, order_c=oc)
        if isinstance(plan, SplitPlan) != (plain.layout == "NN"):
            failures.append(f"case {case}: {plain.layout} {plain.sizes}: {type(plan).__name__}")
        split += isinstance(plan, SplitPlan)
        alpha, beta = _scalar(rng, dt, [1.0, -0.5]), _scalar(rng, dt, [0.0, 0.25])
        got = s.gemm(A, B, C0.copy(order=oc), alpha=alpha, beta=beta, trans_a=ta,
                     trans_b=tb).result()
        want = alpha * _op(A, ta) @ _op(B, tb) + beta * _wide(C0)
        _check(failures, f"case {case}: {np.dtype(dt).name} {m}x{n}x{k} ta={ta} tb={tb} "
               f"orders={oa}{ob}{oc} alpha={alpha} beta={beta} [{plan.variant}]", got, want,
               **_tol(dt, k))
    assert not failures, "\n".join(failures)
    assert split >= 10, split
