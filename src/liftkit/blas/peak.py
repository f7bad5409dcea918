"""Peak-rate micro-benchmarks (seed 003 §7.4.1): the device's peak floating-point rate per
dtype for additions only, multiplications only, separate multiply-then-add (`mad`: a product
and a sum, contraction switched off) and OpenCL's fused `fma`, and its copy bandwidth.

They are part of `liftkit blas tune` and stored in the device profile (`Peaks`): the benchmark
report gives rates as a percentage of peak (seed 003 Table 8.1), transposes as a fraction of the
copy bandwidth, and `fma` records whether fused multiply-adds beat separate ones on the device
(RaijinCL's reason to run the test: whether to generate FMA instructions).

These kernels measure the hardware, not an operation of the library, so they are not Lift
derivations: each is a loop of independent dependency chains (enough to hide the ALU latency),
written for the one OpenCL C feature under test. The iteration count doubles until a launch
takes `min_seconds`; the rate is the best of the vector widths tried.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pyopencl as cl

from liftkit.blas.profile import Peaks

OPS = ("add", "mul", "mad", "fma")
FLOPS_PER_STEP = {"add": 1, "mul": 1, "mad": 2, "fma": 2}
CHAINS = 8  # independent accumulators per work-item
UNROLL = 4
DTYPES = ("float32", "float64")
_CTYPE = {"float32": "float", "float64": "double"}
_STEP = {"add": "x{i} = x{i} + c;", "mul": "x{i} = x{i} * b;",
         "mad": "x{i} = x{i} * b; x{i} = x{i} + c;", "fma": "x{i} = fma(x{i}, b, c);"}


@dataclass(frozen=True)
class PeakSettings:
    """How hard to measure: work-items per compute unit, the launch time to reach, timed
    launches (best of), the copy's size and the vector widths to try."""

    items_per_unit: int = 4096
    min_seconds: float = 0.02
    repeat: int = 3
    copy_bytes: int = 64 << 20
    widths: Sequence[int] = (1, 4)


# quick: small arithmetic launches, but the copy as large as the full one (a 1 MB copy measured
# a launch, not memory: 324 GB/s on an H100 whose copies run at about 2900 GB/s)
TINY = PeakSettings(items_per_unit=256, min_seconds=0.002, repeat=2, copy_bytes=64 << 20,
                    widths=(1,))


def kernel_source(dtype: str, width: int) -> str:
    """One program holding the four arithmetic kernels for a dtype and vector width."""
    scalar = _CTYPE[dtype]
    t = scalar if width == 1 else f"{scalar}{width}"
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "float64" else ""
    head += "#pragma OPENCL FP_CONTRACT OFF\n"  # `mad` stays a product and a separate sum
    parts = [head]
    for op in OPS:
        inits = "\n".join(f"  {t} x{i} = ({t})(s + {i}.0);" for i in range(CHAINS))
        body = "\n".join("    " + " ".join(_STEP[op].format(i=i) for i in range(CHAINS))
                         for _ in range(UNROLL))
        total = " + ".join(f"x{i}" for i in range(CHAINS))
        parts.append(
            f"__kernel void peak_{op}(__global {t}* out, {scalar} b_, {scalar} c_, int iters) {{\n"
            f"  const {t} b = ({t})(b_), c = ({t})(c_);\n"
            f"  const {scalar} s = ({scalar})(get_global_id(0) & 7) * ({scalar})1e-3;\n"
            f"{inits}\n  for (int k = 0; k < iters; ++k) {{\n{body}\n  }}\n"
            f"  out[get_global_id(0)] = {total};\n}}\n")
    return "\n".join(parts)


COPY_SOURCE = """
__kernel void copy4(__global const float4* src, __global float4* dst) {
  const size_t i = get_global_id(0);
  dst[i] = src[i];
}
"""


def _build(context: Any, source: str) -> Any:
    with warnings.catch_warnings():  # the driver's build log is noise here
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return cl.Program(context, source).build()


def _event_seconds(ev: Any) -> float:
    return (ev.profile.end - ev.profile.start) * 1e-9


