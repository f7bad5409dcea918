"""The task-runtime side of accelerated sections: the callback compiled code calls (cg_gpu).

Per call of a compiled function (keyed by its environment block) it keeps the section's array
variables and its error buffer. LAUNCH attaches the captured arrays to the runtime by address
(the same array is one variable, views share their allocation's buffer) and enqueues the kernel
with what it reads and writes — asynchronously; HOST synchronises the arrays a host statement
touches; END waits, checks the error buffer once and writes back what kernels changed, then
releases the section's buffers. Any exception is kept and the callback returns 1; the
dispatcher raises it after cleaning up (``finish``), so the runtime holds nothing stale.
"""

from __future__ import annotations

import ctypes
import math
import operator
import struct
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from liftkit.runtime import Kernel, Runtime
from liftkit.runtime.tables import c_strides

from . import types as T
from .gpu_plan import GpuPlan

INT32_LIMIT = 2**31  # Lift's kernels index with C int: larger arrays take another path
ERR_HOST = 12  # environment slot 0: the error is a Python exception the callback kept
# (environment, operation, its id, block): the pointers arrive as plain ints (no ctypes pointer
# objects made per callback) and are viewed as int64 arrays where they are read
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_void_p)
_SLOTS = ctypes.c_int64 * (1 << 24)  # a view of a block (only the slots read are touched)

CLEAR = Kernel("lk_clear", {
    "opencl": "kernel void lk_clear(global int* e, long eo) { e[eo + get_global_id(0)] = 0; }\n",
    "cuda": 'extern "C" __global__ void lk_clear(int* e, long eo) '
            "{ e[eo + blockIdx.x * blockDim.x + threadIdx.x] = 0; }\n"})

_Q2D = struct.Struct("<d")
_I2F = struct.Struct("<f")
_Q = struct.Struct("<q")
_I = struct.Struct("<I")


class ErrorFlags:
    """The sections' error buffers (8 int32 flags a kernel sets on its first failure) kept
    cleared between calls: a section takes one, its end reads it once and gives it back when no
    kernel failed, so a call costs neither an allocation nor a clearing kernel. A buffer whose
    flags were set (or not read) is released, never reused; one of a runtime closed since it
    was given back is no longer in its tables and is dropped."""

    KEEP = 4  # buffers kept per specialisation (sections of concurrent calls each take one)

    def __init__(self) -> None:
        self.free: list = []  # (runtime, variable): device copy all zeros, no task pending

    def take(self, rt: Runtime) -> Any:
        while True:
            try:
                owner, v = self.free.pop()
            except IndexError:
                break
            if owner is rt and v.id in rt.vars:
                return v
            if v.id in owner.vars:  # another runtime's (the host's runtime was replaced)
                owner.release(v, writeback=False)
        err = rt.empty((8,), np.int32)
        rt.launch(CLEAR, (8,), [err], writes=[err], overwrites=[err])
        return err

    def give(self, rt: Runtime, v: Any) -> None:
        if len(self.free) < self.KEEP:
            self.free.append((rt, v))
        else:
            rt.release(v, writeback=False)

    def held(self) -> set:
        """Ids of the variables kept (what a test of 'nothing left behind' leaves out)."""
        return {v.id for _, v in list(self.free)}


