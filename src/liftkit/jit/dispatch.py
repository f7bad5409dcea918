"""``@jit``: the dispatcher. Each call's argument types (and, with region specialisation, the
shapes the passes ask for) select a compiled specialisation; missing ones are compiled through
front end -> verifier -> passes -> LLVM, or loaded from the disk cache. The call goes through
ctypes, which releases the GIL while compiled code (and its thread pool) runs."""

from __future__ import annotations

import ctypes
import functools
import inspect
import math
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import types as T
from . import vrir as V
from .engine import DiskCache, Loaded, Target, load_object
from .errors import JitError
from .passes.regions import MAX_VERSIONS

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_int64),
                          ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64))
_FREE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int64))
_EXC = {"ValueError": ValueError, "IndexError": IndexError, "ZeroDivisionError": ZeroDivisionError,
        "RuntimeError": RuntimeError, "AssertionError": AssertionError, "TypeError": TypeError,
        "ArithmeticError": ArithmeticError}


class Runtime:
    """What all @jit functions of a process share: the target machine and the disk cache."""

    def __init__(self) -> None:
        self._target: Target | None = None
        self._pool: int | None = None
        self._blas: list[int] | None = None
        self._pool_code: Loaded | None = None
        self._library: Any = None
        self.cache = DiskCache()
        self.lock = threading.Lock()
        env = os.environ.get("LIFTKIT_JIT_THREADS")
        self.threads = int(env) if env else len(os.sched_getaffinity(0)) \
            if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    @property
    def blas(self) -> list[int]:
        """Addresses of dgemv, dgemm, sgemv, sgemm from SciPy's BLAS (zeros without SciPy)."""
        if self._blas is None:
            self._blas = [0, 0, 0, 0]
            try:
                from scipy.linalg import cython_blas
            except ImportError:
                return self._blas
            api = ctypes.pythonapi
            api.PyCapsule_GetName.restype = ctypes.c_char_p
            api.PyCapsule_GetName.argtypes = [ctypes.py_object]
            api.PyCapsule_GetPointer.restype = ctypes.c_void_p
            api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
            caps = cython_blas.__pyx_capi__
            for k, name in enumerate(("dgemv", "dgemm", "sgemv", "sgemm")):
                cap = caps.get(name)
                if cap is not None:
                    self._blas[k] = api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap)) or 0
        return self._blas

    @property
    def library(self) -> Any:
        """Compiled Lift pipelines for library operators of GPU sections (gpu_library)."""
        if self._library is None:
            from .gpu_library import LiftLibrary
            self._library = LiftLibrary()
        return self._library

    @property
    def pool(self) -> int:
        """Address of the worker pool's parallel-for (built and loaded once, never freed)."""
        if self._pool is None:
            from .cg_pool import build_pool_module
            t = self.target
            text = build_pool_module(t.triple, t.data_layout)
            key = DiskCache.key(text, t.cpu, t.features)
            obj = self.cache.get(key)
            if obj is None:
                obj = t.emit_object(t.optimise(text))
                self.cache.put(key, obj)
            self._pool_code = load_object(t, obj, ("lk_pool_parfor",))
            self._pool = self._pool_code.addresses["lk_pool_parfor"]
        return self._pool

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = Target()
        return self._target


RUNTIME = Runtime()


_BY_DTYPE = {np.dtype(n if n != "bool" else np.bool_): T.ScalarType(n) for n in T.SCALAR_NAMES}
_I64P = ctypes.POINTER(ctypes.c_int64)


