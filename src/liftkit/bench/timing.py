"""Timing primitives: host medians (perf_counter), CUDA-event medians (CuPy, PyTorch), and
moving inputs and results between NumPy and the reference libraries."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np


def host_times(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds of `repeat` calls after one warm-up call (perf_counter)."""
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def cupy_times(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds of `repeat` calls after a warm-up, each between two CUDA events."""
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return out


def torch_times(fn: Callable[[], Any], repeat: int) -> list[float]:
    import torch

    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e-3)
    return out


TIMERS = {"numpy": host_times, "cupy": cupy_times, "torch": torch_times}


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def to_library(inputs: list[Any], library: str) -> list[Any]:
    """Inputs for a reference: arrays moved to the device (CuPy, torch), scalars kept."""
    if library == "numpy":
        return [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in inputs]
    if library == "cupy":
        import cupy as cp

        return [cp.asarray(x) if isinstance(x, np.ndarray) and x.ndim > 0 else x for x in inputs]
    if library == "torch":
        import torch

        return [torch.from_numpy(np.ascontiguousarray(x)).cuda()
                if isinstance(x, np.ndarray) and x.ndim > 0 else x for x in inputs]
    raise ValueError(f"unknown library {library!r}")


def to_host(x: Any) -> Any:
    """A reference's result as NumPy (tuples component-wise)."""
    if isinstance(x, (tuple, list)):
        return tuple(to_host(v) for v in x)
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy as cp

        return cp.asnumpy(x)
    if mod.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def synchronize(library: str) -> None:
    if library == "cupy":
        import cupy as cp

        cp.cuda.Device().synchronize()
    elif library == "torch":
        import torch

        torch.cuda.synchronize()


def free_device_memory() -> None:
    """Return CuPy's and torch's cached blocks between benchmarks (no-op where absent)."""
    import sys

    if "cupy" in sys.modules:
        try:
            sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001
            pass
    if "torch" in sys.modules:
        try:
            sys.modules["torch"].cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass
