"""The task runtime's tables (seed 003 §7.2): array variables, device buffers, events; and the
kernel a task launches.

These are the runtime's bookkeeping records, mutated as tasks are enqueued and finish (the IR
stays immutable; the state of memory does not)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import numpy as np


class RuntimeError_(Exception):
    """Misuse of the runtime (an unknown or released variable)."""


@dataclass(frozen=True)
class Kernel:
    """A kernel a task launches, with its source in each C dialect it can be built from
    ("opencl" is needed for the CPU fallback). Array arguments are passed as two parameters:
    the buffer (``global T*`` / ``T*``) and the element offset of the array in it (``long``)."""
    name: str
    sources: Mapping[str, str]
    dynamic_shared: int = 0  # CUDA: bytes of dynamic shared memory a launch gives (> 48 KB)
    cpu: Optional["CpuForm"] = None  # what the CPU fallback runs when there is no OpenCL source

    def source(self, dialect: str) -> str:
        try:
            return self.sources[dialect]
        except KeyError:
            raise ValueError(f"kernel {self.name} has no {dialect} source") from None


@dataclass(frozen=True)
class CpuForm:
    """The OpenCL C kernel the CPU fallback runs for a CUDA-only kernel (cp.async, tensor
    cores): another derivation of the same program, taking the same arguments in the same
    order, with its own geometry (its tiles differ). ``args``: the positions of the launch's
    arguments the twin takes (None: all of them): a CUDA schedule's scratch buffers (a split
    tail's flags and partial sums) have no place in the twin."""
    name: str
    source: str
    global_size: tuple
    local_size: Optional[tuple]
    args: Optional[tuple[int, ...]] = None


@dataclass
class Buffer:
    """A row of the device buffer table (§7.2.2): one device allocation and the host memory it
    mirrors (byte range ``[lo, lo + nbytes)``; ``lo`` None for device-only data), which copy
    holds the freshest data, and the tasks that read or write it."""
    id: int
    nbytes: int
    lo: Optional[int]
    host: Optional[np.ndarray]          # uint8 view of the host memory (or an owned copy)
    owners: list = field(default_factory=list)  # what keeps the host memory alive
    registered: bool = False            # the host range is the user's memory (range registry)
    handle: Any = None                  # the device allocation, None when not resident
    borrowed: bool = False              # device memory of CuPy/PyTorch: never freed or evicted
    host_valid: bool = False
    dev_valid: bool = False
    readers: list = field(default_factory=list)   # event ids
    writers: list = field(default_factory=list)
    last_use: int = 0
    vars: set = field(default_factory=set)

    @property
    def hi(self) -> int:
        return (self.lo or 0) + self.nbytes


@dataclass
class ArrayVar:
    """A row of the array variable table (§7.2.1): which buffer holds the array, where in it
    (byte offset of element 0, byte strides), its shape and dtype and the copy-on-write flag
    (the tasks that may read or write it are its buffer's readers and writers). Users hold
    these as handles."""
    id: int
    buffer: int
    offset: int
    shape: tuple
    strides: tuple
    dtype: np.dtype
    cow_of: Optional[int] = None        # a deferred copy of that variable (§7.3.2)
    key: Any = None                     # (address, shape, strides, dtype) when attached from host
    refs: int = 1                       # attachments not yet released

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def extent(self) -> tuple[int, int]:
        """Bytes [lo, hi) of the buffer the array touches, relative to element 0."""
        return extent_of(self.shape, self.strides, self.dtype.itemsize)

    def __repr__(self) -> str:
        return f"ArrayVar({self.id}, shape={self.shape}, dtype={self.dtype.name})"


@dataclass(frozen=True)
class Whole:
    """A kernel argument that is an array variable's buffer alone, for kernels that index from
    the start of their buffers (Lift's); the array must begin at the buffer's first byte."""
    var: ArrayVar


@dataclass(slots=True)
class EventRow:
    """A row of the event table (§7.2.3): the backend's event of a task and what it touched;
    ``keep`` holds host memory an asynchronous upload still reads; ``queue`` is the compute
    queue it ran on (-1: the transfer queue)."""
    id: int
    event: Any
    task: str
    reads: tuple = ()
    writes: tuple = ()
    keep: list = field(default_factory=list)
    queue: int = -1


@dataclass(eq=False, slots=True)
class LaunchPlan:
    """One kernel's launch on the same arrays, again and again (a loop in a GPU section): what
    ``Runtime.launch`` works out from its arrays (their rows and buffers, the argument list
    with scalar slots, the built kernel), kept while the runtime's tables keep their shape
    (``epoch``: any variable made or released, buffer allocated, freed, merged, evicted or
    copied on write invalidates it; -1: never valid). Only its scalars change per launch."""
    kernel: Kernel
    reads: tuple
    writes: tuple
    over: tuple
    nargs: int
    epoch: int = -1
    dead: bool = False    # it cannot take the short path (see Runtime._fill): never again
    misses: int = 0       # times the tables changed shape between two of its launches
    tried: bool = False   # worked out before its first launch
    built: Any = None
    bufs: tuple = ()
    wbufs: frozenset = frozenset()
    whole: frozenset = frozenset()
    kargs: tuple = ()
    scalars: tuple = ()   # (position in args, position in the kernel's arguments)
    rd_ids: tuple = ()
    wr_ids: tuple = ()
    rd_bufs: tuple = ()   # buffers the task only reads (their reader lists get it)
    vals: Optional[tuple] = None  # kargs as the device's launch_values takes them (CUDA)
    geom: Any = None      # the global size ``config`` was made for
    config: Any = None    # the device's launch configuration for ``geom``
    packed: Any = None    # the device's packed launch for ``geom`` (CUDA's ``pack``)
    packs: bool = True    # False once the driver refused this plan's packed launch


def extent_of(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    """Bytes [lo, hi) an array of ``shape`` and byte ``strides`` touches, relative to element 0
    (a plain loop: this runs per attach and per launch)."""
    if 0 in shape:
        return 0, 0
    lo, hi = 0, itemsize
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi


def c_strides(shape: tuple, itemsize: int) -> tuple:
    """Byte strides of a C-ordered array of `shape` (an empty dimension counts as length 1)."""
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))
