"""Parallel loops on the worker pool: collapsed PAR domains (every dimension shared out, chunks
ending mid-row), disjoint-array ``noalias`` only where alias analysis proves it, jobs that use
fewer threads than the pool holds, and many back-to-back launches."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.jit.cg_runtime import distinct_arrays

from .helpers import compile_source


@pytest.mark.parametrize("shape", [(3, 7, 5), (1, 1, 9), (2, 0, 4), (5, 3, 1)])
def test_par_domain_collapsed_over_three_dimensions(shape):
    f = compile_source("""
def f(A):
    a, b, c = A.shape
    for i, j, k in PAR(Domain((1, a, 2), b, (c - 1, -1, -1)), shared=[A]):
        A[i, j, k] = A[i, j, k] + 100 * i + 10 * j + k
    return A
""", threads=4)
    A = np.arange(float(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(f(A.copy()), f.py_func(A.copy()))


def test_par_domain_2d_small_outer_dimension():
    # two rows and four threads: only collapsing gives every thread work; chunks end mid-row
    f = compile_source("""
def f(A, B):
    m, n = A.shape
    for i, j in PAR(Domain(m, n), shared=[A, B]):
        B[i, j] = A[i, j] * 2.0 + i - j
    return B
""", threads=4)
    for shape in ((2, 1001), (3, 5), (1, 1)):
        A = np.random.default_rng(0).random(shape)
        np.testing.assert_allclose(f(A, np.zeros(shape)), A * 2 + np.add.outer(
            np.arange(shape[0]), -np.arange(shape[1])))


def test_overlapping_views_in_a_parallel_loop_stay_correct():
    # B is a view of A (not a distinct array): the outlined body must not assume noalias
    f = compile_source("""
def f(A):
    n = A.shape[0]
    B = A[1:]
    for i in prange(n - 1):
        for r in range(4):
            B[i] = B[i] + A[i + 1] * 0.5
    return A
""", threads=2)
    A = np.arange(64.0)
    np.testing.assert_allclose(f(A.copy()), f.py_func(A.copy()))


def test_distinct_arrays_analysis():
    f = compile_source("""
def f(A, B):
    C = np.zeros(3)
    D = A[1:]
    E = np.ones(2)
    E = D
    B = np.zeros(2)
    for i in prange(2):
        C[i] = D[i] + E[i] + B[i]
    return C
""")
    from liftkit.jit.pipeline import passed

    f(np.zeros(4), np.zeros(4))
    fn = passed(f, f._last()).functions[0]
    assert distinct_arrays(fn, noalias=True) == {"A", "C"}
    assert distinct_arrays(fn, noalias=False) == {"C"}


def test_fewer_threads_than_the_pool_and_many_launches():
    src = """
def f(A):
    n = A.shape[0]
    for i in range(n):
        for j in prange(i, n):
            A[i, j] = A[i, j] + 1.0
        for j in prange(i + 1, n):
            A[j, i] = A[j, i] - 1.0
    return A
"""
    want = np.triu(np.ones((200, 200))) - np.tril(np.ones((200, 200)), -1)
    for threads in (8, 2, 3, 1):
        f = compile_source(src, threads=threads)
        np.testing.assert_array_equal(f(np.zeros((200, 200))), want)


def test_errors_and_results_under_many_joins():
    # workers join and leave thousands of jobs; an error in any chunk is the call's one error
    f = compile_source("""
def f(A, bad):
    n = A.shape[0]
    for i in range(n):
        for j in prange(n):
            A[i, j] = A[i, j] + j
        if i == bad:
            for j in prange(n + 1):
                A[i, j] = 0.0
    return A
""", threads=4)
    want = np.tile(np.arange(64.0), (64, 1))
    for _ in range(20):
        np.testing.assert_array_equal(f(np.zeros((64, 64)), -1), want)
        with pytest.raises(IndexError, match="out of bounds"):
            f(np.zeros((64, 64)), 40)


def test_perfectly_nested_pranges_collapse_to_one_domain():
    f = compile_source("""
def f(A):
    m, n = A.shape
    for i in prange(m):
        for j in prange(1, n, 2):
            A[i, j] = A[i, j] + i * 10 + j
    return A
""", threads=3)
    A = np.zeros((2, 11))
    np.testing.assert_array_equal(f(A.copy()), f.py_func(A.copy()))
    assert '(parfor\n        ["i" "j"]' in f.inspect_vrir()
    g = compile_source("""
def f(A):
    m, n = A.shape
    for i in prange(m):
        for j in prange(i, n):
            A[i, j] = 1.0
    return A
""", threads=3)  # the inner bounds use i: only the outer loop is parallel
    B = np.zeros((5, 5))
    np.testing.assert_array_equal(g(B.copy()), np.triu(np.ones((5, 5))))
    assert '(parfor\n        ["i"]' in g.inspect_vrir()


def test_parallel_loop_of_an_inlined_callee_inside_a_parallel_loop():
    # the callee's prange lands inside a chunk: it runs serially there instead of waiting on
    # the busy pool (which never ended before)
    f = compile_source("""
from liftkit.jit import jit

@jit(cache=False)
def row(A, i):
    for j in prange(A.shape[1]):
        A[i, j] = A[i, j] + i + 1.0
    return 0

def f(A):
    for i in prange(A.shape[0]):
        row(A, i)
    return A
""", threads=3)
    A = np.zeros((50, 300))
    np.testing.assert_array_equal(f(A), np.repeat(np.arange(1.0, 51.0)[:, None], 300, 1))


def test_arrays_in_a_captured_tuple_keep_the_loop_correct():
    f = compile_source("""
def f(A):
    n = A.shape[0]
    B = np.zeros(n)
    t = (A, B)
    for i in prange(n - 1):
        for r in range(3):
            B[i] = B[i] + t[0][i + 1]
            t[1][i] = t[1][i] * 2.0
    return B
""", threads=2)
    A = np.arange(32.0)
    np.testing.assert_allclose(f(A.copy()), f.py_func(A.copy()))
