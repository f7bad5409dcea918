"""Call plans: the CUDA host path of a repeated liftkit.blas call, worked out once.

A GPU kernel at small sizes runs for less time than Python takes to check operands, pick a
derivation, pad, pack arguments and configure a launch. The first call of a kind — operation,
flags, and per operand its array type, shape, dtype, strides and device — runs the general
path (which checks everything and reports bad input in one line) and then stores a `CallPlan`:
the kernels' handles and launch configurations, each launch's argument list with the places
where this call's pointers, scalars and workspace buffers go. A repeat call reads its operands'
pointers, fills them in and launches; its future is one re-recorded event.

A plan holds the steps the general path enqueued for its kind — launches, and the clears and
2-D copies of padding — with the call's own values in slots; kinds the plans do not cover are
remembered as "general" and keep taking the general path. The plans live in
the session (an explicit cache, cleared with the session's choices), so a new profile or a
forgotten choice makes new ones.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional, Sequence

import numpy as np

from liftkit.blas.kernels import BlasError, Built

# what a launch argument is filled with on each call, by slot: an operand's pointer (its index
# among the call's operands), a scalar, or a workspace buffer fetched by name (the workspace
# may grow it between calls)
Slot = int


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a plan: cuda.core's configuration, the kernel, the argument list
    (sizes filled in) and where each call's values go."""

    step: ClassVar[str] = "launch"
    name: str
    config: Any
    handle: Any
    args: tuple[Any, ...]
    slots: tuple[tuple[int, Slot], ...]  # (argument position, slot)


@dataclass(frozen=True)
class Clear:
    """Zero `nbytes` at a slot's buffer (a padded copy's margins; C before α·P + 0·C)."""

    step: ClassVar[str] = "clear"
    slot: Slot
    nbytes: int


@dataclass(frozen=True)
class Copy:
    """`rows` rows of `row_bytes` from slot `src` (rows `src_pitch` bytes apart) to slot `dst`
    (rows `dst_pitch` apart): padding an operand, compacting a padded result."""

    step: ClassVar[str] = "copy"
    dst: Slot
    src: Slot
    rows: int
    row_bytes: int
    src_pitch: int
    dst_pitch: int


def pad_region(have: tuple[int, int], need: tuple[int, int], item: int) -> tuple[int, ...]:
    """What a padding copy writes of its destination (rows, row bytes, pitch): the key under
    which a workspace keeps that destination's margins zero (`Workspace.padded`)."""
    return (have[0], have[1] * item, need[1] * item)


def pad_copy(dst: Slot, src: Slot, have: tuple[int, int], need: tuple[int, int], item: int
             ) -> "Copy":
    """A row-major have[0]×have[1] matrix into the top-left of a need[0]×need[1] one whose
    margins the workspace keeps zero (the temp's third field, `pad_region`): no clear per call."""
    return Copy(dst, src, have[0], have[1] * item, have[1] * item, need[1] * item)


def pad_steps(dst: Slot, src: Slot, have: tuple[int, int], need: tuple[int, int], item: int
              ) -> list[Any]:
    """A row-major have[0]×have[1] matrix into the top-left of a zeroed need[0]×need[1] one
    (as the general path's `_pad2d` / GEMM packing copy it)."""
    return [Clear(dst, need[0] * need[1] * item),
            Copy(dst, src, have[0], have[1] * item, have[1] * item, need[1] * item)]


@dataclass(frozen=True)
class CallPlan:
    """A call of one kind: its launches and their slots, in order: the operands' pointers
    (inputs, then the output), the scalars (cast to `scalars`' types), the session's zero
    buffer (where `zeros` > 0), the workspace buffers (`temps`: names and sizes, fetched per
    call: the workspace may have grown them)."""

    launches: tuple[Any, ...]  # Launch, Clear and Copy steps, in order
    operands: int
    scalars: tuple[Any, ...]  # the scalars' dtypes (alpha, beta cast per call)
    # (name, bytes) or (name, bytes, written region): a padded copy's destination whose
    # margins the workspace keeps zero (`pad_copy`)
    temps: tuple[tuple[Any, ...], ...]
    zeros: int = 0  # bytes of the session's zero buffer the call reads (its last slot), 0: none
    fixed: tuple[Any, ...] = ()  # values the same on every call (after the zero buffer's slot)


