"""@jit GPU sections (issue 14) against CuPy on an NVIDIA GPU, through the task runtime (CUDA).

    PYTHONPATH=src python benchmarks/jit/gpu.py [--scale 1.0] [--repeat 10] [--json out.json]

Three benchmarks of the JIT suite (julia, pairwise, growcut) with their parallel loops in GPU
sections (2-D PAR domains: one work-item per output element, as a GPU user would write them),
each checked against the suite's plain Python function at a small size first, then timed
against CuPy written as a user would (array expressions): end to end from NumPy inputs to a
NumPy result (what the jitted call does: upload, kernels, download), and CuPy with its data
already on the device. First-call latency (NVRTC build included) is reported. Then the
runtime's own claims: a chain of 20 dependent kernels (host enqueue time against the chain's
time), a read-only input used by 10 kernels (uploads counted), a workload of 1.5x a memory
limit (evictions, correct results), and A @ B at 4096^2 (float32) on the Lift derivation
against cuBLAS (CuPy)."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import kernels as K  # noqa: E402

import liftkit  # noqa: E402
import liftkit.bench.jit_programs as JP  # noqa: E402
from liftkit.jit import PAR, Domain, jit, prange  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402


# ----------------------------------------------------------------------------- GPU versions
def julia_gpu(h, w, maxiter):
    out = np.empty((h, w), dtype=np.int64)
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


# ----------------------------------------------------------------------------- CuPy versions
def julia_cupy(cp, h, w, maxiter):
    j = cp.arange(w, dtype=cp.float64)[None, :]
    i = cp.arange(h, dtype=cp.float64)[:, None]
    zr = cp.broadcast_to(-1.5 + 3.0 * j / w, (h, w)).copy()
    zi = cp.broadcast_to(-1.0 + 2.0 * i / h, (h, w)).copy()
    out = cp.zeros((h, w), dtype=cp.int64)
    for _ in range(maxiter):
        alive = zr * zr + zi * zi < 4.0
        t = zr * zr - zi * zi - 0.8
        zi = cp.where(alive, 2.0 * zr * zi + 0.156, zi)
        zr = cp.where(alive, t, zr)
        out += alive
    return out


def pairwise_cupy(cp, X):
    return cp.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def growcut_cupy(cp, image, state, r):
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
    return cp.stack([colony, defense], -1)


# ----------------------------------------------------------------------------- helpers
# the GPU runs the CPU suite's inputs (liftkit.bench.jit_programs.inputs) at these larger scales
GPU_SCALE = {"julia": 5.0, "pairwise": 4.0, "growcut": 20 / 3}


def inputs(name: str, s: float, rng: np.random.Generator) -> tuple:
    return JP.inputs(name, s * GPU_SCALE[name], rng)


def med(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def close(name: str, got, ref) -> bool:
    got, ref = np.asarray(got), np.asarray(ref)
    if name == "growcut":  # ties may break differently by one rounding; count them
        return bool(np.allclose(got[..., 1], ref[..., 1], rtol=1e-9)
                    and np.mean(got[..., 0] != ref[..., 0]) < 1e-3)
    return bool(np.allclose(got, ref, rtol=1e-9, atol=1e-12))


def suite(cp, rt, scale: float, repeat: int, rows: list) -> None:
    rng = np.random.default_rng(0)
    gpu = {"julia": julia_gpu, "pairwise": pairwise_gpu, "growcut": growcut_gpu}
    cupy = {"julia": lambda *a: julia_cupy(cp, *a), "pairwise": lambda X: pairwise_cupy(cp, X),
            "growcut": lambda img, st, nxt, r: growcut_cupy(cp, img, st, r)}
    for name, fn in gpu.items():
        f = jit(fn, cache=False, gpu_runtime=rt)
        small = inputs(name, 0.02, rng)
        ref = getattr(K, name)(*[a.copy() if isinstance(a, np.ndarray) else a for a in small])
        t0 = time.perf_counter()
        got = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in small])
        first = time.perf_counter() - t0
        ok = close(name, got, ref)
        dev_small = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in small]
        ok_cp = close(name, cp.asnumpy(cupy[name](*dev_small)), ref)
        args = inputs(name, scale, rng)
        f(*args)  # warm (specialisation for these shapes)
        t_jit = med(lambda: f(*args), repeat)
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        cupy[name](*dev)
        cp.cuda.Device().synchronize()

        def e2e() -> None:
            d = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
            cp.asnumpy(cupy[name](*d))

        def resident() -> None:
            cupy[name](*dev)
            cp.cuda.Device().synchronize()
        t_e2e, t_res = med(e2e, repeat), med(resident, repeat)
        rows.append({"bench": name, "ok": ok and ok_cp, "first_call_s": first, "jit_ms": t_jit * 1e3,
                     "cupy_e2e_ms": t_e2e * 1e3, "cupy_resident_ms": t_res * 1e3,
                     "vs_cupy_e2e": t_e2e / t_jit, "vs_cupy_resident": t_res / t_jit})


CHAIN = Kernel("chain", {"cuda": """extern "C" __global__ void chain(double* x, long xo,
    const double* a, long ao, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) x[xo + i] = x[xo + i] * 0.5 + a[ao + i]; }""", "opencl": """
