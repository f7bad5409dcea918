"""liftkit.runtime: the task runtime of seed 003 ch. 7 (VRruntime) over OpenCL or CUDA.

    from liftkit.runtime import Runtime, Kernel
    rt = Runtime()                       # CUDA where present, else OpenCL (PoCL's CPU in CI)
    x = rt.submit(np.arange(8.0))        # an array variable; the host copy stays where it is
    ev = rt.launch(kernel, (8,), [x, 2.0], reads=[x], writes=[x])   # returns at once
    rt.read(x)                           # blocks on the tasks writing x, downloads once
    liftkit.runtime.stats()              # transfers, copies, evictions, CPU fallbacks, overlap

Transfers run on a queue (stream) of their own beside the compute queues; ``Runtime(queues=N)``
or the device profile ``liftkit runtime calibrate`` writes sets how many compute queues.

GPU sections of ``@jit`` functions (``with liftkit.gpu():``) run through the process's default
runtime (:func:`default_runtime`; ``LIFTKIT_RUNTIME_BACKEND`` = auto/opencl/cuda and
``LIFTKIT_RUNTIME_DEVICE`` choose it, ``LIFTKIT_RUNTIME_MEMORY`` caps its device memory).
"""

from __future__ import annotations

import os
import threading
from typing import Optional

from .core import STAT_KEYS, Runtime, RuntimeError_
from .devices import CUDADevice, OpenCLDevice, RuntimeBackendError, open_device
from .tables import ArrayVar, CpuForm, Kernel, Whole


class _Default:
    """Holds the process's default runtime (created on first use, replaceable)."""

    def __init__(self) -> None:
        self.runtime: Optional[Runtime] = None
        self.lock = threading.Lock()


_DEFAULT = _Default()


def default_runtime() -> Runtime:
    """The runtime GPU sections use, created on first use from the environment."""
    with _DEFAULT.lock:
        if _DEFAULT.runtime is None:
            mem = os.environ.get("LIFTKIT_RUNTIME_MEMORY")
            _DEFAULT.runtime = Runtime(os.environ.get("LIFTKIT_RUNTIME_BACKEND", "auto"),
                                       os.environ.get("LIFTKIT_RUNTIME_DEVICE") or None,
                                       int(mem) if mem else None)
        return _DEFAULT.runtime


def set_default_runtime(rt: Optional[Runtime]) -> Optional[Runtime]:
    """Make ``rt`` the default runtime (None: the next use creates one); the previous one."""
    with _DEFAULT.lock:
        old, _DEFAULT.runtime = _DEFAULT.runtime, rt
        return old


def stats() -> dict[str, int]:
    """The default runtime's statistics (all zero before it is first used)."""
    rt = _DEFAULT.runtime
    return rt.stats() if rt is not None else {k: 0 for k in STAT_KEYS}


def reset_stats() -> None:
    if _DEFAULT.runtime is not None:
        _DEFAULT.runtime.reset_stats()


__all__ = ["Runtime", "Kernel", "CpuForm", "ArrayVar", "Whole", "RuntimeError_", "RuntimeBackendError",
           "OpenCLDevice", "CUDADevice", "open_device", "default_runtime", "set_default_runtime",
           "stats", "reset_stats"]

