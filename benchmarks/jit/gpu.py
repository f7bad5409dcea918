"""@jit GPU sections (issue 14) against CuPy and Numba's CUDA target on an NVIDIA GPU, through
the task runtime (CUDA).

    PYTHONPATH=src python benchmarks/jit/gpu.py [--scale 1.0] [--repeat 10] [--json out.json]
        [--only julia ...] [--skip suite runtime overhead matmul pressure] [--backend opencl]

The eight benchmarks of the JIT suite with their parallel loops in GPU sections
(gpu_programs.py), each checked against the suite's plain Python function at a small size
(every variant), then timed: @jit end to end from NumPy (upload, kernels, download) and with
CuPy arrays as arguments (resident: nothing copied, CuPy arrays returned); CuPy written as a
user would (array expressions, cuBLAS, cuFFT, cupyx.scipy.sparse) end to end and resident; and
Numba's ``cuda.jit`` kernels with the same loops where numba-cuda imports. First-call latency
(NVRTC/NVVM build included) is reported. Then the runtime's own claims: a chain of 20 dependent
kernels (host enqueue time against the chain's time) with where a launch's host time goes, a
read-only input used by 10 kernels (uploads counted), a workload of 1.5x a memory limit, a
jitted call's host overhead (with a profile), A @ B at 4096^2 (float32) on the Lift derivation
against cuBLAS (resident, and as a jitted call on CuPy arrays), and 1.5x the device's free
memory with the driver refusing allocations (pressure.py, its own process, runs arrays of 1.5x
the card's whole memory). ``--backend opencl`` is a smoke test on the CPU device with NumPy
standing in for CuPy."""

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
import gpu_programs as GP  # noqa: E402
import kernels as K  # noqa: E402
from kernels import CHAIN  # noqa: E402

import liftkit  # noqa: E402
import liftkit.bench.jit_programs as JP  # noqa: E402
from liftkit.jit import jit, prange  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402


# ----------------------------------------------------------------------------- the suite
# the GPU runs the CPU suite's inputs (liftkit.bench.jit_programs.inputs) at these larger scales
GPU_SCALE = {"julia": 5.0, "pairwise": 4.0, "growcut": 20 / 3, "lud": 2.0, "srad": 4.0,
             "pagerank": 2.0, "spmv": 10.0, "fft": 16.0}
MUTATES = {"lud": (0,), "srad": (0,), "fft": (0, 1), "growcut": (2,), "julia": (3,)}


def inputs(name: str, s: float, rng: np.random.Generator) -> tuple[list, list]:
    """(arguments of the @jit GPU and Numba versions, arguments of the CuPy version)."""
    args = list(JP.inputs(name, s * GPU_SCALE[name], rng))
    if name == "julia":
        args.append(np.zeros((args[0], args[1]), np.int64))
    theirs = list(args)
    if name == "pagerank":  # the GPU versions read M transposed (coalesced); CuPy takes M
        args[0] = np.ascontiguousarray(args[0].T)
    return args, theirs


def med(fn, repeat: int, setup=None) -> float:
    """Median seconds of ``fn(setup())`` (setup untimed: fresh copies of mutated inputs)."""
    ts = []
    for _ in range(repeat):
        x = setup() if setup is not None else None
        t0 = time.perf_counter()
        fn(x)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _np(x):
    for attr in ("get", "copy_to_host"):  # CuPy, Numba device arrays
        if hasattr(x, attr) and not isinstance(x, np.ndarray):
            return getattr(x, attr)()
    return np.asarray(x)


def close(name: str, got, ref) -> bool:
    got = tuple(_np(g) for g in (got if isinstance(got, tuple) else (got,)))
    ref = tuple(np.asarray(r) for r in (ref if isinstance(ref, tuple) else (ref,)))
    if name == "growcut":  # ties may break differently by one rounding; count them
        return bool(np.allclose(got[0][..., 1], ref[0][..., 1], rtol=1e-9)
                    and np.mean(got[0][..., 0] != ref[0][..., 0]) < 1e-3)
    rtol = 1e-6 if name in ("fft", "lud") else 1e-9
    return all(g.shape == r.shape and np.allclose(g, r, rtol=rtol, atol=1e-9 * max(1.0, float(
        np.abs(r).max()))) for g, r in zip(got, ref))


def _copies(args: list, which: tuple, copy) -> list:
    return [copy(a) if k in which else a for k, a in enumerate(args)]


