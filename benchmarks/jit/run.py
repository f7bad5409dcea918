"""Benchmark liftkit's @jit on the thesis' Python benchmarks against CPython+NumPy and Numba.

    PYTHONPATH=src python benchmarks/jit/run.py [--scale 1.0] [--repeat 5]

Each benchmark is first checked at a small size against the plain Python/NumPy function, then
timed (best of --repeat, after a warm-up call) at the timing size. "compile" is the first
call (compilation included, disk cache off), as the thesis reports it. Numba is optional
(pip install liftkit[bench]); its columns read '-' without it."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import kernels as K  # noqa: E402

from liftkit.jit import jit  # noqa: E402

try:
    import numba
except ImportError:  # pragma: no cover - optional
    numba = None


def inputs(name: str, s: float, rng: np.random.Generator) -> tuple:
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


# What a NumPy user would write without a compiler (the CPython+NumPy column).
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


NUMPY = {"julia": np_julia, "pairwise": np_pairwise, "growcut": np_growcut, "lud": np_lud,
         "srad": np_srad, "pagerank": K.pagerank, "spmv": np_spmv, "fft": np_fft}
NAMES = ["lud", "srad", "pagerank", "spmv", "fft", "growcut", "julia", "pairwise"]


def copy_args(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def best(f, args: tuple, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        a = copy_args(args)
        t0 = time.perf_counter()
        f(*a)
        ts.append(time.perf_counter() - t0)
    return min(ts)


def close(a, b) -> bool:
    if isinstance(a, tuple):
        return all(close(x, y) for x, y in zip(a, b))
    return np.allclose(a, b, rtol=1e-8, atol=1e-8)


def numba_version(f, parallel: bool):
    g = types.FunctionType(f.__code__, {**f.__globals__, "prange": numba.prange}, f.__name__)
    return numba.njit(parallel=parallel)(g) if parallel else numba.njit(g)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--ablation", action="store_true",
                    help="also time without region specialisation and without bounds-check "
                         "elimination (serial)")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name in a.only or NAMES:
        f = getattr(K, name)
        small = inputs(name, 0.05, rng)
        ser = jit(f, cache=False, parallel=False)
        par = jit(f, cache=False, parallel=True)
        want = f(*copy_args(small))
        for g in (ser, par, NUMPY[name]):
            if not close(g(*copy_args(small)), want):
                raise SystemExit(f"{name}: result differs from plain Python/NumPy")
        args = inputs(name, a.scale, rng)
        t0 = time.perf_counter()
        fresh = jit(f, cache=False, parallel=False)
        fresh(*copy_args(args))
        first = time.perf_counter() - t0
        r = {"name": name, "numpy": best(NUMPY[name], args, max(1, a.repeat // 2)),
             "ser": best(ser, args, a.repeat), "par": best(par, args, a.repeat),
             "first": first}
        rep = list(fresh.specs.values())[-1].info["passes"]
        r["checks"] = (rep.checks_removed, rep.checks_total)
        if a.ablation:
            for key, sw in (("nospec", {"specialise": False}), ("nobce", {"bounds": False})):
                g = jit(f, cache=False, parallel=False, passes=sw)
                g(*copy_args(args))
                r[key] = best(g, args, a.repeat)
        if numba is not None:
            try:
                numba_columns(name, f, small, want, args, a.repeat, r)
            except ImportError as e:  # Numba's np.dot/@ needs SciPy for BLAS
                print(f"{name}: Numba cannot run it here ({e})", file=sys.stderr)
        rows.append(r)
        print(f"{name:9s} done", file=sys.stderr, flush=True)
    report(rows)
    if a.ablation:
        print(f"\n{'bench':9s} {'spec x':>7s} {'bce x':>7s} {'checks removed':>15s}")
        sx, bx = [], []
        for r in rows:
            sx.append(r["nospec"] / r["ser"])
            bx.append(r["nobce"] / r["ser"])
            print(f"{r['name']:9s} {sx[-1]:7.2f} {bx[-1]:7.2f} {r['checks'][0]:>7d} of {r['checks'][1]:<5d}")
        print(f"geomean: region specialisation {math.exp(np.mean(np.log(sx))):.2f}x, "
              f"bounds-check elimination {math.exp(np.mean(np.log(bx))):.2f}x (serial, >1: faster with)")


def numba_columns(name, f, small, want, args, repeat, r) -> None:
    if True:
        if True:
            nb = numba_version(f, False)
            t0 = time.perf_counter()
            got = nb(*copy_args(small))
            r["nb_first"] = time.perf_counter() - t0
            if not close(got, want):
                raise SystemExit(f"{name}: Numba result differs")
            nb(*copy_args(args))
            r["nb"] = best(nb, args, repeat)
            if name in K.PARALLEL:
                nbp = numba_version(f, True)
                nbp(*copy_args(args))
                r["nbp"] = best(nbp, args, repeat)


def report(rows: list) -> None:
    head = (f"{'bench':9s} {'numpy ms':>9s} {'jit ms':>8s} {'jit par':>8s} {'par x':>6s} "
            f"{'numba':>8s} {'nb par':>8s} {'vs njit':>7s} {'vs nbpar':>8s} {'1st call':>9s} {'nb 1st':>7s}")
    print(head)
    ratios, pratios = [], []
    for r in rows:
        ms = {k: r[k] * 1e3 for k in ("numpy", "ser", "par", "first")}
        vs = r["nb"] / r["ser"] if "nb" in r else float("nan")
        vp = r["nbp"] / r["par"] if "nbp" in r else float("nan")
        if "nb" in r:
            ratios.append(vs)
        if "nbp" in r:
            pratios.append(vp)
        print(f"{r['name']:9s} {ms['numpy']:9.2f} {ms['ser']:8.2f} {ms['par']:8.2f} "
              f"{r['ser'] / r['par']:6.2f} {r.get('nb', float('nan')) * 1e3:8.2f} "
              f"{r.get('nbp', float('nan')) * 1e3:8.2f} {vs:7.2f} {vp:8.2f} "
              f"{r['first']:9.3f} {r.get('nb_first', float('nan')):7.3f}")
    if ratios:
        print(f"geomean vs Numba @njit: {math.exp(np.mean(np.log(ratios))):.2f}x "
              f"(>1: @jit faster); vs parallel=True: "
              f"{math.exp(np.mean(np.log(pratios))) if pratios else float('nan'):.2f}x; "
              f"threads={os.cpu_count()}")


if __name__ == "__main__":
    main()