@dataclass(frozen=True)
class _KernelPlan:
    """What launching one kernel takes from its block, worked out once per specialisation:
    per captured value its slot and, for an array, its rank, element size and whether the
    kernel gets its data (else only its shape) and it is read after the section; per scalar
    the argument position it fills and its reader; the arrays it reads, writes and overwrites."""
    items: tuple    # (name, slot, ndim, itemsize, dtype, data, live) of each array
    scalars: tuple  # (argument position, slot, reader) of each scalar
    slots: Any      # reads the block slots of every array (pointer, shape, strides) at once:
                    # the memo key of a launch
    domain: int     # the block slot of the domain (start, step, count per dimension)
    reads: tuple    # names of the arrays whose data it reads / writes / writes whole
    writes: tuple
    over: tuple
    fails: bool     # it may set the error flags (a check is left in it)

    @staticmethod
    def of(k: Any) -> "_KernelPlan":
        items, scalars, slots = [], [], []
        slot, pos = 0, 1  # argument 0 is the error buffer
        for name, t in k.captured:
            if isinstance(t, T.ArrayType):
                data = name in k.data
                items.append((name, slot, t.ndim, t.elem.dtype.itemsize, t.elem.dtype, data,
                              name not in k.dead))
                slots.append((slot, slot + 1 + 2 * t.ndim))
                slot += 1 + 2 * t.ndim
                pos += 1 + 2 * t.ndim if data else t.ndim
            else:
                scalars.append((pos, slot, _reader(t)))
                slot += 1
                pos += 1
        named = {n for n, *_ in items if n in k.data}
        over = tuple(k.writes) if k.mode == "whole" else \
            tuple(n for n in k.undefined if n in named and n not in k.reads)
        flat = [i for a, b in slots for i in range(a, b)]
        read = operator.itemgetter(*flat, *flat) if len(flat) == 1 else \
            operator.itemgetter(*flat) if flat else (lambda block: ())
        return _KernelPlan(tuple(items), tuple(scalars), read, slot,
                           tuple(n for n in k.reads if n in named),
                           tuple(n for n in k.writes if n in named), over, k.fails)


class _Call:
    """A section's run: its runtime, error buffer and array variables (a plain class with
    slots: one is made per section per call)."""

    __slots__ = ("rt", "err", "vars", "live", "memo", "plans", "names", "error", "checks",
                 "adopted", "lent")

    def __init__(self, rt: Runtime, err: Any, adopted: Optional[dict] = None) -> None:
        self.rt, self.err = rt, err
        self.adopted = adopted  # a GPU-array call's arrays by (pointer, shape, strides, dtype)
        self.lent: set = set()  # ids of those the section uses (released by the call, not it)
        self.vars: dict = {}
        self.live: dict = {}   # var id -> read after the section
        self.memo: dict = {}   # prepared launches by kernel and arrays
        self.plans: dict = {}  # their runtime launch plans (from the second)
        self.names: dict = {}  # var id -> the array variable's name
        self.error: Optional[BaseException] = None
        self.checks = False  # a kernel that may set the error flags was launched