def typeof(x: object, what: str) -> T.Type:
    """The VRIR type of a call argument."""
    if type(x) is float:
        return T.FLOAT64
    if type(x) is np.ndarray:
        s = _BY_DTYPE.get(x.dtype)
        if s is not None:
            return T.ArrayType(s, x.ndim, T.layout_of(x))
    if isinstance(x, (bool, np.bool_)):
        return T.BOOL
    if isinstance(x, int):
        if not -2**63 <= x < 2**63:
            raise OverflowError(f"{what}: {x} does not fit in 64 bits")
        return T.INT64
    if isinstance(x, float):
        return T.FLOAT64
    if isinstance(x, complex):
        return T.COMPLEX128
    if isinstance(x, np.generic):
        s = T.scalar_of_dtype(x.dtype)
        if s is not None:
            return s
    if isinstance(x, np.ndarray):
        s = T.scalar_of_dtype(x.dtype)
        if s is None:
            raise TypeError(f"{what}: arrays of dtype {x.dtype} are not supported by @jit")
        return T.ArrayType(s, x.ndim, T.layout_of(x))
    if isinstance(x, tuple):
        return T.TupleType(tuple(typeof(i, what) for i in x))
    if _on_gpu(x):
        raise TypeError(f"{what}: {type(x).__module__.split('.')[0]}.{type(x).__name__} is an "
                        "array in GPU memory, which @jit functions do not take (their host code "
                        "reads arguments in host memory); pass a NumPy array (e.g. "
                        "cupy.asnumpy(x), x.cpu().numpy()), or run kernels on it in place "
                        "with liftkit.runtime.Runtime.submit")
    raise TypeError(f"{what}: values of type {type(x).__name__} are not supported by @jit "
                    "(pass NumPy arrays, numbers or tuples of them)")


def _on_gpu(x: object) -> bool:
    """A CuPy/PyTorch/Numba-CUDA array: ``__cuda_array_interface__``, or DLPack on a device
    other than the CPU (type 1) or CUDA-pinned host memory (type 3)."""
    if hasattr(type(x), "__cuda_array_interface__") or hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        kind = int(dev()[0])
    except Exception:  # noqa: BLE001 - a broken or odd object: not a GPU array we can name
        return False
    return kind not in (1, 3)


@dataclass
class Compiled:
    """One specialisation: loaded machine code and how to call it."""
    module: V.Module
    loaded: Loaded
    entry: Any
    free: Any
    argtypes: tuple
    result: T.Type
    raises: list
    key: str
    pool: int
    blas: bool
    from_cache: bool
    llvm_ir: str = ""
    info: dict = field(default_factory=dict)
    gpu: Any = None  # GpuHost: the task-runtime side of the accelerated sections

    @functools.cached_property
    def nres(self) -> int:
        """Result slots (computed once: every call allocates that many)."""
        from .codegen import nslots
        return max(nslots(self.result), 1)


