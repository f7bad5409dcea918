"""How many blocks of a kernel a multiprocessor holds at once (the CUDA occupancy calculation),
from the device's per-multiprocessor limits as the driver reports them.

The tuner needs it for a tile kernel's `slots` (multiprocessors × resident blocks: the width of
one wave of tiles, issue 12's split tail). A kernel's register count is only known after NVRTC;
a `__launch_bounds__(threads, b)` bound caps it at what b resident blocks leave each thread
(`register_cap`), so where that cap is below the ISA's 255 the registers limit the blocks to
exactly b when the kernel uses its cap (fewer registers can only hold more blocks, which leaves
the split tail covering fewer tiles than it could: slower, never wrong).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from liftkit.backends.cuda.nvrtc import CUDAError

MAX_REGISTERS_PER_THREAD = 255
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
REGISTER_STEP = 8  # a launch bound's register cap is a multiple of 8
SHARED_UNIT = 128  # shared memory is allocated per block in units of 128 bytes
WARP = 32


@dataclass(frozen=True)
class SMLimits:
    """A device's multiprocessor count and what one multiprocessor holds."""

    multiprocessors: int
    registers: int  # 32-bit registers per multiprocessor
    shared: int  # bytes of shared memory per multiprocessor
    threads: int  # resident threads per multiprocessor
    blocks: int  # resident blocks per multiprocessor
    reserved_shared: int = 0  # bytes the system reserves per block (1 KiB on sm_80+)


def sm_limits(ordinal: int = 0, driver: Optional[Any] = None) -> SMLimits:
    """The limits of CUDA device `ordinal` read through the driver API (`driver`: the
    `cuda.bindings.driver` module by default; tests pass a stub with the same calls)."""
    if driver is None:
        from cuda.bindings import driver
    attr = driver.CUdevice_attribute

    def value(result: Any, what: str) -> Any:
        err, *rest = result
        if err != driver.CUresult.CUDA_SUCCESS:
            raise CUDAError(f"CUDA {what} failed ({getattr(err, 'name', err)})")
        return rest[0]

    dev = value(driver.cuDeviceGet(ordinal), "device query")

    def get(name: str) -> int:
        return int(value(driver.cuDeviceGetAttribute(getattr(attr, name), dev), name))

    return SMLimits(
        multiprocessors=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        registers=get("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR"),
        shared=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        threads=get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
        blocks=get("CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR"),
        reserved_shared=get("CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK"))


def _warps(threads: int) -> int:
    return -(-threads // WARP)


def register_cap(limits: SMLimits, threads: int, bound: int) -> int:
    """The registers per thread `__launch_bounds__(threads, bound)` allows the compiler."""
    per_thread = limits.registers // (max(1, bound) * _warps(threads) * WARP)
    return min(MAX_REGISTERS_PER_THREAD, per_thread // REGISTER_STEP * REGISTER_STEP)


def resident_blocks(limits: SMLimits, threads: int, registers: int, shared: int) -> int:
    """Blocks of `threads` threads using `registers` per thread and `shared` bytes of shared
    memory that one multiprocessor holds at once (0: none fits)."""
    warps = _warps(threads)
    per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = limits.registers // (per_warp * warps) if registers else limits.blocks
    per_block = -(-(shared + limits.reserved_shared) // SHARED_UNIT) * SHARED_UNIT
    by_shared = limits.shared // per_block if per_block else limits.blocks
    return max(0, min(by_registers, by_shared, limits.threads // (warps * WARP), limits.blocks))


def bounded_slots(limits: SMLimits, threads: int, shared: int, bound: int) -> Optional[int]:
    """Multiprocessors × resident blocks of a kernel built with `__launch_bounds__(threads,
    bound)`, where the bound fixes the count: its register cap below the ISA's, and at that
    cap exactly `bound` blocks resident (shared memory, threads and blocks allowing); None
    where it does not (the count then depends on what NVRTC makes of the kernel)."""
    cap = register_cap(limits, threads, bound)
    if cap >= MAX_REGISTERS_PER_THREAD or cap == 0:
        return None
    if resident_blocks(limits, threads, cap, shared) != bound:
        return None
    return limits.multiprocessors * bound
