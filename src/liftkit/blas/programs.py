"""The high-level programs liftkit.blas derives its kernels from, one per operation, layout and
element type.

Matrices are row-major Lift arrays `[[T]_cols]_rows`; a transposed operand is the row-major
array of the transposed matrix, read through `transpose` (TN: A given as K×M, NT: B given as
N×K). Complex operands may also be conjugated: a layout letter per operand says how the kernel
reads it, N (as stored), T (transposed), C (conjugate-transposed) or R (conjugated), and the
conjugation goes into the product's user function (`multConj`, ...), not a pass of its own.
Nothing here is OpenCL-specific: the kernels come from rewriting these programs
(`liftkit.blas.codelets`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.ir.nodes import Lambda, UserFun
from liftkit.ir.userfuns import complex_funs, scalar_funs
from liftkit.types import ScalarType, complex64, complex128

M, N, K = size("M"), size("N"), size("K")
P, Q = size("P"), size("Q")  # padded sizes (pad2d, crop2d)
R = size("R")  # the columns of a split GEMM's edge (hcat, tailcols)

DTYPES: dict[str, ScalarType] = {"float32": float32, "float64": float64,
                                 "complex64": complex64, "complex128": complex128}
COMPLEX = ("complex64", "complex128")
LAYOUTS = ("NN", "NT", "TN")
# complex kernels' layouts: a letter per operand, N/T as above, R = conjugated, C = conjugated
# and transposed; never both operands transposed (TT is NN with the operands swapped)
COMPLEX_LAYOUTS = tuple(a + b for a in "NTRC" for b in "NTRC" if not (a in "TC" and b in "TC"))


def scalar_type(dtype: str) -> ScalarType:
    return DTYPES[dtype]


def layouts(dtype: str) -> tuple[str, ...]:
    """The mm kernels' layouts for an element type."""
    return COMPLEX_LAYOUTS if dtype in COMPLEX else LAYOUTS


@functools.cache
def _mult(t: ScalarType, conj_x: bool, conj_y: bool) -> UserFun:
    """x·y with either factor conjugated (complex types; reals have only x·y)."""
    if not t.is_complex:
        return scalar_funs(t).mult
    f = complex_funs(t)
    if conj_x and conj_y:  # conj(x)·conj(y) = conj(x·y)
        c = t.name
        return user_fun(f"multConjBoth_{c}", [("x", t), ("y", t)], t,
                        f"return {c}_mul({c}_new(x.x, -x.y), {c}_new(y.x, -y.y));",
                        lambda x, y: f.mult.impl(np.conjugate(x), np.conjugate(y)))
    if conj_y:  # x·conj(y) = conj(y)·x
        c = t.name
        return user_fun(f"multConjY_{c}", [("x", t), ("y", t)], t,
                        f"return {c}_mul(x, {c}_new(y.x, -y.y));",
                        lambda x, y: f.mult.impl(x, np.conjugate(y)))
    return f.multConj if conj_x else f.mult


def _add(t: ScalarType) -> UserFun:
    return complex_funs(t).add if t.is_complex else scalar_funs(t).add


def _id(t: ScalarType) -> UserFun:
    return complex_funs(t).id if t.is_complex else scalar_funs(t).id


@functools.cache
def _axpy_fun(t: ScalarType) -> UserFun:
    tag = "" if t == float32 else f"_{t.name}"
    if t.is_complex:
        m = complex_funs(t).mult.impl
        return user_fun(f"axpyElem{tag}", [("a", t), ("x", t), ("y", t)], t,
                        f"return {t}_add({t}_mul(a, x), y);", lambda a, x, y: m(a, x) + y)
    return user_fun(f"axpyElem{tag}", [("a", t), ("x", t), ("y", t)], t, "return a * x + y;",
                    lambda a, x, y: a * x + y)


@functools.cache
def _axpby_fun(t: ScalarType) -> UserFun:
    tag = "" if t == float32 else f"_{t.name}"
    if t.is_complex:
        m = complex_funs(t).mult.impl
        return user_fun(f"axpbyElem{tag}", [("a", t), ("x", t), ("b", t), ("y", t)], t,
                        f"return {t}_add({t}_mul(a, x), {t}_mul(b, y));",
                        lambda a, x, b, y: m(a, x) + m(b, y))
    return user_fun(f"axpbyElem{tag}", [("a", t), ("x", t), ("b", t), ("y", t)], t,
                    "return a * x + b * y;", lambda a, x, b, y: a * x + b * y)


def _zero(t: ScalarType) -> Any:
    return lit(0.0, t)


