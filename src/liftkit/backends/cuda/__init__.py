"""The CUDA backend: CUDA C kernels (the code generator's CUDA dialect) compiled with NVRTC
(cuda-python's `cuda.bindings.nvrtc`, the `nvidia-cuda-nvrtc` wheel), cached in memory and on
disk, launched through `cuda.core`, timed with CUDA events; GPU arrays of CuPy, PyTorch or any
`__cuda_array_interface__`/DLPack producer go in and out without copies.

Without a GPU or driver, `compile_cuda` still turns CUDA sources into PTX (CI checks every
generated kernel that way); `list_devices()` is then empty.
"""

from liftkit.backends.cuda.cache import CacheStats, ModuleCache, module_key
from liftkit.backends.cuda.devices import Device, cuda_available, list_devices, select_device
from liftkit.backends.cuda.nvrtc import CUDAError, NVRTCError, arch_for, compile_cuda, nvrtc_version
from liftkit.backends.cuda.runner import CUDARunner, run_cuda

__all__ = ["CacheStats", "ModuleCache", "module_key", "Device", "cuda_available", "list_devices",
           "select_device", "CUDAError", "NVRTCError", "arch_for", "compile_cuda", "nvrtc_version",
           "CUDARunner", "run_cuda"]
