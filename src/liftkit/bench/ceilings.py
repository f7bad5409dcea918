"""Device ceilings measured in the same run as the benchmarks.

Bandwidth: an OpenCL device-to-device copy (enqueue_copy timed with profiling events; bytes read
plus written). On the GPU also CuPy's copy and the cuBLAS SGEMM rate (cupy.matmul of 4096²
float32, CUDA events); on the CPU NumPy's copy bandwidth and NumPy's matmul rate. The roofline
uses `bandwidth_gbs` (OpenCL copy on the GPU, the larger of OpenCL and NumPy copy on the CPU) and
`peak_gflops` (cuBLAS or NumPy SGEMM).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np

from liftkit.bench.timing import cupy_times, host_times, median

# (copy bytes, SGEMM size) per size set
CEILING_SIZES = {"tiny": (1 << 22, 256), "cpu": (1 << 26, 1024), "small": (1 << 28, 4096),
                 "large": (1 << 29, 4096)}


@dataclass
class Ceilings:
    bandwidth_gbs: float = float("nan")  # the roofline's bandwidth
    peak_gflops: float = float("nan")  # the roofline's compute ceiling (SGEMM)
    opencl_copy_gbs: float = float("nan")
    library_copy_gbs: Optional[float] = None  # CuPy (GPU) or NumPy (CPU)
    sgemm_gflops: Optional[float] = None
    sgemm_size: int = 0
    sgemm_library: str = ""
    copy_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def opencl_copy_gbs(runner: Any, nbytes: int, repeat: int) -> float:
    """Device-to-device copy bandwidth through OpenCL (bytes read plus written)."""
    import pyopencl as cl

    ctx, q = runner.context, runner.queue
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(q, a, np.float32(1.0), 0, nbytes).wait()
    cl.enqueue_copy(q, b, a).wait()
    times = []
    for _ in range(repeat):
        ev = cl.enqueue_copy(q, b, a)
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9)
    t = median(times)
    return 2 * nbytes / t / 1e9 if t > 0 else float("nan")


def numpy_copy_gbs(nbytes: int, repeat: int) -> float:
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return 2 * nbytes / median(host_times(lambda: np.copyto(dst, src), repeat)) / 1e9


def numpy_sgemm_gflops(n: int, repeat: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    return 2.0 * n ** 3 / median(host_times(lambda: a @ b, repeat)) / 1e9


def cupy_copy_gbs(nbytes: int, repeat: int) -> float:
    import cupy as cp

    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    out = 2 * nbytes / median(cupy_times(lambda: cp.copyto(dst, src), repeat)) / 1e9
    del src, dst
    return out


def cublas_sgemm_gflops(n: int, repeat: int) -> float:
    """cuBLAS SGEMM rate via cupy.matmul of n×n float32 (CUDA events)."""
    import cupy as cp

    rng = cp.random.default_rng(0)
    a = rng.random((n, n), dtype=cp.float32)
    b = rng.random((n, n), dtype=cp.float32)
    c = cp.empty((n, n), dtype=cp.float32)
    return 2.0 * n ** 3 / median(cupy_times(lambda: cp.matmul(a, b, out=c), repeat)) / 1e9


def measure(runner: Any, device_kind: str, size_set: str, repeat: int) -> Ceilings:
    """All ceilings for the device kind ("gpu" or "cpu"); failures are noted, not raised."""
    nbytes, n = CEILING_SIZES.get(size_set, CEILING_SIZES["large"])
    if device_kind == "gpu":
        n = 4096  # the ceiling the issue names: cuBLAS SGEMM 4096²
    c = Ceilings(copy_bytes=nbytes, sgemm_size=n)
    if getattr(runner, "dialect", "opencl") == "opencl":
        try:
            c.opencl_copy_gbs = opencl_copy_gbs(runner, nbytes, repeat)
        except Exception as err:  # noqa: BLE001 - report and go on
            c.notes.append(f"OpenCL copy failed: {type(err).__name__}: {err}")
    if device_kind == "gpu":
        try:
            c.library_copy_gbs = cupy_copy_gbs(nbytes, repeat)
            c.sgemm_gflops = cublas_sgemm_gflops(n, repeat)
            c.sgemm_library = "cuBLAS (cupy.matmul)"
        except Exception as err:  # noqa: BLE001 - no CuPy: no SGEMM ceiling
            c.notes.append(f"CuPy ceilings unavailable: {type(err).__name__}: {err}")
        c.bandwidth_gbs = c.opencl_copy_gbs if c.opencl_copy_gbs and not math.isnan(c.opencl_copy_gbs) \
            else c.library_copy_gbs  # a CUDA run: the library's device-to-device copy
    else:
        c.library_copy_gbs = numpy_copy_gbs(nbytes, repeat)
        c.sgemm_gflops = numpy_sgemm_gflops(n, repeat)
        c.sgemm_library = "NumPy matmul"
        c.bandwidth_gbs = float(np.nanmax([c.opencl_copy_gbs, c.library_copy_gbs]))
    c.peak_gflops = c.sgemm_gflops if c.sgemm_gflops else float("nan")
    return c
