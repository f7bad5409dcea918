"""Which backend runs compiled programs: OpenCL or CUDA, by name, or picked for a device.

`--device gpu` with no backend named picks CUDA where a CUDA GPU and driver are present (NVIDIA's
own route to its GPUs), OpenCL otherwise; every other device spec (cpu, a platform name) is an
OpenCL one. Callers say which they used.
"""

from __future__ import annotations

from typing import Any, Optional

COMPILED = ("opencl", "cuda")


def resolve_backend(backend: str, device: Optional[str]) -> str:
    """"opencl" or "cuda" for `backend` in ("auto", "opencl", "cuda") and a device spec."""
    if backend in COMPILED:
        return backend
    if backend != "auto":
        raise ValueError(f"unknown backend {backend!r}: choose one of auto, {', '.join(COMPILED)}")
    if (device or "").strip().lower() in ("gpu", "cuda"):
        from liftkit.backends.cuda import cuda_available

        if cuda_available():
            return "cuda"
    return "opencl"


def make_runner(backend: str, device: Optional[str]) -> Any:
    """A runner (OpenCLRunner or CUDARunner) for a resolved backend name and a device spec."""
    if backend == "cuda":
        from liftkit.backends.cuda import CUDARunner

        return CUDARunner(device)
    from liftkit.backends.opencl import OpenCLRunner

    return OpenCLRunner(device)
