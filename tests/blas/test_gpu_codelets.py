"""The GPU codelets of GEMV and transpose (rules gemv-lane-rows, gemv-lane-columns,
transpose-local-tiles; codelets row-groups, column-groups, tiles-t): sound in the interpreter,
run for real on the CPU device at random shapes (padded to their multiples, both storage
orders) against NumPy, and compiled for CUDA by NVRTC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.blas.profile import Entry
from liftkit.rewrite.rules.corpus import run, same_result

from .test_properties import _mat

GEMV_N = [Variant.of("row-groups", lanes=32, g=8, w=4), Variant.of("row-groups", lanes=16, g=4,
                                                                   w=1),
          Variant.of("row-groups", lanes=16, g=4, w=2, u=4)]  # u private accumulators
GEMV_T = [Variant.of("column-groups", lanes=32, g=16, w=1),
          Variant.of("column-groups", lanes=16, g=8, w=2),
          Variant.of("column-groups", lanes=2, g=16, w=4),  # narrow: 8 columns per group
          Variant.of("column-groups", lanes=4, g=8, w=8)]  # float8 / double8 row steps
TRANSPOSE = [Variant.of("tiles-t", r=32, k=4), Variant.of("tiles-t", r=16, k=2)]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("variant", GEMV_N + GEMV_T)
def test_gemv_groups_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    """Integer-valued inputs: every sum exact, so any regrouping gives the same bits."""
    trans = variant.codelet == "column-groups"
    kind = Kind("gemv", dt, "T" if trans else "N")
    d = derive(kind, variant)
    assert d.replay()
    rng = np.random.default_rng(3)
    m, n = 64, 128
    xs = [rng.integers(-4, 5, (m, n)).astype(dt),
          rng.integers(-4, 5, m if trans else n).astype(dt),
          rng.integers(-4, 5, n if trans else m).astype(dt), np.array(2.0, dt),
          np.array(-1.0, dt)]
    assert same_result(run(d.final, xs, {"M": m, "N": n}), run(kind.program(), xs, {"M": m, "N": n}))


@pytest.mark.parametrize("dt", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("variant", TRANSPOSE)
def test_local_tile_transpose_is_exact_in_the_interpreter(dt: str, variant: Variant) -> None:
    d = derive(Kind("transpose", dt), variant)
    m, n = 64, 96
    A = np.arange(m * n).reshape(m, n).astype(dt)
    got = np.asarray(run(d.final, [A], {"M": m, "N": n}))
    assert np.array_equal(got.reshape(n, m), A.T)


def _forced(session: Session, kinds: list[Kind], variant: Variant) -> Session:
    """A session whose profile picks `variant` for `kinds` at every size."""
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add(Entry(k, cls, {"N": 1}, variant, 1.0, 1e9) for k in kinds
             for cls in ("small", "medium", "large", "huge"))
    import liftkit.blas.profile as pm

    s = Session(session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    return s


@pytest.mark.parametrize("variant", GEMV_N + GEMV_T)
def test_gemv_groups_at_any_size(session: Session, variant: Variant) -> None:
    trans = variant.codelet == "column-groups"
    lay = "T" if trans else "N"
    s = _forced(session, [Kind("gemv", dt, lay) for dt in ("float32", "float64")], variant)
    assert s.choose(Kind("gemv", "float64", lay), {"M": 7, "N": 9}) == variant
    rng = np.random.default_rng(5)
    for case in range(8):
        dt = (np.float32, np.float64)[case % 2]
        order = "CF"[case // 2 % 2]
        # a column-major A read as op(A) runs the other layout's kernel: keep this one's
        flag = trans != (order == "F")
        A = _mat(rng, (int(rng.integers(1, 150)), int(rng.integers(1, 150))), dt, order)
        x = _mat(rng, (A.shape[0] if flag else A.shape[1],), dt)
        y = _mat(rng, (A.shape[1] if flag else A.shape[0],), dt)
        want = 1.5 * (A.T if flag else A).astype(np.float64) @ x - 0.5 * y
        got = s.gemv(A, x, y.copy(), alpha=1.5, beta=-0.5, trans=flag).result()
        tol = 1e-4 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10, err_msg=str((case, A.shape)))


@pytest.mark.parametrize("variant", TRANSPOSE)
def test_local_tile_transpose_at_any_size(session: Session, variant: Variant) -> None:
    dts = (np.float32, np.float64, np.complex64, np.complex128)
    s = _forced(session, [Kind("transpose", np.dtype(d).name) for d in dts], variant)
    assert s.choose(Kind("transpose", "complex64"), {"M": 7, "N": 9}) == variant
    rng = np.random.default_rng(9)
    for case in range(8):
        dt = dts[case % 4]
        order = "CF"[case // 4 % 2]
        A = _mat(rng, (int(rng.integers(1, 90)), int(rng.integers(1, 90))), dt, order)
        out = np.full(A.shape[::-1], np.nan, dtype=dt, order=order)
        got = s.transpose(A, out).result()
        assert got is out and np.array_equal(out, A.T), (case, A.shape, order)


@pytest.mark.parametrize("kind,variant", [(Kind("gemv", "float32", "N"), GEMV_N[0]),
                                          (Kind("gemv", "float64", "T"), GEMV_T[1]),
                                          (Kind("gemv", "float32", "T"), GEMV_T[2]),
                                          (Kind("gemv", "float32", "T"), GEMV_T[3]),
                                          (Kind("transpose", "float64"), TRANSPOSE[0])])
def test_gpu_codelets_compile_for_cuda(kind: Kind, variant: Variant, compile_cuda: Any) -> Any:
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions
    for k in compile_program(derive(kind, variant).final, CompileOptions(dialect="cuda")).kernels:
        compile_cuda(k.source, "sm_90", k.build_options, name=f"{k.name}.cu")


def test_gemv_beta_zero_reads_no_y(session: Session) -> None:
    """β = 0: y is not read (NaN in it stays out of the result); the session's zero buffer that
    β·y reads instead grows with the sizes and stays zero across calls."""
    rng = np.random.default_rng(2)
    for n, trans in ((5, False), (300, True), (40, False), (1200, True)):
        A = _mat(rng, (n, n + 3), np.float64)
        x = _mat(rng, (n if trans else n + 3,), np.float64)
        y = np.full(n + 3 if trans else n, np.nan)
        got = session.gemv(A, x, y, alpha=2.0, trans=trans).result()
        np.testing.assert_allclose(got, 2.0 * (A.T if trans else A) @ x, rtol=1e-12, atol=1e-12)


def test_temporaries_come_from_the_session_workspace(session: Session) -> None:
    """A derivation with a global scratch buffer (group-rows' per-row partials) takes it from
    the session's workspace, once, instead of allocating it per call."""
    v = Variant.of("group-rows", L=32, w=1)
    s = _forced(session, [Kind("gemv", "float32", "N")], v)
    rng = np.random.default_rng(4)
    A, x = _mat(rng, (64, 96), np.float32), _mat(rng, (96,), np.float32)
    for _ in range(3):
        np.testing.assert_allclose(s.gemv(A, x).result(), A @ x, rtol=1e-5, atol=1e-5)
    names = [k for k in s.scratch._bufs if k.startswith(f"gemv/float32/N|{v}|")]
    assert len(names) == 1, list(s.scratch._bufs)
