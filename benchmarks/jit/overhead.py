"""Host overhead of @jit GPU sections and of liftkit.runtime launches (issue 14).

    python benchmarks/jit/overhead.py [--device cpu|gpu] [--backend opencl|cuda]
                                      [--repeat 7] [--profile] [--driver] [--json out.json]

Rows (each checked before it is timed; the fastest of ``--repeat`` batches for host times,
the median for the chain):

* ``call``: a jitted function whose GPU section is one 256-element kernel (and one whose
  section launches a kernel 20 times on the same arrays, as fft's stages do), NumPy arrays in
  and out (upload, kernel, error-flag check, download), against the same work as its user
  would write it without liftkit: pyopencl (upload, one kernel, download) on OpenCL, a CuPy
  expression on CUDA. With CUDA a second row passes CuPy arrays (no transfers).
* ``launch``: one ``Runtime.launch`` of a resident 256-element kernel (host time only), and
  the device adapter's launch alone (the backend's own cost under it).
* ``chain20``: 20 dependent kernels (x = x * 0.5 + a; 2^20 doubles on the CPU device, 2^25 on
  a GPU): the host's enqueue time against the time until they finish (issue 14: <= 10%).

``--stub-cuda`` runs the CUDA rows without a GPU: the runtime's CUDA device over a stubbed
driver (``cuda_stub.py``: no GPU work, kernels do not run, results are not checked), so the
host path of a call and a launch on CUDA is measured on any machine; the resident row passes
CUDA-array-interface arrays (as CuPy's look to liftkit).
``--driver`` (CUDA on a GPU) adds what single driver calls cost on this host (a launch through
cuda.core and through cuLaunchKernel, an event record, a stream wait, a tiny download) and a
fixed piece of plain Python (``python: reference work``, also with ``--stub-cuda``), so hosts
can be compared by their interpreter speed.
``--matmul`` (CUDA on a GPU) adds A @ B at 4096^2 float32 in a jitted function, ten calls back
to back, against cuBLAS and against the Lift kernel's own GPU time (CUDA events).
``--profile`` prints the functions with the most own time in 200 calls (cProfile).
``--baseline SRC`` runs the same rows first on older sources (``git archive REV src | tar -x
-C /tmp/base`` gives SRC=/tmp/base/src) and prints before, after and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

import numpy as np

import liftkit
from liftkit.jit import jit, prange
from liftkit.runtime import Runtime

from kernels import CHAIN  # noqa: E402 - the chain kernel gpu.py times too


def _tiny(x, y):
    with liftkit.gpu():
        for i in prange(x.shape[0]):
            y[i] = x[i] * 2.0
    return y


def _stages(x, y):
    with liftkit.gpu():
        for s in range(20):  # one kernel launched 20 times on the same arrays (fft's stages)
            for i in prange(x.shape[0]):
                y[i] = x[i] * 2.0 + s
    return y


def per_call_us(fn, repeat: int, inner: int) -> tuple[float, float]:
    """The fastest of ``repeat`` batches' mean wall time of ``inner`` calls and the calling
    thread's CPU time per call (its own work, without the waits), in microseconds: the fastest
    batch is the least disturbed by other processes (the machines this runs on are shared)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(inner):
            fn()
        cpu.append((time.thread_time() - c0) / inner * 1e6)
        wall.append((time.perf_counter() - t0) / inner * 1e6)
    return min(wall), min(cpu)


def put(rows: dict, name: str, got: tuple[float, float]) -> None:
    rows[f"{name} (us)"], rows[f"{name}, host thread CPU (us)"] = got