def _dot(t: ScalarType, xs: Any, ys: Any, conj_x: bool = False, conj_y: bool = False) -> Any:
    return reduce(_add(t), _zero(t)) << map(_mult(t, conj_x, conj_y)) << zip(xs, ys)


def mm(dtype: str, layout: str) -> Lambda:
    """P = op(X)·op(Y) for the layouts NN (X: M×K, Y: K×N), NT (Y: N×K) and TN (X: K×M)."""
    t = scalar_type(dtype)
    if layout not in layouts(dtype):
        raise ValueError(f"mm: layout {layout!r} is not one of {', '.join(layouts(dtype))}")
    tx, ty = layout[0] in "TC", layout[1] in "TC"  # read transposed
    x_t = t[M][K] if tx else t[K][M]
    y_t = t[K][N] if ty else t[N][K]

    def body(X: Any, Y: Any) -> Any:
        rows = transpose << X if tx else X
        cols = Y if ty else transpose << Y
        return map(lambda row: join << map(
            lambda col: _dot(t, row, col, layout[0] in "CR", layout[1] in "CR")) << cols) << rows

    return fun([x_t, y_t], body)


def gemv(dtype: str, trans: bool, conj: bool = False) -> Lambda:
    """y' = α·op(A)·x + β·y; A: M×N row-major, op(A) = A (x: N, y: M) or Aᵀ (x: M, y: N);
    `conj`: A's elements conjugated (complex types: op(A) = Aᴴ with trans)."""
    t = scalar_type(dtype)
    mult, add = _mult(t, False, False), _add(t)
    xlen, ylen = (M, N) if trans else (N, M)

    def body(A: Any, x: Any, y: Any, alpha: Any, beta: Any) -> Any:
        rows = transpose << A if trans else A
        ax = join << map(lambda row: map(lambda d: mult(alpha, d)) << _dot(t, row, x, conj)) \
            << rows
        return map(lambda p: add(p[0], p[1])) << zip(ax, map(lambda v: mult(beta, v)) << y)

    return fun([t[N][M], t[xlen], t[ylen], t, t], body)


def transpose_prog(dtype: str) -> Lambda:
    """Aᵀ (out of place) for A: M×N row-major."""
    t = scalar_type(dtype)
    return fun([t[N][M]], lambda A: map(map(_id(t))) << transpose << A)


def axpby2d(dtype: str, trans: bool) -> Lambda:
    """C' = α·P + β·C (trans: α·Pᵀ + β·C) for C: M×N; the GEMM epilogue."""
    t = scalar_type(dtype)
    g = _axpby_fun(t)
    p_t = t[M][N] if trans else t[N][M]

    def body(P: Any, C: Any, alpha: Any, beta: Any) -> Any:
        rows = transpose << P if trans else P
        return map(lambda pc: map(lambda e: g(alpha, e[0], beta, e[1])) << zip(pc[0], pc[1])) \
            << zip(rows, C)

    return fun([p_t, t[N][M], t, t], body)


def pad2d(dtype: str) -> Lambda:
    """X (M×N) as the top-left block of a P×Q matrix of zeros (P ≥ M, Q ≥ N): a GEMM operand
    placed in a padded buffer whose rows a tiled kernel reads in 16-byte vectors (the GPU's 2-D
    copy is slow where the pitches are not multiples of 16 bytes)."""
    t = scalar_type(dtype)
    z = _zero(t)
    return fun([t[N][M]], lambda X: map(map(_id(t))) << transpose << map(pad(0, P - M, z))
               << transpose << map(pad(0, Q - N, z)) << X)


def crop2d(dtype: str) -> Lambda:
    """The top-left M×N block of X (P×Q, P ≥ M, Q ≥ N): a padded product's block that is C."""
    t = scalar_type(dtype)
    return fun([t[Q][P]], lambda X: map(map(_id(t))) << map(crop(0, Q - N)) << crop(0, P - M)
               << X)


def window2d(dtype: str) -> Lambda:
    """The first Q columns of X (M×N, Q ≤ N) as the top-left block of a P×Q matrix of zeros
    (P ≥ M): a split GEMM's interior operand, B's aligned columns with rows padded to K'
    (`liftkit.blas.split`)."""
    t = scalar_type(dtype)
    z = _zero(t)
    return fun([t[N][M]], lambda X: map(map(_id(t))) << transpose << map(pad(0, P - M, z))
               << transpose << map(crop(0, N - Q)) << X)


def tailcols(dtype: str) -> Lambda:
    """The last R columns of X (M×N, R ≤ N) as the rows of an R×P matrix, zero past M (P ≥ M):
    the vectors of a split GEMM's edge columns, padded to K'."""
    t = scalar_type(dtype)
    z = _zero(t)
    return fun([t[N][M]], lambda X: map(map(_id(t))) << map(pad(0, P - M, z)) << transpose
               << map(crop(N - R, 0)) << X)


