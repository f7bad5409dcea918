"""liftkit.blas's API: one clear error per bad input, futures, pyopencl arrays used in place, the
low-level plan with caller-owned workspace, the no-profile warning."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from liftkit.blas import BlasError, Future, NoProfileWarning, Session, Variant
from liftkit.blas.codelets import Kind, derive


def _f32(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("call, message", [
    (lambda s: s.gemm(_f32(3, 4), _f32(5, 6)), "inner dimensions 4 and 5 differ"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 6).astype(np.float64)), "B is float64 but the other"),
    (lambda s: s.gemm(_f32(3, 4).astype(np.complex64), _f32(4, 2)),
     "B is float32 but the other operands are complex64"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 2), alpha=1j), "alpha must be a real number"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 2), trans_a="H"), "trans_a must be False/'N', True/"),
    (lambda s: s.gemv(_f32(3, 4).astype(np.complex64), _f32(4).astype(np.complex64), beta="x"),
     "beta must be a number"),
    (lambda s: s.dotc(_f32(3).astype(np.complex128), _f32(4).astype(np.complex128)),
     "dotc: x has length 3 but y has length 4"),
    (lambda s: s.scal(1.0, _f32(3).astype(np.float16)), "convert it with .astype(np.float32)"),
    (lambda s: s.gemm(_f32(3, 4).astype(np.int32), _f32(4, 2)), "dtype int32"),
    (lambda s: s.gemm(_f32(3), _f32(3, 2)), "A must be a matrix (2-D), got shape (3,)"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 2), _f32(3, 3)), "op(A)·op(B) is 3×2"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 2), _f32(3, 4)[:, :2]), "C is a strided view"),
    (lambda s: s.gemm(np.zeros((0, 4), np.float32), _f32(4, 2)), "A is empty"),
    (lambda s: s.gemm(_f32(3, 4), _f32(4, 2), alpha="2"), "alpha must be a real number"),
    (lambda s: s.gemv(_f32(3, 4), _f32(3)), "op(A) is 3×4 but x has length 3"),
    (lambda s: s.gemv(_f32(3, 4), _f32(3), trans=True, y=_f32(3)), "y has length 3"),
    (lambda s: s.axpy(1.0, _f32(3), _f32(4)), "x has length 3 but y has length 4"),
    (lambda s: s.dot(_f32(3), _f32(3, 1)), "y must be a vector (1-D)"),
    (lambda s: s.transpose(_f32(3, 4), out=_f32(3, 4)), "out must have shape (4, 3)"),
])
def test_one_clear_error(session: Session, call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BlasError) as err:
        call(session)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_future_is_returned_before_waiting(session: Session) -> None:
    A, B = _f32(64, 64), _f32(64, 64)
    fut = session.gemm(A, B)
    assert isinstance(fut, Future) and fut.event is not None
    C = fut.result()
    assert fut.done()
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    assert fut.result() is C  # waits once


def test_pyopencl_arrays_in_and_out_without_copies(session: Session) -> None:
    q = session.queue
    A, B = _f32(20, 30), _f32(30, 10)
    dA, dB = cla.to_device(q, A), cla.to_device(q, B)
    dC = cla.zeros(q, (20, 10), np.float32)
    got = session.gemm(dA, dB, dC, alpha=2.0).result()
    assert got is dC  # written in place
    np.testing.assert_allclose(dC.get(), 2 * A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    # a fresh output for device inputs is a device array too
    out = session.gemm(dA, dB).result()
    assert isinstance(out, cla.Array)
    # in-place scal on the device: the output buffer is the input's
    x = cla.to_device(q, _f32(100))
    before = x.get()
    assert session.scal(3.0, x, out=x).result() is x
    np.testing.assert_allclose(x.get(), 3 * before, rtol=1e-6)


def test_complex_pyopencl_arrays_in_place_and_conjugate_transposes(session: Session) -> None:
    q = session.queue
    rng = np.random.default_rng(5)
    A = (rng.uniform(-1, 1, (12, 7)) + 1j * rng.uniform(-1, 1, (12, 7))).astype(np.complex64)
    B = (rng.uniform(-1, 1, (12, 5)) + 1j * rng.uniform(-1, 1, (12, 5))).astype(np.complex64)
    dA, dB = cla.to_device(q, A), cla.to_device(q, B)
    dC = cla.zeros(q, (7, 5), np.complex64)
    got = session.gemm(dA, dB, dC, alpha=0.5 - 1j, trans_a="C").result()
    assert got is dC
    np.testing.assert_allclose(dC.get(), (0.5 - 1j) * A.conj().T.astype(np.complex128) @ B,
                               rtol=1e-4, atol=1e-4)
    # a real op flag "C" is the transpose
    R = A.real.copy()
    np.testing.assert_allclose(session.gemm(R, B.real.copy(), trans_a="C").result(), R.T @ B.real,
                               rtol=1e-4, atol=1e-4)
    x = cla.to_device(q, B[:, 0].copy())
    assert session.scal(2j, x, out=x).result() is x
    np.testing.assert_allclose(x.get(), 2j * B[:, 0], rtol=1e-6)
    s = session.asum(A[:, 0].copy()).result()
    assert s.dtype == np.float32


def test_untuned_gemm_takes_the_tiles_where_they_fit(session: Session) -> None:
    from liftkit.blas.codelets import DEFAULT_TILES

    big = {"M": 256, "N": 192, "K": 320}
    for dt in ("float32", "float64", "complex64", "complex128"):
        for lay in ("NN", "NT", "TN") + (("CN", "NR") if dt.startswith("complex") else ()):
            assert session.choose(Kind("mm", dt, lay), big) == DEFAULT_TILES["cpu"][dt], (dt, lay)
    # small or odd sizes would pad too much
    assert session.choose(Kind("mm", "float32", "NN"), {"M": 100, "N": 30, "K": 7}).codelet == "glb"
    assert session.choose(Kind("mm", "float64", "NT"), {"M": 100, "N": 30, "K": 7}).codelet == "glb"
    assert session.choose(Kind("gemv", "float64", "N"), {"M": 100, "N": 256}) == \
        Variant.of("row-blocks", r=4, w=16)
    assert session.choose(Kind("gemv", "complex128", "N"), {"M": 100, "N": 256}) == \
        Variant.of("group-rows", L=32, w=1)
    assert session.choose(Kind("gemv", "float64", "T"), {"M": 100, "N": 256}) == \
        Variant.of("column-blocks", k=8, w=16)
    assert session.choose(Kind("gemv", "float64", "T"), {"M": 100, "N": 300}).codelet == "glb"
    A, B = _f32(256, 320), _f32(320, 192)
    np.testing.assert_allclose(session.gemm(A, B).result(), A.astype(np.float64) @ B,
                               rtol=1e-4, atol=1e-4)
    Z = (A + 1j * A[::-1]).astype(np.complex128)
    W = (B - 2j * B[::-1]).astype(np.complex128)
    np.testing.assert_allclose(session.gemm(Z, W).result(), Z @ W, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(session.gemm(Z.conj().T.copy(), W, trans_a="C").result(), Z @ W,
                               rtol=1e-10, atol=1e-9)


def test_gemv_row_blocks_at_odd_sizes(session: Session) -> None:
    """The CPU default for real GEMV N (4 rows per work-item, float16/double16: the
    gemv-row-blocks rule) and its other shapes pad M and N; every one matches NumPy."""
    from liftkit.blas.tune import measure

    rng = np.random.default_rng(3)
    for dt, tol in (("float32", 1e-4), ("float64", 1e-12)):
        for m, n in ((37, 53), (130, 300)):
            A, x, y = (rng.uniform(-1, 1, s).astype(dt) for s in ((m, n), (n,), (m,)))
            assert session.choose(Kind("gemv", dt, "N"), {"M": m, "N": n}).codelet in (
                "row-blocks", "glb")
            got = session.gemv(A, x, y.copy(), alpha=1.5, beta=-0.5).result()
            np.testing.assert_allclose(got, 1.5 * (A.astype(np.float64) @ x) - 0.5 * y,
                                       rtol=tol, atol=tol)
        for v in (Variant.of("row-blocks", r=2, w=8), Variant.of("row-blocks", r=8, w=16)):
            t = measure(session, Kind("gemv", dt, "N"), v, {"M": 40, "N": 72})
            assert not t.error and t.rate > 0, (v, t.error)
        # GEMV T: column blocks (gemv-column-blocks), padded N, checked by measure and by a call
        for v in (Variant.of("column-blocks", k=2, w=8), Variant.of("column-blocks", k=8, w=16)):
            t = measure(session, Kind("gemv", dt, "T"), v, {"M": 40, "N": 72})
            assert not t.error and t.rate > 0, (v, t.error)
        A, x, y = (rng.uniform(-1, 1, s).astype(dt) for s in ((70, 250), (70,), (250,)))
        assert session.choose(Kind("gemv", dt, "T"), {"M": 70, "N": 256}).codelet == \
            "column-blocks"
        got = session.gemv(A, x, y.copy(), alpha=0.5, beta=2.0, trans=True).result()
        np.testing.assert_allclose(got, 0.5 * (A.T.astype(np.float64) @ x) + 2 * y,
                                   rtol=tol, atol=tol)
    assert session.choose(Kind("gemv", "float32", "N"), {"M": 132, "N": 304}) == \
        Variant.of("row-blocks", r=4, w=16)


def test_complex_numbers_have_no_vector_codelets(session: Session) -> None:
    from liftkit.blas import CodeletError
    from liftkit.blas.codelets import space

    with pytest.raises(CodeletError, match="complex numbers have none of"):
        derive(Kind("scal", "complex64"), Variant.of("vec", w=4))
    assert all(v.codelet not in ("vec", "tree") and v.kw.get("w", 1) == 1
               for op in ("scal", "gemv", "dot", "asum") for dev in ("cpu", "gpu")
               for v in space(Kind(op, "complex128", "N" if op == "gemv" else "-"), dev))


def test_device_array_from_another_context_is_refused(session: Session) -> None:
    other = cl.Context([session.device.cl_device])
    q = cl.CommandQueue(other)
    with pytest.raises(BlasError, match="another OpenCL context"):
        session.gemm(cla.to_device(q, _f32(2, 2)), _f32(2, 2))


def test_plan_packs_a_once_for_several_products(session: Session) -> None:
    """A·B, A·C, A·D with one packed A (seed 003 §8.3.3)."""
    A = _f32(13, 7)
    plan = session.plan_gemm((13, 7), (7, 9), np.float32)
    ws = plan.workspace()
    pa = plan.pack("A", A, ws)
    for seed in range(3):
        B = np.random.default_rng(seed).uniform(-1, 1, (7, 9)).astype(np.float32)
        C = plan.run(pa, plan.pack("B", B, ws), workspace=ws).result()
        np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-5)
    with pytest.raises(BlasError, match="made for B of shape"):
        plan.pack("B", _f32(8, 9), ws)


def test_padded_copies_keep_zero_margins_across_shapes(session: Session) -> None:
    """Shapes padded into the same workspace buffers write different regions of them: what one
    shape wrote must not stay in another's margins (they are cleared when the shape changes,
    not on every call), here where the stale K columns of A and rows of B would enter C."""
    rng = np.random.default_rng(7)
    for m, k, n in ((250, 300, 250), (245, 290, 245), (250, 300, 250), (245, 290, 245)):
        A = rng.uniform(1, 2, (m, k)).astype(np.float32)
        B = rng.uniform(1, 2, (k, n)).astype(np.float32)
        assert session.choose(Kind("mm", "float32", "NN"),
                              {"M": m, "N": n, "K": k}).codelet == "tiles"
        for _ in range(2):
            np.testing.assert_allclose(session.gemm(A, B).result(), A.astype(np.float64) @ B,
                                       rtol=1e-4)


def test_variants_are_derivations(session: Session) -> None:
    """Every kernel comes from rewriting the high-level program: the derivation's steps are
    rewrite rules and its start is the high-level program."""
    d = derive(Kind("mm", "float32", "NT"), Variant.of("glb"))
    assert len(d.steps) >= 3
    assert {s.rule for s in d.steps} >= {"map-mapGlb", "reduce-reduceSeq"}
    assert "mapGlb" not in str(d.lines()[0])
    d.verify(sizes={"M": 3, "N": 4, "K": 5})


def test_one_warning_without_a_profile(session: Session, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path))
    import liftkit.blas.profile as pm

    monkeypatch.setattr(pm, "SHIPPED", tmp_path / "none")
    s = Session(session.device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.gemm(_f32(4, 4), _f32(4, 4)).result()
        s.gemv(_f32(4, 4), _f32(4)).result()
        s.dot(_f32(4), _f32(4)).result()
    ours = [w for w in caught if issubclass(w.category, NoProfileWarning)]
    assert len(ours) == 1
    assert "liftkit blas tune --device cpu" in str(ours[0].message)
    assert ours[0].filename == __file__


def test_a_profile_of_another_driver_is_used_with_one_warning(session: Session, tmp_path,
                                                              monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A shipped profile still serves after a driver update (same platform and device name),
    saying so; an exact match wins; another device's profile never serves."""
    import liftkit.blas.profile as pm
    from liftkit.blas import Profile

    monkeypatch.setenv("LIFTKIT_BLAS_PROFILES", str(tmp_path / "user"))
    monkeypatch.setattr(pm, "SHIPPED", tmp_path / "shipped")
    dev = session.device
    platform_and_name = dev.fingerprint.rsplit("|", 1)[0]
    Profile(f"{platform_and_name}|0.0-older", dev.label, "cpu").save(
        tmp_path / "shipped" / pm.file_name(f"{platform_and_name}|0.0-older"))
    Profile(f"Other platform|{dev.label}|1.0", dev.label, "cpu").save(
        tmp_path / "shipped" / pm.file_name(f"Other platform|{dev.label}|1.0"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = Session(dev)
    assert s.profile is not None and s.profile.fingerprint.endswith("|0.0-older")
    ours = [w for w in caught if issubclass(w.category, NoProfileWarning)]
    assert len(ours) == 1 and "0.0-older" in str(ours[0].message)
    with warnings.catch_warnings(record=True) as caught:  # tools that report profiles themselves
        warnings.simplefilter("always")
        quiet = Session(dev, warn=False)
    assert quiet.profile is not None and quiet.profile.fingerprint.endswith("|0.0-older")
    assert not [w for w in caught if issubclass(w.category, NoProfileWarning)]
    Profile(dev.fingerprint, dev.label, "cpu").save(tmp_path / "user" / pm.file_name(dev.fingerprint))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = Session(dev)
    assert s.profile is not None and s.profile.fingerprint == dev.fingerprint
    assert not [w for w in caught if issubclass(w.category, NoProfileWarning)]
    assert pm.find_profile_any_driver(f"Nowhere|{dev.label}|9") is None


def test_calls_before_results_keep_their_values(session) -> None:  # type: ignore[no-untyped-def]
    """Calls share the session's scratch workspace: results read later are still their own."""
    rng = np.random.default_rng(12)
    xs = [rng.uniform(-1, 1, 1000).astype(np.float32) for _ in range(3)]
    futs = [session.asum(x) for x in xs] + [session.dot(xs[0], xs[1])]
    mats = [rng.uniform(-1, 1, (33, 17)).astype(np.float32) for _ in range(3)]
    gf = [session.gemm(a, a.T.copy()) for a in mats]
    for f, x in zip(futs, xs):
        assert abs(f.result() - np.abs(x).sum()) < 1e-3
    assert abs(futs[-1].result() - xs[0] @ xs[1]) < 1e-3
    for f, a in zip(gf, mats):
        np.testing.assert_allclose(f.result(), a @ a.T, rtol=1e-4, atol=1e-4)


def test_kernel_arguments_set_only_when_changed_still_follow_every_call(session: Session) -> None:
    """The OpenCL queue skips set_arg for arguments a kernel already holds (same buffer handle,
    same scalar bytes): alternating operands, scalars and freshly allocated buffers each give
    their own result."""
    import pyopencl.array as cla

    rng = np.random.default_rng(9)
    q = session.queue
    As = [rng.uniform(-1, 1, (64, 48)).astype(np.float32) for _ in range(2)]
    x = rng.uniform(-1, 1, 48).astype(np.float32)
    dAs, dx = [cla.to_device(q, a) for a in As], cla.to_device(q, x)
    for step in range(6):
        k, alpha = step % 2, (1.0, -2.0, 0.5)[step % 3]
        dy = cla.empty(q, (64,), np.float32)  # a new buffer every call
        got = session.gemv(dAs[k], dx, dy, alpha=alpha).result().get()
        np.testing.assert_allclose(got, alpha * (As[k].astype(np.float64) @ x), rtol=1e-4,
                                   atol=1e-4)
        del dy