def call_rows(rt: Runtime, repeat: int, rows: dict, stub: bool = False) -> None:
    f = jit(_tiny, cache=False, gpu_runtime=rt)
    x, y = np.arange(256.0), np.zeros(256)
    f(x, y)
    assert stub or np.array_equal(y, 2 * x), "the jitted section computed a wrong result"
    put(rows, "call: @jit section, NumPy arrays", per_call_us(lambda: f(x, y), repeat, 50))
    g = jit(_stages, cache=False, gpu_runtime=rt)
    g(x, y)
    assert stub or np.array_equal(y, 2 * x + 19), "the 20-launch section computed a wrong result"
    put(rows, "call: @jit section of 20 launches, NumPy arrays",
        per_call_us(lambda: g(x, y), repeat, 10))
    if stub:  # the resident case's host path: GPU arrays adopted in place, nothing copied
        from cuda_stub import GpuArray
        gx, gy = GpuArray(x), GpuArray(y)
        f(gx, gy)
        put(rows, "call: @jit section, GPU arrays", per_call_us(lambda: f(gx, gy), repeat, 50))
        g(gx, gy)
        put(rows, "call: @jit section of 20 launches, GPU arrays",
            per_call_us(lambda: g(gx, gy), repeat, 10))
        calls = rt.device.calls  # the stubbed driver's calls per call, past the first sweep
        for name, fn, arrays in (("@jit section", f, (x, y)), ("@jit section of 20 launches",
                                 g, (x, y)), ("@jit section, GPU arrays", f, (gx, gy)),
                                 ("@jit section of 20 launches, GPU arrays", g, (gx, gy))):
            for _ in range(70):
                fn(*arrays)
            calls.clear()
            for _ in range(20):
                fn(*arrays)
            rows[f"call: {name}, driver calls per call (stub)"] = sum(calls.values()) / 20
    elif rt.dialect == "opencl":
        import pyopencl as cl
        import pyopencl.array as cla
        from pyopencl.elementwise import ElementwiseKernel
        q = cl.CommandQueue(rt.device.context)
        with warnings.catch_warnings():  # the driver's build log stays off the terminal
            warnings.simplefilter("ignore")
            k = ElementwiseKernel(rt.device.context, "const double* x, double* y",
                                  "y[i] = x[i] * 2.0")
            k(cla.empty(q, 256, np.float64), cla.empty(q, 256, np.float64)).wait()
        dx, dy = cla.empty(q, 256, np.float64), cla.empty(q, 256, np.float64)
        out = np.zeros(256)

        def ref() -> None:
            dx.set(x, queue=q)
            k(dx, dy)
            dy.get(queue=q, ary=out)
        ref()
        assert np.array_equal(out, 2 * x)
        put(rows, "call: pyopencl upload+kernel+download", per_call_us(ref, repeat, 50))
    else:
        import cupy as cp
        gx, gy = cp.asarray(x), cp.zeros(256)
        sync = cp.cuda.Device().synchronize
        f(gx, gy)
        assert cp.array_equal(gy, 2 * gx)

        def dev() -> None:
            f(gx, gy)
            sync()

        def ref() -> None:
            cp.multiply(gx, 2.0, out=gy)
            sync()
        put(rows, "call: @jit section, CuPy arrays", per_call_us(dev, repeat, 50))
        g(gx, gy)
        assert cp.array_equal(gy, 2 * gx + 19), "the 20-launch section went wrong on CuPy arrays"

        def dev20() -> None:
            g(gx, gy)
            sync()
        put(rows, "call: @jit section of 20 launches, CuPy arrays", per_call_us(dev20, repeat, 10))
        put(rows, "call: CuPy expression", per_call_us(ref, repeat, 50))


