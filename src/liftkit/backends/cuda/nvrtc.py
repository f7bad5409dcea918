"""CUDA C to PTX and cubin with NVRTC (cuda-python's `cuda.bindings.nvrtc`, the library from the
`nvidia-cuda-nvrtc` wheel): no GPU and no driver needed, so CI checks every generated kernel.

Kernels are built for the device's own architecture (`sm_90a` on Hopper: the arch-specific
target that keeps Hopper-only instructions available) as a cubin, which the driver loads
without a JIT step; a newer NVRTC than the driver is then no problem (a PTX would need a driver
that reads its PTX version). `--ptx` output and the device-less checks use PTX.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Sequence

from liftkit.backends.errors import BackendError

# warnings that generated code triggers by design: a declared but unused variable (a work-item
# id the simplified body no longer reads, a buffer an unrolled loop does not touch)
QUIET = ("-diag-suppress=177,550",)
STD = "-std=c++17"


class CUDAError(BackendError):
    """A failure of the CUDA backend: no CUDA device or driver, a launch the device cannot run,
    an input array of the wrong type, shape or device."""


class NVRTCError(CUDAError):
    """NVRTC rejected a kernel; the message carries its log."""


@dataclass(frozen=True)
class NVRTCOutput:
    ptx: str
    cubin: Optional[bytes]  # None when compiled for a virtual architecture (compute_XX)
    log: str


def _nvrtc():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvrtc
    except ImportError as err:
        raise CUDAError("the CUDA backend needs cuda-python and NVRTC: pip install cuda-python "
                        f"nvidia-cuda-nvrtc ({err})") from None
    return nvrtc


def _check(result: tuple, what: str) -> tuple:  # type: ignore[type-arg]
    nvrtc = _nvrtc()
    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CUDAError(f"NVRTC {what} failed: {result[0].name}")
    return result[1:]


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library in use; raises CUDAError when there is none."""
    try:
        major, minor = _check(_nvrtc().nvrtcVersion(), "version query")
    except CUDAError:
        raise
    except Exception as err:  # noqa: BLE001 - the library itself is missing: say so
        raise CUDAError(f"NVRTC is not installed (pip install nvidia-cuda-nvrtc): {err}") from None
    return int(major), int(minor)


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """The real architectures this NVRTC can build for, e.g. (75, 80, ..., 90, 100, 120)."""
    (archs,) = _check(_nvrtc().nvrtcGetSupportedArchs(), "architecture query")
    return tuple(int(a) for a in archs)


def arch_for(compute_capability: tuple[int, int]) -> str:
    """The `-arch` for a device: `sm_90a` for 9.0 (arch-specific features from Hopper on),
    `sm_86` for 8.6; a device newer than NVRTC knows gets NVRTC's newest PTX target, which the
    driver compiles."""
    cc = compute_capability[0] * 10 + compute_capability[1]
    archs = supported_archs()
    if cc in archs:
        return f"sm_{cc}a" if compute_capability[0] >= 9 else f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:
        raise CUDAError(f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot build for compute "
                        f"capability {compute_capability[0]}.{compute_capability[1]} (it knows "
                        f"{', '.join(map(str, archs))})")
    return f"compute_{max(older)}"


def compile_cuda(source: str, arch: str, options: Sequence[str] = (), name: str = "kernel.cu"
                 ) -> NVRTCOutput:
    """Compile one translation unit; `arch` as `sm_90a` (PTX and cubin) or `compute_90a` (PTX
    only). An NVRTC error raises NVRTCError with NVRTC's log (which quotes the offending lines)."""
    nvrtc = _nvrtc()
    nvrtc_version()
    (prog,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                     "program creation")
    try:
        opts = [f"-arch={arch}", STD, *QUIET, *options]
        result = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log query")
        log_buf = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log_buf), "log query")
        log = log_buf.rstrip(b"\0 ").decode(errors="replace").strip()
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NVRTCError(f"NVRTC could not compile {name} for {arch}:\n{log or '(no log)'}")
        (size,) = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX query")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX query")
        cubin: Optional[bytes] = None
        if arch.startswith("sm_"):
            (size,) = _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin query")
            buf = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, buf), "cubin query")
            cubin = bytes(buf)
        return NVRTCOutput(ptx.rstrip(b"\0").decode(), cubin, log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
