"""Finding a CUDA device: by ordinal (`0`, `cuda:1`), by kind (`gpu`), or by a piece of its name.

A `Device` is a plain description read through the driver API (`cuda.bindings.driver`); its
`fingerprint` names the GPU, its compute capability and the driver, because a built cubin is
only valid for exactly that. Where no NVIDIA driver is installed there are no devices (and the
CUDA source can still be compiled to PTX with NVRTC).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

from liftkit.backends.cuda.nvrtc import CUDAError


@dataclass(frozen=True)
class Device:
    """A CUDA device and the limits launches are checked against."""

    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    driver_version: int  # e.g. 13000 for CUDA 13.0
    multiprocessors: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_memory_per_block: int  # without opting in to more
    total_memory: int
    type: str = "gpu"
    shared_memory_optin: int = 0  # per block for a kernel that opts in (dynamic shared memory)

    @property
    def platform(self) -> str:
        return "CUDA"

    @property
    def label(self) -> str:
        return f"CUDA / {self.name} (device {self.ordinal})"

    @property
    def fingerprint(self) -> str:
        cc = ".".join(map(str, self.compute_capability))
        return f"cuda|{self.name}|sm{cc}|driver{self.driver_version}"

    @property
    def is_gpu(self) -> bool:
        return True

    # what the OpenCL device reports under these names (bench and CLI read either kind)
    @property
    def max_work_group_size(self) -> int:
        return self.max_threads_per_block

    @property
    def local_mem_size(self) -> int:
        return self.shared_memory_per_block

    def describe(self) -> str:
        cc = ".".join(map(str, self.compute_capability))
        return (f"{self.label} (compute capability {cc}, {self.multiprocessors} SMs, driver "
                f"{self.driver_version // 1000}.{self.driver_version % 1000 // 10}, "
                f"{self.total_memory / 2**30:.0f} GiB)")


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def check(result: Any, what: str) -> Any:
    """The values of a driver call's result tuple; a CUDAError naming the call otherwise."""
    driver = _driver()
    err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(err)
        detail = text.decode() if isinstance(text, bytes) else str(err)
        raise CUDAError(f"CUDA {what} failed: {detail} ({getattr(err, 'name', err)})")
    return rest[0] if len(rest) == 1 else rest


@functools.cache
def _driver_problem() -> Optional[str]:
    """None where the driver initialises, else why not (no driver, no device)."""
    try:
        driver = _driver()
        err = driver.cuInit(0)
        err = err[0] if isinstance(err, tuple) else err
        if err != driver.CUresult.CUDA_SUCCESS:
            return f"the CUDA driver did not initialise ({getattr(err, 'name', err)})"
        return None
    except ImportError as err:
        return f"cuda-python is not installed ({err})"
    except Exception as err:  # noqa: BLE001 - libcuda missing: cuda.pathfinder raises its own type
        return f"no NVIDIA driver ({str(err).splitlines()[0] if str(err) else type(err).__name__})"


@functools.cache
def list_devices() -> tuple[Device, ...]:
    """Every CUDA device; empty where there is no driver or no GPU."""
    if _driver_problem() is not None:
        return ()
    driver = _driver()
    attr = driver.CUdevice_attribute
    count = check(driver.cuDeviceGetCount(), "device count")
    version = check(driver.cuDriverGetVersion(), "driver version")
    out = []
    for k in range(count):
        dev = check(driver.cuDeviceGet(k), "device query")

        def get(a: Any) -> int:
            return int(check(driver.cuDeviceGetAttribute(a, dev), "device attribute query"))

        raw = check(driver.cuDeviceGetName(256, dev), "device name")
        name = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
        out.append(Device(
            ordinal=k, name=name.strip(),
            compute_capability=(get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            driver_version=int(version),
            multiprocessors=get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_threads_per_block=get(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            max_block_dims=(get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                            get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                            get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)),
            max_grid_dims=(get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                           get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                           get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)),
            shared_memory_per_block=get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
            total_memory=int(check(driver.cuDeviceTotalMem(dev), "memory query")),
            shared_memory_optin=get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)))
    return tuple(out)


def cuda_available() -> bool:
    return bool(list_devices())


def select_device(spec: Optional[str] = None) -> Device:
    """The device for `spec`: None, `gpu` or `cuda` (the first), an ordinal (`1`, `cuda:1`), or a
    case-insensitive piece of its name (`h100`)."""
    devices = list_devices()
    if not devices:
        raise CUDAError(f"no CUDA device: {_driver_problem() or 'the driver reports no GPU'}")
    key = (spec or "").strip().lower()
    if key in ("", "gpu", "cuda"):
        return devices[0]
    if key.startswith("cuda:"):
        key = key[5:]
    if key.isdigit():
        k = int(key)
        if k < len(devices):
            return devices[k]
    else:
        found = [d for d in devices if key in d.name.lower()]
        if found:
            return found[0]
    listing = ", ".join(f"{k}: {d.describe()}" for k, d in enumerate(devices))
    raise CUDAError(f"no CUDA device matches {spec!r}; available devices: {listing}")