class JitFunction:
    """A Python function compiled per argument signature on first call."""

    def __init__(self, fn: Callable, *, cache: bool = True, parallel: bool = True,
                 passes: dict | None = None, threads: int | None = None,
                 runtime: Runtime | None = None, target: str = "cpu",
                 gpu_runtime: Any = None) -> None:
        if target not in ("cpu", "gpu"):
            raise ValueError(f"@jit(target={target!r}): choose 'cpu' or 'gpu'")
        functools.update_wrapper(self, fn)
        self.target = target
        self.gpu_runtime = gpu_runtime
        self.py_func = fn
        self.cache = cache
        self.parallel = parallel
        self.passes = dict(passes or {})
        self.threads = threads
        self.runtime = runtime or RUNTIME
        self.specs: dict[tuple, Compiled] = {}
        self.analyses: dict[tuple, Any] = {}
        self._params: list[str] | None = None
        self._annotations: dict[str, Any] | None = None
        self._array_types: dict[tuple, T.ArrayType] = {}  # (dtype, ndim, layout) -> its type

    def __repr__(self) -> str:
        return f"<@jit {self.py_func.__qualname__}>"

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    # -- signatures
    def _annotated(self) -> dict[str, Any]:
        if self._annotations is None:
            try:
                ann = inspect.get_annotations(self.py_func, eval_str=True)
            except Exception:
                ann = {}
            self._annotations = {k: v for k, v in ann.items()
                                 if isinstance(v, (T.ScalarType, T.ArrayType))}
        return self._annotations

    def signature(self, args: tuple, dev: dict | None = None) -> tuple:
        params = self._params
        if params is None:
            params = self._params = list(inspect.signature(self.py_func).parameters)
        if len(args) != len(params):
            raise TypeError(f"{self.__name__}() takes {len(params)} arguments, {len(args)} given")
        ann = self._annotated()
        out = []
        memo = self._array_types
        for k, (name, a) in enumerate(zip(params, args)):
            if type(a) is np.ndarray and not (dev and k in dev):  # the common case, memoised
                ak = (a.dtype, a.ndim, T.layout_of(a))
                t = memo.get(ak)
                if t is None:
                    t = memo[ak] = typeof(a, f"argument '{name}'")
            elif dev and k in dev:  # a GPU array: C order, memoised by (dtype, rank)
                d = dev[k]
                dk = (d.dtype, len(d.shape), "gpu")
                t = memo.get(dk)
                if t is None:
                    t = memo[dk] = _device_type(d, f"argument '{name}'")
            elif type(a) is int and -2**63 <= a < 2**63:  # plain scalars: no message built
                t = T.INT64
            elif type(a) is float:
                t = T.FLOAT64
            else:
                t = typeof(a, f"argument '{name}'")
            want = ann.get(name)
            if want is not None:
                t = _check_annotation(name, t, want)
            out.append(t)
        return tuple(out)

    # -- calling
    def __call__(self, *args: Any) -> Any:
        dev = _device_args(args, self._params or list(inspect.signature(self.py_func).parameters))
        types = self.signature(args, dev)
        arrays = _arrays_in(args)
        noalias = not any(np.may_share_memory(a, b) for i, a in enumerate(arrays)
                          for b in arrays[i + 1:])
        if dev:
            spans = sorted((b.ptr, b.ptr + b.nbytes) for b in dev.values())
            noalias = noalias and all(hi <= lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:]))
        an = self.analyses.get(types)
        if an is None:
            from .pipeline import analyse
            with self.runtime.lock:
                an = self.analyses[types] = analyse(self, types)
        spec = None
        if an.critical.shapes or an.critical.values:
            shapes, values = an.positions
            spec_key = (tuple(dev[k].shape if k in dev else args[k].shape for k in shapes),
                        tuple(int(args[k]) for k in values))
            key = (types, noalias, spec_key)
            c = self.specs.get(key)
            if c is not None or an.versions < MAX_VERSIONS:
                spec = spec_key
            else:  # too many versions already: the general one
                key = (types, noalias, None)
                c = self.specs.get(key)
        else:
            key = (types, noalias, None)
            c = self.specs.get(key)
        if c is None:
            from .pipeline import compile_spec
            sd = None if spec is None else {
                "shapes": dict(zip(an.critical.shapes, spec[0])),
                "values": dict(zip(an.critical.values, spec[1]))}
            with self.runtime.lock:
                c = compile_spec(self, an, types, noalias, sd)
            if spec is not None:
                an.versions += 1
            self.specs[key] = c
        if dev:
            return self._invoke(c, tuple(dev.get(k, a) for k, a in enumerate(args)),
                                self._device_call(c, an.params, dev))
        return self._invoke(c, args)

    def _device_call(self, c: Compiled, params: tuple, dev: dict) -> Any:
        """Refuse GPU arrays this specialisation's host code would read (one error naming the
        argument and the line); otherwise the call's device side (gpu_host.DeviceCall)."""
        checked = c.info.setdefault("gpu_args_ok", set())
        for k, b in dev.items():
            if k in checked:
                continue
            what = f"argument '{params[k]}' ({b.kind} in GPU memory)"
            if c.gpu is None:
                raise TypeError(f"{what}: {self.__name__} has no GPU section to use it in (with "
                                "liftkit.gpu(): or @jit(target='gpu')); pass a NumPy array")
            lines = sorted({line for name, line in c.gpu.plan.host_uses if name == params[k]})
            if lines:
                raise TypeError(f"{what}: line {lines[0]} uses its data on the host, outside the "
                                "kernels and library calls of a GPU section; pass a NumPy array "
                                "or move that code into a parallel loop of the section")
            checked.add(k)
        return c.gpu.device_call(list(dev.values()))

    def _invoke(self, c: Compiled, args: tuple, dc: Any = None) -> Any:
        slots: list[int] = []
        keep = []
        for a, t in zip(args, c.argtypes):
            _pack(a, t, slots, keep)
        block = (ctypes.c_int64 * max(len(slots), 1))(*slots)
        res = (ctypes.c_int64 * c.nres)()
        env = (ctypes.c_int64 * 16)()
        env[6] = self.threads or self.runtime.threads
        if c.blas:
            env[8:12] = self.runtime.blas
        env[7] = c.pool
        if c.gpu is not None:
            env[12] = c.gpu.address
        if dc is not None:
            dc.open(env)
        st = c.entry(env, block, res)
        try:
            kept = c.gpu.finish(env) if c.gpu is not None else None
            if st != 0:
                if kept is not None:
                    raise kept
                raise _error(list(env), c.raises)
            arena = _Arena(env)
            arena.device = dc
            return _unpack(c.result, res, 0, arena)[0]
        finally:
            try:
                if dc is not None:
                    dc.close()
            finally:
                c.free(env)

    # -- inspection
    def _last(self) -> Compiled:
        if not self.specs:
            raise JitError(f"{self.__name__} has not been compiled yet: call it first")
        return list(self.specs.values())[-1]

    def inspect_vrir(self) -> str:
        """The VRIR (S-expressions) of the most recent specialisation, after the passes."""
        from .pipeline import passed
        from .sexpr import dumps
        return dumps(passed(self, self._last()))

    def inspect_gpu(self, dialect: str = "opencl") -> str:
        """The GPU kernels of the most recent specialisation (OpenCL C or CUDA C)."""
        c = self._last()
        if c.gpu is None:
            return ""
        return "\n".join(k.source(dialect) for k in c.gpu.plan.kernels)

    def inspect_llvm(self) -> str:
        """The optimised LLVM IR of the most recent specialisation."""
        from .pipeline import llvm_ir
        c = self._last()
        if not c.llvm_ir:
            c.llvm_ir = llvm_ir(self, c)
        return c.llvm_ir


