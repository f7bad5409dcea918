"""The split GEMM plan (liftkit.blas.split): an aligned interior on X padded to K' and Y's
first N−1 columns, the last column by a GEMV, the two placed by hcat; its derived kernels
(window2d, tailcols, hcat) and the plan against NumPy on the CPU device — forced, and chosen
by a profile entry measured at the very sizes (the general path and the repeated call's plan),
every layout, α/β, a column-major C."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant
from liftkit.blas.kernels import BlasError

gm = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
split = importlib.import_module("liftkit.blas.split")

REALS = ("float32", "float64")
TILES = Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4)  # 32-multiples: the interior pads M


def _tol(dt: str) -> float:
    return 1e-4 if dt == "float32" else 1e-10


def _put(q: Any, x: np.ndarray) -> Any:
    buf = q.alloc(x.nbytes)
    q.upload(buf, x)
    return buf


@pytest.mark.parametrize("dt", REALS)
def test_window_tail_and_hcat_kernels(session, dt) -> None:  # type: ignore[no-untyped-def]
    """window2d: X's first Q columns, rows padded to P; tailcols: X's last R columns as rows
    padded to P; hcat: [X | Eᵀ] reading E's first M columns; margins written (NaN before)."""
    g = np.random.default_rng(2)
    q = session.q
    for m, n, p, qq, r in ((5, 7, 8, 4, 3), (3, 9, 4, 8, 1), (1, 1, 1, 1, 1), (6, 2, 6, 1, 1)):
        x = g.standard_normal((m, n)).astype(dt)
        src = _put(q, x)
        at = {"M": m, "N": n, "P": p, "Q": qq}
        dst = _put(q, np.full((p, qq), np.nan, dt))
        session.kernel(Kind("window2d", dt), at).launch(q, {0: src}, {}, dst, at)
        y = np.empty((p, qq), dt)
        q.read(y, dst)
        want = np.zeros((p, qq), dt)
        want[:m] = x[:, :qq]
        np.testing.assert_array_equal(y, want)
        at = {"M": m, "N": n, "P": p, "R": r}
        dst = _put(q, np.full((r, p), np.nan, dt))
        session.kernel(Kind("tailcols", dt), at).launch(q, {0: src}, {}, dst, at)
        y = np.empty((r, p), dt)
        q.read(y, dst)
        want = np.zeros((r, p), dt)
        want[:, :m] = x[:, n - r:].T
        np.testing.assert_array_equal(y, want)
        X, E = g.standard_normal((m, qq)).astype(dt), g.standard_normal((r, p)).astype(dt)
        at = {"M": m, "Q": qq, "R": r, "P": p}
        out = _put(q, np.full((m, qq + r), np.nan, dt))
        session.kernel(Kind("hcat", dt), at).launch(q, {0: _put(q, X), 1: _put(q, E)}, {},
                                                    out, at)
        y = np.empty((m, qq + r), dt)
        q.read(y, out)
        np.testing.assert_array_equal(y, np.hstack([X, E[:, :m].T]))