def hcat(dtype: str) -> Lambda:
    """[X | Eᵀ] for X (M×Q, the interior product) and E (R×P, P ≥ M: the edge columns' products
    as rows): a split GEMM's M×(Q+R) result. The blocks are placed by padding each with zeros
    and adding, which is exact (x + 0 = x; the products are never -0: sums start at +0)."""
    t = scalar_type(dtype)
    z, add = _zero(t), _add(t)

    def body(X: Any, E: Any) -> Any:
        return map(lambda xe: map(lambda p: add(p[0], p[1])) << zip(
            pad(0, R, z) << xe[0], pad(Q, 0, z) << xe[1])) << zip(
            X, transpose << map(crop(0, P - M)) << E)

    return fun([t[Q][M], t[P][R]], body)


def scal(dtype: str) -> Lambda:
    t = scalar_type(dtype)
    mult = _mult(t, False, False)
    return fun([t, t[N]], lambda a, x: map(lambda v: mult(a, v)) << x)


def axpy(dtype: str) -> Lambda:
    t = scalar_type(dtype)
    g = _axpy_fun(t)
    return fun([t, t[N], t[N]], lambda a, x, y: map(lambda p: g(a, p[0], p[1])) << zip(x, y))


def dot(dtype: str) -> Lambda:
    t = scalar_type(dtype)
    return fun([t[N], t[N]], lambda x, y: _dot(t, x, y))


def dotc(dtype: str) -> Lambda:
    """Σ conj(xᵢ)·yᵢ (complex types)."""
    t = scalar_type(dtype)
    return fun([t[N], t[N]], lambda x, y: _dot(t, x, y, conj_x=True))


def asum(dtype: str) -> Lambda:
    """Σ|xᵢ|; for complex x BLAS's Σ(|re xᵢ| + |im xᵢ|) (scasum), a real."""
    t = scalar_type(dtype)
    r = t.real
    absf = complex_funs(t).abs1 if t.is_complex else scalar_funs(t).abs
    return fun([t[N]], lambda x: reduce(scalar_funs(r).add, _zero(r)) << map(absf) << x)


def sumsq(dtype: str) -> Lambda:
    """Σ |xᵢ|² (nrm2 is its square root, taken on the host, of the scaled vector), a real."""
    t = scalar_type(dtype)
    r = t.real
    if t.is_complex:
        sq = complex_funs(t).absSq
    else:
        sq = user_fun(f"sq{'' if t == float32 else '_' + t.name}", [("x", t)], t,
                      "return x * x;", lambda x: x * x)
    return fun([t[N]], lambda x: reduce(scalar_funs(r).add, _zero(r)) << map(sq) << x)




def cprep(dtype: str, letter: str) -> Lambda:
    """A complex GEMM operand read as its kernel's layout letter says, made row-major and plain:
    T: Xᵀ, R: conj(X), C: Xᴴ, for X: M×N row-major (the complex-through-real GEMM's first
    operand, `liftkit.blas.gemm`)."""
    t = scalar_type(dtype)
    f = complex_funs(t).conj if letter in "RC" else _id(t)
    if letter in "TC":
        return fun([t[N][M]], lambda X: map(map(f)) << transpose << X)
    return fun([t[N][M]], lambda X: map(map(f)) << X)


def cembed(dtype: str, letter: str) -> Lambda:
    """The second operand of a complex GEMM computed by a real one (the 4M form as one real
    product): op(Y) (K×N, op by the layout letter N, T, R or C) becomes the 2K×N complex matrix
    whose row 2k is op(Y)[k] and row 2k+1 is i·op(Y)[k], i.e. as reals the 2K×2N matrix
    [[Yr, Yi], [-Yi, Yr]] interleaved. A's M×K complex rows read as reals (M×2K: re, im, re, ...)
    times it give C's M×N complex rows as reals: Σ Ar·Yr - Ai·Yi, Σ Ar·Yi + Ai·Yr. `u` is the
    pair (1, i), so the rows are products by 1 and by i, exact in floating point."""
    t = scalar_type(dtype)
    mult = _mult(t, False, letter in "RC")  # s · conj?(z)
    y_t = t[K][N] if letter in "TC" else t[N][K]

    def body(Y: Any, u: Any) -> Any:
        rows = transpose << Y if letter in "TC" else Y
        return join << map(lambda row: transpose << map(
            lambda z: map(lambda s: mult(s, z)) << u) << row) << rows

    return fun([y_t, t[2]], body)