def plan_launches(q: Any, built: Built, sizes: dict[str, int], arrays: dict[int, Slot],
                  scalars: dict[int, Slot], out: Slot, temp_base: Slot
                  ) -> tuple[list[Launch], list[tuple[Any, ...]]]:
    """The launches of `built`'s pipeline at `sizes`, with the program's parameters mapped onto
    slots (`arrays`/`scalars`: parameter index -> slot) and its temporaries onto workspace
    slots from `temp_base` on (named as `Built.launch` names them)."""
    c = built.compiled
    temps: dict[str, Slot] = {}
    temp_list: list[tuple[Any, ...]] = []
    for b in c.buffers:
        if b.role in ("intermediate", "temporary"):
            temps[b.name] = temp_base + len(temp_list)
            # a zeroed one (reduceSplitTail's flags): the session's workspace (one stream)
            # zero-fills it once when it makes it, the kernel leaves it zero
            temp_list.append((f"{built.kind}|{built.variant}|{b.name}",
                              built._temp_bytes(b, sizes), *(("zeroed",) if b.zeroed else ())))
    launches = []
    for k, handle, (size_vals, glob) in zip(c.kernels, built.kernels, built._sizes_of(sizes)):
        args: list[Any] = []
        slots: list[tuple[int, Slot]] = []
        for i, a in enumerate(k.args):
            if a.kind == "buffer":
                buf = c.buffer(a.buffer)  # type: ignore[arg-type]
                slot = (arrays[buf.param_index] if buf.role == "input" else  # type: ignore[index]
                        out if buf.role == "output" else temps[buf.name])
                slots.append((i, slot))
                args.append(None)
            elif a.kind == "scalar":
                slots.append((i, scalars[a.param_index]))  # type: ignore[index]
                args.append(None)
            else:
                args.append(size_vals[i])
        config, _ = q.launch_config(handle, k, glob, k.ndrange.local_size)
        launches.append(Launch(k.name, config, handle, tuple(args), tuple(slots)))
    return launches, temp_list


class PlanSteps:
    """A call plan's steps and workspace as they are worked out (gemm's plans and the split
    plan): slots from `base` on name the workspace buffers in the order they are asked for."""

    def __init__(self, q: Any, base: Slot) -> None:
        self.q, self.base = q, base
        self.steps: list[Any] = []
        self.temps: list[tuple[Any, ...]] = []

    def temp(self, name: str, nbytes: int, *written: Any) -> Slot:
        """A workspace buffer of `nbytes` (`written`: regions the plan fills once, as zeros)."""
        self.temps.append((name, nbytes, *written))
        return self.base + len(self.temps) - 1

    def launch(self, built: Built, sizes: dict[str, int], arrays: dict[int, Slot],
               scalars: dict[int, Slot], out: Slot) -> None:
        """`built`'s launches (`plan_launches`), its temporaries added to the workspace."""
        more, ktemps = plan_launches(self.q, built, sizes, arrays, scalars, out,
                                     self.base + len(self.temps))
        self.steps.extend(more)
        self.temps.extend(ktemps)

    def epilogue(self, axpby: Built, rows: int, cols: int, prod: Slot, beta_zero: bool,
                 item: int) -> None:
        """C = α·P + β·C from the product in slot `prod` (α, β in slots 3, 4; C in 2): C
        cleared first where β = 0, since β·C reads C and it may hold NaN."""
        if beta_zero:
            self.steps.append(Clear(2, rows * cols * item))
        self.launch(axpby, {"M": rows, "N": cols}, {0: prod, 1: 2}, {2: 3, 3: 4}, 2)


# -- operands by type ------------------------------------------------------------------------------
def array_library(t: type) -> Optional[str]:
    """The library whose device arrays `t` are ("cupy", "torch", "pyopencl"), else None (a
    pure function of the type; `Operands` keeps its answers, since every planned call asks)."""
    mod = t.__module__.split(".", 1)[0]
    if mod == "cupy" and t.__name__ == "ndarray":
        return "cupy"
    if mod == "torch" and t.__name__ == "Tensor":
        return "torch"
    if mod == "pyopencl" and t.__name__ == "Array":
        return "pyopencl"
    return None