class DeviceCall:
    """One call with GPU (CuPy/PyTorch) arrays among its arguments: they are adopted by the
    runtime in place for the call; arrays the sections computed and the function only returns
    stay on the device (``kept``) and come back as arrays of the caller's library, as do the
    other array results (uploaded) — GPU arrays in, GPU arrays out."""

    def __init__(self, host: "GpuHost", rt: Runtime, devs: list) -> None:
        self.host, self.rt, self.devs = host, rt, devs
        self.library = devs[0].library
        self.ordinal = rt.device.device.ordinal
        self.adopted: list = []
        self.kept: list = []
        self.made: dict = {}  # (ptr, shape, strides) -> the result handed out
        self.by_spec: dict = {}  # the adopted arrays by (pointer, shape, strides, dtype)
        self.key: Optional[int] = None
        self.stream: Any = False  # the caller's stream handle, once asked (None: unnamed)

    def open(self, env: Any) -> None:
        rt = self.rt
        for d in self.devs:
            if d.ordinal is not None and d.ordinal != self.ordinal:
                raise TypeError(f"{d.kind} is on CUDA device {d.ordinal}, but GPU sections run "
                                f"on device {self.ordinal} ({rt.device.label}); copy it there "
                                "first or choose the runtime (LIFTKIT_RUNTIME_DEVICE)")
        stream = self._caller_stream()  # the caller's library may still be writing them:
        if stream is None or not rt.device.follow(stream):  # our streams follow its stream
            rt.device.sync_device()  # (else the host waits for the whole device)
        self.adopted = [rt.adopt_range(d.ptr, d.shape, d.dtype, d.obj) for d in self.devs]
        self.by_spec = {(d.ptr, v.shape, v.strides, v.dtype.str): v
                        for d, v in zip(self.devs, self.adopted)}
        self.key = ctypes.addressof(env)
        self.host.device_calls[self.key] = self

    def result(self, ptr: int, shape: tuple, strides: tuple, dtype: np.dtype) -> Any:
        """The GPU array for a result at ``ptr`` (a kept array, or a user's array or a view of
        it), or None for host memory."""
        key = (ptr, shape, strides, dtype.str)
        if key in self.made:
            return self.made[key]
        rt = self.rt
        for v in list(self.kept):
            var = rt.vars[v.id]
            buf = rt.buffers[var.buffer]
            if buf.lo is None or buf.lo + var.offset != ptr:
                continue
            self.kept.remove(v)
            if var.shape == shape and var.strides == strides and var.offset == 0 and \
                    var.dtype == dtype and buf.vars == {v.id} and buf.nbytes == var.nbytes:
                # the caller's stream waits for the tasks on it (else the host does), and its
                # memory is freed on our stream after them when the caller lets go of it
                events = rt.latest_events(buf.writers + buf.readers)
                stream = self._caller_stream()
                handed = stream is not None and all(rt.device.stream_wait(stream, ev)
                                                    for ev in events)
                handle = rt.detach(v, wait=not handed)
                owner = _Handed(handle, rt.device, events) if handed else handle
                got = self.made[key] = self._wrap(_Cai(owner, rt.device.ptr(handle), shape,
                                                       strides, dtype))
                return got
            rt.release(v)  # a view: its host copy is brought up to date instead
            return None
        for d, v in zip(self.devs, self.adopted):
            if d.ptr <= ptr < d.ptr + max(d.nbytes, 1):
                if (ptr, shape, dtype) == (d.ptr, d.shape, d.dtype) and \
                        strides == c_strides(shape, dtype.itemsize):
                    return d.obj
                got = self.made[key] = self._wrap(_Cai(d.obj, ptr, shape, strides, dtype))
                return got
        return None

    def _wrap(self, cai: "_Cai") -> Any:
        if self.library == "cupy":
            import cupy
            with cupy.cuda.Device(self.ordinal):
                return cupy.asarray(cai)
        if self.library == "torch":
            import torch
            return torch.as_tensor(cai, device=f"cuda:{self.ordinal}")
        return cai

    def upload(self, host: np.ndarray) -> Any:
        """A result the host computed, as an array of the caller's library on the device."""
        if self.library == "cupy":
            import cupy
            with cupy.cuda.Device(self.ordinal):
                return cupy.asarray(host)
        if self.library == "torch":
            import torch
            return torch.from_numpy(np.ascontiguousarray(host)).to(f"cuda:{self.ordinal}")
        return host

    def _caller_stream(self) -> Optional[int]:
        """The handle of the stream the caller's library works on now (CuPy's or PyTorch's
        current stream), which is made to wait for our tasks on its arrays instead of the
        host; None for another library (the host waits)."""
        if self.stream is not False:
            return self.stream
        self.stream = self._current_stream()
        return self.stream

    def _current_stream(self) -> Optional[int]:
        try:
            if self.library == "cupy":
                import cupy
                return int(cupy.cuda.get_current_stream().ptr)
            if self.library == "torch":
                import torch
                return int(torch.cuda.current_stream(self.ordinal).cuda_stream)
        except Exception:  # noqa: BLE001 - no current stream to name: the host waits
            return None
        return None

    def close(self) -> None:
        """Free what the call kept and did not return; let go of the adopted arrays."""
        rt = self.rt
        self.host.device_calls.pop(self.key, None)
        stream = self._caller_stream()
        eids: list = []  # the tasks still reading or writing them (the caller's library may use
        for v in self.adopted:  # them next, on its own stream: it waits for the newest of
            if v.id in rt.vars:  # those on each of our queues, which run in order)
                buf = rt.buffers[rt.vars[v.id].buffer]
                eids += buf.writers
                eids += buf.readers
        for ev in rt.latest_events(eids) if eids else ():
            if stream is None or not rt.device.stream_wait(stream, ev):
                rt.device.wait(ev)  # a library whose stream we cannot name
        for v in self.kept + self.adopted:
            if v.id in rt.vars:
                rt.release(v, writeback=False)
        self.kept, self.adopted = [], []


class _Handed:
    """Device memory handed to the caller's library while tasks on it may still run: freed
    stream-ordered after them (``events``) when the library lets go of it."""

    def __init__(self, handle: Any, device: Any, events: list) -> None:
        self.handle, self.device, self.events = handle, device, events

    def __del__(self) -> None:
        try:
            self.device.free(self.handle, self.events)
        except Exception:  # noqa: BLE001 - the runtime's device was closed: the driver freed it
            pass