def _time_arith(queue: Any, kernel: Any, out: Any, dtype: np.dtype, items: int, local: Any,
                s: PeakSettings) -> tuple[float, int]:
    """(seconds of the best launch, iterations) once a launch takes at least min_seconds."""
    iters = 16
    b, c = dtype.type(0.999999), dtype.type(1e-6)  # x stays near 1: no overflow, no denormals
    while True:
        kernel.set_args(out, b, c, np.int32(iters))
        times = []
        for _ in range(s.repeat):
            ev = cl.enqueue_nd_range_kernel(queue, kernel, (items,), local)
            ev.wait()
            times.append(_event_seconds(ev))
        best = min(times)
        if best >= s.min_seconds or iters >= 1 << 24:
            return best, iters
        iters *= 2 if best > s.min_seconds / 8 else 8


def measure_flops(context: Any, queue: Any, device: Any, dtype: str,
                  settings: PeakSettings = PeakSettings()) -> dict[str, float]:
    """GFLOP/s of add, mul, mad and fma for one dtype (the best vector width)."""
    dt = np.dtype(dtype)
    units = int(device.max_compute_units)
    local = None
    items = max(units * settings.items_per_unit, 64)
    rates = {op: 0.0 for op in OPS}
    for width in settings.widths:
        prg = _build(context, kernel_source(dtype, width))
        out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, size=items * width * dt.itemsize)
        for op in OPS:
            secs, iters = _time_arith(queue, getattr(prg, f"peak_{op}"), out, dt, items, local,
                                      settings)
            flops = float(items) * width * iters * UNROLL * CHAINS * FLOPS_PER_STEP[op]
            rates[op] = max(rates[op], flops / secs / 1e9)
        # the values are consumed (they are written out); check one finishes finite
        got = np.empty(items * width, dt)
        cl.enqueue_copy(queue, got, out, is_blocking=True)
        if not np.all(np.isfinite(got)):
            raise RuntimeError(f"peak benchmark: non-finite {dtype} results (width {width})")
    return rates


def measure_copy(context: Any, queue: Any, settings: PeakSettings = PeakSettings()) -> float:
    """GB/s of a device-memory copy (bytes read plus bytes written), checked once."""
    n = max(settings.copy_bytes // 16, 1)
    host = np.arange(n * 4, dtype=np.float32)
    mf = cl.mem_flags
    src = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
    dst = cl.Buffer(context, mf.WRITE_ONLY, size=host.nbytes)
    k = _build(context, COPY_SOURCE).copy4
    k.set_args(src, dst)
    cl.enqueue_nd_range_kernel(queue, k, (n,), None).wait()  # warm-up, then the check
    got = np.empty_like(host)
    cl.enqueue_copy(queue, got, dst, is_blocking=True)
    if not np.array_equal(got, host):
        raise RuntimeError("peak benchmark: the copy kernel's result differs from its input")
    times = []
    for _ in range(max(settings.repeat, 3)):
        ev = cl.enqueue_nd_range_kernel(queue, k, (n,), None)
        ev.wait()
        times.append(_event_seconds(ev))
    return 2.0 * host.nbytes / min(times) / 1e9  # the best launch, as for the arithmetic


def measure_peaks(context: Any, queue: Any, device: Any, dtypes: Sequence[str] = DTYPES,
                  settings: PeakSettings = PeakSettings()) -> Peaks:
    """All micro-benchmarks of a device (its queue must have profiling enabled). Devices
    without double precision get float32 only."""
    flops = {}
    for dt in dtypes:
        if dt == "float64" and "cl_khr_fp64" not in device.extensions:
            continue
        flops[dt] = measure_flops(context, queue, device, dt, settings)
    return Peaks(flops, measure_copy(context, queue, settings))


def peak_for(peaks: Optional[Peaks], dtype: str, unit: str) -> Optional[float]:
    """The rate to divide by: the dtype's best multiply-add rate (complex types: their
    component type's), or the copy bandwidth for a rate in GB/s."""
    if peaks is None:
        return None
    if unit == "GB/s":
        return peaks.copy or None
    real = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    r = peaks.flops.get(real)
    if not r:
        return None
    return max(r.get("fma", 0.0), r.get("mad", 0.0)) or None
