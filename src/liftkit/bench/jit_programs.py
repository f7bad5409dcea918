"""The JIT suite's programs: the thesis' Python benchmarks (seed 003 ch. 10) written as a NumPy
user would, with ``prange`` marking the parallel loops (the same source is compiled by
liftkit's @jit and by Numba, ``prange`` rebound to ``numba.prange``), the vectorised NumPy a
user without a compiler would write (the CPython+NumPy column), and the inputs at a scale
(1.0: the sizes of docs/jit.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from liftkit.jit import prange


def julia(h, w, maxiter):
    out = np.zeros((h, w), dtype=np.int64)
    for i in prange(h):
        for j in range(w):
            zr = -1.5 + 3.0 * j / w
            zi = -1.0 + 2.0 * i / h
            n = 0
            while n < maxiter and zr * zr + zi * zi < 4.0:
                t = zr * zr - zi * zi - 0.8
                zi = 2.0 * zr * zi + 0.156
                zr = t
                n += 1
            out[i, j] = n
    return out


def pairwise(X):
    n, d = X.shape
    D = np.empty((n, n))
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = math.sqrt(s)
    return D


def growcut(image, state, state_next, r):
    height, width = image.shape[0], image.shape[1]
    for j in prange(height):
        for i in range(width):
            colony = state[j, i, 0]
            defense = state[j, i, 1]
            for jj in range(max(j - r, 0), min(j + r + 1, height)):
                for ii in range(max(i - r, 0), min(i + r + 1, width)):
                    if ii != i or jj != j:
                        s = 0.0
                        for k in range(image.shape[2]):
                            t = image[j, i, k] - image[jj, ii, k]
                            s += t * t
                        attack = (1.0 - math.sqrt(s) / math.sqrt(3.0)) * state[jj, ii, 1]
                        if attack > defense:
                            defense = attack
                            colony = state[jj, ii, 0]
            state_next[j, i, 0] = colony
            state_next[j, i, 1] = defense
    return state_next


def lud(A):
    n = A.shape[0]
    for i in range(n):
        for j in prange(i, n):
            s = A[i, j]
            for k in range(i):
                s -= A[i, k] * A[k, j]
            A[i, j] = s
        for j in prange(i + 1, n):
            s = A[j, i]
            for k in range(i):
                s -= A[j, k] * A[k, i]
            A[j, i] = s / A[i, i]
    return A


def srad(J, niter, lam):
    rows, cols = J.shape
    dN = np.zeros((rows, cols))
    dS = np.zeros((rows, cols))
    dW = np.zeros((rows, cols))
    dE = np.zeros((rows, cols))
    c = np.zeros((rows, cols))
    for it in range(niter):
        roi = J[0:rows // 4, 0:cols // 4]
        mean = np.sum(roi) / roi.size
        var = np.sum(roi * roi) / roi.size - mean * mean
        q0sqr = var / (mean * mean)
        for i in prange(rows):
            for j in range(cols):
                jc = J[i, j]
                dN[i, j] = J[max(i - 1, 0), j] - jc
                dS[i, j] = J[min(i + 1, rows - 1), j] - jc
                dW[i, j] = J[i, max(j - 1, 0)] - jc
                dE[i, j] = J[i, min(j + 1, cols - 1)] - jc
                g2 = (dN[i, j] ** 2 + dS[i, j] ** 2 + dW[i, j] ** 2 + dE[i, j] ** 2) / (jc * jc)
                l = (dN[i, j] + dS[i, j] + dW[i, j] + dE[i, j]) / jc
                num = 0.5 * g2 - (1.0 / 16.0) * l * l
                den = 1.0 + 0.25 * l
                qsqr = num / (den * den)
                den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
                cc = 1.0 / (1.0 + den)
                c[i, j] = min(max(cc, 0.0), 1.0)
        for i in prange(rows):
            for j in range(cols):
                cN = c[i, j]
                cS = c[min(i + 1, rows - 1), j]
                cW = c[i, j]
                cE = c[i, min(j + 1, cols - 1)]
                D = cN * dN[i, j] + cS * dS[i, j] + cW * dW[i, j] + cE * dE[i, j]
                J[i, j] = J[i, j] + 0.25 * lam * D
    return J


def pagerank(M, d, niter):
    n = M.shape[0]
    r = np.ones(n) / n
    for it in range(niter):
        r = (1.0 - d) / n + d * (M @ r)
    return r


def spmv(data, indices, indptr, x, reps):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for rep in range(reps):
        for i in prange(n):
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * x[indices[k]]
            y[i] = s
    return y


def fft(re, im):
    n = re.shape[0]
    j = 0
    for i in range(1, n):
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j ^= bit
        if i < j:
            t = re[i]
            re[i] = re[j]
            re[j] = t
            t = im[i]
            im[i] = im[j]
            im[j] = t
    size = 2
    while size <= n:
        half = size // 2
        ang = -2.0 * math.pi / size
        for start in range(0, n, size):
            for k in range(half):
                wr = math.cos(ang * k)
                wi = math.sin(ang * k)
                a = start + k
                b = a + half
                tr = re[b] * wr - im[b] * wi
                ti = re[b] * wi + im[b] * wr
                re[b] = re[a] - tr
                im[b] = im[a] - ti
                re[a] = re[a] + tr
                im[a] = im[a] + ti
        size *= 2
    return re, im


def inputs(name: str, s: float, rng: np.random.Generator) -> tuple:
    """Arguments of benchmark ``name`` at scale ``s`` (arrays are fresh: copy before mutating)."""
    def n(x: int) -> int:
        return max(4, int(x * s))
    if name == "julia":
        return (n(400), n(400), 200)
    if name == "pairwise":
        return (rng.random((n(1000), 3)),)
    if name == "growcut":
        h = n(300)
        img = rng.random((h, h, 3))
        st = np.zeros((h, h, 2))
        st[:, :, 0] = rng.integers(0, 2, (h, h))
        st[:, :, 1] = rng.random((h, h))
        return (img, st, np.zeros_like(st), 1)
    if name == "lud":
        m = n(500)
        return (rng.random((m, m)) + m * np.eye(m),)
    if name == "srad":
        return (rng.random((n(500), n(500))) + 1.0, 10, 0.5)
    if name == "pagerank":
        m = n(1500)
        M = (rng.random((m, m)) < 0.05).astype(np.float64)
        M /= np.maximum(M.sum(axis=0), 1.0)
        return (M, 0.85, 20)
    if name == "spmv":
        m = n(40000)
        nnz = 12
        indptr = np.arange(0, (m + 1) * nnz, nnz, dtype=np.int64)
        indices = rng.integers(0, m, m * nnz).astype(np.int64)
        return (rng.random(m * nnz), indices, indptr, rng.random(m), 10)
    if name == "fft":
        m = 1 << max(3, int(round(math.log2(n(1 << 16)))))
        return (rng.random(m), rng.random(m))
    raise KeyError(name)


def np_julia(h, w, maxiter):
    x = -1.5 + 3.0 * np.arange(w) / w
    y = -1.0 + 2.0 * np.arange(h) / h
    z = x[None, :] + 1j * y[:, None]
    out = np.zeros((h, w), np.int64)
    alive = np.ones((h, w), bool)
    for _ in range(maxiter):
        alive &= (z.real ** 2 + z.imag ** 2) < 4.0
        out += alive
        z = np.where(alive, z * z + (-0.8 + 0.156j), z)
    return out


def np_pairwise(X):
    return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def np_growcut(image, state, state_next, r):
    h, w = image.shape[:2]
    col, dfn = state[:, :, 0].copy(), state[:, :, 1].copy()
    for dj in range(-r, r + 1):
        for di in range(-r, r + 1):
            if di == 0 and dj == 0:
                continue
            js, is_ = slice(max(dj, 0), h + min(dj, 0)), slice(max(di, 0), w + min(di, 0))
            jd, id_ = slice(max(-dj, 0), h + min(-dj, 0)), slice(max(-di, 0), w + min(-di, 0))
            dist = np.sqrt(((image[jd, id_] - image[js, is_]) ** 2).sum(-1))
            att = (1.0 - dist / np.sqrt(3.0)) * state[js, is_, 1]
            win = att > dfn[jd, id_]
            dfn[jd, id_] = np.where(win, att, dfn[jd, id_])
            col[jd, id_] = np.where(win, state[js, is_, 0], col[jd, id_])
    state_next[:, :, 0], state_next[:, :, 1] = col, dfn
    return state_next


def np_lud(A):
    n = A.shape[0]
    for k in range(n):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def np_srad(J, niter, lam):
    rows, cols = J.shape
    iN = np.r_[0, np.arange(rows - 1)]
    iS = np.r_[np.arange(1, rows), rows - 1]
    jW = np.r_[0, np.arange(cols - 1)]
    jE = np.r_[np.arange(1, cols), cols - 1]
    for _ in range(niter):
        roi = J[:rows // 4, :cols // 4]
        mean = roi.sum() / roi.size
        q0sqr = (np.sum(roi * roi) / roi.size - mean * mean) / (mean * mean)
        dN, dS = J[iN, :] - J, J[iS, :] - J
        dW, dE = J[:, jW] - J, J[:, jE] - J
        g2 = (dN ** 2 + dS ** 2 + dW ** 2 + dE ** 2) / (J * J)
        lap = (dN + dS + dW + dE) / J
        num = 0.5 * g2 - (1.0 / 16.0) * lap * lap
        den = 1.0 + 0.25 * lap
        qsqr = num / (den * den)
        den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
        c = np.clip(1.0 / (1.0 + den), 0.0, 1.0)
        D = c * dN + c[iS, :] * dS + c * dW + c[:, jE] * dE
        J = J + 0.25 * lam * D
    return J


def np_fft(re, im):
    r = np.fft.fft(re + 1j * im)
    return r.real, r.imag


def np_spmv(data, indices, indptr, x, reps):
    n = indptr.shape[0] - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    for _ in range(reps):
        y = np.bincount(rows, weights=data * x[indices], minlength=n)
    return y


@dataclass(frozen=True)
class JitProgram:
    """One benchmark: the loop source, its NumPy twin, whether it has a parallel loop."""
    name: str
    source: Callable
    numpy: Callable
    parallel: bool


NAMES = ("lud", "srad", "pagerank", "spmv", "fft", "growcut", "julia", "pairwise")
PARALLEL = frozenset({"julia", "pairwise", "growcut", "lud", "srad", "spmv"})
_NUMPY = {"julia": np_julia, "pairwise": np_pairwise, "growcut": np_growcut, "lud": np_lud,
          "srad": np_srad, "pagerank": pagerank, "spmv": np_spmv, "fft": np_fft}
PROGRAMS: dict[str, JitProgram] = {n: JitProgram(n, globals()[n], _NUMPY[n], n in PARALLEL)
                                   for n in NAMES}