@pytest.mark.parametrize("dt", REALS)
@pytest.mark.parametrize("tiles", [False, True], ids=["default", "tiles"])
def test_forced_split_plans_at_random_shapes(session, monkeypatch, dt, tiles) -> None:  # type: ignore[no-untyped-def]
    """plan_gemm(variant=split(w)) at random shapes with N ≡ 1 mod w: C = A·B, and
    α·A·B + β·C; the interior on the default kernel or on 32×32 tiles (its rows padded)."""
    if tiles:
        choose = session.choose
        monkeypatch.setattr(session, "choose", lambda kind, sizes: TILES if (
            kind.op == "mm") else choose(kind, sizes))
        monkeypatch.setattr(gm, "edge_forms", lambda v: [])  # padded, not guarded
        session.forget_choices()
    g = np.random.default_rng(5 + tiles)
    try:
        for case in range(6):
            w = int(g.choice([32, 64] if tiles else [8, 16, 32, 64]))
            v = Variant.of("split", w=w, **({"gemv": 1} if case % 2 else {}))
            m, k = int(g.integers(1, 300)), int(g.integers(1, 300))
            n = w * int(g.integers(1, max(2, 300 // w))) + 1
            a, b = g.standard_normal((m, k)).astype(dt), g.standard_normal((k, n)).astype(dt)
            plan = gm.plan_gemm(session, a.shape, b.shape, dt, variant=v)
            assert isinstance(plan, split.SplitPlan) and plan.edge.n0 == n - 1
            assert plan.variant == v
            assert (plan.edge.gemv.variant == split.row_gemv(dt)) == bool(case % 2)
            assert plan.workspace_bytes > 0
            if tiles:
                assert plan.built.variant == TILES
            ws = plan.workspace()
            want = a.astype(np.float64) @ b
            c = np.full((m, n), np.nan, dt)
            plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c, workspace=ws).result()
            np.testing.assert_allclose(c, want, rtol=_tol(dt), atol=_tol(dt) * k)
            c0 = g.standard_normal((m, n)).astype(dt)
            c = c0.copy()
            plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c, alpha=2.0, beta=0.5,
                     workspace=ws).result()
            np.testing.assert_allclose(c, 2 * want + 0.5 * c0, rtol=_tol(dt), atol=_tol(dt) * k)
    finally:
        monkeypatch.undo()
        session.forget_choices()


def _with_split_entry(session, dt: str, sizes: dict[str, int], w: int = 16) -> Any:  # type: ignore[no-untyped-def]
    """A session on the same device whose profile holds a split entry at `sizes`."""
    from liftkit.blas import Profile, Session
    from liftkit.blas.profile import Entry, size_class

    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    prof.add([Entry(Kind("mm", dt, "NN"), size_class("mm", sizes), dict(sizes),
                    Variant.of("split", w=w), 1e-3, 1.0, via="split")])
    return Session(session.device, profile=prof)


@pytest.mark.parametrize("dt", REALS)
@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False), (True, True)],
                         ids=["NN", "NT", "TN", "TT"])
