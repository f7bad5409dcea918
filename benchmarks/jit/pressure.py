"""Memory pressure, literally (issue 14): a workload whose arrays need 1.5x the device's memory
completes with correct results through the task runtime's LRU write-back.

    PYTHONPATH=src python benchmarks/jit/pressure.py [--factor 1.5] [--arrays 15]
        [--backend cuda] [--json out.json]
    python benchmarks/jit/pressure.py --backend opencl --device-bytes 64M   # smoke test (CPU)

``K`` uint8 arrays, together ``factor`` times the device's memory (on the H100 80GB: 15 arrays
of 8.5 GB, 127.5 GB), all live at once: each is made on the device (``Runtime.empty``: no host
copy until the runtime needs one) and filled by a kernel; once the runtime's budget (90% of
the device's memory) is spent, filling the next evicts the least recently used array, which is
written back to the host. Then, in the order they were made (the LRU worst case: the evicted
arrays come first), each array is updated in place (read, changed, written) by a kernel that
also sums its new values with position weights and copies a sample of them out; a second
kernel sums the values as stored; the array is then released. An evicted array is uploaded
again for its update, so its values made the round trip device -> host -> device.

Checked against NumPy: the two checksums of every array (each over every byte; the values
repeat with period 2^19, so NumPy computes the exact sums over one period) and 4096 sampled
values of every array. Host memory: only the evicted arrays have host copies (about the
workload minus the runtime's budget, 51 GB on the H100), so the 128 GB host holds it.
The statistics say what the runtime did: evictions, write-backs, bytes moved, its peak."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from liftkit.runtime import Kernel, Runtime

_CUDA = r"""
extern "C" __global__ void pressure_fill(unsigned char* a, long ao, long n, long k) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        a[ao + i] = (unsigned char)(i * (2 * k + 1) + 3 * (i >> 8) + 37 * k);
}
extern "C" __global__ void pressure_update(unsigned char* a, long ao, long n, long k,
        unsigned long long* s, long so, unsigned char* sm, long smo, long nsamp, int shift) {
    unsigned long long acc = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        unsigned char w = (unsigned char)(3 * a[ao + i] + (i >> 11) + k);
        a[ao + i] = w;
        acc += (unsigned long long)w * ((i & 1023) + 1);
        if ((i & ((1L << shift) - 1)) == 0 && (i >> shift) < nsamp)
            sm[smo + k * nsamp + (i >> shift)] = w;
    }
    atomicAdd(&s[so + k], acc);
}
extern "C" __global__ void pressure_check(const unsigned char* a, long ao, long n, long k,
        unsigned long long* s, long so) {
    unsigned long long acc = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        acc += (unsigned long long)a[ao + i] * ((i & 1023) + 1);
    atomicAdd(&s[so + k], acc);
}
"""

_OPENCL = r"""
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
kernel void pressure_fill(global uchar* a, long ao, long n, long k) {
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
        a[ao + i] = (uchar)(i * (2 * k + 1) + 3 * (i >> 8) + 37 * k);
}
kernel void pressure_update(global uchar* a, long ao, long n, long k, global ulong* s, long so,
        global uchar* sm, long smo, long nsamp, int shift) {
    ulong acc = 0;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        uchar w = (uchar)(3 * a[ao + i] + (i >> 11) + k);
        a[ao + i] = w;
        acc += (ulong)w * (ulong)((i & 1023) + 1);
        if ((i & ((1L << shift) - 1)) == 0 && (i >> shift) < nsamp)
            sm[smo + k * nsamp + (i >> shift)] = w;
    }
    atom_add(&s[so + k], acc);
}
kernel void pressure_check(const global uchar* a, long ao, long n, long k, global ulong* s,
        long so) {
    ulong acc = 0;
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
        acc += (ulong)a[ao + i] * (ulong)((i & 1023) + 1);
    atom_add(&s[so + k], acc);
}
"""

FILL, UPDATE, CHECK = (Kernel(f"pressure_{n}", {"cuda": _CUDA, "opencl": _OPENCL})
                       for n in ("fill", "update", "check"))
PERIOD = 1 << 19  # the values and weights repeat with this period in i


def values(i: np.ndarray, k: int) -> np.ndarray:
    """The values the update leaves at positions ``i`` of array ``k`` (int64 arithmetic, as the
    kernels' long arithmetic truncated to a byte)."""
    f = (i * (2 * k + 1) + 3 * (i >> 8) + 37 * k) & 255
    return (3 * f + (i >> 11) + k) & 255


def checksum(n: int, k: int) -> int:
    """sum over i < n of values(i, k) * ((i & 1023) + 1), exactly (one period, then the rest)."""
    def part(m: int) -> int:
        i = np.arange(m, dtype=np.int64)
        return int(np.sum(values(i, k) * ((i & 1023) + 1), dtype=np.uint64))
    q, r = divmod(n, PERIOD)
    return (q * part(PERIOD) + part(r)) % (1 << 64)


def _bytes(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * mult[text[-1].upper()]) if text[-1].upper() in mult \
        else int(text)


def _host_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run(rt: Runtime, device_bytes: int, factor: float, arrays: int, threads: int,
        nsamp: int = 4096) -> dict:
    """The workload on ``rt`` (see the module docstring); a dict of figures and checks."""
    n = int(device_bytes * factor) // arrays  # bytes (uint8 elements) per array
    shift = max(0, (n // nsamp).bit_length() - 1)  # samples every 2^shift elements
    nsamp = min(nsamp, (n - 1 >> shift) + 1)
    sums = np.zeros(arrays, np.uint64)
    sums2 = np.zeros(arrays, np.uint64)
    samples = np.zeros((arrays, nsamp), np.uint8)
    vs, vs2, vsm = rt.submit(sums), rt.submit(sums2), rt.submit(samples)
    gsize = (min(n, threads),)
    rt.reset_stats()
    t0 = time.perf_counter()
    live = [rt.empty((n,), np.uint8) for _ in range(arrays)]
    for k, a in enumerate(live):
        rt.launch(FILL, gsize, [a, np.int64(n), np.int64(k)], reads=[], writes=[a],
                  overwrites=[a])
    rt.wait_all()
    t_fill = time.perf_counter() - t0
    st_fill = rt.stats()
    print(f"[filled {arrays} arrays of {n / 1e9:.2f} GB in {t_fill:.1f} s: "
          f"{st_fill['evictions']} evictions, {st_fill['writebacks']} write-backs]", flush=True)
    for k, a in enumerate(live):
        rt.launch(UPDATE, gsize, [a, np.int64(n), np.int64(k), vs, vsm, np.int64(nsamp),
                                  np.int32(shift)], reads=[a, vs], writes=[a, vs, vsm])
        rt.launch(CHECK, gsize, [a, np.int64(n), np.int64(k), vs2], reads=[a, vs2],
                  writes=[vs2])
        rt.release(a, writeback=False)
        if k % 5 == 4:
            print(f"[updated {k + 1}: {time.perf_counter() - t0:.1f} s]", flush=True)
    got, got2, got_s = rt.read(vs).copy(), rt.read(vs2).copy(), rt.read(vsm).copy()
    t_all = time.perf_counter() - t0
    st = rt.stats()
    for v in (vs, vs2, vsm):
        rt.release(v, writeback=False)
    want = np.array([checksum(n, k) for k in range(arrays)], np.uint64)
    idx = np.arange(nsamp, dtype=np.int64) << shift
    want_s = np.stack([values(idx, k) for k in range(arrays)]).astype(np.uint8)
    return {
        "device": rt.device.label, "device_bytes": device_bytes, "runtime_limit_bytes": rt.limit,
        "workload_bytes": n * arrays, "arrays": arrays, "array_bytes": n,
        "workload_over_device": n * arrays / device_bytes,
        "workload_over_limit": n * arrays / rt.limit,
        "ok_checksums_update": bool(np.array_equal(got, want)),
        "ok_checksums_stored": bool(np.array_equal(got2, want)),
        "ok_samples": bool(np.array_equal(got_s, want_s)),
        "evictions_while_filling": st_fill["evictions"],
        "evictions": st["evictions"], "writebacks": st["writebacks"],
        "uploads": st["uploads"], "upload_bytes": st["upload_bytes"],
        "downloads": st["downloads"], "download_bytes": st["download_bytes"],
        "cpu_tasks": st["cpu_tasks"], "peak_device_bytes": st["peak_bytes"],
        "seconds_fill": t_fill, "seconds": t_all}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factor", type=float, default=1.5, help="workload / device memory")
    ap.add_argument("--arrays", type=int, default=15)
    ap.add_argument("--backend", default="cuda", help="cuda; opencl with --device cpu for a "
                    "smoke test")
    ap.add_argument("--device", default=None, help="the backend's device (opencl: cpu)")
    ap.add_argument("--device-bytes", default=None, help="the device memory to act as if it "
                    "had (e.g. 64M; the runtime's budget is 90%% of it); default: the device's")
    ap.add_argument("--threads", type=int, default=None, help="work-items per kernel")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    device = args.device or ("cpu" if args.backend == "opencl" else None)
    probe = Runtime(args.backend, device) if args.device_bytes is None else None
    total = probe.device.total_memory if probe is not None else _bytes(args.device_bytes)
    if probe is not None:
        probe.close()
    rt = Runtime(args.backend, device, memory_limit=int(total * 0.9))
    evicted = int(total * args.factor) - rt.limit
    avail = _host_available()
    if avail is not None and evicted + (1 << 30) > avail:
        print(f"pressure: the evicted arrays need about {evicted / 1e9:.1f} GB of host memory; "
              f"{avail / 1e9:.1f} GB are available", file=sys.stderr)
        raise SystemExit(2)
    threads = args.threads or (1 << 21 if rt.dialect == "cuda" else 1 << 10)
    try:
        out = run(rt, total, args.factor, args.arrays, threads)
    finally:
        rt.close()
    out["host_available_bytes_before"] = avail
    ok = out["ok_checksums_update"] and out["ok_checksums_stored"] and out["ok_samples"]
    print(json.dumps(out, indent=1))
    print(f"pressure: {out['workload_bytes'] / 1e9:.1f} GB in {args.arrays} arrays = "
          f"{out['workload_over_device']:.2f}x the device's {total / 1e9:.1f} GB "
          f"({out['workload_over_limit']:.2f}x the runtime's budget); {out['evictions']} "
          f"evictions, {out['writebacks']} write-backs, {out['upload_bytes'] / 1e9:.1f} GB up, "
          f"{out['download_bytes'] / 1e9:.1f} GB down, peak on device "
          f"{out['peak_device_bytes'] / 1e9:.1f} GB; {out['seconds']:.1f} s; "
          f"results {'correct' if ok else 'WRONG'}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    if not ok:
        raise SystemExit(1)
    return out


if __name__ == "__main__":
    main()