class Operands:
    """Reads an argument's plan key and pointer from the attributes its library keeps (CuPy:
    data.ptr, data.device_id, shape, dtype, strides; PyTorch: data_ptr(), shape, dtype,
    stride()), without building its CUDA array interface; NumPy arrays by shape, dtype and flags; pyopencl arrays
    (OpenCL sessions) by shape, dtype and strides, their buffer as the pointer, planned only on
    the session's own in-order queue and at offset 0 (their pending work is then ordered before
    the call without waiting on their events)."""

    def __init__(self, queue: Any = None) -> None:
        self._queue = queue  # an OpenCL session's queue (pyopencl arrays on it are planned)
        self._libs: dict[type, Optional[str]] = {}  # array_library's answers, per type

    def library(self, t: type) -> Optional[str]:
        """`array_library(t)`, looked up once per type (every planned call asks)."""
        try:
            return self._libs[t]
        except KeyError:
            lib = self._libs[t] = array_library(t)
            return lib

    def key(self, x: Any) -> Any:
        """The part of a call's kind this argument decides (None: no plan for its type)."""
        t = type(x)
        if t is np.ndarray:
            f = x.flags
            return (t, x.shape, x.dtype, f.c_contiguous, f.f_contiguous, f.writeable)
        lib = self.library(t)
        if lib == "cupy":  # (its memory's device: x.device would make a Device object)
            return (t, x.shape, x.dtype, x.strides, x.data.device_id)
        if lib == "torch":
            return (t, tuple(x.shape), x.dtype, x.stride(), x.device, x.requires_grad)
        if lib == "pyopencl" and self._queue is not None and x.queue is self._queue \
                and not x.offset and (x.flags.c_contiguous or x.flags.f_contiguous):
            return (t, x.shape, x.dtype, x.strides)
        return None

    def pointer(self, x: Any) -> Any:
        """A device array's address (CuPy or PyTorch; `key` saw its type first); a pyopencl
        array's buffer."""
        lib = self.library(type(x))
        if lib == "pyopencl":
            return x.base_data
        return int(x.data.ptr) if lib == "cupy" else int(x.data_ptr())


_UPLOADS = ("upload-0", "upload-1", "upload-2")  # workspace names of uploaded NumPy inputs


@dataclass(frozen=True)
class Output:
    """How a plan's output is made per call: given by the caller (`given`), a new device array
    of the inputs' library, or a new NumPy array."""

    shape: tuple[int, ...]
    dtype: np.dtype
    order: str
    given: bool


