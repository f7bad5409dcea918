"""The OpenCL backend: device selection, a kernel build cache and a runner for compiled
pipelines (pyopencl; PoCL provides a CPU device where no GPU driver is installed, Intel's CPU
runtime where PoCL's compiler does not know the CPU)."""

from liftkit.backends.opencl.icd import register_pip_runtimes

register_pip_runtimes()  # before any platform query: the ICD loader reads its list once


from liftkit.backends.opencl.cache import (
    BuildError, CacheStats, CompilerCrash, KernelCache, cache_key, default_cache_dir,
)
from liftkit.backends.opencl.devices import Device, OpenCLError, list_devices, select_device
from liftkit.backends.opencl.runner import Launch, OpenCLRunner, RunInfo, run_opencl

__all__ = ["BuildError", "CacheStats", "CompilerCrash", "KernelCache", "cache_key", "default_cache_dir", "Device",
           "OpenCLError", "list_devices", "select_device", "Launch", "OpenCLRunner", "RunInfo",
           "run_opencl"]