def launch_rows(rt: Runtime, repeat: int, rows: dict, stub: bool = False) -> None:
    n = 256
    x, a = np.ones(n), np.ones(n)
    vx, va = rt.submit(x), rt.submit(a)
    args = [vx, va, np.int64(n)]
    rt.launch(CHAIN, (n,), args, reads=[vx, va], writes=[vx])
    rt.wait_all(sync=False)
    kern = rt.device.build(CHAIN.name, CHAIN.source(rt.dialect))
    kargs = rt._kernel_args(args)

    def adapter() -> None:
        for _ in range(50):
            rt.device.launch(kern, (n,), None, kargs, 0, ())
        rt.device.finish()

    def runtime() -> None:
        for _ in range(50):
            rt.launch(CHAIN, (n,), args, reads=[vx, va], writes=[vx])
        rt.wait_all(sync=False)

    def timed_adapter() -> None:
        t0 = time.perf_counter()
        for _ in range(50):
            rt.device.launch(kern, (n,), None, kargs, 0, ())
        spent.append(time.perf_counter() - t0)
        rt.device.finish()

    def timed_runtime() -> None:
        t0 = time.perf_counter()
        for _ in range(50):
            rt.launch(CHAIN, (n,), args, reads=[vx, va], writes=[vx])
        spent.append(time.perf_counter() - t0)
        rt.wait_all(sync=False)

    adapter()
    runtime()
    spent: list = []
    for _ in range(repeat):
        timed_adapter()
    rows["launch: device adapter alone (us)"] = min(spent) / 50 * 1e6
    spent.clear()
    for _ in range(repeat):
        timed_runtime()
    rows["launch: Runtime.launch (us)"] = min(spent) / 50 * 1e6
    calls = getattr(rt.device, "calls", None)  # the stubbed driver counts its calls
    if calls is not None:
        calls.clear()
        runtime()
        rows["launch: Runtime.launch, driver calls per launch (stub)"] = sum(calls.values()) / 50
    got = rt.read(vx)
    assert stub or np.all(np.isfinite(got)) and np.allclose(got, 2.0), \
        "the chain kernel went wrong"
    rt.release(vx, writeback=False)
    rt.release(va, writeback=False)


def chain_rows(rt: Runtime, repeat: int, rows: dict, stub: bool = False,
               n: int = 0) -> None:
    """20 dependent launches of CHAIN on x (2^n doubles: 2^20 on the CPU device and the stub,
    2^25 on a GPU, as given otherwise): enqueue time, time until done, their ratio, the
    enqueue per launch, and with the stubbed driver its calls per launch while enqueueing."""
    n = n or (1 << 20 if rt.device.is_cpu or stub else 1 << 25)
    x, a = np.ones(n), np.random.default_rng(1).random(n)
    vx, va = rt.submit(x), rt.submit(a)
    rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
    rt.wait_all(sync=False)
    enq, tot = [], []
    calls = getattr(rt.device, "calls", None)
    if calls is not None:
        calls.clear()
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(20):
            rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
        t1 = time.perf_counter()
        if calls is not None and not enq:
            rows["chain20: driver calls per launch while enqueueing (stub)"] = \
                sum(calls.values()) / 20
        rt.wait_all(sync=False)
        enq.append(t1 - t0)
        tot.append(time.perf_counter() - t0)
    m = 1 + 20 * repeat  # x -> x/2 + a, m times from ones: closed form (a loop over 2^25
    ref = 0.5 ** m + 2 * a * (1 - 0.5 ** m)  # doubles on the host took longer than the rows)
    assert stub or np.allclose(rt.read(vx), ref), "the 20-kernel chain computed a wrong result"
    rt.release(vx, writeback=False)
    rt.release(va, writeback=False)
    e, t = statistics.median(enq), statistics.median(tot)
    rows[f"chain20 n=2^{n.bit_length() - 1}: enqueue (ms)"] = e * 1e3
    rows[f"chain20 n=2^{n.bit_length() - 1}: until done (ms)"] = t * 1e3
    rows[f"chain20 n=2^{n.bit_length() - 1}: enqueue share (%)"] = 100 * e / t
    rows[f"chain20 n=2^{n.bit_length() - 1}: enqueue per launch (us)"] = e / 20 * 1e6
    rows[f"chain20 n=2^{n.bit_length() - 1}: enqueue per launch, fastest batch (us)"] = \
        min(enq) / 20 * 1e6


def host_speed_us() -> float:
    """A fixed piece of plain Python (dict look-ups, attribute reads, list appends, a small
    tuple): the host's speed at the interpreter's own work, to compare machines by."""
    class Row:
        __slots__ = ("id", "queue")

        def __init__(self, i: int) -> None:
            self.id, self.queue = i, i & 3
    table = {i: Row(i) for i in range(64)}

    def work() -> None:
        out = []
        for i in range(64):
            r = table.get(i)
            if r is not None and r.queue != 5:
                out.append((r.id, r.queue))
    return per_call_us(work, 25, 200)[1]


