"""A BLAS session: one OpenCL device, its in-order queue, its built kernels and its profile;
the operands (NumPy arrays uploaded, pyopencl arrays used in place), futures and caller-owned
workspace every operation shares.

Calls enqueue and return a `Future` at once (seed 003 §8.3.2); `.result()` waits. NumPy outputs
are downloaded by a non-blocking copy enqueued after the kernels; pyopencl outputs are written
in place.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from liftkit.backends.opencl.devices import Device, select_device
from liftkit.blas.codelets import Kind, Variant, default_variant, multiples
from liftkit.blas.kernels import BlasError, Built, KernelStore
from liftkit.blas.profile import Profile, ProfileError, find_profile_any_driver

DTYPES = {np.dtype(t): np.dtype(t).name
          for t in (np.float32, np.float64, np.complex64, np.complex128)}


class NoProfileWarning(UserWarning):
    """No tuned profile exists for the device: default derivations run."""


class Future:
    """The pending result of an enqueued operation. `result()` waits for its events and
    returns the output (a NumPy array or scalar, or the pyopencl array written)."""

    def __init__(self, events: Sequence[Any], finish: Callable[[], Any], keep: Sequence[Any] = ()
                 ) -> None:
        self.events = [e for e in events if e is not None]
        self._finish = finish
        self._keep = list(keep)  # buffers and host arrays the enqueued commands still use
        self._value: Any = None
        self._done = False

    @property
    def event(self) -> Any:
        """The last OpenCL event of the operation (None when nothing was enqueued)."""
        return self.events[-1] if self.events else None

    def done(self) -> bool:
        return self._done or all(
            e.command_execution_status == cl.command_execution_status.COMPLETE for e in self.events)

    def result(self) -> Any:
        if not self._done:
            if self.events:
                cl.wait_for_events(self.events)
            self._value = self._finish()
            self._done, self._keep = True, []
        return self._value

    def __repr__(self) -> str:
        return f"<liftkit.blas.Future {'done' if self.done() else 'pending'}>"


@dataclass
class Operand:
    """An input or output as the kernels see it: a buffer holding a contiguous array."""

    buf: Any
    shape: tuple[int, ...]
    order: str  # "C" (row-major) or "F" (column-major); 1-D arrays are "C"
    dtype: np.dtype
    events: list[Any] = field(default_factory=list)  # what must finish before it is read
    host: Optional[np.ndarray] = None  # the NumPy array it came from / goes to
    device: Optional[Any] = None  # the pyopencl array it is

    @property
    def stored(self) -> tuple[int, ...]:
        """The row-major shape of the data in the buffer (a column-major matrix is its
        transpose stored row by row)."""
        return self.shape[::-1] if self.order == "F" else self.shape


class Workspace:
    """Caller-owned device memory for packed and transposed copies (seed 003 §8.3.3): buffers
    by name, grown on demand and reused across calls (one workspace, one queue: calls using it
    run in order)."""

    def __init__(self, session: "Session") -> None:
        self.session = session
        self._bufs: dict[str, Any] = {}

    def buffer(self, name: str, nbytes: int) -> Any:
        b = self._bufs.get(name)
        if b is None or b.size < nbytes:
            b = cl.Buffer(self.session.context, cl.mem_flags.READ_WRITE, size=max(1, nbytes))
            self._bufs[name] = b
        return b

    @property
    def nbytes(self) -> int:
        return sum(b.size for b in self._bufs.values())

    def release(self) -> None:
        """Free the buffers (after the calls using them have finished)."""
        for b in self._bufs.values():
            b.release()
        self._bufs.clear()


class Session:
    """liftkit.blas on one OpenCL device. `device`: "cpu", "gpu", a name fragment or a Device;
    or give the `context` (and `queue`) that pyopencl arrays live in. `profile`: a Profile, a
    path, or None to look one up by the device's fingerprint."""

    def __init__(self, device: Union[str, Device, None] = None, *, context: Any = None,
                 queue: Any = None, profile: Union[Profile, str, None] = None,
                 warn: bool = True) -> None:
        if context is not None:
            cl_dev = context.devices[0]
            self.device = Device.from_cl(cl_dev.platform, cl_dev)
            self.context = context
        else:
            self.device = device if isinstance(device, Device) else select_device(device)
            self.context = cl.Context([self.device.cl_device])
        self.queue = queue if queue is not None else cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.store = KernelStore(self.context, self.device)
        if isinstance(profile, Profile):
            self.profile: Optional[Profile] = profile
        elif profile is not None:
            self.profile = Profile.load(profile)
        else:
            try:
                self.profile = find_profile_any_driver(self.device.fingerprint)
                if self.profile is not None and self.profile.fingerprint != self.device.fingerprint:
                    warnings.warn(
                        f"liftkit.blas: using the profile tuned for {self.profile.fingerprint} on "
                        f"driver {self.device.fingerprint.rsplit('|', 1)[-1]}; `liftkit blas tune "
                        f"--device {self.device.type}` tunes for this driver", NoProfileWarning,
                        stacklevel=2)
            except ProfileError as err:
                warnings.warn(f"liftkit.blas: ignoring the profile for {self.device.label}: {err}",
                              NoProfileWarning, stacklevel=2)
                self.profile = None
        self._warn = warn and self.profile is None
        self.device_kind = "gpu" if self.device.is_gpu else "cpu"

    def __repr__(self) -> str:
        tuned = "tuned" if self.profile else "untuned"
        return f"<liftkit.blas.Session {self.device.label} ({tuned})>"

    # -- kernels ------------------------------------------------------------------------------
    def choose(self, kind: Kind, sizes: dict[str, int]) -> Variant:
        """The profile's best variant for these sizes, else the default derivation (with the one
        warning that says how to tune)."""
        if self.profile is not None:
            for k in _tuned_kinds(kind):
                v = self.profile.choose(k, sizes, multiples)
                if v is not None:
                    return v
        elif self._warn:
            self._warn = False
            warnings.warn(
                f"liftkit.blas: no tuned profile for {self.device.label}; default derivations "
                f"run (slower). Tune it once with `liftkit blas tune --device "
                f"{self.device_kind}` or import a profile with `liftkit blas profile import FILE`.",
                NoProfileWarning, stacklevel=_caller_level())
        return default_variant(kind, self.device_kind, sizes)

    def kernel(self, kind: Kind, sizes: dict[str, int], variant: Optional[Variant] = None) -> Built:
        return self.store.get(kind, variant or self.choose(kind, sizes))

    def workspace(self) -> Workspace:
        return Workspace(self)

    # -- operands -----------------------------------------------------------------------------
    def operand(self, x: Any, name: str, op: str, ndim: int, dtype: Optional[np.dtype] = None,
                output: bool = False, upload: bool = True) -> Operand:
        """Check and place one array argument: a pyopencl array of this session's context is
        used in place; a NumPy array (or anything np.asarray takes) is uploaded. An output
        (`output=True`) must be a contiguous array the result can be written back to."""
        if isinstance(x, Operand):  # already placed (a library-internal second use)
            _check_dtype(op, name, x.dtype, dtype)
            return x
        if isinstance(x, cla.Array):
            if x.context != self.context:
                raise BlasError(f"{op}: {name} lives in another OpenCL context than this "
                                f"session's ({self.device.label}); use the session of its context")
            arr_dtype, shape = np.dtype(x.dtype), tuple(x.shape)
        else:
            try:
                x = np.asarray(x)
            except (TypeError, ValueError) as err:
                raise BlasError(f"{op}: {name} is not an array ({err})") from None
            arr_dtype, shape = x.dtype, x.shape
        _check_dtype(op, name, arr_dtype, dtype)
        if len(shape) != ndim:
            what = {1: "a vector (1-D)", 2: "a matrix (2-D)"}[ndim]
            raise BlasError(f"{op}: {name} must be {what}, got shape {shape}")
        if any(s == 0 for s in shape):
            raise BlasError(f"{op}: {name} is empty (shape {shape}); every size must be ≥ 1")
        if isinstance(x, cla.Array):
            return self._device_operand(x, name, op, shape, arr_dtype)
        order = "C" if x.flags.c_contiguous else "F" if x.flags.f_contiguous else None
        if output and (order is None or not x.flags.writeable):
            why = "read-only" if order is not None else f"a strided view (strides {x.strides})"
            raise BlasError(f"{op}: the output {name} is {why}; pass a writable contiguous array")
        if order is None:
            x = np.ascontiguousarray(x)
            order = "C"
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=x.nbytes)
        evs = [cl.enqueue_copy(self.queue, buf, x, is_blocking=False)] if upload else []
        return Operand(buf, shape, order, arr_dtype, evs, host=x)

    def _device_operand(self, x: Any, name: str, op: str, shape: tuple[int, ...],
                        dtype: np.dtype) -> Operand:
        order = "C" if x.flags.c_contiguous else "F" if x.flags.f_contiguous else None
        if order is None:
            raise BlasError(f"{op}: {name} is a strided view (strides {x.strides}); pass a "
                            f"contiguous array (row- or column-major), e.g. {name}.copy()")
        if x.offset:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=x.nbytes)
            ev = cl.enqueue_copy(self.queue, buf, x.base_data, src_offset=x.offset,
                                 byte_count=x.nbytes)
            return Operand(buf, shape, order, dtype, [ev], device=x)
        return Operand(x.base_data, shape, order, dtype, list(x.events), device=x)

    def output(self, like: Sequence[Operand], shape: tuple[int, ...], dtype: np.dtype) -> Operand:
        """A fresh output: a pyopencl array when an input was one, else a NumPy array."""
        if any(o.device is not None for o in like):
            arr = cla.empty(self.queue, shape, dtype)
            return Operand(arr.base_data, shape, "C", dtype, device=arr)
        host = np.empty(shape, dtype)
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(1, host.nbytes))
        return Operand(buf, shape, "C", dtype, host=host)

    def finish_output(self, out: Operand, events: list[Any]) -> tuple[list[Any], Callable[[], Any]]:
        """Events to wait for and the function returning the user's array: a NumPy output is
        downloaded (non-blocking, after `events`); a device output was written in place."""
        if out.device is not None:
            arr = out.device
            if events:
                arr.add_event(events[-1])
            return events, lambda: arr
        host = out.host
        assert host is not None
        ev = cl.enqueue_copy(self.queue, host, out.buf, is_blocking=False,
                             wait_for=events or None)
        return events + [ev], lambda: host

    def fill_zero(self, buf: Any, nbytes: int, wait_for: Sequence[Any] = ()) -> Any:
        return cl.enqueue_fill_buffer(self.queue, buf, np.uint8(0), 0, nbytes,
                                      wait_for=list(wait_for) or None)