class _Cai:
    """Device memory (kept alive by ``owner``) under the CUDA array interface, for CuPy and
    PyTorch to take without a copy."""

    def __init__(self, owner: Any, ptr: int, shape: tuple, strides: tuple, dtype: np.dtype) -> None:
        self.owner, self.ptr, self.shape, self.strides, self.dtype = \
            owner, ptr, shape, strides, np.dtype(dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": self.strides, "version": 3}


class GpuHost:
    """The host side of one specialisation's sections (its kernels, host accesses, raises)."""

    def __init__(self, plan: GpuPlan, raises: list, runtime: Optional[Runtime] = None,
                 library: Any = None) -> None:
        self.plan = plan
        self.library = library
        self.raises = raises
        self.runtime = runtime
        self.kernels = [Kernel(k.name, dict(k.sources)) for k in plan.kernels]
        self.launches = [_KernelPlan.of(k) for k in plan.kernels]  # per kernel, once
        self.flags = ErrorFlags()
        self.calls: dict[int, _Call] = {}
        self.device_calls: dict[int, DeviceCall] = {}
        self.errors: dict[int, BaseException] = {}
        self.cfunc = CALLBACK(self._callback)
        self.address = ctypes.cast(self.cfunc, ctypes.c_void_p).value

    # -- the callback
    def _callback(self, env: int, op: int, ident: int, block: Optional[int]) -> int:
        key = env  # the environment block's address
        try:
            if op == 2:
                self.launch(key, ident, _SLOTS.from_address(block))
            elif op == 1:
                self.begin(key)
            elif op == 4:
                self.end(key, ident)
            elif op == 3:
                self.host(key, ident, _SLOTS.from_address(block))
            elif op == 5:
                self.run_library(key, ident, _SLOTS.from_address(block))
            return 0
        except BaseException as e:  # noqa: BLE001 - handed to the dispatcher, never lost
            self.errors[key] = e
            (ctypes.c_int64 * 1).from_address(env)[0] = ERR_HOST
            return 1

    def _runtime(self) -> Runtime:
        if self.runtime is None:
            from liftkit.runtime import default_runtime
            self.runtime = default_runtime()
        return self.runtime

    def device_call(self, devs: list) -> DeviceCall:
        """The device side of a call with GPU arrays ``devs`` (dispatch._Device) as arguments."""
        rt = self._runtime()
        if rt.dialect != "cuda":
            raise TypeError(f"{devs[0].kind} in GPU memory needs the CUDA task runtime; GPU "
                            f"sections here run on {rt.device.label} (OpenCL): pass a NumPy array")
        return DeviceCall(self, rt, devs)

    def begin(self, key: int) -> None:
        rt = self._runtime()
        dc = self.device_calls.get(key) if self.device_calls else None
        self.calls[key] = _Call(rt, self.flags.take(rt), dc.by_spec if dc is not None else None)

    def _arrays(self, call: _Call, block: Any, k: int, t: T.ArrayType) -> tuple[Any, int]:
        nd = t.ndim
        ptr = block[k]
        shape = tuple(block[k + 1 + j] for j in range(nd))
        item = t.elem.dtype.itemsize
        strides = tuple(block[k + 1 + nd + j] * item for j in range(nd))
        return (ptr, shape, strides, t.elem.dtype), k + 1 + 2 * nd

    def _attach(self, call: _Call, spec: tuple, live: bool = True, name: str = "") -> Any:
        v = call.adopted.get((spec[0], spec[1], spec[2], spec[3].str)) \
            if call.adopted else None
        if v is not None and v.id in call.rt.vars:  # a GPU argument itself, adopted by the
            call.lent.add(v.id)  # call: used as it is (the call lets go of it at its end)
        else:
            v = call.rt.attach(*spec)
            if v.id in call.vars:  # attached once per section
                call.rt.release(v, writeback=False)
        call.vars[v.id] = v
        call.names.setdefault(v.id, name)
        call.live[v.id] = call.live.get(v.id, False) or live
        return v

    def launch(self, key: int, kid: int, block: Any) -> None:
        call = self.calls[key]
        rt = call.rt
        k = self.plan.kernels[kid]
        kp = self.launches[kid]
        # the same kernel on the same arrays again (a loop in the section): reuse the prepared
        # arguments, only the scalars and the domain change
        akey = (kid, kp.slots(block))
        prep = call.memo.get(akey)
        plan = None
        if prep is None:
            prep = self._prepare(call, kp, block)
            if k.mode != "slice":
                call.memo[akey] = prep
        elif k.lift is None:  # launched again on these arrays: from now on through a plan
            plan = call.plans.get(akey)
            if plan is None:
                plan = call.plans[akey] = rt.plan(self.kernels[kid], len(prep[0]) + 3 * k.ndim,
                                                  reads=prep[2], writes=prep[3],
                                                  overwrites=prep[4])
        template, named, reads, writes, over = prep
        args = list(template)
        for i, slot, read in kp.scalars:
            args[i] = read(block[slot])
        slot = kp.domain
        counts = []
        for d in range(k.ndim):
            start, step, count = block[slot], block[slot + 1], block[slot + 2]
            slot += 3
            args += [np.int64(start), np.int64(step), np.int64(count)]
            counts.append(count)
        if any(c <= 0 for c in counts):
            return
        temps = []
        if k.mode == "slice":  # operands sharing the target's memory are read from a copy
            target = {rt.vars[v.id].buffer for n, v in named.items() if n in k.writes}
            for n in list(named):
                v = named[n]
                if n not in k.writes and rt.vars[v.id].buffer in target:
                    c = rt.copy(v)
                    temps.append(c)
                    args = [c if a is v else a for a in args]
                    reads = [c if a is v else a for a in reads]
        if k.lift is not None and self._lift_map(call, k, named, args, counts):
            return
        if kp.fails:
            call.checks = True
        if plan is not None:
            rt.launch_planned(plan, tuple(reversed(counts)), args)
            return
        rt.launch(self.kernels[kid], tuple(reversed(counts)), args, reads=reads, writes=writes,
                  overwrites=over, plan=False)  # (its repeats take call.plans)
        for c in temps:
            rt.release(c, writeback=False)

    def _prepare(self, call: _Call, kp: _KernelPlan, block: Any) -> tuple:
        """The kernel's arguments with its arrays attached (scalars as placeholders), the
        arrays by name and what it reads, writes and overwrites."""
        args: list = [call.err]
        named: dict[str, Any] = {}
        i64 = np.int64
        for name, slot, nd, item, dtype, data, live in kp.items:
            shape = tuple(block[slot + 1:slot + 1 + nd])
            args += [i64(n) for n in shape]
            if not data:
                continue
            steps = block[slot + 1 + nd:slot + 1 + 2 * nd]
            v = named[name] = self._attach(
                call, (block[slot], shape, tuple(s * item for s in steps), dtype), live, name)
            args.insert(len(args) - nd, v)
            args += [i64(s) for s in steps]
        for pos, _, _ in kp.scalars:
            args.insert(pos, None)
        reads = [named[n] for n in kp.reads]
        writes = [named[n] for n in kp.writes] + ([call.err] if kp.fails else [])
        return args, named, reads, writes, [named[n] for n in kp.over]

    def run_library(self, key: int, lid: int, block: Any) -> None:
        """A library operator on Lift kernels through the runtime; NumPy on the host copies for
        operands Lift's kernels cannot index (strided views, views inside larger arrays)."""
        call = self.calls[key]
        rt = call.rt
        lib = self.plan.libraries[lid]
        specs, slot = [], 0
        for _, t in lib.arrays:
            spec, slot = self._arrays(call, block, slot, t)
            specs.append(spec)
        dtype = specs[-1][3]
        op = lib.op
        product = op in ("mm", "gemv", "gemvt")  # an array result, written first
        a = specs[1] if op in ("gemv", "gemvt") else None
        if a is not None and a[2] != c_strides(a[1], a[3].itemsize) and \
                a[2][::-1] == c_strides(a[1][::-1], a[3].itemsize):
            # a column-major matrix is its transpose stored row-major: the other GEMV layout
            specs[1] = (a[0], a[1][::-1], a[2][::-1], a[3])
            op = "gemvt" if op == "gemv" else "gemv"
        if op == "mm":
            sizes = {"M": specs[1][1][0], "K": specs[1][1][1], "N": specs[2][1][1]}
        elif product:  # GEMV's A is M×N (gemvt: y = Aᵀ·x)
            sizes = {"M": specs[1][1][0], "N": specs[1][1][1]}
        else:
            sizes = {"N": specs[0][1][0]}
        # Lift's reductions split N in chunks of a power of two: odd lengths stay on the host
        plain = all(sp[2] == c_strides(sp[1], sp[3].itemsize) for sp in specs) and \
            all(n > 0 for n in sizes.values()) and (product or sizes["N"] % 2 == 0) and \
            all(math.prod(sp[1]) < INT32_LIMIT for sp in specs)  # Lift's kernels use int
        vs = [self._attach(call, sp, name not in lib.dead, name)
              for (name, _), sp in zip(lib.arrays, specs)] if plain else []
        if plain and all(rt.vars[v.id].offset == 0 for v in vs):
            if self.library is None:
                from .gpu_library import LiftLibrary
                self.library = LiftLibrary()
            if lib.op == "mm":
                self.library.run(rt, "mm", vs[1:], vs[0], sizes, dtype.name)
                return
            if product:
                self.library.gemv(rt, op == "gemvt", vs[1], vs[2], vs[0], sizes, dtype.name)
                return
            value = self.library.run(rt, lib.op, vs, None, sizes, dtype.name)
        else:
            if key in self.device_calls and any(
                    b.borrowed and b.lo is not None and b.lo <= sp[0] < b.hi
                    for sp in specs for b in rt.buffers.values()):
                what = {"mm": "A @ B", "gemv": "M @ x", "gemvt": "x @ M", "dot": "np.dot",
                        "sum": "np.sum"}.get(lib.op, lib.op)
                raise TypeError(f"line {lib.line}: {what} of a strided view of a GPU array "
                                "argument runs on the host; pass a NumPy array or a contiguous "
                                "GPU array")
            views = []
            for k, sp in enumerate(specs):
                lo, hi = _extent(sp)
                rt.host_range(lo, hi, write=product and k == 0)
                views.append(_host_array(sp))
            if product:
                np.matmul(*(views[:0:-1] if op == "gemvt" else views[1:]), out=views[0])
                return
            value = float(np.dot(views[0], views[1]) if lib.op == "dot" else np.sum(views[0]))
        if dtype == np.float64:
            block[slot] = struct.unpack("<q", _Q2D.pack(value))[0]
        else:
            block[slot] = struct.unpack("<I", _I2F.pack(value))[0]

    def _lift_map(self, call: _Call, k: Any, named: dict, args: list, counts: list) -> bool:
        """Run an element-wise loop as a Lift map when its arrays are whole, C-contiguous and of
        the result's shape (no broadcasting); False leaves it to the jit's own kernel."""
        rt = call.rt
        (out_name,) = k.writes
        out = named[out_name]
        shape = rt.vars[out.id].shape
        vs = []
        for name, _ in k.lift.arrays:
            v = named.get(name)
            if v is None:
                return False
            var = rt.vars[v.id]
            if var.shape != shape or var.offset or \
                    var.strides != c_strides(var.shape, var.dtype.itemsize):
                return False
            vs.append(v)
        if rt.vars[out.id].offset or len(shape) != len(counts) or \
                math.prod(shape) >= INT32_LIMIT:  # Lift's kernels index with int
            return False
        values = {}
        pos = 1
        for name, t in k.captured:  # the scalars' values, as the kernel's arguments hold them
            if isinstance(t, T.ArrayType):
                pos += 1 + 2 * t.ndim if name in k.data else t.ndim
            else:
                values[name] = args[pos]
                pos += 1
        scalars = [np.dtype(e).type(values[name]) for name, e in k.lift.scalars]
        if self.library is None:
            from .gpu_library import LiftLibrary
            self.library = LiftLibrary()
        self.library.run_map(rt, k.lift, vs, scalars, out, math.prod(shape))
        return True

    def host(self, key: int, aid: int, block: Any) -> None:
        call = self.calls[key]
        slot = 0
        for _, t, write in self.plan.accesses[aid].arrays:
            spec, slot = self._arrays(call, block, slot, t)
            ptr, shape, strides, dtype = spec
            if 0 in shape:
                continue
            call.rt.host_range(*_extent(spec), write)

    def end(self, key: int, sid: int = -1) -> None:
        call = self.calls.pop(key)
        err = self._kernel_error(self._close(call, self.device_calls.get(key), sid))
        if err is not None:
            raise err

    def _kernel_error(self, flags: Optional[np.ndarray]) -> Optional[BaseException]:
        """The error a kernel recorded in the error buffer, as the CPU code would raise it
        (None: no kernel that could record one ran, the flags were not read)."""
        if flags is None or not flags[0]:
            return None
        from .dispatch import _error
        a = (int(flags[3]) << 32) | (int(flags[2]) & 0xFFFFFFFF)
        c = (int(flags[6]) << 32) | (int(flags[5]) & 0xFFFFFFFF)
        a, c = (x - (1 << 64) if x >= 1 << 63 else x for x in (a, c))
        return _error([int(flags[0]), int(flags[1]), a, int(flags[4]), c], self.raises)

    def _close(self, call: _Call, dc: Optional[DeviceCall] = None,
               sid: int = -1) -> Optional[np.ndarray]:
        """Wait, read the error buffer, write back what kernels changed, release everything —
        except, in a call with GPU arrays, the arrays the function only returns (kept on the
        device for ``DeviceCall.result``). When no kernel launched could set a flag (every
        check was proved away) nothing is read: a call on GPU arrays does not wait for its
        kernels here."""
        rt = call.rt
        keep = self.plan.returned.get(sid, frozenset()) if dc is not None else frozenset()
        flags = None
        try:
            if call.checks:
                flags = np.array(rt.read(call.err))
        finally:  # dead arrays first: a buffer only they use is freed without a download
            for v in sorted(call.vars.values(), key=lambda v: call.live.get(v.id, True)):
                if v.id not in rt.vars or v.id in call.lent:
                    continue
                if call.names.get(v.id) in keep and not rt.buffers[rt.vars[v.id].buffer].borrowed:
                    assert dc is not None
                    if v in dc.kept:  # kept by an earlier run of the section (in a loop)
                        rt.release(v, writeback=False)
                    else:
                        dc.kept.append(v)
                    continue
                rt.release(v, writeback=call.live.get(v.id, True))
            if call.err.id in rt.vars:
                if not call.checks or (flags is not None and not flags.any()):
                    self.flags.give(rt, call.err)  # still all zeros: the next call's
                else:
                    rt.release(call.err, writeback=False)
        return flags

    # -- the dispatcher's side
    def finish(self, env: Any) -> Optional[BaseException]:
        """After a call: close a section an error left open; the error to report — a kernel's
        (enqueued before the host statement that failed), else the one the callback kept."""
        key = ctypes.addressof(env)
        call = self.calls.pop(key, None)
        kernel = None
        if call is not None:
            try:
                kernel = self._kernel_error(self._close(call))
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        kept = self.errors.pop(key, None)
        return kernel if kernel is not None else kept


def _reader(t: T.ScalarType) -> Any:
    """The kernel argument of a scalar of type ``t`` from its raw 64-bit block slot."""
    if t.is_bool:
        return lambda raw: np.int32(raw != 0)
    if t.name == "int32":
        return lambda raw: np.int32(np.int64(raw).astype(np.int32))
    if t.name == "int64":
        return np.int64
    if t.name == "float64":
        return lambda raw: np.float64(_Q2D.unpack(_Q.pack(raw))[0])
    return lambda raw: np.float32(_I2F.unpack(_I.pack(raw & 0xFFFFFFFF))[0])


def _extent(spec: tuple) -> tuple[int, int]:
    ptr, shape, strides, dtype = spec
    lo = ptr + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = ptr + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + dtype.itemsize
    return lo, hi


def _host_array(spec: tuple) -> np.ndarray:
    """A NumPy view of host memory described by (pointer, shape, byte strides, dtype)."""
    ptr, shape, strides, dtype = spec
    lo, hi = _extent(spec)
    buf = (ctypes.c_char * max(hi - lo, 1)).from_address(lo)
    return np.ndarray(shape, dtype, buffer=buf, offset=ptr - lo, strides=strides)