def driver_rows(rt: Runtime, repeat: int, rows: dict) -> None:
    """What single driver calls cost on this host (CUDA, a GPU): a 256-element kernel launched
    through cuda.core and through cuLaunchKernel with packed arguments, an event record, a
    stream wait, CuPy's current stream, a 32-byte download with its wait."""
    import ctypes

    import cupy as cp
    from cuda.bindings import driver as d
    from liftkit.backends.cuda.runner import core
    c = core()
    n = 256
    vx, va = rt.submit(np.ones(n)), rt.submit(np.ones(n))
    rt.launch(CHAIN, (n,), [vx, va, np.int64(n)], reads=[vx, va], writes=[vx])
    rt.wait_all(sync=False)
    built = rt.device.build(CHAIN.name, CHAIN.source("cuda"))
    kern = getattr(built, "kernel", built)  # (older sources: cuda.core's kernel itself)
    handle = getattr(kern, "handle", None) or kern._handle
    if isinstance(handle, d.CUkernel):
        handle = d.cuKernelGetFunction(handle)[1]
    ptr = [rt.device.ptr(rt.buffers[rt.vars[v.id].buffer].handle) for v in (vx, va)]
    stream = c.Device().create_stream()
    sh = stream.handle
    config = c.LaunchConfig(grid=(1,), block=(n,))
    vals = (ctypes.c_int64 * 5)(ptr[0], 0, ptr[1], 0, n)
    params = (ctypes.c_void_p * 5)(*[ctypes.addressof(vals) + 8 * k for k in range(5)])
    pa = ctypes.addressof(params)
    ev = c.Device().create_event()
    host = np.zeros(4, np.int64)

    def batch(fn, k: int = 50) -> float:
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            ts.append(time.perf_counter() - t0)
            stream.sync()
        return min(ts) / k * 1e6
    rows["driver: cuda.core launch (us)"] = batch(
        lambda: c.launch(stream, config, kern, ptr[0], np.int64(0), ptr[1], np.int64(0),
                         np.int64(n)))
    rows["driver: cuLaunchKernel, packed arguments (us)"] = batch(
        lambda: d.cuLaunchKernel(handle, 1, 1, 1, n, 1, 1, 0, sh, pa, 0))
    try:  # cuLaunchKernel through ctypes on the packed arguments, cuEventRecord likewise
        lib = ctypes.CDLL("libcuda.so.1")
        launch, record = lib.cuLaunchKernel, lib.cuEventRecord
        fvp, svp, evp = (ctypes.c_void_p(int(h)) for h in (handle, sh, ev.handle))
        rows["driver: cuLaunchKernel through ctypes, packed arguments (us)"] = batch(
            lambda: launch(fvp, 1, 1, 1, n, 1, 1, 0, svp, params, None))
        rows["driver: cuEventRecord through ctypes (us)"] = batch(lambda: record(evp, svp))
    except OSError:
        pass
    rows["driver: cuda.core event record, new event (us)"] = batch(lambda: stream.record())
    rows["driver: cuda.core event record, same event (us)"] = batch(lambda: stream.record(ev))
    rows["driver: cuda.core stream wait (us)"] = batch(lambda: stream.wait(ev))
    rows["driver: cuEventRecord (us)"] = batch(lambda: d.cuEventRecord(ev.handle, sh))
    rows["driver: cuStreamWaitEvent (us)"] = batch(lambda: d.cuStreamWaitEvent(sh, ev.handle, 0))
    rows["driver: CuPy current stream (us)"] = batch(lambda: cp.cuda.get_current_stream().ptr)
    rows["driver: 32-byte download + stream sync (us)"] = batch(
        lambda: (d.cuMemcpyDtoHAsync(host.ctypes.data, ptr[0], 32, sh), d.cuStreamSynchronize(sh)),
        10)
    rows["python: reference work (us)"] = host_speed_us()
    rt.release(vx, writeback=False)
    rt.release(va, writeback=False)


def _mm(A, B):
    with liftkit.gpu():
        C = A @ B
    return C


