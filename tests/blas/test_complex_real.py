"""Complex GEMMs through one real GEMM (codelet `real`, the 4M form: A's complex rows read as
reals, B embedded as [[Br, Bi], [-Bi, Br]] by the derived `cembed` kernel), on random shapes,
every op flag (N, T, C), memory order, α and β, with the real kernel tiled (padded) or not."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

from .test_properties import _flag, _mat, _op, _scalar, _tol, _wide

LAYOUTS = tuple(a + b for a in "NTRC" for b in "NTRC" if not (a in "TC" and b in "TC"))


def _session(base: Session, real: Variant, own: Optional[Variant] = None) -> Session:
    """Every complex kind on the `real` plan over `real`; with `own`, complex NN's own real
    kernel (entries with via "real", which every layout's plan looks up first)."""
    prof = Profile(base.device.fingerprint, base.device.label, base.device_kind)
    prof.add(Entry(Kind("mm", dt, lay), cls, {"N": 1}, Variant.of("real"), 1.0, 1e9)
             for dt in ("complex64", "complex128") for lay in LAYOUTS
             for cls in ("small", "medium", "large"))
    if own is not None:
        prof.add(Entry(Kind("mm", dt, "NN"), cls, {"N": 1}, own, 1.0, 1e9, via="real")
                 for dt in ("complex64", "complex128") for cls in ("small", "medium", "large"))
    prof.add(Entry(Kind("mm", dt, "NN"), cls, {"N": 1}, real, 1.0, 1e9)
             for dt in ("float32", "float64") for cls in ("small", "medium", "large"))
    import liftkit.blas.profile as pm

    s = Session(base.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult, via="", at=None: next(  # type: ignore
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes), via)), None)
    return s


_TILES = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)


@pytest.mark.parametrize("real, own", [(Variant.of("glb"), None), (_TILES, None),
                                       (Variant.of("glb"), _TILES)])
def test_complex_gemm_through_a_real_one(session: Session, real: Variant,
                                         own: Optional[Variant]) -> None:
    s = _session(session, real, own)
    rng = np.random.default_rng(3)
    failures: list[str] = []
    ran_own = 0
    for case in range(40):
        dt = (np.complex64, np.complex128)[case % 2]
        ta, tb = _flag(rng), _flag(rng)
        oa, ob, oc = (str(rng.choice(["C", "F"])) for _ in range(3))
        m, n, k = (int(rng.integers(1, 70)) for _ in range(3))
        if own is not None and case % 4 < 2:  # sizes the own kernel's tiles divide
            m, n, k = 32 * int(rng.integers(1, 3)), 16 * int(rng.integers(1, 4)), 32
        A = _mat(rng, (m, k) if ta in (False, "N") else (k, m), dt, oa)
        B = _mat(rng, (k, n) if tb in (False, "N") else (n, k), dt, ob)
        C0 = _mat(rng, (m, n), dt, oc)
        alpha, beta = _scalar(rng, dt, [1.0, -0.5]), _scalar(rng, dt, [0.0, 0.25])
        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb, order_a=oa,
                           order_b=ob, order_c=oc)
        assert plan.variant == Variant.of("real") and plan.embed is not None
        ran_own += own is not None and plan.built.variant == own
        got = s.gemm(A, B, C0.copy(order=oc), alpha=alpha, beta=beta, trans_a=ta,
                     trans_b=tb).result()
        want = alpha * _op(A, ta) @ _op(B, tb) + beta * _wide(C0)
        try:
            np.testing.assert_allclose(got, want, **_tol(dt, k))
        except AssertionError as err:
            failures.append(f"case {case}: {dt.__name__} {m}x{n}x{k} ta={ta} tb={tb} "
                            f"orders={oa}{ob}{oc}: {str(err).splitlines()[3:5]}")
    assert not failures, "\n".join(failures)
    assert (ran_own > 0) == (own is not None)


def test_the_real_codelet_is_a_plan(session: Session) -> None:
    from liftkit.blas.codelets import CodeletError, derive, space

    assert Variant.of("real") in space(Kind("mm", "complex128", "NN"), "gpu", "cuda")
    assert Variant.of("real") not in space(Kind("mm", "float64", "NN"), "gpu", "cuda")
    with pytest.raises(CodeletError, match="plans of several derived kernels"):
        derive(Kind("mm", "complex64", "NN"), Variant.of("real"))


def test_nt_and_tn_through_the_nn_kernel(session: Session) -> None:
    """Codelet nn: the transposed operand copied by the transpose kernel, then NN (padded)."""
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add(Entry(Kind("mm", dt, lay), cls, {"N": 1}, Variant.of("nn"), 1.0, 1e9)
             for dt in ("float32", "float64") for lay in ("NT", "TN")
             for cls in ("small", "medium", "large"))
    prof.add(Entry(Kind("mm", dt, "NN"), cls, {"N": 1},
                   Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1), 1.0, 1e9)
             for dt in ("float32", "float64") for cls in ("small", "medium", "large"))
    import liftkit.blas.profile as pm

    s = Session(session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult, via="", at=None: next(  # type: ignore
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes), via)), None)
    rng = np.random.default_rng(4)
    for case in range(16):
        dt = (np.float32, np.float64)[case % 2]
        ta, tb = [(False, True), (True, False)][case // 2 % 2]
        m, n, k = (int(rng.integers(1, 70)) for _ in range(3))
        A = _mat(rng, (k, m) if ta else (m, k), dt)
        B = _mat(rng, (n, k) if tb else (k, n), dt)
        assert s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb).variant == \
            Variant.of("nn")
        got = s.gemm(A, B, trans_a=ta, trans_b=tb, alpha=-2.0).result()
        np.testing.assert_allclose(got, -2.0 * _op(A, ta) @ _op(B, tb), **_tol(dt, k))


@pytest.mark.parametrize("dtype,variant", [("float32", "nn"), ("float64", "nn"),
                                           ("complex64", "real"), ("complex128", "real")])
def test_the_tuner_measures_the_plans(session: Session, dtype: str, variant: str) -> None:
    """`liftkit blas tune` times the plans (packing and product) after checking them."""
    from liftkit.blas.tune import measure

    for lay in ("NT", "TN"):
        t = measure(session, Kind("mm", dtype, lay), Variant.of(variant), {"M": 64, "N": 64, "K": 64})
        assert not t.error and t.rate > 0, (lay, t.error)
