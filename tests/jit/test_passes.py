"""The passes: inlining, simplification, region detection/specialisation and bounds-check
elimination (each switchable), checked on the VRIR they produce and on results."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.jit import sexpr, types as T, vrir as V
from liftkit.jit.passes import PassReport, run_passes
from liftkit.jit.passes.regions import MAX_VERSIONS
from liftkit.jit.passes.simplify import simplify

from .helpers import compile_source

STENCIL = """
def f(A, B):
    m, n = A.shape
    for i in range(1, m - 1):
        for j in range(1, n - 1):
            B[i, j] = (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1]) / 5
    return B
"""


def report(f):
    return list(f.specs.values())[-1].info["passes"]


@pytest.mark.parametrize("specialise", [True, False])
def test_affine_stencil_has_no_checks_left(specialise):
    f = compile_source(STENCIL, passes={"specialise": specialise})
    A = np.random.default_rng(0).random((6, 7))
    np.testing.assert_allclose(f(A, np.zeros_like(A)), f.py_func(A, np.zeros_like(A)))
    r = report(f)
    if specialise:  # both extents known: every check goes
        assert r.checks_total == 36 and r.checks_removed == 36
        assert "(check #t" not in f.inspect_vrir()
    else:  # B's extents are unrelated to A's: only B's two upper-bound checks stay
        assert r.checks_total == 36 and r.checks_removed == 34


def test_checks_stay_where_they_can_fail():
    f = compile_source("""
def f(A, k):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i + k]
    return s
""")
    A = np.arange(5.0)
    assert f(A, 0) == 10.0
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        f(A, 1)
    assert report(f).checks_removed < report(f).checks_total


def test_negative_wrap_kept_when_index_may_be_negative():
    f = compile_source("""
def f(A):
    B = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        B[i] = A[i - 1]
    return B
""")
    A = np.arange(4.0)
    np.testing.assert_array_equal(f(A), [3.0, 0.0, 1.0, 2.0])


def test_bounds_switch_off_keeps_every_check():
    f = compile_source(STENCIL, passes={"bounds": False})
    A = np.ones((4, 4))
    f(A, np.zeros_like(A))
    assert report(f).checks_removed == 0 and report(f).checks_total == 36


def test_region_specialisation_versions_and_fallback():
    f = compile_source(STENCIL)
    for n in range(3, 3 + MAX_VERSIONS + 2):
        A = np.ones((n, n))
        np.testing.assert_array_equal(f(A, np.zeros_like(A)), f.py_func(A, np.zeros_like(A)))
    specs = [c.info["spec"] for c in f.specs.values()]
    assert sum(s is not None for s in specs) == MAX_VERSIONS
    assert specs[-1] is None  # the generic version serves further shapes
    assert "(const 3 " in sexpr.dumps(list(f.specs.values())[0].module)


def test_inlining_removes_calls_and_keeps_results():
    f = compile_source("""
from liftkit.jit import jit

@jit(cache=False)
def clamp(x, lo, hi):
    return min(max(x, lo), hi)

@jit(cache=False)
def f(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += clamp(A[i], 0.0, 1.0)
    return s
""")
    A = np.linspace(-1, 2, 7)
    assert f(A) == pytest.approx(sum(min(max(x, 0.0), 1.0) for x in A))
    assert report(f).inlined == 1 and "(call" not in f.inspect_vrir()
    g = compile_source("""
from liftkit.jit import jit

@jit(cache=False)
def sgn(x):
    if x < 0:
        return -1
    return 1

@jit(cache=False)
def f(x):
    return sgn(x) * 10
""")
    assert g(-3.0) == -10 and g(2.0) == 10  # two returns: stays a call (LLVM inlines it)
    assert "(call" in g.inspect_vrir()


def test_simplify_folds_constants_and_dead_branches():
    i64 = T.INT64
    x = V.Name("x", i64)
    body = (V.Assign(x, V.BinOp("add", V.BinOp("mul", V.Const(2, i64), V.Const(3, i64), i64),
                                V.Const(0, i64), i64), 1),
            V.If(V.Compare("lt", V.Const(1, i64), V.Const(2, i64), T.BOOL),
                 (V.Assign(x, V.BinOp("mul", x, V.Const(1, i64), i64), 2),),
                 (V.Raise("ValueError", "never", 3),), 2),
            V.Return(x, 4), V.Assign(x, V.Const(9, i64), 5))
    f = V.Function("f", (), (V.Sym("x", i64),), i64, body, 1)
    out = simplify(V.Module("m", True, True, (f,))).functions[0].body
    assert out == (V.Assign(x, V.Const(6, i64), 1), V.Assign(x, x, 2), V.Return(x, 4))


def test_run_passes_reports_counts():
    f = compile_source(STENCIL)
    A = np.ones((5, 5))
    f(A, A.copy())
    m = list(f.specs.values())[-1].module
    r = PassReport()
    run_passes(m, {"specialise": False}, None, r)
    assert r.checks_total == 0  # already eliminated in m