def matmul_rows(rt: Runtime, repeat: int, rows: dict, n: int = 4096) -> None:
    """A @ B (float32, CuPy arrays) inside a jitted function, ten calls back to back with one
    wait, against cuBLAS the same way and against the Lift kernel alone: the GPU time of ten
    of its launches through the runtime between two CUDA events on the runtime's stream (the
    kernels' own time, no call path). jitted calls / kernels alone above 1 means the call
    path leaves the GPU idle between kernels."""
    import cupy as cp
    from liftkit.jit.gpu_library import LiftLibrary
    g = np.random.default_rng(3)
    A, B = (cp.asarray(g.random((n, n), dtype=np.float32)) for _ in range(2))
    sync = cp.cuda.Device().synchronize
    f = jit(_mm, cache=False, gpu_runtime=rt)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    got = f(A, B)
    assert float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref)) < 1e-4, "A @ B went wrong"

    def ten(fn) -> float:
        fn()
        sync()
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(10):
                fn()
            sync()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) / 10 * 1e3
    rows[f"A @ B {n} f32: cuBLAS, 10 back to back (ms)"] = cu = ten(lambda: A @ B)
    rows[f"A @ B {n} f32: jitted call, 10 back to back (ms)"] = jt = ten(lambda: f(A, B))
    rows[f"A @ B {n} f32: jitted vs cuBLAS, back to back (x)"] = cu / jt
    # the same calls keeping their results (freed 11 at a time, not each at the next call):
    # nearer the kernels alone than the row above, freeing a result is what costs
    kept: list = []
    rows[f"A @ B {n} f32: jitted call, results kept (ms)"] = ten(
        lambda: kept.append(f(A, B)) or (len(kept) > 10 and kept.clear()))
    kept.clear()
    if rt.nqueues != 1:  # the events below bracket the launches of one stream
        return
    lib = LiftLibrary()
    C = cp.empty((n, n), cp.float32)
    va, vb, vc = rt.adopt(A), rt.adopt(B), rt.adopt(C)
    sizes = {"M": n, "K": n, "N": n}
    lib.run(rt, "mm", [va, vb], vc, sizes, "float32")
    rt.wait_all(sync=False)
    from liftkit.backends.cuda.runner import core
    opts = core().EventOptions(timing_enabled=True)
    s = rt.device.streams[0]
    ks = []
    for _ in range(repeat):
        e0 = s.record(options=opts)
        for _ in range(10):
            lib.run(rt, "mm", [va, vb], vc, sizes, "float32")
        e1 = s.record(options=opts)
        e1.sync()
        ks.append((e1 - e0) / 10)
    rt.wait_all(sync=False)
    for v in (va, vb, vc):
        rt.release(v, writeback=False)
    rows[f"A @ B {n} f32: Lift kernel alone, GPU time (ms)"] = k = statistics.median(ks)
    rows[f"A @ B {n} f32: jitted calls / kernels alone"] = jt / k
    rows[f"A @ B {n} f32: kernel alone vs cuBLAS (x)"] = cu / k


def profile(rt: Runtime, stub: bool = False) -> None:
    """Where the host time goes (cProfile, the calling thread's CPU time): 200 calls of the
    tiny section (on CUDA with CuPy arrays, the resident case), then 200 runtime launches."""
    import cProfile
    import pstats
    f = jit(_tiny, cache=False, gpu_runtime=rt)
    x, y = np.arange(256.0), np.zeros(256)
    if stub:
        from cuda_stub import GpuArray
        x, y = GpuArray(x), GpuArray(y)
    elif rt.dialect == "cuda":
        import cupy as cp
        x, y = cp.asarray(x), cp.asarray(y)
    f(x, y)
    vx, va = rt.submit(np.ones(256)), rt.submit(np.ones(256))
    args = [vx, va, np.int64(256)]
    rt.launch(CHAIN, (256,), args, reads=[vx, va], writes=[vx])
    rt.wait_all(sync=False)
    for what, fn in (("200 calls", lambda: f(x, y)), ("200 Runtime.launch", lambda: rt.launch(
            CHAIN, (256,), args, reads=[vx, va], writes=[vx]))):
        pr = cProfile.Profile(time.thread_time)
        pr.enable()
        for _ in range(200):
            fn()
        pr.disable()
        rt.wait_all(sync=False)
        st = pstats.Stats(pr)
        print(f"\nown host CPU time in {what} (cProfile; it slows small functions down):")
        for k, (_, nc, tt, ct, _) in sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:15]:
            print(f"  {tt * 1e3:7.2f} ms own {ct * 1e3:8.2f} ms cum {nc:6d} calls  "
                  f"{os.path.basename(k[0])}:{k[1]}({k[2]})")
    rt.release(vx, writeback=False)
    rt.release(va, writeback=False)


