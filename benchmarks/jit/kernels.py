"""The thesis' Python benchmarks (seed 003 ch. 10) written as a NumPy user would, with
``prange`` marking the parallel loops. The same source is compiled by liftkit's @jit and by
Numba (``prange`` rebound to ``numba.prange``)."""

from __future__ import annotations

import math

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


PARALLEL = {"julia", "pairwise", "growcut", "lud", "srad", "spmv"}