class CallPlans:
    """A session's call plans by kind (see the module docstring), and their execution."""

    def __init__(self, session: Any, future: Callable[..., Any]) -> None:
        self.session = session
        self.q = session.q
        self._future = future  # session.Future (the session imports this module)
        opencl = self.q.backend == "opencl"
        self.operands = Operands(session.queue if opencl else None)
        # what a launch argument holds for a buffer: CUDA's address, OpenCL's memory object
        self.address: Callable[[Any], Any] = (lambda b: b) if opencl else (lambda b: b.ptr)
        self._plans: dict[Any, Optional[tuple[CallPlan, Output]]] = {}
        self._profile = session.profile  # the plans follow the profile's choices
        # (scalar types, the caller's α, β objects, their casts): a repeat call passing the same
        # objects passes the same casts, which a launch recognises without comparing bytes
        self._casts: tuple[Any, tuple[Any, ...], tuple[Any, ...]] = (None, (), ())
        self._opencl = opencl

    def clear(self) -> None:
        self._plans.clear()

    def get(self, key: Any) -> Any:
        """The plan for a kind: (plan, output), None (general path), or False (not seen)."""
        if self.session.profile is not self._profile:
            self._plans.clear()
            self._profile = self.session.profile
        return self._plans.get(key, False)

    def call(self, key: Any, inputs: Sequence[Any], output: Any, scalars: Sequence[Any],
             general: Callable[[], tuple[Any, Optional[tuple[CallPlan, Output]]]],
             upload_output: bool = False) -> Any:
        """One call of kind `key`: on its plan where one exists, else the general path
        (`general()`: (future, the kind's plan, or None where plans do not cover it)), whose
        answer is kept for the next call of the kind."""
        got = self.get(key)
        if got:
            return self.run(got[0], got[1], inputs, output, scalars, upload_output)
        future, plan = general()
        if got is False:
            self.put(key, plan)
        return future

    def put(self, key: Any, value: Optional[tuple[CallPlan, Output]]) -> None:
        if len(self._plans) > 512:
            self._plans.clear()
        self._plans[key] = value

    def run(self, plan: CallPlan, out: Output, inputs: Sequence[Any], output: Any,
            scalars: Sequence[Any], upload_output: bool = False) -> Any:
        """Enqueue one call on a plan: the inputs' and output's pointers (NumPy ones uploaded
        to fresh device buffers), the launches, the future."""
        q, s, addr = self.q, self.session, self.address
        t = type(output)
        if t is not np.ndarray and output is not None and not self._opencl \
                and all(type(x) is t for x in inputs):
            return self._run_device(plan, inputs, output, scalars)
        ptrs: list[Any] = []
        keep: list[Any] = [inputs, output]
        lib_array = None
        for i, x in enumerate(inputs):
            if type(x) is np.ndarray:
                # uploaded into the session's workspace (one buffer per input slot, reused: the
                # stream runs the next call's upload after this call's kernels have read it)
                buf = s.scratch.buffer(_UPLOADS[i], x.nbytes)
                q.upload(buf, x)
                ptrs.append(addr(buf))
            else:
                lib_array = x
                ptrs.append(self.operands.pointer(x))
        host = None
        if output is None:
            if lib_array is not None:
                arr, buf = q.new_array(lib_array, out.shape, out.dtype, out.order)
                result = arr
            else:
                host = np.empty(out.shape, out.dtype, order=out.order)
                buf = q.alloc(max(1, host.nbytes))
                result = host
            keep.append(buf)
            ptrs.append(addr(buf))
        elif type(output) is np.ndarray:
            host = result = output
            buf = q.alloc(max(1, output.nbytes))
            if upload_output:
                q.upload(buf, output)
            keep.append(buf)
            ptrs.append(addr(buf))
        else:
            lib_array = result = output
            ptrs.append(self.operands.pointer(output))
        if lib_array is not None and not self._opencl:  # after the work the arrays' library has
            # enqueued, once per library (OpenCL: a planned array is on the session's in-order
            # queue, ordered already)
            waited = None  # (arrays of one type are on the same device)
            for x in (*inputs, output):
                t = type(x)
                if x is not None and t is not np.ndarray and t is not waited:
                    q.wait_library(x)
                    waited = t
        self._rest(plan, scalars, ptrs)
        q.launch_all(plan.launches, ptrs)
        event = q.call_event()
        if host is not None:
            hbuf = keep[-1]

            def finish() -> Any:
                q.download_now(host, hbuf)
                return host
            return self._future(q, [event], finish, keep)
        return self._future(q, [event], lambda: result, keep)

    def _rest(self, plan: CallPlan, scalars: Sequence[Any], ptrs: list[Any]) -> None:
        """The values after the operands' pointers: α, β cast, the zero buffer, the fixed
        values, the workspace buffers."""
        last = self._casts  # the last call's α, β cast: the same objects while they stay
        if last[0] is plan.scalars and all(map(operator.is_, scalars, last[1])) \
                and len(scalars) == len(last[1]):
            ptrs.extend(last[2])
        else:
            casts = tuple(t(v) for t, v in zip(plan.scalars, scalars))
            self._casts = (plan.scalars, tuple(scalars), casts)
            ptrs.extend(casts)
        s, addr = self.session, self.address
        if plan.zeros:
            ptrs.append(addr(s.zeros(plan.zeros)[0]))
        if plan.fixed:
            ptrs.extend(plan.fixed)
        if plan.temps:
            ws = s.scratch
            for t in plan.temps:
                ptrs.append(addr(ws.buffer(*t)))

    def _run_device(self, plan: CallPlan, inputs: Sequence[Any], output: Any,
                    scalars: Sequence[Any]) -> Any:
        """`run` where the inputs and the given output are GPU arrays of one library (CUDA):
        their pointers, one wait for the library's stream, the launches, the future."""
        pointer, q = self.operands.pointer, self.q
        ptrs = [pointer(x) for x in inputs]
        ptrs.append(pointer(output))
        q.wait_library(output)
        self._rest(plan, scalars, ptrs)
        q.launch_all(plan.launches, ptrs)
        return self._future(q, [q.call_event()], lambda: output, (inputs, output))


def nbytes(shape: Sequence[int], dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


__all__ = ["BlasError", "CallPlan", "CallPlans", "Clear", "Copy", "Launch", "Output", "pad_copy",
           "pad_region", "pad_steps", "plan_launches"]
