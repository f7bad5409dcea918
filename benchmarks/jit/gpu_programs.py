"""The JIT suite's eight benchmarks for a GPU, three ways a user would write them: @jit with the
parallel loops in GPU sections (``liftkit.gpu()``), CuPy array expressions, and Numba's CUDA
target (``numba.cuda.jit`` kernels launched from the host). Plain Python functions; the harness
(gpu.py) compiles, checks and times them.

Where the GPU form differs from the CPU suite's source (liftkit.bench.jit_programs) it is said
here: julia writes into an ``out`` argument (a GPU caller passes a CuPy array and keeps it on
the device); pagerank's matrix-vector product reads M transposed (``MT``: a GPU user stores the
matrix so that neighbouring work-items read neighbouring elements); srad's region-of-interest
statistics are row sums in a kernel and a sum of those; fft's butterflies are one kernel per
stage (a work-item per butterfly) after a bit-reversal kernel."""

from __future__ import annotations

import math

import numpy as np

import liftkit
from liftkit.jit import PAR, Domain, prange


# ----------------------------------------------------------------------------- @jit, GPU sections
def julia_gpu(h, w, maxiter, out):
    with liftkit.gpu():
        for i, j in PAR(Domain(h, w), shared=[out]):
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


def pairwise_gpu(X):
    n, d = X.shape
    D = np.empty((n, n))
    with liftkit.gpu():
        for i, j in PAR(Domain(n, n), shared=[D]):
            s = 0.0
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = math.sqrt(s)
    return D


def growcut_gpu(image, state, state_next, r):
    height, width = image.shape[0], image.shape[1]
    with liftkit.gpu():
        for j, i in PAR(Domain(height, width), shared=[state_next]):
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


def lud_gpu(A):
    n = A.shape[0]
    with liftkit.gpu():
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


def srad_gpu(J, niter, lam):
    rows, cols = J.shape
    r4, c4 = rows // 4, cols // 4
    dN = np.empty((rows, cols))
    dS = np.empty((rows, cols))
    dW = np.empty((rows, cols))
    dE = np.empty((rows, cols))
    c = np.empty((rows, cols))
    rs = np.empty(r4)
    rs2 = np.empty(r4)
    with liftkit.gpu():
        for it in range(niter):
            for i in prange(r4):
                s = 0.0
                s2 = 0.0
                for j in range(c4):
                    v = J[i, j]
                    s += v
                    s2 += v * v
                rs[i] = s
                rs2[i] = s2
            mean = np.sum(rs) / (r4 * c4)
            var = np.sum(rs2) / (r4 * c4) - mean * mean
            q0sqr = var / (mean * mean)
            for i, j in PAR(Domain(rows, cols), shared=[dN, dS, dW, dE, c]):
                jc = J[i, j]
                n_ = J[max(i - 1, 0), j] - jc
                s_ = J[min(i + 1, rows - 1), j] - jc
                w_ = J[i, max(j - 1, 0)] - jc
                e_ = J[i, min(j + 1, cols - 1)] - jc
                dN[i, j] = n_
                dS[i, j] = s_
                dW[i, j] = w_
                dE[i, j] = e_
                g2 = (n_ * n_ + s_ * s_ + w_ * w_ + e_ * e_) / (jc * jc)
                l = (n_ + s_ + w_ + e_) / jc
                num = 0.5 * g2 - (1.0 / 16.0) * l * l
                den = 1.0 + 0.25 * l
                qsqr = num / (den * den)
                den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
                cc = 1.0 / (1.0 + den)
                c[i, j] = min(max(cc, 0.0), 1.0)
            for i, j in PAR(Domain(rows, cols), shared=[J]):
                cN = c[i, j]
                cS = c[min(i + 1, rows - 1), j]
                cE = c[i, min(j + 1, cols - 1)]
                D = cN * dN[i, j] + cS * dS[i, j] + cN * dW[i, j] + cE * dE[i, j]
                J[i, j] = J[i, j] + 0.25 * lam * D
    return J


def pagerank_gpu(MT, d, niter):
    n = MT.shape[0]
    r = np.empty(n)
    r2 = np.empty(n)
    with liftkit.gpu():
        for i in prange(n):
            r[i] = 1.0 / n
        for it in range(niter):
            for i in prange(n):
                s = 0.0
                for j in range(n):
                    s += MT[j, i] * r[j]
                r2[i] = (1.0 - d) / n + d * s
            for i in prange(n):
                r[i] = r2[i]
    return r