kernel void chain(global double* x, long xo, const global double* a, long ao, long n) {
    long i = get_global_id(0); if (i < n) x[xo + i] = x[xo + i] * 0.5 + a[ao + i]; }"""})


def runtime_claims(rt: Runtime, out: dict) -> None:
    for n in ((1 << 25, 1 << 27) if not rt.device.is_cpu else (1 << 20,)):
        x, a = np.ones(n), np.random.default_rng(1).random(n)
        vx, va = rt.submit(x), rt.submit(a)
        rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
        rt.wait_all()
        rt.reset_stats()
        t0 = time.perf_counter()
        for _ in range(20):
            rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
        t_enq = time.perf_counter() - t0
        rt.wait_all(sync=False)
        t_all = time.perf_counter() - t0
        st = rt.stats()
        res = rt.read(vx)
        ref = np.ones(n)
        for _ in range(21):
            ref = ref * 0.5 + a
        out[f"chain20_n{n}"] = {"enqueue_ms": t_enq * 1e3, "total_ms": t_all * 1e3,
                                "enqueue_share": t_enq / t_all, "per_launch_us": t_enq / 20 * 1e6,
                                "uploads": st["uploads"], "ok": bool(np.allclose(res, ref))}
        rt.release(vx)
        rt.release(va)

    f = jit(_ten_kernels, cache=False, gpu_runtime=rt)
    a2, o2 = np.random.default_rng(2).random(1 << 20), np.zeros(1 << 20)
    f(a2, o2.copy())
    rt.reset_stats()
    f(a2, o2)
    st = rt.stats()
    out["read_only_input_10_kernels"] = {"kernels": st["kernels"], "uploads": st["uploads"],
                                         "ok": bool(np.allclose(o2, a2 * 45))}

    lim = 1 << 30  # 1 GiB limit, 1.5 GiB of arrays
    m = 1 << 25  # 256 MiB of float64 each
    if rt.device.is_cpu:  # the smoke test: the same ratio, smaller
        lim, m = lim >> 6, m >> 6
    small = Runtime(rt.dialect, "cpu" if rt.device.is_cpu else None, memory_limit=lim)
    arrays = [np.full(m, float(k + 1)) for k in range(6)]
    vs = [small.submit(v) for v in arrays]
    for v in vs:
        small.launch(CHAIN, (m,), [v, v, np.int64(m)], reads=[v], writes=[v])
    ok = all(np.allclose(small.read(v), 1.5 * (k + 1)) for k, v in enumerate(vs))
    st = small.stats()
    out["memory_pressure_1.5x"] = {"limit_bytes": lim, "ok": bool(ok),
                                   "evictions": st["evictions"], "writebacks": st["writebacks"],
                                   "cpu_tasks": st["cpu_tasks"], "peak_bytes": st["peak_bytes"]}
    small.close()


def _ten_kernels(a, out):
    n = a.shape[0]
    with liftkit.gpu():
        for k in range(10):
            for i in prange(n):
                out[i] = out[i] + a[i] * k
    return out


def matmul(cp, rt: Runtime, out: dict, repeat: int) -> None:
    from liftkit.jit.gpu_library import LiftLibrary
    n = 4096 if not rt.device.is_cpu else 256
    g = np.random.default_rng(3)
    A, B = g.random((n, n), dtype=np.float32), g.random((n, n), dtype=np.float32)
    C = np.empty((n, n), np.float32)
    lib = LiftLibrary()
    va, vb, vc = rt.submit(A), rt.submit(B), rt.submit(C)
    sizes = {"M": n, "K": n, "N": n}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.run(rt, "mm", [va, vb], vc, sizes, "float32")
    origin = lib.pipeline(rt, "mm", "float32", sizes).origin
    ok = np.linalg.norm(rt.read(vc).astype(np.float64) - A.astype(np.float64) @ B) / \
        np.linalg.norm(A.astype(np.float64) @ B) < 1e-4

    def lift() -> None:
        lib.run(rt, "mm", [va, vb], vc, sizes, "float32")
        rt.wait_all(sync=False)
    t_lift = med(lift, repeat)
    da, db = cp.asarray(A), cp.asarray(B)

    def cublas() -> None:
        da @ db
        cp.cuda.Device().synchronize()
    cublas()
    t_cu = med(cublas, repeat)
    mmf = jit(_mm, cache=False, gpu_runtime=rt)
    mmf(A, B)
    t_jit = med(lambda: mmf(A, B), max(3, repeat // 3))
    out[f"matmul_{n}_f32"] = {"ok": bool(ok), "derivation": origin,
                              "notices": [str(x.message) for x in w][:1],
                              "lift_resident_ms": t_lift * 1e3, "cublas_ms": t_cu * 1e3,
                              "vs_cublas": t_cu / t_lift, "tflops": 2 * n ** 3 / t_lift / 1e12,
                              "jit_call_ms (with transfers)": t_jit * 1e3}
    for v in (va, vb, vc):
        rt.release(v, writeback=False)


def _mm(A, B):
    with liftkit.gpu():
        C = A @ B
    return C


class _NumpyAsCupy:
    """NumPy under CuPy's names, for the smoke test without a GPU."""

    class cuda:  # noqa: N801
        class Device:
            def synchronize(self) -> None:
                return None

    def __getattr__(self, name: str):  # noqa: ANN204
        if name in ("asarray", "asnumpy"):
            return np.asarray
        return getattr(np, name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--backend", default="cuda", help="cuda; opencl for a smoke test (NumPy "
                    "stands in for CuPy, CPU OpenCL for the GPU)")
    args = ap.parse_args()
    if args.backend == "cuda":
        import cupy as cp
        rt = Runtime("cuda")
    else:
        cp = _NumpyAsCupy()
        rt = Runtime("opencl", "cpu")
    print(f"device: {rt.device.label}")
    rows: list = []
    extra: dict = {}
    for part in (lambda: suite(cp, rt, args.scale, args.repeat, rows),
                 lambda: runtime_claims(rt, extra), lambda: matmul(cp, rt, extra, args.repeat)):
        try:
            part()
        except Exception as err:  # noqa: BLE001 - report and go on with the next part
            import traceback
            traceback.print_exc()
            extra.setdefault("errors", []).append(f"{type(err).__name__}: {err}")
    print("| bench | ok | 1st call s | jit ms | CuPy e2e ms | CuPy resident ms | vs e2e | vs resident |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['bench']} | {r['ok']} | {r['first_call_s']:.3f} | {r['jit_ms']:.2f} | "
              f"{r['cupy_e2e_ms']:.2f} | {r['cupy_resident_ms']:.2f} | {r['vs_cupy_e2e']:.2f} | "
              f"{r['vs_cupy_resident']:.2f} |")
    if rows:
        g = math.exp(statistics.mean(math.log(r["vs_cupy_e2e"]) for r in rows))
        gr = math.exp(statistics.mean(math.log(r["vs_cupy_resident"]) for r in rows))
        print(f"geomean vs CuPy end to end {g:.2f}x, vs CuPy resident {gr:.2f}x")
    print(json.dumps(extra, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": rt.device.label, "rows": rows, **extra}, fh, indent=1)


if __name__ == "__main__":
    main()
