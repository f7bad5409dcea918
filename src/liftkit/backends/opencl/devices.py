"""Finding an OpenCL device: by kind (`cpu`, `gpu`) or by a piece of its name.

The default prefers a GPU (the papers' targets) and falls back to the CPU, which is PoCL on CI
machines. A `Device` is a plain description plus the pyopencl handle; its `fingerprint` names
the exact driver build, because a compiled binary is only valid for that.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Optional

import pyopencl as cl

from liftkit.backends.errors import BackendError


class OpenCLError(BackendError):
    """A failure of the OpenCL backend: no such device, a launch the device cannot run, a
    size that gives no work (a BackendError, hence an interpreter run-time error)."""


_KINDS = ((cl.device_type.GPU, "gpu"), (cl.device_type.CPU, "cpu"),
          (cl.device_type.ACCELERATOR, "accelerator"))


def _kind(device_type: int) -> str:
    # PoCL reports e.g. DEFAULT | CPU, so test bits rather than compare.
    for bit, name in _KINDS:
        if device_type & bit:
            return name
    return "other"


@dataclass(frozen=True)
class Device:
    """An OpenCL device and the properties the runtime checks launches against."""

    platform: str
    name: str
    driver_version: str
    type: str  # "gpu", "cpu", "accelerator" or "other"
    max_work_group_size: int
    local_mem_size: int
    max_work_item_sizes: tuple[int, ...] = ()
    cl_device: Any = field(default=None, repr=False, compare=False, hash=False)

    @property
    def label(self) -> str:
        """What users match a spec against: "platform / device"."""
        return f"{self.platform} / {self.name}"

    @property
    def fingerprint(self) -> str:
        """Identifies the device and driver build (binaries are only valid for exactly this)."""
        return f"{self.platform}|{self.name}|{self.driver_version}"

    @property
    def is_gpu(self) -> bool:
        return self.type == "gpu" and "oclgrind" not in self.label.lower()

    def describe(self) -> str:
        return (f"{self.label} ({self.type}, driver {self.driver_version}, "
                f"max work-group {self.max_work_group_size}, local memory {self.local_mem_size} B)")

    @classmethod
    def from_cl(cls, platform: Any, dev: Any) -> "Device":
        return cls(platform=platform.name.strip(), name=dev.name.strip(),
                   driver_version=dev.driver_version.strip(), type=_kind(dev.type),
                   max_work_group_size=int(dev.max_work_group_size),
                   local_mem_size=int(dev.local_mem_size),
                   max_work_item_sizes=tuple(int(s) for s in dev.max_work_item_sizes),
                   cl_device=dev)


def list_devices() -> list[Device]:
    """Every device of every OpenCL platform; empty when no platform is installed."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD installed: PLATFORM_NOT_FOUND_KHR
        return []
    out: list[Device] = []
    for p in platforms:
        try:
            devs = p.get_devices()
        except cl.Error:  # a platform without devices raises DEVICE_NOT_FOUND
            continue
        out.extend(Device.from_cl(p, d) for d in devs)
    return out


def _listing(devices: list[Device]) -> str:
    """The devices on one line, simulators called what they are (Oclgrind calls itself a GPU)."""
    if not devices:
        return "no OpenCL platform is installed (for a CPU device, install PoCL)"
    kinds = (f"{d.label} ({'simulator' if is_simulator(d) else d.type})" for d in devices)
    return "available devices: " + ", ".join(kinds)


def _no_kind(key: str, devices: list[Device]) -> str:
    """Why no device of kind `key` was found: simulators that call themselves one are named,
    with how to choose them anyway."""
    sims = [d for d in devices if is_simulator(d) and d.type == key]
    why = (f" ({sims[0].label} is a simulator, chosen only by name: --device oclgrind)"
           if sims else "")
    return f"no {key.upper()} device{why}; {_listing(devices)}"


def is_simulator(d: Device) -> bool:
    """Oclgrind simulates a device for checking, far slower than any real one."""
    return "oclgrind" in d.label.lower()


_PROBE_SOURCE = "kernel void liftkit_probe(global float* x) { x[get_global_id(0)] += 1.0f; }"


@functools.lru_cache(maxsize=None)
def _probe(fingerprint: str, cl_device: Any) -> Optional[str]:
    """None if the device builds a trivial kernel, else the driver's first line of complaint.
    Memoised per device: a driver that cannot compile for this host never will in this process."""
    try:
        ctx = cl.Context([cl_device])
        from liftkit.backends.opencl.buildlog import quiet_build

        with quiet_build("probe build"):
            cl.Program(ctx, _PROBE_SOURCE).build()
        return None
    except cl.Error as err:
        lines = [ln.strip() for ln in str(err).splitlines() if "error" in ln.lower()]
        return lines[-1] if lines else str(err).splitlines()[0]


def build_problem(d: Device) -> Optional[str]:
    """Why `d` cannot compile kernels (PoCL's LLVM 14 does not know e.g. AMD Zen 5 CPUs and fails
    every build with "unknown target CPU 'generic'"), or None when it can."""
    if d.cl_device is None:
        return None
    return _probe(d.fingerprint, d.cl_device)


def _working_first(devices: list[Device]) -> list[Device]:
    """CPU devices whose compiler works on this host before those whose compiler does not; GPUs
    are not probed (their drivers target the GPU, not the host)."""
    return sorted(devices, key=lambda d: d.type == "cpu" and build_problem(d) is not None)


def select_device(spec: Optional[str] = None) -> Device:
    """The device for `spec`: `cpu`, `gpu`, or a case-insensitive substring of
    "platform / device". None: the first GPU if any platform has one, else the first CPU.
    Simulators (Oclgrind) are never chosen by type, only by name ("oclgrind")."""
    devices = list_devices()
    if not devices:
        raise OpenCLError(_listing(devices))
    key = (spec or "").strip().lower()
    # simulators (Oclgrind reports itself as a GPU) are chosen only by name
    real = [d for d in devices if not is_simulator(d)]
    if not key:
        for kind in ("gpu", "cpu"):
            found = _working_first([d for d in real if d.type == kind])
            if found:
                return found[0]
        return (real or devices)[0]
    if key in ("cpu", "gpu", "accelerator"):
        found = _working_first([d for d in real if d.type == key])
        if not found:
            raise OpenCLError(_no_kind(key, devices))
    else:
        found = [d for d in devices if key in d.label.lower()]
        if not found:
            raise OpenCLError(f"no device matches {spec!r}; {_listing(devices)}")
    return found[0]
