"""The high-level programs liftkit.blas derives its kernels from, one per operation, layout and
element type.

Matrices are row-major Lift arrays `[[T]_cols]_rows`; a transposed operand is the row-major
array of the transposed matrix, read through `transpose` (TN: A given as K×M, NT: B given as
N×K). Nothing here is OpenCL-specific: the kernels come from rewriting these programs
(`liftkit.blas.codelets`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.ir.nodes import Lambda, UserFun
from liftkit.ir.userfuns import scalar_funs
from liftkit.types import ScalarType

M, N, K = size("M"), size("N"), size("K")

DTYPES: dict[str, ScalarType] = {"float32": float32, "float64": float64}
LAYOUTS = ("NN", "NT", "TN")


def scalar_type(dtype: str) -> ScalarType:
    return DTYPES[dtype]


@functools.cache
def _sq_and_sum_up(t: ScalarType) -> UserFun:
    """acc + x·x (the sum of squares under nrm2)."""
    tag = "" if t == float32 else f"_{t.name}"
    return user_fun(f"sqAndSumUp{tag}", [("acc", t), ("x", t)], t, "return acc + x * x;",
                    lambda acc, x: acc + x * x)


@functools.cache
def _axpy_fun(t: ScalarType) -> UserFun:
    tag = "" if t == float32 else f"_{t.name}"
    return user_fun(f"axpyElem{tag}", [("a", t), ("x", t), ("y", t)], t, "return a * x + y;",
                    lambda a, x, y: a * x + y)


@functools.cache
def _axpby_fun(t: ScalarType) -> UserFun:
    tag = "" if t == float32 else f"_{t.name}"
    return user_fun(f"axpbyElem{tag}", [("a", t), ("x", t), ("b", t), ("y", t)], t,
                    "return a * x + b * y;", lambda a, x, b, y: a * x + b * y)


def _zero(t: ScalarType) -> Any:
    return lit(0.0, t)


def _dot(t: ScalarType, xs: Any, ys: Any) -> Any:
    f = scalar_funs(t)
    return reduce(f.add, _zero(t)) << map(f.mult) << zip(xs, ys)


def mm(dtype: str, layout: str) -> Lambda:
    """P = op(X)·op(Y) for the layouts NN (X: M×K, Y: K×N), NT (Y: N×K) and TN (X: K×M)."""
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    x_t = t[K][M] if layout[0] == "N" else t[M][K]
    y_t = t[N][K] if layout[1] == "N" else t[K][N]

    def body(X: Any, Y: Any) -> Any:
        rows = X if layout[0] == "N" else transpose << X
        cols = transpose << Y if layout[1] == "N" else Y
        return map(lambda row: join << map(lambda col: _dot(t, row, col)) << cols) << rows

    if layout not in LAYOUTS:
        raise ValueError(f"mm: layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    return fun([x_t, y_t], body)


def gemv(dtype: str, trans: bool) -> Lambda:
    """y' = α·op(A)·x + β·y; A: M×N row-major, op(A) = A (x: N, y: M) or Aᵀ (x: M, y: N)."""
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    xlen, ylen = (M, N) if trans else (N, M)

    def body(A: Any, x: Any, y: Any, alpha: Any, beta: Any) -> Any:
        rows = transpose << A if trans else A
        ax = join << map(lambda row: map(lambda d: f.mult(alpha, d)) << _dot(t, row, x)) << rows
        return map(lambda p: f.add(p[0], p[1])) << zip(ax, map(lambda v: f.mult(beta, v)) << y)

    return fun([t[N][M], t[xlen], t[ylen], t, t], body)


def transpose_prog(dtype: str) -> Lambda:
    """Aᵀ (out of place) for A: M×N row-major."""
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    return fun([t[N][M]], lambda A: map(map(f.id)) << transpose << A)


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


def scal(dtype: str) -> Lambda:
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    return fun([t, t[N]], lambda a, x: map(lambda v: f.mult(a, v)) << x)


def axpy(dtype: str) -> Lambda:
    t = scalar_type(dtype)
    g = _axpy_fun(t)
    return fun([t, t[N], t[N]], lambda a, x, y: map(lambda p: g(a, p[0], p[1])) << zip(x, y))


def dot(dtype: str) -> Lambda:
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    return fun([t[N], t[N]], lambda x, y: _dot(t, x, y))


def asum(dtype: str) -> Lambda:
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    return fun([t[N]], lambda x: reduce(f.add, _zero(t)) << map(f.abs) << x)


def sumsq(dtype: str) -> Lambda:
    """Σ x² (nrm2 is its square root, taken on the host, of the scaled vector)."""
    t, f = scalar_type(dtype), scalar_funs(scalar_type(dtype))
    sq = user_fun(f"sq{'' if t == float32 else '_' + t.name}", [("x", t)], t, "return x * x;",
                  lambda x: x * x)
    return fun([t[N]], lambda x: reduce(f.add, _zero(t)) << map(sq) << x)