def test_a_measured_split_entry_chooses_the_plan(session, dt, trans) -> None:  # type: ignore[no-untyped-def]
    """A profile entry (via "split") at the kernel's very sizes makes gemm's plan the split
    plan there, only there: general path and call plans with new operands, α = 1 / β = 0 and
    α, β into a column-major C, against NumPy. NT/TN have no NN kernel: their plans stay."""
    m, n, k = 45, 33, 29
    ta, tb = trans
    s = _with_split_entry(session, dt, {"M": m, "N": n, "K": k})
    a_shape, b_shape = (k, m) if ta else (m, k), (n, k) if tb else (k, n)
    plan = s.plan_gemm(a_shape, b_shape, dt, trans_a=ta, trans_b=tb)
    assert isinstance(plan, split.SplitPlan) == (trans == (False, False))
    other = s.plan_gemm((m, k + 1), (k + 1, n), dt)  # measured at other sizes: not split
    assert not isinstance(other, split.SplitPlan)
    g = np.random.default_rng(11)
    for _ in range(3):  # the general path, then the call plan
        a, b = g.standard_normal(a_shape).astype(dt), g.standard_normal(b_shape).astype(dt)
        want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
        c = np.full((m, n), np.nan, dt)
        s.gemm(a, b, c, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(c, want, rtol=_tol(dt), atol=_tol(dt) * k)
        got = s.gemm(a, b, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(got, want, rtol=_tol(dt), atol=_tol(dt) * k)
        cf = np.asfortranarray(g.standard_normal((m, n)).astype(dt))
        w2 = 2.0 * want + 0.5 * cf
        s.gemm(a, b, cf, alpha=2.0, beta=0.5, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(cf, w2, rtol=_tol(dt), atol=_tol(dt) * k)
    if trans == (False, False):  # the repeated calls ran the split plan's call plans
        plans = [v for v in s.calls._plans.values() if v]
        assert len(plans) == 3 and all(len(p[0].launches) >= 5 for p in plans)


def test_a_column_major_c_splits_the_transposed_product(session) -> None:  # type: ignore[no-untyped-def]
    """A column-major C is computed as Cᵀ = Bᵀ·Aᵀ: with A, B column-major that is an NN
    kernel of n×m×k, split where the entry names those sizes."""
    m, n, k = 33, 20, 17
    s = _with_split_entry(session, "float32", {"M": n, "N": m, "K": k})
    g = np.random.default_rng(3)
    for _ in range(2):
        a = np.asfortranarray(g.standard_normal((m, k)).astype(np.float32))
        b = np.asfortranarray(g.standard_normal((k, n)).astype(np.float32))
        c = np.asfortranarray(np.full((m, n), np.nan, np.float32))
        s.gemm(a, b, c).result()
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * k)
    plan = s.plan_gemm(a.shape, b.shape, np.float32, order_a="F", order_b="F", order_c="F")
    assert isinstance(plan, split.SplitPlan)


def test_split_where_it_does_not_apply(session) -> None:  # type: ignore[no-untyped-def]
    """Forced at an N not one past a multiple of w, or for complex: one clear error; a split
    entry for complex or off sizes is never the choice."""
    with pytest.raises(BlasError, match="N − 1 is a multiple of 64"):
        gm.plan_gemm(session, (10, 10), (10, 64), "float32", variant=Variant.of("split", w=64))
    assert not split.splittable(Kind("mm", "complex64", "NN"), {"M": 9, "N": 65, "K": 9})
    assert not split.splittable(Kind("mm", "float32", "NT"), {"M": 9, "N": 65, "K": 9})
    assert not split.splittable(Kind("mm", "float32", "NN"), {"M": 9, "N": 1, "K": 9}, 1)
    assert split.splittable(Kind("mm", "float64", "NN"), {"M": 1, "N": 1025, "K": 1})


@pytest.mark.parametrize("faster", [True, False], ids=["won", "lost"])
def test_the_tuner_keeps_a_split_entry_only_where_it_won(session, monkeypatch, faster) -> None:  # type: ignore[no-untyped-def]
    """After a real NN class's variants, `liftkit blas tune --edges` times the split plan at
    n−1 × n+1 × n−25 (1023×1025×999 for 1024) beside the GEMM's own plan there (as a call
    runs it); the split entry (via "split") is added only where it was faster, and the library
    then picks the split plan at those very sizes; a resumed run measures neither again
    (measure is replaced: nothing is timed for real)."""
    from liftkit.blas import Profile, Session
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.profile import size_class

    at = {"M": 1023, "N": 1025, "K": 999}
    kind = Kind("mm", "float32", "NN")
    seen: list[tuple[Variant, dict[str, int], bool]] = []

    def fake(s: Any, kind: Kind, variant: Variant, sizes: dict[str, int], plan: bool = False,
             **_: Any) -> Any:
        t = tune_mod.Trial(kind, size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((variant, dict(sizes), plan))
        t.rate = ((2.0 + variant.kw.get("gemv", 0) if faster else 0.5)
                  if variant.codelet == "split" else 1.0)
        t.seconds = 1.0 / t.rate
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    assert tune_mod.split_sizes(kind, "large", "cpu") == at
    assert tune_mod.split_sizes(kind, "small", "gpu") is None  # (129 is not small)
    assert tune_mod.split_sizes(Kind("mm", "float32", "NT"), "large", "cpu") is None
    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    s = Session(session.device, profile=prof)
    tune_mod.tune(s, [kind], ["large"], prof, progress=False, peaks=None, max_variants=1,
                  edges=True)
    split_runs = [x for x in seen if x[1] == at]
    assert [(x[0].codelet == "split", x[2]) for x in split_runs] == [
        (False, True), (True, False), (True, False)]
    best = Variant.of("split", w=64, gemv=1)  # (the faster of the two here)
    entries = prof.ranked(kind, "large", via="split")
    assert [(e.variant, dict(e.sizes)) for e in entries] == ([(best, at)] if faster else [])
    assert prof.notes["splits"][f"{kind}|large"]["entry"] == (str(best) if faster else None)
    assert [e.variant for e in gm.measured_here(s, kind, at)] == ([best] if faster else [])
    assert gm.measured_here(s, kind, {**at, "K": 1000}) == []
    seen.clear()
    tune_mod.tune(s, [kind], ["large"], prof, progress=False, peaks=None, max_variants=1,
                  edges=True)
    assert not [x for x in seen if x[1] == at]


@pytest.mark.gpu
def test_split_plans_on_a_cuda_gpu(cuda_session) -> None:  # type: ignore[no-untyped-def]
    """The split plan on CUDA (pad2d, window2d, tailcols, the interior, the GEMV, hcat from
    NVRTC), CuPy operands, at ragged sizes, plain and with α, β; against NumPy."""
    cp = pytest.importorskip("cupy")
    g = np.random.default_rng(17)
    for dt, (m, n, k, w), rows in (("float32", (67, 65, 33, 64), 0),
                                   ("float64", (45, 33, 29, 16), 0),
                                   ("float32", (130, 129, 70, 64), 1),
                                   ("float64", (45, 33, 29, 16), 1)):
        a, b = g.standard_normal((m, k)).astype(dt), g.standard_normal((k, n)).astype(dt)
        plan = gm.plan_gemm(cuda_session, a.shape, b.shape, dt,
                            variant=Variant.of("split", w=w, gemv=rows))
        assert isinstance(plan, split.SplitPlan)
        ws = plan.workspace()
        want = a.astype(np.float64) @ b
        c = cp.full((m, n), np.nan, dt)
        plan.run(plan.pack("A", cp.asarray(a), ws), plan.pack("B", cp.asarray(b), ws), c).result()
        np.testing.assert_allclose(cp.asnumpy(c), want, rtol=_tol(dt), atol=_tol(dt) * k)
        c0 = g.standard_normal((m, n)).astype(dt)
        c = cp.asarray(c0)
        plan.run(plan.pack("A", cp.asarray(a), ws), plan.pack("B", cp.asarray(b), ws), c,
                 alpha=2.0, beta=0.5).result()
        np.testing.assert_allclose(cp.asnumpy(c), 2 * want + 0.5 * c0, rtol=_tol(dt),
                                   atol=_tol(dt) * k)


def test_split_plans_launch_six_kernels_on_cuda(blas_host, stub_cuda) -> None:  # type: ignore[no-untyped-def]
    """The CUDA queue stubbed (benchmarks/blas_host.py, the shipped H100 profile): with a split
    entry at SGEMM 1023×1025×999 a call launches pad2d, window2d, tailcols, the interior, the
    GEMV and hcat and copies nothing, the same on the repeated call (its call plan); with α, β
    the epilogue is a seventh launch; the interior is the profile's 1023×1024×K' kernel."""
    host, s = blas_host, stub_cuda
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    A, B, C = (host.ndarray(sh, "float32") for sh in ((1023, 999), (999, 1025), (1023, 1025)))
    assert not isinstance(s.plan_gemm(A.shape, B.shape, np.float32), split.SplitPlan)
    from liftkit.blas.profile import Entry

    at = {"M": 1023, "N": 1025, "K": 999}
    s.profile.add([Entry(Kind("mm", "float32", "NN"), "large", at, Variant.of("split", w=64),
                         1e-6, 1e9, via="split")])  # (faster than the profile's entry there)
    s.forget_choices()
    plan = s.plan_gemm(A.shape, B.shape, np.float32)
    assert isinstance(plan, split.SplitPlan) and plan.edge.n0 == 1024
    assert plan.edge.ka % 4 == 0 and plan.edge.pad_x is not None
    assert plan._at()["mm"] == {"M": 1023, "N": 1024, "K": plan.edge.ka}
    for alpha, beta, launches in ((1.0, 0.0, 6), (1.0, 0.0, 6), (2.0, 0.5, 7), (2.0, 0.5, 7)):
        got.clear()
        host.COUNTS.clear()
        s.gemm(A, B, C, alpha=alpha, beta=beta)
        assert len(got) == launches and host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    rows = s.plan_gemm(A.shape, B.shape, np.float32, variant=Variant.of("split", w=64, gemv=1))
    assert rows.edge.gemv.variant == split.row_gemv("float32") and rows.edge.mg == 1024
