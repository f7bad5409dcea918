"""Compiled code agrees with Python/NumPy: scalars, loops, indexing, slicing, array
expressions, reductions, dot, calls, parallel loops and run-time errors."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import compile_source


def same(f, *args):
    want = f.py_func(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = f(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    return got


def test_scalar_arithmetic_follows_python():
    f = compile_source("""
def f(a, b):
    return a // b, a % b, a / b, -a ** 2, (a < b) and (b != 0), abs(a - b), min(a, b)
""")
    for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2)]:
        assert f(a, b) == f.py_func(a, b)
    g = compile_source("""
def f(a, b):
    return a // b, a % b, a ** b
""")
    for a, b in [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0)]:
        assert g(a, b) == pytest.approx(g.py_func(a, b))
    with pytest.raises(ZeroDivisionError, match="line 6"):
        f(1, 0)


def test_loops_break_continue_while():
    f = compile_source("""
def f(n):
    s = 0
    for i in range(n, 0, -2):
        if i % 3 == 0:
            continue
        if i < 4:
            break
        s += i
    k = 0
    while k * k < n:
        k += 1
    return s, k, i
""")
    for n in (0, 1, 10, 31):
        assert f(n) == f.py_func(n) if n else True


def test_indexing_negative_and_out_of_bounds():
    f = compile_source("""
def f(A, i, j):
    return A[i, j] + A[-1, -1] + A.shape[0] + len(A)
""")
    A = np.arange(12.0).reshape(3, 4)
    assert f(A, 1, 2) == f.py_func(A, 1, 2)
    assert f(A, -3, -4) == f.py_func(A, -3, -4)
    with pytest.raises(IndexError, match=r"line 6: index 3 is out of bounds for axis 0 with size 3"):
        f(A, 3, 0)
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4"):
        f(A, 0, -5)


def test_layouts_and_strided_views():
    f = compile_source("""
def f(A, B):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] * 2 + i - j
    return B
""")
    A = np.arange(30.0).reshape(5, 6)
    for a in (A, np.asfortranarray(A), A[::2, 1::2], A.T):
        b = np.zeros(a.shape)
        np.testing.assert_array_equal(f(a, b.copy()), f.py_func(a, b.copy()))
    f32 = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert f(f32, np.zeros((3, 4), np.float32)).dtype == np.float32


def test_slices_with_steps_and_stores():
    f = compile_source("""
def f(A):
    B = A[::-2] + A[1::3].sum()
    C = np.zeros(A.shape[0])
    C[1:-1] = A[2:] - A[:-2]
    C[::4] = 7.0
    A[1:] = A[:-1]
    return B, C, A
""")
    A = np.arange(11.0)
    got, want = f(A.copy()), f.py_func(A.copy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_array_expressions_ufuncs_and_broadcasting():
    f = compile_source("""
def f(A, v, x):
    B = np.sqrt(np.abs(A)) * v + np.exp(-A) - np.log(A * A + 1.0)
    C = np.where(A > x, np.minimum(A, v), np.maximum(A, -v)) + np.sin(A) * np.cos(A)
    return B, C, A < x
""")
    A = np.linspace(-3, 3, 12).reshape(3, 4)
    v = np.arange(4.0)
    for g, w in zip(f(A, v, 0.5), f.py_func(A, v, 0.5)):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(A, np.ones(3), 0.5)


def test_reductions_with_axis():
    f = compile_source("""
def f(A):
    return (A.sum(), np.min(A), A.max(), np.sum(A, axis=0), A.min(axis=1), np.max(A, axis=-1),
            np.mean(A), np.sum(A * 2 + 1))
""")
    A = np.random.default_rng(0).normal(size=(5, 7))
    for g, w in zip(f(A), f.py_func(A)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(ValueError, match="zero-size array"):
        f(np.zeros((0, 3)))


def test_dot_and_matmul():
    f = compile_source("""
def f(A, B, x):
    return A @ B, np.dot(A, x[:A.shape[1]]), np.dot(x[:A.shape[1]], x[:A.shape[1]]), x[:A.shape[0]] @ A
""")
    rng = np.random.default_rng(1)
    A, B, x = rng.normal(size=(4, 5)), rng.normal(size=(5, 3)), rng.normal(size=6)
    for g, w in zip(f(A, B, x), f.py_func(A, B, x)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(ValueError, match="not aligned"):
        f(A, A, x)


def test_allocation_and_arange():
    f = compile_source("""
def f(n):
    a = np.zeros((n, 2))
    b = np.ones(n, dtype=np.int32)
    c = np.empty(n)
    for i in range(n):
        c[i] = i
    d = np.arange(1, n, 2)
    e = np.full((2, n), 1.5)
    return a, b, c, d, e, np.arange(0.0, 1.0, 0.25), np.zeros_like(a)