def baseline(src: str, argv: list[str]) -> dict:
    """The rows of this benchmark run on the liftkit sources under ``src`` (a directory holding
    the package ``liftkit``, e.g. an older commit's ``src`` from ``git archive``)."""
    import subprocess
    import sys
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.abspath(src)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        subprocess.run([sys.executable, __file__, *argv, "--json", out], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as fh:
            return json.load(fh)["rows"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", help="the runtime's device: cpu (default) or gpu")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"))
    p.add_argument("--repeat", type=int, default=25)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--stub-cuda", action="store_true",
                   help="CUDA's host path over a stubbed driver (no GPU needed, no GPU work)")
    p.add_argument("--driver", action="store_true",
                   help="CUDA on a GPU: also time single driver calls and a reference piece "
                        "of Python (this host's speed)")
    p.add_argument("--matmul", action="store_true",
                   help="CUDA on a GPU: also A @ B 4096^2 float32 in a jitted function, back to "
                        "back, against cuBLAS and the Lift kernel's own GPU time")
    p.add_argument("--json", help="write the rows to this file too")
    p.add_argument("--baseline", metavar="SRC",
                   help="also run on the liftkit sources in SRC first (a 'before' column)")
    args = p.parse_args()
    warnings.filterwarnings("ignore", module="pyopencl")  # driver build logs
    before = baseline(args.baseline, ["--device", args.device, "--backend", args.backend,
                                      "--repeat", str(args.repeat)] +
                      (["--stub-cuda"] if args.stub_cuda else [])) if args.baseline else {}
    stub = args.stub_cuda
    if stub:
        from cuda_stub import stub_runtime
        rt, args.backend = stub_runtime(), "cuda"
    else:
        rt = Runtime(args.backend, args.device if args.backend == "opencl" else None)
    rows: dict[str, float] = {}
    call_rows(rt, args.repeat, rows, stub)
    launch_rows(rt, args.repeat, rows, stub)
    chain_rows(rt, args.repeat, rows, stub)
    if not stub and not rt.device.is_cpu:  # the same chain with the GPU idle between kernels
        chain_rows(rt, args.repeat, rows, stub, n=1 << 10)
    if args.driver and not stub and args.backend == "cuda":
        driver_rows(rt, args.repeat, rows)
    elif args.driver:
        rows["python: reference work (us)"] = host_speed_us()
    if args.matmul and not stub and args.backend == "cuda":
        matmul_rows(rt, max(3, args.repeat), rows)
    print(f"device: {rt.device.label} ({args.backend}); liftkit from "
          f"{os.path.dirname(liftkit.__file__)}" +
          (f"; before: {args.baseline}" if before else ""))
    width = max(len(k) for k in rows)
    if before:
        print(f"{'':<{width}}  {'before':>10}  {'after':>10}  {'after/before':>12}")
    for k, v in rows.items():
        b = before.get(k)
        print(f"{k:<{width}}  " + (f"{b:10.2f}  " if b is not None else " " * 12 * bool(before))
              + f"{v:10.2f}" + (f"  {v / b:12.2f}" if b else ""))
    if args.profile:
        profile(rt, stub)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": rt.device.label, "backend": args.backend, "rows": rows,
                       "before": before}, fh, indent=1)
    rt.close()


if __name__ == "__main__":
    main()