class _Device:
    """A GPU array argument: its device memory (C order) as compiled code receives it (a plain
    class: one is made per GPU argument per call)."""
    __slots__ = ("obj", "ptr", "shape", "dtype", "ordinal", "library")

    def __init__(self, obj: Any, ptr: int, shape: tuple, dtype: np.dtype, ordinal: Any,
                 library: str) -> None:
        self.obj, self.ptr, self.shape, self.dtype, self.ordinal, self.library = \
            obj, ptr, shape, dtype, ordinal, library

    @property
    def kind(self) -> str:
        return f"a {type(self.obj).__module__.split('.')[0]}.{type(self.obj).__name__}"

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def _device_array() -> Any:
    """liftkit.backends.cuda.arrays.device_array (None without cuda-python): asked only where a
    GPU array is passed, and then the import is a look-up in sys.modules."""
    try:
        from liftkit.backends.cuda.arrays import device_array
    except ImportError:
        return None
    return device_array


def _device_args(args: tuple, params: list) -> dict:
    """The GPU arrays (CUDA array interface, DLPack on a CUDA device) among the arguments."""
    out: dict = {}
    for k, a in enumerate(args):
        t = type(a)
        if t is int or t is float or t is np.ndarray or t is tuple or t is bool or \
                isinstance(a, (np.ndarray, int, float, tuple)) or not _on_gpu(a):
            continue
        device_array = _device_array()
        what = f"argument '{params[k]}'" if k < len(params) else f"argument {k}"
        try:
            b = device_array(a, what) if device_array is not None else None
        except Exception as err:  # noqa: BLE001 - CUDAError: not contiguous, unreadable
            msg = str(err).replace("input ", "", 1)
            raise TypeError(msg if msg.startswith(what) else f"{what}: {msg}") from None
        if b is None:
            raise TypeError(f"{what}: a GPU array on a device other than CUDA; pass a NumPy "
                            "array or a CuPy/PyTorch CUDA array")
        out[k] = _Device(a, b.ptr, b.shape, b.dtype, b.ordinal, b.library)
    return out


def _device_type(d: _Device, what: str) -> T.Type:
    s = _BY_DTYPE.get(d.dtype)
    if s is None or s.is_complex:
        raise TypeError(f"{what}: GPU arrays of dtype {d.dtype} are not supported by @jit's GPU "
                        "sections (bool, integers, float32, float64)")
    return T.ArrayType(s, len(d.shape), "C")