""")
    for g, w in zip(f(5), f.py_func(5)):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype
    with pytest.raises(ValueError, match="negative dimensions"):
        f(-1)


def test_calls_between_jitted_functions():
    f = compile_source("""
from liftkit.jit import jit

@jit(cache=False)
def sq(x):
    return x * x

@jit(cache=False)
def norm2(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += sq(A[i])
    return s

@jit(cache=False)
def f(A):
    return norm2(A) + sq(2)
""")
    A = np.arange(5.0)
    assert f(A) == 30.0 + 4


def test_prange_and_par_domain():
    f = compile_source("""
def f(A, B):
    m, n = A.shape
    for i, j in PAR(Domain(m, n), shared=[A, B]):
        B[i, j] = A[i, j] * 2.0 + i
    C = np.zeros(m)
    for i in prange(m):
        s = 0.0
        for j in range(n):
            s += B[i, j]
        C[i] = s
    return C
""", threads=2)
    A = np.arange(600.0).reshape(40, 15)
    np.testing.assert_allclose(f(A, np.zeros_like(A)), f.py_func(A, np.zeros_like(A)))
    g = compile_source("""
def f(A):
    for i in prange(A.shape[0] + 1):
        A[i] = 1.0
""", threads=2)
    with pytest.raises(IndexError, match="out of bounds"):
        g(np.zeros(100))


def test_user_raise_and_assert():
    f = compile_source("""
def f(x):
    assert x > 0, "x must be positive"
    if x > 10:
        raise ValueError("too big")
    return x
""")
    assert f(3) == 3
    with pytest.raises(AssertionError, match="x must be positive"):
        f(-1)
    with pytest.raises(ValueError, match="too big"):
        f(11)


def test_type_unification_and_complex():
    f = compile_source("""
def f(n, z):
    x = 0
    for i in range(n):
        x = x + 0.5
    return x, z * z + 1, abs(z)
""")
    assert f(3, 1 + 2j) == f.py_func(3, 1 + 2j)


def test_disk_cache_hit_and_corrupt_entry(tmp_path):
    from liftkit.jit.dispatch import Runtime
    from liftkit.jit.engine import DiskCache
    rt = Runtime()
    rt.cache = DiskCache(tmp_path)
    src = """
def f(a):
    return a * 3
"""
    f1 = compile_source(src, cache=True, runtime=rt)
    assert f1(2) == 6 and not list(f1.specs.values())[0].from_cache
    f2 = compile_source(src, cache=True, runtime=rt)
    assert f2(2) == 6 and list(f2.specs.values())[0].from_cache
    for p in tmp_path.rglob("*.o"):
        p.write_bytes(p.read_bytes()[:-20] + b"garbage-garbage-garb")
    f3 = compile_source(src, cache=True, runtime=rt)
    assert f3(2) == 6 and not list(f3.specs.values())[0].from_cache


def test_worker_pool_many_launches_and_python_threads():
    import threading
    f = compile_source("""
def f(A):
    n = A.shape[0]
    for i in range(n):
        for j in prange(i, n):
            A[i, j] = A[i, j] + 1.0
    return A
""", threads=3)
    want = np.triu(np.ones((30, 30)))
    np.testing.assert_array_equal(f(np.zeros((30, 30))), want)
    out = [None] * 4

    def work(k):
        out[k] = f(np.zeros((30, 30)))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for o in out:
        np.testing.assert_array_equal(o, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_dot_blas_and_loop_paths(dtype):
    f = compile_source("""
def f(A, B, v):
    return A @ B, A @ v, v @ B[:v.shape[0], :]
""")
    rng = np.random.default_rng(2)
    A = (rng.random((7, 12)) * 4).astype(dtype)
    B = (rng.random((6, 5)) * 4).astype(dtype)
    v = (rng.random(6) * 4).astype(dtype)
    for a, b in [(A[:, :6], B), (A[:, ::2], B), (np.asfortranarray(A[:, :6]), B[::-1])]:
        got, want = f(a, b, v), (a @ b, a @ v, v @ b[:6])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5)


def test_second_process_loads_from_disk_cache(tmp_path):
    import os
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text("""
import numpy as np
from liftkit.jit import jit, prange

@jit
def f(A):
    for i in prange(A.shape[0]):
        A[i] = A[i] * 2 + 1
    return A.sum()

print(f(np.arange(10.0)), list(f.specs.values())[0].from_cache)
""")
    env = {**os.environ, "LIFTKIT_JIT_CACHE": str(tmp_path / "cache")}
    outs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                           check=True).stdout.split() for _ in range(2)]
    assert outs[0] == ["100.0", "False"] and outs[1] == ["100.0", "True"]