def suite(cp, nb, rt, scale: float, repeat: int, rows: list, only=None) -> None:
    """Each benchmark: checked at a small size (every variant against the CPU suite's plain
    Python function), then timed: @jit from NumPy (end to end) and from CuPy arrays (resident),
    CuPy end to end and resident, Numba CUDA resident."""
    rng = np.random.default_rng(0)
    sync = cp.cuda.Device().synchronize
    for name in GP.GPU:
        if only and name not in only:
            continue
        row: dict = {"bench": name}
        rows.append(row)
        try:
            _one(cp, nb, rt, name, scale, repeat, rng, sync, row)
        except Exception as err:  # noqa: BLE001 - report it in the table, go on
            import traceback
            traceback.print_exc()
            row["error"] = f"{type(err).__name__}: {err}"[:300]
        g = row.get  # each row as it is measured: a run cut short keeps the rows it finished
        print(f"[{name}: ok {g('ok')}, jit resident {_f(g('jit_resident_ms'))} ms, Numba "
              f"{_f(g('numba_resident_ms'))} ms ({_f(g('vs_numba'))}x), CuPy resident "
              f"{_f(g('cupy_resident_ms'))} ms ({_f(g('vs_cupy_resident'))}x)]", flush=True)


def _one(cp, nb, rt, name, scale, repeat, rng, sync, row) -> None:
    f = jit(GP.GPU[name], cache=False, gpu_runtime=rt)
    mut = MUTATES.get(name, ())
    small, small_cp = inputs(name, 0.02, rng)
    plain = small_cp[:3] if name == "julia" else small_cp  # the CPU suite's arguments
    ref = getattr(K, name)(*[a.copy() if isinstance(a, np.ndarray) else a for a in plain])
    t0 = time.perf_counter()
    got = f(*_copies(small, mut, np.copy))
    row["first_call_s"] = time.perf_counter() - t0
    oks = {"jit": close(name, got, ref)}
    dev = lambda a: cp.asarray(a) if isinstance(a, np.ndarray) else a  # noqa: E731
    oks["jit_cupy"] = close(name, f(*[dev(a) for a in small]), ref)
    cufn = GP.CUPY[name]
    oks["cupy"] = close(name, cufn(cp, *[dev(a) for a in small_cp]), ref)
    if nb is not None:
        try:
            t0 = time.perf_counter()
            oks["numba"] = close(name, nb[name](*[dev(a) for a in small]), ref)
            row["numba_first_call_s"] = time.perf_counter() - t0
        except Exception as err:  # noqa: BLE001 - Numba's failure is its row's note
            row["numba_error"] = f"{type(err).__name__}: {err}"[:200]
            nb = None
    row["ok"] = all(oks.values())
    row["checks"] = oks
    args, args_cp = inputs(name, scale, rng)
    f(*_copies(args, mut, np.copy))  # warm (specialisation for these shapes)
    row["jit_e2e_ms"] = 1e3 * med(lambda a: f(*a), repeat, lambda: _copies(args, mut, np.copy))
    d_args = [dev(a) for a in args]
    d_cp = [dev(a) for a in args_cp]

    def jit_res(a):
        f(*a)
        sync()
    jit_res(_copies(d_args, mut, cp.copy))
    row["jit_resident_ms"] = 1e3 * med(jit_res, repeat, lambda: _copies(d_args, mut, cp.copy))

    def cupy_e2e(a):
        out = cufn(cp, *[dev(x) for x in a])
        for o in (out if isinstance(out, tuple) else (out,)):
            cp.asnumpy(o)
    row["cupy_e2e_ms"] = 1e3 * med(cupy_e2e, repeat, lambda: _copies(args_cp, mut, np.copy))

    def cupy_res(a):
        cufn(cp, *a)
        sync()
    cupy_res(_copies(d_cp, mut, cp.copy))
    row["cupy_resident_ms"] = 1e3 * med(cupy_res, repeat, lambda: _copies(d_cp, mut, cp.copy))
    if nb is not None:
        from numba import cuda
        n_args = [cuda.as_cuda_array(a) if isinstance(a, cp.ndarray) else a for a in d_args]

        def numba_res(a):
            nb[name](*a)
            cuda.synchronize()
        numba_res(_copies(n_args, mut, lambda a: cuda.as_cuda_array(cp.asarray(a).copy())))
        row["numba_resident_ms"] = 1e3 * med(
            numba_res, repeat,
            lambda: _copies(n_args, mut, lambda a: cuda.as_cuda_array(cp.asarray(a).copy())))
    row["vs_cupy_e2e"] = row["cupy_e2e_ms"] / row["jit_e2e_ms"]
    row["vs_cupy_resident"] = row["cupy_resident_ms"] / row["jit_resident_ms"]
    if "numba_resident_ms" in row:
        row["vs_numba"] = row["numba_resident_ms"] / row["jit_resident_ms"]