def spmv_gpu(data, indices, indptr, x, reps):
    n = indptr.shape[0] - 1
    y = np.empty(n)
    with liftkit.gpu():
        for rep in range(reps):
            for i in prange(n):
                s = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    s += data[k] * x[indices[k]]
                y[i] = s
    return y


def fft_gpu(re, im):
    n = re.shape[0]
    bits = 0
    while (1 << bits) < n:
        bits += 1
    with liftkit.gpu():
        for i in prange(n):  # bit reversal: each pair swapped by its smaller index
            j = 0
            x = i
            for b in range(bits):
                j = (j << 1) | (x & 1)
                x >>= 1
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
            for q in prange(n // 2):  # one work-item per butterfly of this stage
                k = q % half
                a = (q // half) * size + k
                b = a + half
                wr = math.cos(ang * k)
                wi = math.sin(ang * k)
                tr = re[b] * wr - im[b] * wi
                ti = re[b] * wi + im[b] * wr
                re[b] = re[a] - tr
                im[b] = im[a] - ti
                re[a] = re[a] + tr
                im[a] = im[a] + ti
            size *= 2
    return re, im


GPU = {"julia": julia_gpu, "pairwise": pairwise_gpu, "growcut": growcut_gpu, "lud": lud_gpu,
       "srad": srad_gpu, "pagerank": pagerank_gpu, "spmv": spmv_gpu, "fft": fft_gpu}


# ----------------------------------------------------------------------------- CuPy, as a user writes it
def julia_cupy(cp, h, w, maxiter, out):
    j = cp.arange(w, dtype=cp.float64)[None, :]
    i = cp.arange(h, dtype=cp.float64)[:, None]
    zr = cp.broadcast_to(-1.5 + 3.0 * j / w, (h, w)).copy()
    zi = cp.broadcast_to(-1.0 + 2.0 * i / h, (h, w)).copy()
    out[...] = 0
    for _ in range(maxiter):
        alive = zr * zr + zi * zi < 4.0
        t = zr * zr - zi * zi - 0.8
        zi = cp.where(alive, 2.0 * zr * zi + 0.156, zi)
        zr = cp.where(alive, t, zr)
        out += alive
    return out


def pairwise_cupy(cp, X):
    return cp.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def growcut_cupy(cp, image, state, state_next, r):
    h, w = image.shape[:2]
    colony, defense = state[:, :, 0].copy(), state[:, :, 1].copy()
    for dj in range(-r, r + 1):
        for di in range(-r, r + 1):
            if dj == 0 and di == 0:
                continue
            j0, j1, i0, i1 = max(0, -dj), min(h, h - dj), max(0, -di), min(w, w - di)
            a = image[j0:j1, i0:i1]
            b = image[j0 + dj:j1 + dj, i0 + di:i1 + di]
            nb = state[j0 + dj:j1 + dj, i0 + di:i1 + di]
            attack = (1.0 - cp.sqrt(((a - b) ** 2).sum(-1)) / math.sqrt(3.0)) * nb[:, :, 1]
            d, c = defense[j0:j1, i0:i1], colony[j0:j1, i0:i1]
            m = attack > d
            d[...] = cp.where(m, attack, d)
            c[...] = cp.where(m, nb[:, :, 0], c)
    state_next[:, :, 0] = colony
    state_next[:, :, 1] = defense
    return state_next


def lud_cupy(cp, A):
    n = A.shape[0]
    for k in range(n):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= cp.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def srad_cupy(cp, J, niter, lam):
    rows, cols = J.shape
    iN = cp.asarray(np.r_[0, np.arange(rows - 1)])
    iS = cp.asarray(np.r_[np.arange(1, rows), rows - 1])
    jW = cp.asarray(np.r_[0, np.arange(cols - 1)])
    jE = cp.asarray(np.r_[np.arange(1, cols), cols - 1])
    for _ in range(niter):
        roi = J[:rows // 4, :cols // 4]
        mean = roi.sum() / roi.size
        q0sqr = (cp.sum(roi * roi) / roi.size - mean * mean) / (mean * mean)
        dN, dS = J[iN, :] - J, J[iS, :] - J
        dW, dE = J[:, jW] - J, J[:, jE] - J
        g2 = (dN ** 2 + dS ** 2 + dW ** 2 + dE ** 2) / (J * J)
        lap = (dN + dS + dW + dE) / J
        num = 0.5 * g2 - (1.0 / 16.0) * lap * lap
        den = 1.0 + 0.25 * lap
        qsqr = num / (den * den)
        den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
        c = cp.clip(1.0 / (1.0 + den), 0.0, 1.0)
        D = c * dN + c[iS, :] * dS + c * dW + c[:, jE] * dE
        J = J + 0.25 * lam * D
    return J


def pagerank_cupy(cp, M, d, niter):
    n = M.shape[0]
    r = cp.ones(n) / n
    for _ in range(niter):
        r = (1.0 - d) / n + d * (M @ r)
    return r


def spmv_cupy(cp, data, indices, indptr, x, reps):
    import cupyx.scipy.sparse as sp
    n = indptr.shape[0] - 1
    A = sp.csr_matrix((data, indices, indptr), shape=(n, x.shape[0]))
    for _ in range(reps):
        y = A @ x
    return y


def fft_cupy(cp, re, im):
    r = cp.fft.fft(re + 1j * im)
    return r.real, r.imag


CUPY = {"julia": julia_cupy, "pairwise": pairwise_cupy, "growcut": growcut_cupy,
        "lud": lud_cupy, "srad": srad_cupy, "pagerank": pagerank_cupy, "spmv": spmv_cupy,
        "fft": fft_cupy}


# ----------------------------------------------------------------------------- Numba CUDA
def numba_versions(cuda):
    """The benchmarks on Numba's CUDA target (``numba.cuda`` passed in: it is optional)."""

    @cuda.jit
    def k_julia(out, h, w, maxiter):
        i, j = cuda.grid(2)
        if i < h and j < w:
            zr = -1.5 + 3.0 * j / w
            zi = -1.0 + 2.0 * i / h
            n = 0
            while n < maxiter and zr * zr + zi * zi < 4.0:
                t = zr * zr - zi * zi - 0.8
                zi = 2.0 * zr * zi + 0.156
                zr = t
                n += 1
            out[i, j] = n

    def julia(h, w, maxiter, out):
        k_julia[((h + 15) // 16, (w + 15) // 16), (16, 16)](out, h, w, maxiter)
        return out

    @cuda.jit
    def k_pairwise(X, D):
        i, j = cuda.grid(2)
        n = X.shape[0]
        if i < n and j < n:
            s = 0.0
            for k in range(X.shape[1]):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = math.sqrt(s)

    def pairwise(X):
        n = X.shape[0]
        D = cuda.device_array((n, n))
        k_pairwise[((n + 15) // 16, (n + 15) // 16), (16, 16)](X, D)
        return D

    @cuda.jit
    def k_growcut(image, state, state_next, r):
        j, i = cuda.grid(2)
        height, width = image.shape[0], image.shape[1]
        if j < height and i < width:
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

    def growcut(image, state, state_next, r):
        h, w = image.shape[0], image.shape[1]
        k_growcut[((h + 15) // 16, (w + 15) // 16), (16, 16)](image, state, state_next, r)
        return state_next

    @cuda.jit
    def k_lud_row(A, i):
        j = cuda.grid(1) + i
        if j < A.shape[0]:
            s = A[i, j]
            for k in range(i):
                s -= A[i, k] * A[k, j]
            A[i, j] = s

    @cuda.jit
    def k_lud_col(A, i):
        j = cuda.grid(1) + i + 1
        if j < A.shape[0]:
            s = A[j, i]
            for k in range(i):
                s -= A[j, k] * A[k, i]
            A[j, i] = s / A[i, i]

    def lud(A):
        n = A.shape[0]
        for i in range(n):
            k_lud_row[(n - i + 255) // 256, 256](A, i)
            if n - i - 1 > 0:
                k_lud_col[(n - i - 1 + 255) // 256, 256](A, i)
        return A

    @cuda.jit
    def k_roi(J, r4, c4, rs, rs2):
        i = cuda.grid(1)
        if i < r4:
            s = 0.0
            s2 = 0.0
            for j in range(c4):
                v = J[i, j]
                s += v
                s2 += v * v
            rs[i] = s
            rs2[i] = s2

    @cuda.jit
    def k_srad1(J, dN, dS, dW, dE, c, q0sqr):
        i, j = cuda.grid(2)
        rows, cols = J.shape
        if i < rows and j < cols:
            jc = J[i, j]
            n_ = J[max(i - 1, 0), j] - jc
            s_ = J[min(i + 1, rows - 1), j] - jc
            w_ = J[i, max(j - 1, 0)] - jc
            e_ = J[i, min(j + 1, cols - 1)] - jc
            dN[i, j] = n_
            dS[i, j] = s_
            dW[i, j] = w_
            dE[i, j] = e_
            g2 = (n_ * n_ + s_ * s_ + w_ * w_ + e_ * e_) / (jc * jc)
            l = (n_ + s_ + w_ + e_) / jc
            num = 0.5 * g2 - (1.0 / 16.0) * l * l
            den = 1.0 + 0.25 * l
            qsqr = num / (den * den)
            den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
            cc = 1.0 / (1.0 + den)
            c[i, j] = min(max(cc, 0.0), 1.0)

    @cuda.jit
    def k_srad2(J, dN, dS, dW, dE, c, lam):
        i, j = cuda.grid(2)
        rows, cols = J.shape
        if i < rows and j < cols:
            cN = c[i, j]
            cS = c[min(i + 1, rows - 1), j]
            cE = c[i, min(j + 1, cols - 1)]
            D = cN * dN[i, j] + cS * dS[i, j] + cN * dW[i, j] + cE * dE[i, j]
            J[i, j] = J[i, j] + 0.25 * lam * D

    def srad(J, niter, lam):
        rows, cols = J.shape
        r4, c4 = rows // 4, cols // 4
        dN, dS, dW, dE, c = (cuda.device_array((rows, cols)) for _ in range(5))
        rs, rs2 = cuda.device_array(r4), cuda.device_array(r4)
        grid = ((rows + 15) // 16, (cols + 15) // 16)
        for _ in range(niter):
            k_roi[(r4 + 127) // 128, 128](J, r4, c4, rs, rs2)
            mean = rs.copy_to_host().sum() / (r4 * c4)
            var = rs2.copy_to_host().sum() / (r4 * c4) - mean * mean
            q0sqr = var / (mean * mean)
            k_srad1[grid, (16, 16)](J, dN, dS, dW, dE, c, q0sqr)
            k_srad2[grid, (16, 16)](J, dN, dS, dW, dE, c, lam)
        return J

    @cuda.jit
    def k_mv(MT, r, r2, d, n):
        i = cuda.grid(1)
        if i < n:
            s = 0.0
            for j in range(n):
                s += MT[j, i] * r[j]
            r2[i] = (1.0 - d) / n + d * s

    def pagerank(MT, d, niter):
        n = MT.shape[0]
        r = cuda.to_device(np.full(n, 1.0 / n))
        r2 = cuda.device_array(n)
        for _ in range(niter):
            k_mv[(n + 127) // 128, 128](MT, r, r2, d, n)
            r, r2 = r2, r
        return r

    @cuda.jit
    def k_spmv(data, indices, indptr, x, y):
        i = cuda.grid(1)
        if i < y.shape[0]:
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * x[indices[k]]
            y[i] = s

    def spmv(data, indices, indptr, x, reps):
        n = indptr.shape[0] - 1
        y = cuda.device_array(n)
        for _ in range(reps):
            k_spmv[(n + 127) // 128, 128](data, indices, indptr, x, y)
        return y

    @cuda.jit
    def k_bitrev(re, im, bits):
        i = cuda.grid(1)
        if i < re.shape[0]:
            j = 0
            x = i
            for _ in range(bits):
                j = (j << 1) | (x & 1)
                x >>= 1
            if i < j:
                t = re[i]
                re[i] = re[j]
                re[j] = t
                t = im[i]
                im[i] = im[j]
                im[j] = t

    @cuda.jit
    def k_stage(re, im, size):
        q = cuda.grid(1)
        if q < re.shape[0] // 2:
            half = size // 2
            k = q % half
            a = (q // half) * size + k
            b = a + half
            ang = -2.0 * math.pi / size
            wr = math.cos(ang * k)
            wi = math.sin(ang * k)
            tr = re[b] * wr - im[b] * wi
            ti = re[b] * wi + im[b] * wr
            re[b] = re[a] - tr
            im[b] = im[a] - ti
            re[a] = re[a] + tr
            im[a] = im[a] + ti

    def fft(re, im):
        n = re.shape[0]
        bits = n.bit_length() - 1
        k_bitrev[(n + 255) // 256, 256](re, im, bits)
        size = 2
        while size <= n:
            k_stage[(n // 2 + 255) // 256, 256](re, im, size)
            size *= 2
        return re, im

    return {"julia": julia, "pairwise": pairwise, "growcut": growcut, "lud": lud, "srad": srad,
            "pagerank": pagerank, "spmv": spmv, "fft": fft}