def _tuned_kinds(kind: Kind) -> list[Kind]:
    """Where a profile's choice for `kind` may come from: the kind itself, then for a complex
    kernel that conjugates (layout letters R, C) the same kernel without conjugation, which
    tuning measures (the derivations do not depend on the conjugation)."""
    plain = kind.layout.replace("R", "N").replace("C", "T")
    return [kind] if plain == kind.layout else [kind, Kind(kind.op, kind.dtype, plain)]


def _caller_level() -> int:
    """warnings.warn's stacklevel of the first frame outside liftkit.blas (the user's call)."""
    import sys

    frame, level = sys._getframe(1), 1
    pkg = __name__.rsplit(".", 1)[0]
    while frame is not None and frame.f_globals.get("__name__", "").startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def _check_dtype(op: str, name: str, got: np.dtype, want: Optional[np.dtype]) -> None:
    if got not in DTYPES:
        to = "complex64) or .astype(np.complex128" if got.kind == "c" else \
            "float32) or .astype(np.float64"
        raise BlasError(f"{op}: {name} has dtype {got}; liftkit.blas computes in float32, "
                        f"float64, complex64 and complex128 (convert it with .astype(np.{to}))")
    if want is not None and got != want:
        raise BlasError(f"{op}: {name} is {got} but the other operands are {want}; convert it "
                        f"(e.g. {name}.astype(np.{want}))")
