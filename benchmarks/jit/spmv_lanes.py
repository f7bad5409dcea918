"""spmv's GPU kernel with lanes sharing each row (issue 14), against Numba's CUDA kernel, and
julia's kernel time alone.

    PYTHONPATH=src python benchmarks/jit/spmv_lanes.py [--repeat 10] [--json out.json]
    python benchmarks/jit/spmv_lanes.py --smoke     # the variants checked on the CPU device

The JIT suite's spmv (gpu_programs.spmv_gpu, 10 products per call) at three row lengths with
the suite's 4.8M nonzeros (12 per row: the suite's input; 4 and 48 per row), @jit on CuPy
arrays with ``passes={"lanes": L}`` for L = off, 2 ... 32 and the launch-time choice, each
checked against NumPy, then timed two ways: a call synchronised after it (what the suite
reports) and its GPU time alone — the call is enqueued behind a kernel spinning for 2 ms, so
its host path is hidden and the events around it on the caller's stream time only the
device's work (for spmv the call ends by reading its error flags, so that time also holds one
small download). Numba's ``cuda.jit`` kernel the same two ways, in the same process. julia
(2000x2000, 200 iterations): jit and Numba, both ways — how much of its gap is the kernel."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gpu as G  # noqa: E402
import gpu_programs as GP  # noqa: E402

from liftkit.jit import jit  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

LANES = (False, 2, 4, 8, 16, 32, None)  # off, forced, chosen per launch
NNZ = 4_800_000


def csr(rng, per_row: int, nnz: int = NNZ) -> tuple:
    m = nnz // per_row
    indptr = np.arange(0, (m + 1) * per_row, per_row, dtype=np.int64)
    indices = rng.integers(0, m, m * per_row).astype(np.int64)
    return rng.random(m * per_row), indices, indptr, rng.random(m), 10


def reference(data, indices, indptr, x, reps) -> np.ndarray:
    m = indptr.shape[0] - 1
    return (data * x[indices]).reshape(m, -1).sum(1)


def _spin(cp):
    return cp.RawKernel(r"""extern "C" __global__ void lk_spin(long long cycles) {
        long long t0 = clock64(); while (clock64() - t0 < cycles) { } }""", "lk_spin")


def gpu_ms(cp, spin, call, repeat: int) -> float:
    """Median GPU time of ``call`` (ms) with its host path hidden behind a spinning kernel."""
    stream = cp.cuda.get_current_stream()
    ts = []
    for _ in range(repeat):
        spin((1,), (1,), (np.int64(4_000_000),))  # about 2 ms
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(stream)
        call()
        e1.record(stream)
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(ts)


def sync_ms(sync, call, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        sync()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def run_cuda(repeat: int) -> dict:
    import cupy as cp
    rt = Runtime("cuda")
    nb, why = G.numba_cuda()
    from numba import cuda
    spin = _spin(cp)
    sync = cp.cuda.Device().synchronize
    out: dict = {"device": rt.device.label, "numba": why, "spmv": {}, "julia": {}}
    rng = np.random.default_rng(0)
    for per_row in (12, 4, 48):
        args = csr(rng, per_row)
        ref = reference(*args)
        d = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        nd = [cuda.as_cuda_array(a) if isinstance(a, cp.ndarray) else a for a in d]
        row: dict = {}
        y = nb["spmv"](*nd)
        row["numba"] = {"ok": bool(np.allclose(y.copy_to_host(), ref, rtol=1e-12)),
                        "sync_ms": sync_ms(cuda.synchronize, lambda: nb["spmv"](*nd), repeat),
                        "gpu_ms": gpu_ms(cp, spin, lambda: nb["spmv"](*nd), repeat)}
        for lanes in LANES:
            f = jit(GP.GPU["spmv"], cache=False, gpu_runtime=rt, passes={"lanes": lanes})
            ok = bool(np.allclose(cp.asnumpy(f(*d)), ref, rtol=1e-12))
            row[str(lanes)] = {"ok": ok, "sync_ms": sync_ms(sync, lambda: f(*d), repeat),
                               "gpu_ms": gpu_ms(cp, spin, lambda: f(*d), repeat)}
        for k, v in row.items():
            v["vs_numba_sync"] = row["numba"]["sync_ms"] / v["sync_ms"]
            v["vs_numba_gpu"] = row["numba"]["gpu_ms"] / v["gpu_ms"]
        out["spmv"][f"{per_row}_per_row"] = row
        print(f"[spmv {per_row}/row: " + ", ".join(
            f"{k} {v['sync_ms']:.3f}/{v['gpu_ms']:.3f} ms{'' if v['ok'] else ' WRONG'}"
            for k, v in row.items()) + "]", flush=True)
    h = w = 2000
    jout, nout = cp.zeros((h, w), cp.int64), cuda.device_array((h, w), np.int64)
    f = jit(GP.GPU["julia"], cache=False, gpu_runtime=rt)
    f(h, w, 200, jout)
    nb["julia"](h, w, 200, nout)
    ok = bool(np.array_equal(cp.asnumpy(jout), nout.copy_to_host()))
    out["julia"] = {"ok": ok,
                    "jit_sync_ms": sync_ms(sync, lambda: f(h, w, 200, jout), repeat),
                    "jit_gpu_ms": gpu_ms(cp, spin, lambda: f(h, w, 200, jout), repeat),
                    "numba_sync_ms": sync_ms(cuda.synchronize,
                                             lambda: nb["julia"](h, w, 200, nout), repeat),
                    "numba_gpu_ms": gpu_ms(cp, spin, lambda: nb["julia"](h, w, 200, nout),
                                           repeat)}
    print(f"[julia: {json.dumps(out['julia'])}]", flush=True)
    rt.close()
    return out


def smoke() -> None:
    """Every variant checked on the CPU device at a small size (no timing)."""
    rt = Runtime("opencl", "cpu")
    rng = np.random.default_rng(0)
    for per_row in (12, 4, 48):
        args = csr(rng, per_row, 4800)
        ref = reference(*args)
        for lanes in LANES:
            f = jit(GP.GPU["spmv"], cache=False, gpu_runtime=rt, passes={"lanes": lanes})
            assert np.allclose(f(*args), ref, rtol=1e-12), (per_row, lanes)
    print("smoke: every variant correct")
    rt.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        smoke()
        return
    out = run_cuda(args.repeat)
    print("| spmv rows | variant | ok | sync ms | GPU ms | vs Numba (sync) | vs Numba (GPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for shape, row in out["spmv"].items():
        for k, v in row.items():
            name = {"False": "lanes off", "None": "lanes chosen per launch"}.get(k, k)
            print(f"| {shape} | {name} | {v['ok']} | {v['sync_ms']:.3f} | {v['gpu_ms']:.3f} | "
                  f"{v['vs_numba_sync']:.2f} | {v['vs_numba_gpu']:.2f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