def runtime_claims(rt: Runtime, out: dict, chain: tuple = (24, 25, 27)) -> None:
    for n in (tuple(1 << e for e in chain) if not rt.device.is_cpu else (1 << 20,)):
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

    # where a launch's host time goes: the device adapter alone, the runtime around it
    n = 256
    x, a = np.ones(n), np.ones(n)
    vx, va = rt.submit(x), rt.submit(a)
    rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
    rt.wait_all()
    kern = rt.device.build(CHAIN.name, CHAIN.source(rt.dialect))
    kargs = rt._kernel_args([vx, va, np.int64(n)])
    t0 = time.perf_counter()
    for _ in range(200):
        rt.device.launch(kern, (n,), None, kargs, 0, ())
    t_dev = (time.perf_counter() - t0) / 200
    rt.wait_all(sync=False)
    t0 = time.perf_counter()
    for _ in range(200):
        rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
    t_rt = (time.perf_counter() - t0) / 200
    rt.wait_all()
    rt.release(vx)
    rt.release(va)
    out["launch_host_us"] = {"device_adapter": t_dev * 1e6, "runtime_launch": t_rt * 1e6}

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


def device_pressure(cp, out: dict) -> None:
    """The device's own memory runs out: CuPy holds all but 4 GiB, the runtime gets 6 arrays of
    1 GiB (1.5x what is free) and no limit of its own, so the driver refuses allocations."""
    free, _ = cp.cuda.runtime.memGetInfo()
    keep = 4 << 30
    ballast = cp.empty(max(free - keep, 0), dtype=cp.uint8)
    rt = Runtime("cuda")
    try:
        m = (keep * 3 // 2) // 6 // 8
        arrays = [np.full(m, float(k + 1)) for k in range(6)]
        t0 = time.perf_counter()
        vs = [rt.submit(v) for v in arrays]
        for v in vs:
            rt.launch(CHAIN, (m,), [v, v, np.int64(m)], reads=[v], writes=[v])
        ok = all(np.allclose(rt.read(v)[::997], 1.5 * (k + 1)) for k, v in enumerate(vs))
        st = rt.stats()
        out["memory_pressure_device"] = {
            "free_bytes": keep, "workload_bytes": 6 * m * 8, "ok": bool(ok),
            "seconds": time.perf_counter() - t0, "evictions": st["evictions"],
            "writebacks": st["writebacks"], "cpu_tasks": st["cpu_tasks"],
            "peak_bytes": st["peak_bytes"]}
    finally:
        rt.close()
        del ballast
        cp.get_default_memory_pool().free_all_blocks()


def _tiny(x, y):
    with liftkit.gpu():
        for i in prange(x.shape[0]):
            y[i] = x[i] * 2.0
    return y


def call_overhead(cp, rt: Runtime, out: dict, repeat: int) -> None:
    """Host time of a jitted call with one tiny kernel (256 elements), CuPy arrays in and out,
    against the same kernel as a CuPy element-wise expression."""
    f = jit(_tiny, cache=False, gpu_runtime=rt)
    x, y = cp.ones(256), cp.zeros(256)
    sync = cp.cuda.Device().synchronize

    def one(_):
        f(x, y)
        sync()

    def cupy(_):
        cp.multiply(x, 2.0, out=y)
        sync()
    one(None)
    cupy(None)
    out["call_overhead_us"] = {"jit_tiny_section": 1e6 * med(one, 50 * repeat),
                               "cupy_tiny_expression": 1e6 * med(cupy, 50 * repeat)}
    out["call_overhead_profile"] = _profile(lambda: [one(None) for _ in range(200)])
    n = 1 << 25
    vx, va = rt.submit(np.ones(n)), rt.submit(np.ones(n))
    rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
    rt.wait_all(sync=False)
    out["launch_profile"] = _profile(lambda: [rt.launch(
        CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx]) for _ in range(20)])
    rt.wait_all(sync=False)
    rt.release(vx, writeback=False)
    rt.release(va, writeback=False)