def _arrays_in(args: Any) -> list:
    """Every array among the arguments, inside tuples too (the no-overlap check needs all)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a)
        elif isinstance(a, tuple):
            out += _arrays_in(a)
    return out


def _check_annotation(name: str, t: T.Type, want: Any) -> T.Type:
    if isinstance(want, T.ScalarType):
        if isinstance(t, T.ScalarType) and (t == want or
                                            T.promote(t, want) == want and not t.is_complex):
            return want
    elif isinstance(t, T.ArrayType) and t.elem == want.elem and t.ndim == want.ndim:
        if want.layout == "A" or want.layout == t.layout:
            return want
    raise TypeError(f"argument '{name}': expected {want}, got {t}")


def _pack(a: Any, t: T.Type, slots: list, keep: list) -> None:
    if isinstance(t, T.ScalarType):
        if t.is_complex:
            c = complex(a)
            slots += [int(np.float64(c.real).view(np.int64)), int(np.float64(c.imag).view(np.int64))] \
                if t.name == "complex128" else \
                [int(np.float32(c.real).view(np.int32)) & 0xFFFFFFFF,
                 int(np.float32(c.imag).view(np.int32)) & 0xFFFFFFFF]
        elif t.is_float:
            slots.append(_D2Q(_PD(float(a)))[0] if t.name == "float64"
                         else _F2I(_PF(float(a)))[0])
        else:
            slots.append(int(a))
        return
    if isinstance(t, T.ArrayType):
        if type(a) is _Device:  # the device pointer: only kernels and library calls use it
            slots.append(a.ptr)
            slots += a.shape  # C order: element strides (an empty dimension counts as 1)
            steps, step = [], 1
            for n in reversed(a.shape):
                steps.append(step)
                step *= max(n, 1)
            slots += reversed(steps)
            return
        item = a.itemsize
        if any(s % item for s in a.strides):
            a = np.ascontiguousarray(a)
        keep.append(a)
        slots.append(a.__array_interface__["data"][0])
        slots += [int(n) for n in a.shape]
        slots += [s // item for s in a.strides]
        return
    for x, it in zip(a, t.items):  # type: ignore[union-attr]
        _pack(x, it, slots, keep)


_PD, _D2Q = struct.Struct("<d").pack, struct.Struct("<q").unpack
_PQ, _Q2D = struct.Struct("<q").pack, struct.Struct("<d").unpack
_PF, _F2I = struct.Struct("<f").pack, struct.Struct("<I").unpack
_PI, _I2F = struct.Struct("<I").pack, struct.Struct("<f").unpack


_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [ctypes.c_void_p]
_LIBC.free.restype = None


class _Owner:
    """Frees a compiled-code allocation when the NumPy array viewing it goes away."""
    __slots__ = ("block",)

    def __init__(self, block: int) -> None:
        self.block = block

    def __del__(self) -> None:
        _LIBC.free(self.block)


class _Arena:
    """The call's allocation chain (env slot 5): returned arrays are detached from it and
    handed to NumPy without a copy."""

    def __init__(self, env: Any, taken: dict | None = None) -> None:
        self.env = env
        self.taken: dict[int, Any] = taken if taken is not None else {}
        self.device: Any = None  # gpu_host.DeviceCall of a call with GPU array arguments

    def buffer(self, lo: int, hi: int) -> Any:
        """A ctypes buffer owning the block holding [lo, hi), or None."""
        for blk, (start, size, buf) in self.taken.items():
            if start <= lo and hi <= start + size:
                return buf, start
        prev, cur = None, int(self.env[5])
        while cur:
            hdr = (ctypes.c_int64 * 2).from_address(cur)
            start, size = cur + 64, int(hdr[1])
            if start <= lo and hi <= start + size:
                if prev is None:
                    self.env[5] = hdr[0]
                else:
                    (ctypes.c_int64 * 1).from_address(prev)[0] = hdr[0]
                buf = (ctypes.c_char * max(size, 1)).from_address(start)
                buf._owner = _Owner(cur)  # type: ignore[attr-defined]
                self.taken[cur] = (start, size, buf)
                return buf, start
            prev, cur = cur, int(hdr[0])
        return None


def _unpack(t: T.Type, res: Any, k: int, arena: Any = None) -> tuple[Any, int]:
    if isinstance(t, T.VoidType):
        return None, k
    if isinstance(t, T.ScalarType):
        if t.is_complex:
            if t.name == "complex128":
                v = complex(_Q2D(_PQ(res[k]))[0], _Q2D(_PQ(res[k + 1]))[0])
            else:
                re = _I2F(_PI(res[k] & 0xFFFFFFFF))[0]
                im = _I2F(_PI(res[k + 1] & 0xFFFFFFFF))[0]
                v = np.complex64(complex(re, im))
            return v, k + 2
        raw = res[k]
        if t.is_bool:
            return bool(raw), k + 1
        if t.name == "int64":
            return int(raw), k + 1
        if t.name == "int32":
            return np.int32(raw), k + 1
        if t.name == "float64":
            return _Q2D(_PQ(raw))[0], k + 1
        return np.float32(_I2F(_PI(raw & 0xFFFFFFFF))[0]), k + 1
    if isinstance(t, T.ArrayType):
        nd = t.ndim
        ptr = int(res[k])
        shape = tuple(int(x) for x in res[k + 1:k + 1 + nd])
        strides = tuple(int(x) * t.elem.dtype.itemsize for x in res[k + 1 + nd:k + 1 + 2 * nd])
        dt = t.elem.dtype
        dev = getattr(arena, "device", None)
        if dev is not None:  # a call with GPU arrays: its array results are GPU arrays too
            got = dev.result(ptr, shape, strides, dt)
            if got is not None:
                return got, k + 1 + 2 * nd
            host, k = _unpack(t, res, k, _Arena(arena.env, arena.taken))
            return dev.upload(host), k
        if 0 in shape:
            return np.zeros(shape, dt), k + 1 + 2 * nd
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + dt.itemsize
        owned = arena.buffer(ptr + lo, ptr + hi) if arena is not None else None
        if owned is not None:
            buf, start = owned
            return np.ndarray(shape, dt, buffer=buf, offset=ptr - start, strides=strides), \
                k + 1 + 2 * nd
        buf = (ctypes.c_char * (hi - lo)).from_address(ptr + lo)
        view = np.ndarray(shape, dt, buffer=buf, offset=-lo, strides=strides)
        return view.copy(order="K"), k + 1 + 2 * nd
    out = []
    for it in t.items:  # type: ignore[union-attr]
        v, k = _unpack(it, res, k, arena)
        out.append(v)
    return tuple(out), k


def _error(env: np.ndarray, raises: list) -> Exception:
    kind, line, a, b, c = (int(x) for x in env[:5])
    where = f"line {line}: "
    if kind == 1:
        return IndexError(f"{where}index {a} is out of bounds for axis {b} with size {c}")
    if kind == 2:
        return ZeroDivisionError(f"{where}integer division or modulo by zero")
    if kind == 3:
        return ValueError(f"{where}operands could not be broadcast together "
                          f"(size {a} against {c} in dimension {b})")
    if kind == 4:
        exc, msg = raises[a]
        return _EXC[exc](msg) if msg else _EXC[exc]()
    if kind == 5:
        return ValueError(f"{where}range() arg 3 must not be zero")
    if kind == 6:
        return MemoryError(f"{where}could not allocate {a} bytes")
    if kind == 7:
        return ValueError(f"{where}shapes not aligned for dot: {a} (dim 1) != {b} (dim 0)")
    if kind == 8:
        return ValueError(f"{where}negative dimensions are not allowed")
    if kind == 9:
        return ValueError(f"{where}integers to negative integer powers are not allowed")
    if kind == 10:
        return ValueError(f"{where}zero-size array to reduction operation which has no identity")
    if kind == 11:
        return ValueError(f"{where}slice step cannot be zero")
    return RuntimeError(f"{where}compiled code failed (error {kind})")


def jit(fn: Callable | None = None, **options: Any) -> Any:
    """Compile a NumPy-style Python function on its first call per argument signature.

    Options: ``cache`` (disk cache, default on), ``parallel`` (run prange/PAR loops on all
    cores, default on), ``threads``, ``passes`` (dict switching passes off for ablation:
    simplify, inline, bounds, specialise, alias), ``target`` ("gpu": the whole function is an
    accelerated section), ``gpu_runtime`` (a :class:`liftkit.runtime.Runtime` for its sections
    instead of the process's default one)."""
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)
