"""A NumPy stand-in for the few CuPy calls compare.py makes, for its dry run on the CPU device
(run.sh with DRY=1 puts this folder first on PYTHONPATH; never on the GPU): arrays are NumPy
arrays, events read the host clock after the device's queue is drained by `.result()`."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy import abs, complex128, empty, float32, float64, full, matmul, max  # noqa: F401


class _Event:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass


class _Device:
    def synchronize(self) -> None:
        pass


class _Pool:
    def free_all_blocks(self) -> None:
        pass


def _elapsed_ms(start: _Event, end: _Event) -> float:
    return (end.t - start.t) * 1e3


random = SimpleNamespace(random_sample=lambda shape, dtype=np.float64:
                         np.random.default_rng(0).random(shape, dtype=dtype))
cuda = SimpleNamespace(
    Event=_Event, Device=_Device, get_current_stream=lambda: None,
    get_elapsed_time=_elapsed_ms,
    runtime=SimpleNamespace(getDeviceProperties=lambda k: {"name": b"dry run: CPU device"}))


def get_default_memory_pool() -> _Pool:
    return _Pool()