def _profile(fn) -> list:
    """The 15 functions with the most own time while ``fn`` runs (where host time goes)."""
    import cProfile
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    st = pstats.Stats(pr)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:15]
    return [f"{tt * 1e3:.2f} ms own, {ct * 1e3:.2f} ms cum, {nc} calls: "
            f"{os.path.basename(k[0])}:{k[1]}({k[2]})" for k, (_, nc, tt, ct, _) in rows]


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

    def lift(_) -> None:
        lib.run(rt, "mm", [va, vb], vc, sizes, "float32")
        rt.wait_all(sync=False)
    t_lift = med(lift, repeat)
    da, db = cp.asarray(A), cp.asarray(B)

    def cublas(_) -> None:
        da @ db
        cp.cuda.Device().synchronize()
    cublas(None)
    t_cu = med(cublas, repeat)
    mmf = jit(_mm, cache=False, gpu_runtime=rt)
    mmf(A, B)
    t_jit = med(lambda _: mmf(A, B), max(3, repeat // 3))

    def jit_dev(_) -> None:
        mmf(da, db)
        cp.cuda.Device().synchronize()
    ok_dev = np.allclose(cp.asnumpy(mmf(da, db)), cp.asnumpy(da @ db), rtol=1e-3, atol=1e-2)
    t_dev = med(jit_dev, repeat)

    def back_to_back(fn):  # ten calls, one wait: what a loop of products sees
        def ten(_) -> None:
            for _ in range(10):
                fn()
            cp.cuda.Device().synchronize()
        ten(None)
        return med(ten, max(3, repeat // 2)) / 10
    t_cu10 = back_to_back(lambda: da @ db)
    t_dev10 = back_to_back(lambda: mmf(da, db))
    out[f"matmul_{n}_f32"] = {"ok": bool(ok and ok_dev), "derivation": origin,
                              "notices": [str(x.message) for x in w][:1],
                              "lift_resident_ms": t_lift * 1e3, "cublas_ms": t_cu * 1e3,
                              "vs_cublas": t_cu / t_lift, "tflops": 2 * n ** 3 / t_lift / 1e12,
                              "jit_cupy_args_ms": t_dev * 1e3, "jit_vs_cublas": t_cu / t_dev,
                              "back_to_back_cublas_ms": t_cu10 * 1e3,
                              "back_to_back_jit_cupy_args_ms": t_dev10 * 1e3,
                              "back_to_back_jit_vs_cublas": t_cu10 / t_dev10,
                              "jit_call_ms (NumPy, with transfers)": t_jit * 1e3}
    if rt.dialect == "cuda":  # the CUDA SGEMM derivations beside the one chosen, same run
        out[f"matmul_{n}_f32"]["variants"] = _mm_variants(cp, rt, lib, va, vb, vc, sizes,
                                                          A, B, t_cu, repeat)
    for v in (va, vb, vc):
        rt.release(v, writeback=False)


MM_VARIANTS = [dict(tm=64, tn=128, tk=32, stages=2), dict(tm=128, tn=64, tk=32, stages=2),
               dict(tm=128, tn=128, tk=16, stages=3), dict(tm=128, tn=128, tk=32, stages=2)]


def _mm_variants(cp, rt, lib, va, vb, vc, sizes, A, B, t_cu, repeat) -> dict:
    """liftkit.blas's cp.async SGEMM (tiles-async, 8x8 register blocks) at a few tile shapes,
    each checked, then timed as the runtime runs it (the last one takes 64 KB of dynamic
    shared memory)."""
    from liftkit.blas import codelets as cd
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions
    from liftkit.jit.gpu_library import Pipeline
    kind = cd.Kind("mm", "float32", "NN")
    ref = A.astype(np.float64) @ B
    got = {}
    for params in MM_VARIANTS:
        v = cd.Variant.of("tiles-async", rm=8, rn=8, **params)
        try:
            c = compile_program(cd.derive(kind, v).final, CompileOptions(dialect="cuda"))
            p = Pipeline(c, [Kernel(k.name, {"cuda": k.source}, dynamic_shared=k.dynamic_shared)
                             for k in c.kernels], str(v))
            lib.run(rt, "mm", [va, vb], vc, sizes, "float32", pipeline=p)
            ok = np.linalg.norm(rt.read(vc) - ref) / np.linalg.norm(ref) < 1e-4

            def one(_) -> None:
                lib.run(rt, "mm", [va, vb], vc, sizes, "float32", pipeline=p)
                rt.wait_all(sync=False)
            t = med(one, repeat)
            got[str(v)] = {"ok": bool(ok), "ms": t * 1e3, "vs_cublas": t_cu / t,
                           "dynamic_shared": c.kernels[0].dynamic_shared}
        except Exception as err:  # noqa: BLE001 - one variant's failure is its row
            got[str(v)] = {"error": f"{type(err).__name__}: {err}"[:200]}
    return got


def _mm(A, B):
    with liftkit.gpu():
        C = A @ B
    return C


class _NumpyAsCupy:
    """NumPy under CuPy's names, for the smoke test without a GPU."""
    ndarray = np.ndarray

    class cuda:  # noqa: N801
        class Device:
            def synchronize(self) -> None:
                return None

    def __getattr__(self, name: str):  # noqa: ANN204
        if name == "asarray":  # a copy, as an upload makes
            return np.array
        if name == "asnumpy":
            return np.asarray
        if name == "copy":
            return np.copy
        return getattr(np, name)


def numba_cuda() -> tuple:
    """Numba's CUDA versions, or None and why not."""
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 registers np.row_stack, gone in NumPy 2.4
        np.row_stack = np.vstack
    try:
        from numba import cuda
        if not cuda.is_available():
            return None, "numba.cuda sees no GPU"
        return GP.numba_versions(cuda), f"numba {__import__('numba').__version__}"
    except Exception as err:  # noqa: BLE001 - not installed, or no NVVM/driver for it
        return None, f"{type(err).__name__}: {err}"[:300]


def _f(x, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def _geo(xs: list) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", nargs="*", help="benchmarks of the suite to run (default: all)")
    ap.add_argument("--skip", nargs="*", default=[], help="parts to skip: suite runtime "
                    "overhead matmul pressure")
    ap.add_argument("--chain", nargs="*", type=int, default=[24, 25, 27],
                    help="log2 of the chain's array sizes (runtime part)")
    ap.add_argument("--backend", default="cuda", help="cuda; opencl for a smoke test (NumPy "
                    "stands in for CuPy, CPU OpenCL for the GPU)")
    args = ap.parse_args()
    if args.backend == "cuda":
        import cupy as cp
        rt = Runtime("cuda")
        nb, why = numba_cuda()
    else:
        cp = _NumpyAsCupy()
        rt = Runtime("opencl", "cpu")
        nb, why = None, "smoke test"
    print(f"device: {rt.device.label}; Numba CUDA: {why}")
    rows: list = []
    extra: dict = {"numba": why}
    parts = {"suite": lambda: suite(cp, nb, rt, args.scale, args.repeat, rows, args.only),
             "runtime": lambda: runtime_claims(rt, extra, tuple(args.chain)),
             "overhead": lambda: call_overhead(cp, rt, extra, args.repeat),
             "matmul": lambda: matmul(cp, rt, extra, args.repeat),
             "pressure": lambda: device_pressure(cp, extra)}
    for name, part in parts.items():
        if name in args.skip or (args.backend != "cuda" and name in ("overhead", "pressure")):
            continue
        t0 = time.perf_counter()
        try:
            part()
        except Exception as err:  # noqa: BLE001 - report and go on with the next part
            import traceback
            traceback.print_exc()
            extra.setdefault("errors", []).append(f"{name}: {type(err).__name__}: {err}")
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]", flush=True)
    print(json.dumps(extra, indent=1))
    print("| bench | ok | jit 1st call s | Numba 1st s | jit e2e ms | CuPy e2e ms | vs e2e | "
          "jit resident ms | CuPy resident ms | vs resident | Numba ms | vs Numba |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r and "jit_e2e_ms" not in r:
            print(f"| {r['bench']} | error: {r['error'][:120]} |")
            continue
        g = r.get
        print(f"| {r['bench']} | {g('ok')} | {_f(g('first_call_s'), '.3f')} | "
              f"{_f(g('numba_first_call_s'), '.3f')} | {_f(g('jit_e2e_ms'))} | "
              f"{_f(g('cupy_e2e_ms'))} | {_f(g('vs_cupy_e2e'))} | {_f(g('jit_resident_ms'))} | "
              f"{_f(g('cupy_resident_ms'))} | {_f(g('vs_cupy_resident'))} | "
              f"{_f(g('numba_resident_ms'))} | {_f(g('vs_numba'))} |")
    summary = {k: _geo([r.get(k) for r in rows]) for k in
               ("vs_cupy_e2e", "vs_cupy_resident", "vs_numba")}
    print("geomean: " + ", ".join(f"{k} {_f(v)}x" for k, v in summary.items()))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": rt.device.label, "rows": rows, "geomean": summary, **extra},
                      fh, indent=1, default=str)


if __name__ == "__main__":
    main()
