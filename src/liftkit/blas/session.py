"""A BLAS session: one device on one backend (OpenCL, or CUDA where `--device gpu` finds a
CUDA GPU), its in-order queue (`liftkit.blas.queues`), its built kernels and its profile; the
operands (NumPy arrays uploaded; pyopencl arrays on OpenCL and CuPy/PyTorch/CUDA-array-interface
arrays on CUDA used in place), futures and caller-owned workspace every operation shares.

Calls enqueue and return a `Future` at once (seed 003 §8.3.2); `.result()` waits. NumPy outputs
are downloaded after the kernels; device outputs are written in place (new ones are arrays of the
inputs' library).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from liftkit.blas.calls import CallPlans
from liftkit.blas.codelets import Kind, Variant, default_variant, fit_choice, multiples
from liftkit.blas.kernels import BlasError, Built, KernelStore
from liftkit.blas.profile import Profile, ProfileError, find_profile_any_driver
from liftkit.blas.queues import CLQueue, CUDAQueue, is_cuda_array

DTYPES = {np.dtype(t): np.dtype(t).name
          for t in (np.float32, np.float64, np.complex64, np.complex128)}


class NoProfileWarning(UserWarning):
    """No tuned profile exists for the device: default derivations run."""


class Future:
    """The pending result of an enqueued operation. `result()` waits for its events and
    returns the output (a NumPy array or scalar, or the device array written)."""

    def __init__(self, q: Any, events: Sequence[Any], finish: Callable[[], Any],
                 keep: Sequence[Any] = ()) -> None:
        self.queue = q
        self.events = [e for e in events if e is not None]
        self._finish = finish
        self._keep = list(keep)  # buffers and host arrays the enqueued commands still use
        self._value: Any = None
        self._done = False

    @property
    def event(self) -> Any:
        """The last event of the operation (an OpenCL event or a CUDA event; None when nothing
        was enqueued)."""
        return self.events[-1] if self.events else None

    def done(self) -> bool:
        return self._done or self.queue.done(self.events)

    def result(self) -> Any:
        if not self._done:
            self.queue.wait(self.events)
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
    device: Optional[Any] = None  # the device array it is (pyopencl, CuPy, PyTorch, ...)

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
        self._written: dict[str, Any] = {}  # padded buffers: the region copies write

    def buffer(self, name: str, nbytes: int, written: Any = None) -> Any:
        """The buffer `name` of at least `nbytes`; with `written`, one whose bytes outside that
        region are zero (`padded`; any events it needs are the queue's to order)."""
        if written is not None:
            return self.padded(name, nbytes, written)[0]
        q = self.session.q
        b = self._bufs.get(name)
        if b is None or q.nbytes(b) < nbytes:
            b = q.alloc(max(1, nbytes))
            self._bufs[name] = b
            self._written.pop(name, None)
        return b

    def padded(self, name: str, nbytes: int, written: Any) -> tuple[Any, list[Any]]:
        """(the buffer `name`, the events of its zeroing): a padded copy's destination, which
        calls of one shape write the same region of (`written` names it, e.g. rows, row bytes
        and pitch). Its first `nbytes` are zeroed when it is made or the region changes, not on
        every call: the margins stay zero because nothing else writes them."""
        b = self.buffer(name, nbytes)
        if self._written.get(name) == written:
            return b, []
        ev = self.session.fill_zero(b, nbytes)
        self._written[name] = written
        return b, [ev] if ev is not None else []

    @property
    def nbytes(self) -> int:
        return sum(self.session.q.nbytes(b) for b in self._bufs.values())

    def release(self) -> None:
        """Free the buffers (after the calls using them have finished)."""
        for b in self._bufs.values():
            self.session.q.release(b)
        self._bufs.clear()
        self._written.clear()


class Session:
    """liftkit.blas on one device. `device`: "cpu", "gpu", a name fragment or a Device; or give
    the `context` (and `queue`) that pyopencl arrays live in. `backend`: "auto" (CUDA for
    "gpu"/"cuda"/"cuda:N" where a CUDA GPU and driver are present, as `--device gpu` picks
    elsewhere; OpenCL otherwise), "opencl" or "cuda". `profile`: a Profile, a path, or None to
    look one up by the device's fingerprint (which names the backend). `warn=False` is for tools
    that report the profile state themselves (bench, tune): no NoProfileWarning about a missing
    profile or one tuned on another driver (an unreadable profile is still reported)."""

    def __init__(self, device: Union[str, Any, None] = None, *, context: Any = None,
                 queue: Any = None, profile: Union[Profile, str, None] = None,
                 warn: bool = True, backend: str = "auto") -> None:
        self.backend = _resolve_backend(backend, device, context)
        if self.backend == "cuda":
            self.q: Any = CUDAQueue(device if not isinstance(device, str) or
                                    device.strip().lower() not in ("gpu", "cuda") else None)
            self.device = self.q.device
            self.context = None
            self.queue = self.q.stream
        else:
            import pyopencl as cl

            from liftkit.backends.opencl.devices import Device, select_device

            if context is not None:
                cl_dev = context.devices[0]
                self.device = Device.from_cl(cl_dev.platform, cl_dev)
                self.context = context
            else:
                self.device = device if isinstance(device, Device) else select_device(device)
                self.context = cl.Context([self.device.cl_device])
            self.queue = queue if queue is not None else cl.CommandQueue(
                self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
            self.q = CLQueue(self.context, self.queue)
        self.store = KernelStore(self.q, self.device)
        if isinstance(profile, Profile):
            self.profile: Optional[Profile] = profile
        elif profile is not None:
            self.profile = Profile.load(profile)
        else:
            try:
                self.profile = find_profile_any_driver(self.device.fingerprint)
                if (warn and self.profile is not None
                        and self.profile.fingerprint != self.device.fingerprint):
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
        self._chosen: dict[Any, Any] = {}  # choose()'s answers for the current profile
        self._units: dict[np.dtype, Any] = {}  # unit()'s buffers
        self._zeros: Optional[tuple[Any, list[Any]]] = None  # zeros()'s buffer
        self._scratch: Optional[Workspace] = None
        self.device_kind = "gpu" if self.device.is_gpu else "cpu"
        # repeated calls' host path worked out once (`liftkit.blas.calls`), on both backends
        self.calls = CallPlans(self, Future)

    def __repr__(self) -> str:
        tuned = "tuned" if self.profile else "untuned"
        return f"<liftkit.blas.Session {self.device.label} ({self.backend}, {tuned})>"

    # -- kernels ------------------------------------------------------------------------------
    def choose(self, kind: Kind, sizes: dict[str, int]) -> Variant:
        """The profile's best variant for these sizes, else the default derivation (with the one
        warning that says how to tune)."""
        if self.profile is not None:
            # remembered per (kind, sizes) while the profile stays the same object: ranking the
            # profile's entries costs more than a GPU kernel launch
            key = (kind, tuple(sorted(sizes.items())))
            memo = self._chosen
            if memo.get("profile") is not self.profile or len(memo) > 1024:
                memo.clear()
                memo["profile"] = self.profile
            if key in memo:
                return memo[key]
            for k in _tuned_kinds(kind):
                v = self.profile.choose(k, sizes, multiples)
                if v is not None:
                    v = fit_choice(k, v, sizes)  # no padding the groups or NT's own kernel add
                    memo[key] = v
                    return v
        elif self._warn:
            self._warn = False
            warnings.warn(
                f"liftkit.blas: no tuned profile for {self.device.label}; default derivations "
                f"run (slower). Tune it once with `liftkit blas tune --device "
                f"{self.device_kind}` or import a profile with `liftkit blas profile import FILE`.",
                NoProfileWarning, stacklevel=_caller_level())
        return default_variant(kind, self.device_kind, sizes, self.backend)

    def kernel(self, kind: Kind, sizes: dict[str, int], variant: Optional[Variant] = None) -> Built:
        return self.store.get(kind, variant or self.choose(kind, sizes))

    def forget_choices(self) -> None:
        """Choose again from the profile (after entries were added to it)."""
        self._chosen.clear()
        if self.calls is not None:
            self.calls.clear()

    def remembered(self, key: Any) -> Any:
        """What `remember` stored under key while the profile stayed the same (plans)."""
        if self._chosen.get("profile") is not self.profile:
            return None
        return self._chosen.get(key)

    def remember(self, key: Any, value: Any) -> None:
        if self._chosen.get("profile") is not self.profile or len(self._chosen) > 1024:
            self._chosen.clear()
            self._chosen["profile"] = self.profile
        self._chosen[key] = value

    def workspace(self) -> Workspace:
        return Workspace(self)

    @property
    def scratch(self) -> Workspace:
        """The session's own workspace, which the one-call operations reuse for their padded
        and packed copies: the queue runs calls in order, so a later call's copies into it
        follow the earlier call's reads (allocating per call costs more than a small GEMM)."""
        if self._scratch is None:
            self._scratch = Workspace(self)
        return self._scratch

    def zeros(self, nbytes: int) -> tuple[Any, list[Any]]:
        """(a device buffer of at least `nbytes` zero bytes, the events its zeroing needs): one
        per session, grown on demand and never written by a kernel (inputs whose values are
        multiplied by β = 0 read it instead of being zeroed per call)."""
        have = self._zeros
        if have is None or self.q.nbytes(have[0]) < nbytes:
            size = max(4096, 1 << (max(1, nbytes) - 1).bit_length())
            buf = self.q.alloc(size)
            ev = self.q.fill_zero(buf, size)
            have = self._zeros = (buf, [ev] if ev is not None else [])
        return have

    def unit(self, dtype: np.dtype) -> Any:
        """A device buffer holding the complex pair (1, i) (the complex-through-real GEMM's
        embedding), made once per dtype."""
        units = self._units
        if dtype not in units:
            host = np.array([1, 1j], dtype)
            buf = self.q.alloc(host.nbytes)
            self.q.upload(buf, host)
            self.q.finish()
            units[dtype] = buf
        return units[dtype]

    # -- operands -----------------------------------------------------------------------------
    def operand(self, x: Any, name: str, op: str, ndim: int, dtype: Optional[np.dtype] = None,
                output: bool = False, upload: bool = True) -> Operand:
        """Check and place one array argument: a pyopencl array of this session's context is
        used in place; a NumPy array (or anything np.asarray takes) is uploaded. An output
        (`output=True`) must be a contiguous array the result can be written back to."""
        if isinstance(x, Operand):  # already placed (a library-internal second use)
            _check_dtype(op, name, x.dtype, dtype)
            return x
        cla = _pyopencl_array()
        if cla is not None and isinstance(x, cla.Array):
            if self.backend != "opencl":
                raise BlasError(f"{op}: {name} is a pyopencl array, but this session runs on "
                                f"{self.device.label} (CUDA); pass a CuPy/PyTorch array or NumPy, "
                                f"or use an OpenCL session (backend='opencl')")
            if x.context != self.context:
                raise BlasError(f"{op}: {name} lives in another OpenCL context than this "
                                f"session's ({self.device.label}); use the session of its context")
            arr_dtype, shape = np.dtype(x.dtype), tuple(x.shape)
        elif is_cuda_array(x):
            if self.backend != "cuda":
                raise BlasError(f"{op}: {name} is a GPU array (CUDA), but this session runs on "
                                f"{self.device.label} (OpenCL); use a CUDA session "
                                f"(Session('gpu') where a CUDA GPU is present) or pass NumPy")
            buf, shape, arr_dtype, order = self.q.borrow(x, name, op)
            _check_dtype(op, name, arr_dtype, dtype)
            _check_shape(op, name, shape, ndim)
            return Operand(buf, shape, order, arr_dtype, [], device=x)
        else:
            try:
                x = np.asarray(x)
            except (TypeError, ValueError) as err:
                raise BlasError(f"{op}: {name} is not an array ({err})") from None
            arr_dtype, shape = x.dtype, x.shape
        _check_dtype(op, name, arr_dtype, dtype)
        _check_shape(op, name, shape, ndim)
        if cla is not None and isinstance(x, cla.Array):
            return self._device_operand(x, name, op, shape, arr_dtype)
        order = "C" if x.flags.c_contiguous else "F" if x.flags.f_contiguous else None
        if output and (order is None or not x.flags.writeable):
            why = "read-only" if order is not None else f"a strided view (strides {x.strides})"
            raise BlasError(f"{op}: the output {name} is {why}; pass a writable contiguous array")
        if order is None:
            x = np.ascontiguousarray(x)
            order = "C"
        buf = self.q.alloc(x.nbytes)
        evs = [self.q.upload(buf, x)] if upload else []
        return Operand(buf, shape, order, arr_dtype, evs, host=x)

    def _device_operand(self, x: Any, name: str, op: str, shape: tuple[int, ...],
                        dtype: np.dtype) -> Operand:
        order = "C" if x.flags.c_contiguous else "F" if x.flags.f_contiguous else None
        if order is None:
            raise BlasError(f"{op}: {name} is a strided view (strides {x.strides}); pass a "
                            f"contiguous array (row- or column-major), e.g. {name}.copy()")
        if x.offset:
            buf = self.q.alloc(x.nbytes)
            ev = self.q.copy(buf, x.base_data, x.nbytes, src_offset=x.offset)
            return Operand(buf, shape, order, dtype, [ev], device=x)
        return Operand(x.base_data, shape, order, dtype, list(x.events), device=x)

    def output(self, like: Sequence[Operand], shape: tuple[int, ...], dtype: np.dtype,
               order: str = "C") -> Operand:
        """A fresh output in `order`: a device array of the inputs' library when an input was
        one (pyopencl on OpenCL; PyTorch or CuPy on CUDA), else a NumPy array."""
        dev = next((o.device for o in like if o.device is not None), None)
        if dev is not None:
            if self.backend == "cuda":
                arr, buf = self.q.new_array(dev, shape, dtype, order)
                return Operand(buf, shape, order, dtype, device=arr)
            import pyopencl.array as cla

            arr = cla.empty(self.queue, shape, dtype, order=order)
            return Operand(arr.base_data, shape, order, dtype, device=arr)
        host = np.empty(shape, dtype, order=order)
        return Operand(self.q.alloc(max(1, host.nbytes)), shape, order, dtype, host=host)

    def finish_output(self, out: Operand, events: list[Any]) -> tuple[list[Any], Callable[[], Any]]:
        """Events to wait for and the function returning the user's array: a NumPy output is
        downloaded (after `events`); a device output was written in place."""
        if out.device is not None:
            arr = out.device
            if events and self.backend == "opencl":
                arr.add_event(events[-1])
            return events, lambda: arr
        host = out.host
        assert host is not None
        buf = out.buf
        waits = self.q.download_later(host, buf, events)

        def finish() -> Any:
            self.q.after_download(host, buf)
            return host

        return waits, finish

    def fill_zero(self, buf: Any, nbytes: int, wait_for: Sequence[Any] = ()) -> Any:
        return self.q.fill_zero(buf, nbytes, wait_for)

    def future(self, events: Sequence[Any], finish: Callable[[], Any], keep: Sequence[Any] = ()
               ) -> Future:
        if self.backend == "cuda":  # one stream: an event after the operation's last command
            events = [self.q.call_event()]
        return Future(self.q, events, finish, keep)


def _pyopencl_array() -> Any:
    """pyopencl.array where it is imported, else None: an argument can only be a pyopencl
    array once its module is loaded, so nothing is imported here (a CUDA-only machine may lack
    pyopencl, and every operand asks)."""
    return sys.modules.get("pyopencl.array")


def _resolve_backend(backend: str, device: Any, context: Any) -> str:
    if backend not in ("auto", "opencl", "cuda"):
        raise BlasError(f"unknown backend {backend!r}: choose one of auto, opencl, cuda")
    if context is not None:
        if backend == "cuda":
            raise BlasError("an OpenCL context was given, but backend='cuda'")
        return "opencl"
    if backend != "auto":
        return backend
    if device is not None and not isinstance(device, str):
        return "cuda" if type(device).__module__.startswith("liftkit.backends.cuda") else "opencl"
    spec = (device or "").strip().lower()
    if spec in ("gpu", "cuda") or spec.startswith("cuda:"):
        from liftkit.backends.cuda import cuda_available

        if cuda_available():
            return "cuda"
    return "opencl"


def _check_shape(op: str, name: str, shape: tuple[int, ...], ndim: int) -> None:
    if len(shape) != ndim:
        what = {1: "a vector (1-D)", 2: "a matrix (2-D)"}[ndim]
        raise BlasError(f"{op}: {name} must be {what}, got shape {shape}")
    if any(s == 0 for s in shape):
        raise BlasError(f"{op}: {name} is empty (shape {shape}); every size must be ≥ 1")


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
