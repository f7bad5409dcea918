"""Running a compiled pipeline with pyopencl: sizes, buffers, arguments, launches, results.

The runner takes the same inputs as the interpreter and returns results in the same form, so
every compiled program can be checked against the reference semantics. Launch problems are
caught on the host before anything is enqueued and reported in the program's terms (which size,
which kernel, what would work) rather than as a bare CL_INVALID_WORK_GROUP_SIZE.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyopencl as cl

from liftkit.arith import ArithError, ArithExpr
from liftkit.arith.evalnp import eval_numpy
from liftkit.backends.opencl.cache import KernelCache
from liftkit.backends.opencl.devices import Device, OpenCLError, select_device
from liftkit.backends.opencl.hostdata import host_buffer, pack_array, pack_scalar, unpack
from liftkit.codegen.constraints import Divides as _Divides
from liftkit.codegen.constraints import divisibility_checks
from liftkit.codegen.kernel import CompiledProgram, CompileOptions, Kernel, NDRange
from liftkit.ir.nodes import Lambda
from liftkit.semantics.interpreter import bind_sizes
from liftkit.semantics.values import to_numpy
from liftkit.types import SCALARS, TupleType

INT32_MAX = 2**31 - 1
HINT_SEARCH_LIMIT = 1 << 20  # sizes tried when looking for values that would work
MAX_PLANS = 256  # per-program analyses a runner keeps

NDRangeOverride = Union[NDRange, Mapping[str, NDRange], None]


# ---------------------------------------------------------------------------------------------
# what a run reports


@dataclass(frozen=True)
class Launch:
    """One kernel launch as enqueued: evaluated global and local sizes."""

    kernel: str
    global_size: tuple[int, ...]
    local_size: Optional[tuple[int, ...]]

    @property
    def work_groups(self) -> Optional[tuple[int, ...]]:
        if self.local_size is None:
            return None
        return tuple(g // l for g, l in zip(self.global_size, self.local_size))


@dataclass(frozen=True)
class RunInfo:
    """Sizes, launches and device times (seconds, from profiling events) of one `run`.

    kernel_times[i] is the median over the timed repetitions of launch i; total_seconds the
    median over repetitions of the whole pipeline's kernel time; runs holds every repetition.
    """

    device: Device
    sizes: dict[str, int]
    launches: tuple[Launch, ...]
    kernel_times: tuple[float, ...]
    total_seconds: float
    runs: tuple[tuple[float, ...], ...]
    upload_seconds: float
    download_seconds: float
    build_seconds: float  # host wall time to get the built programs (cache or compiler)
    warmup: bool = False

    @property
    def kernel_seconds(self) -> dict[str, float]:
        return {launch.kernel: t for launch, t in zip(self.launches, self.kernel_times)}

    @property
    def repeat(self) -> int:
        return len(self.runs)


# ---------------------------------------------------------------------------------------------
# size constraints of a program (checked before launching)


@dataclass
class _Plan:
    """What the runner derives once per compiled program."""

    compiled: CompiledProgram
    checks: list[_Divides]


# ---------------------------------------------------------------------------------------------
# the runner


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "no sizes"


def _eval(e: Union[ArithExpr, int], sizes: Mapping[str, int], what: str) -> int:
    if isinstance(e, (int, np.integer)):
        return int(e)
    try:
        return int(e.eval(sizes))
    except ArithError as err:
        raise OpenCLError(f"{what}: cannot evaluate {e} ({err})") from None


class OpenCLRunner:
    """Runs compiled programs on one OpenCL device with a profiling queue.

    Owns the context, the queue and a `KernelCache` (a fresh one using the default directory
    unless given), so repeated runs of a program build its kernels once.
    """

    def __init__(self, device_spec: Union[str, Device, None] = None,
                 cache: Optional[KernelCache] = None) -> None:
        self.device = device_spec if isinstance(device_spec, Device) else select_device(device_spec)
        self.context = cl.Context([self.device.cl_device])
        self.queue = cl.CommandQueue(self.context, self.device.cl_device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.cache = cache if cache is not None else KernelCache()
        self._plans: dict[int, _Plan] = {}

    def __repr__(self) -> str:
        return f"OpenCLRunner({self.device.label!r})"

    # -- public entry points ----------------------------------------------------------------------

    def run(self, compiled: CompiledProgram, *inputs: Any, sizes: Optional[Mapping[str, int]] = None,
            ndrange_override: NDRangeOverride = None, timing: bool = False, repeat: int = 1,
            name: Optional[str] = None) -> Any:
        """The program's result, as `interpret` returns it."""
        return self.run_with_info(compiled, *inputs, sizes=sizes, ndrange_override=ndrange_override,
                                  timing=timing, repeat=repeat, name=name)[0]

    def run_with_info(self, compiled: CompiledProgram, *inputs: Any,
                      sizes: Optional[Mapping[str, int]] = None,
                      ndrange_override: NDRangeOverride = None, timing: bool = False,
                      repeat: int = 1, name: Optional[str] = None) -> tuple[Any, RunInfo]:
        """(result, RunInfo). The pipeline is enqueued `repeat` times on the same inputs;
        `timing=True` adds one untimed warm-up run first (drivers such as PoCL finish compiling
        on the first launch). `name` labels error messages (e.g. the bundled program's name)."""
        if repeat < 1:
            raise OpenCLError(f"repeat must be at least 1, got {repeat}")
        label = name or "/".join(k.name for k in compiled.kernels) or "program"
        bound = bind_sizes(compiled.program, inputs, sizes)
        plan = self._plan(compiled)
        launches = self._launches(compiled, bound, ndrange_override, label, plan)
        self._check_buffers(compiled, bound, label, plan)
        self._check_divisibility(compiled, bound, label, plan)

        t0 = time.perf_counter()
        kernels = [self._cl_kernel(k) for k in compiled.kernels]
        build_seconds = time.perf_counter() - t0
        for k, clk, launch in zip(compiled.kernels, kernels, launches):
            self._check_device_limits(k, clk, launch, label)

        bufs, hosts, uploads = self._buffers(compiled, inputs, bound, label)
        for k, clk in zip(compiled.kernels, kernels):
            self._set_args(k, clk, bufs, inputs, bound, compiled, label)

        if timing:
            self._enqueue(kernels, launches)
        runs = [self._enqueue(kernels, launches) for _ in range(repeat)]
        results, downloads = [], []
        for rname in compiled.result:
            host = host_buffer(compiled.buffer(rname).type, bound)
            downloads.append(cl.enqueue_copy(self.queue, host, bufs[rname], is_blocking=True))
            results.append(unpack(host, compiled.buffer(rname).type))
        self.queue.finish()
        del hosts  # kept alive until the uploads completed

        value = results[0] if len(results) == 1 and not _is_tuple_result(compiled) else tuple(results)
        result = to_numpy(value, compiled.result_type)
        per_run = [tuple(_seconds(e) for e in events) for events in runs]
        info = RunInfo(
            device=self.device, sizes=dict(bound), launches=tuple(launches),
            kernel_times=tuple(statistics.median(r[i] for r in per_run) for i in range(len(launches))),
            total_seconds=statistics.median(sum(r) for r in per_run), runs=tuple(per_run),
            upload_seconds=sum(_seconds(e) for e in uploads),
            download_seconds=sum(_seconds(e) for e in downloads),
            build_seconds=build_seconds, warmup=timing)
        return result, info

    # -- preparation ------------------------------------------------------------------------------

    def _plan(self, compiled: CompiledProgram) -> _Plan:
        plan = self._plans.get(id(compiled))
        if plan is None or plan.compiled is not compiled:
            plan = _Plan(compiled, divisibility_checks(compiled.program))
            if len(self._plans) >= MAX_PLANS:
                self._plans.pop(next(iter(self._plans)))  # the oldest
            self._plans[id(compiled)] = plan  # the plan holds `compiled`, so the id stays unique
        return plan

    def _cl_kernel(self, k: Kernel) -> Any:
        prog = self.cache.get(self.context, self.device, k.source, k.build_options)
        try:
            return cl.Kernel(prog, k.name)
        except cl.Error as err:
            raise OpenCLError(f"kernel {k.name}: not found in its built source ({err})") from None

    def _launches(self, compiled: CompiledProgram, sizes: Mapping[str, int],
                  override: NDRangeOverride, label: str, plan: _Plan) -> list[Launch]:
        if isinstance(override, NDRange):
            if len(compiled.kernels) != 1:
                raise OpenCLError(f"{label}: the pipeline has {len(compiled.kernels)} kernels; give "
                                  f"ndrange_override as {{kernel name: NDRange}}")
            override = {compiled.kernels[0].name: override}
        override = dict(override or {})
        unknown = set(override) - {k.name for k in compiled.kernels}
        if unknown:
            raise OpenCLError(f"{label}: ndrange_override names no kernel of the pipeline: "
                              f"{', '.join(sorted(unknown))} (kernels: "
                              f"{', '.join(k.name for k in compiled.kernels)})")
        out = []
        for k in compiled.kernels:
            nd = override.get(k.name, k.ndrange)
            glob = tuple(_eval(g, sizes, f"{label}: kernel {k.name} global size") for g in nd.global_size)
            local = None if nd.local_size is None else tuple(int(x) for x in nd.local_size)
            if not 1 <= len(glob) <= 3:
                raise OpenCLError(f"{label}: kernel {k.name} has {len(glob)} dimensions (1 to 3 allowed)")
            if local is not None and len(local) != len(glob):
                raise OpenCLError(f"{label}: kernel {k.name}: local size {local} and global size "
                                  f"{glob} have different numbers of dimensions")
            for d, g in enumerate(glob):
                l = 1 if local is None else local[d]
                if l <= 0:
                    raise OpenCLError(f"{label}: kernel {k.name}: local size {local} must be positive")
                if g <= 0:
                    raise OpenCLError(
                        f"{label}: {_sizes_text(sizes)} gives 0 work-groups (kernel {k.name}: global "
                        f"size {nd.global_size[d]} = {g} in dimension {d})"
                        f"{self._hint(compiled, sizes, plan)}")
                if g % l:
                    raise OpenCLError(
                        f"{label}: kernel {k.name}: global size {nd.global_size[d]} = {g} is not a "
                        f"multiple of the local size {l} in dimension {d} ({_sizes_text(sizes)})"
                        f"{self._hint(compiled, sizes, plan)}")
            out.append(Launch(k.name, glob, local))
        return out

    def _check_buffers(self, compiled: CompiledProgram, sizes: Mapping[str, int], label: str,
                       plan: _Plan) -> None:
        for b in compiled.buffers:
            n = _eval(b.nbytes, sizes, f"{label}: buffer {b.name}")
            if n <= 0:
                raise OpenCLError(f"{label}: {_sizes_text(sizes)} gives an empty buffer {b.name} "
                                  f"({b.nbytes} = {n} bytes){self._hint(compiled, sizes, plan)}")

    def _check_divisibility(self, compiled: CompiledProgram, sizes: Mapping[str, int], label: str,
                            plan: _Plan) -> None:
        for d in plan.checks:
            try:
                length, by = d.length.eval(sizes), d.by.eval(sizes)
            except ArithError:
                continue  # lengths over variables bound inside the program: checked by the types
            if by <= 0 or length % by:
                raise OpenCLError(f"{label}: {_sizes_text(sizes)}: {d.what} needs a length divisible "
                                  f"by {by}, but {d.length} = {length}"
                                  f"{self._hint(compiled, sizes, plan)}")

    def _check_device_limits(self, k: Kernel, clk: Any, launch: Launch, label: str) -> None:
        dev = self.device
        if launch.local_size is not None:
            total = math.prod(launch.local_size)
            try:
                kernel_max = int(clk.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                         dev.cl_device))
            except cl.Error:
                kernel_max = dev.max_work_group_size
            limit = min(dev.max_work_group_size, kernel_max)
            if total > limit:
                raise OpenCLError(
                    f"{label}: kernel {k.name} uses work-groups of {launch.local_size} = {total} "
                    f"work-items (global size {launch.global_size}), but {dev.label} runs at most "
                    f"{limit} per work-group for this kernel; compile with a smaller local size "
                    f"(CompileOptions(local_size=...)) or pass ndrange_override")
            for d, (l, m) in enumerate(zip(launch.local_size, dev.max_work_item_sizes)):
                if l > m:
                    raise OpenCLError(f"{label}: kernel {k.name}: local size {l} in dimension {d} "
                                      f"exceeds {dev.label}'s limit {m}")
        try:
            local_mem = int(clk.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE,
                                                    dev.cl_device))
        except cl.Error:
            return
        if local_mem > dev.local_mem_size:
            raise OpenCLError(f"{label}: kernel {k.name} needs {local_mem} bytes of local memory; "
                              f"{dev.label} has {dev.local_mem_size}")

    def _buffers(self, compiled: CompiledProgram, inputs: Sequence[Any], sizes: Mapping[str, int],
                 label: str) -> tuple[dict[str, Any], list[np.ndarray], list[Any]]:
        mf = cl.mem_flags
        bufs: dict[str, Any] = {}
        hosts: list[np.ndarray] = []
        uploads: list[Any] = []
        params = compiled.program.params
        for b in compiled.buffers:
            nbytes = _eval(b.nbytes, sizes, f"{label}: buffer {b.name}")
            if b.role == "input":
                k = b.param_index if b.param_index is not None else _param_by_buffer(compiled, b.name)
                host = pack_array(inputs[k], params[k].type, params[k].name, sizes)  # type: ignore[arg-type]
                if host.nbytes != nbytes:
                    raise OpenCLError(f"{label}: input {params[k].name} packs to {host.nbytes} bytes "
                                      f"but buffer {b.name} is {b.nbytes} = {nbytes} bytes")
                buf = cl.Buffer(self.context, mf.READ_ONLY, size=nbytes)
                uploads.append(cl.enqueue_copy(self.queue, buf, host, is_blocking=False))
                hosts.append(host)
            else:
                buf = cl.Buffer(self.context, mf.READ_WRITE, size=nbytes)
            bufs[b.name] = buf
        return bufs, hosts, uploads

    def _set_args(self, k: Kernel, clk: Any, bufs: Mapping[str, Any], inputs: Sequence[Any],
                  sizes: Mapping[str, int], compiled: CompiledProgram, label: str) -> None:
        params = compiled.program.params
        for i, a in enumerate(k.args):
            if a.kind == "buffer":
                if a.buffer not in bufs:
                    raise OpenCLError(f"{label}: kernel {k.name} argument {a.name} names buffer "
                                      f"{a.buffer!r}, which the pipeline does not declare")
                value: Any = bufs[a.buffer]
            elif a.kind == "scalar":
                idx = a.param_index
                if idx is None:
                    idx = next((j for j, p in enumerate(params) if p.name == a.name), None)
                if idx is None:
                    raise OpenCLError(f"{label}: kernel {k.name} scalar argument {a.name} has no "
                                      f"program parameter")
                value = pack_scalar(inputs[idx], params[idx].type, params[idx].name)  # type: ignore[arg-type]
            elif a.kind == "size":
                if a.size is None:
                    raise OpenCLError(f"{label}: kernel {k.name} size argument {a.name} has no value")
                value = _size_value(a.ctype, _eval(a.size, sizes, f"{label}: argument {a.name}"),
                                    f"{label}: kernel {k.name} argument {a.name} = {a.size}")
            else:
                raise OpenCLError(f"{label}: kernel {k.name}: unknown argument kind {a.kind!r}")
            try:
                clk.set_arg(i, value)
            except cl.Error as err:
                raise OpenCLError(f"{label}: kernel {k.name}: cannot set argument {i} ({a.name}): "
                                  f"{err}") from None

    def _enqueue(self, kernels: Sequence[Any], launches: Sequence[Launch]) -> list[Any]:
        events = [cl.enqueue_nd_range_kernel(self.queue, clk, launch.global_size, launch.local_size)
                  for clk, launch in zip(kernels, launches)]
        cl.wait_for_events(events)
        return events

    # -- hints ------------------------------------------------------------------------------------

    def _hint(self, compiled: CompiledProgram, sizes: Mapping[str, int], plan: _Plan) -> str:
        """"; N must be a multiple of 262144" — found by trying values of one size at a time
        against every constraint the runner checks."""
        out = []
        for var in sorted(sizes):
            try:
                ok = _valid_values(compiled, plan, sizes, var)
            except (ArithError, ZeroDivisionError, FloatingPointError, OverflowError):
                continue
            good = np.flatnonzero(ok) + 1
            if len(good) == 0:
                continue
            first = int(good[0])
            multiples = np.zeros_like(ok)
            multiples[first - 1::first] = True
            if np.array_equal(ok, multiples):
                out.append(f"{var} must be a multiple of {first}")
            else:
                out.append(f"e.g. {var}={first} works")
        return "; " + "; ".join(out) if out else ""


def _valid_values(compiled: CompiledProgram, plan: _Plan, sizes: Mapping[str, int],
                  var: str) -> np.ndarray:
    """For var = 1..HINT_SEARCH_LIMIT (others as bound): does every launch constraint hold?"""
    vals = np.arange(1, HINT_SEARCH_LIMIT + 1, dtype=np.int64)
    return constraints_hold(compiled, plan.checks, sizes, var, vals)


def constraints_hold(compiled: CompiledProgram, checks: Sequence[Any], sizes: Mapping[str, int],
                     var: str, vals: np.ndarray) -> np.ndarray:
    """For each value of `var` (others as bound): positive global sizes that are multiples of the
    local sizes, non-empty buffers, and every divisibility check (split, asVector, ...) holding.
    Shared by the runtime's size hints and the exploration's choice of small check sizes."""
    env: dict[str, Any] = dict(sizes)
    env[var] = vals
    ok = np.ones(len(vals), dtype=bool)

    def ev(e: ArithExpr) -> np.ndarray:
        return np.broadcast_to(np.asarray(eval_numpy(e, env), dtype=np.int64), vals.shape)

    with np.errstate(all="raise"):
        for k in compiled.kernels:
            local = k.ndrange.local_size
            for d, g in enumerate(k.ndrange.global_size):
                gv = ev(g)
                ok &= gv > 0
                if local is not None and d < len(local):
                    ok &= gv % local[d] == 0
        for b in compiled.buffers:
            ok &= ev(b.nbytes) > 0
        for c in checks:
            by = ev(c.by)
            ok &= by > 0
            ok &= ev(c.length) % np.where(by > 0, by, 1) == 0
    return ok


# ---------------------------------------------------------------------------------------------
# helpers


def _is_tuple_result(compiled: CompiledProgram) -> bool:
    return isinstance(compiled.result_type, TupleType)


def _param_by_buffer(compiled: CompiledProgram, name: str) -> int:
    pname = name.split(":", 1)[-1]
    for j, p in enumerate(compiled.program.params):
        if p.name == pname:
            return j
    raise OpenCLError(f"input buffer {name} has no program parameter")


def _size_value(ctype: str, v: int, what: str) -> Any:
    t = SCALARS.get(ctype.strip().split()[-1], SCALARS["int"])
    info = np.iinfo(t.dtype) if t.dtype.kind in "iu" else None
    if info is None:
        return t.dtype.type(v)
    if not info.min <= v <= info.max:
        raise OpenCLError(f"{what}: the value {v} does not fit in a C {t.name} "
                          f"(at most {info.max}); the kernels index with {t.name}")
    return t.dtype.type(v)


def _seconds(event: Any) -> float:
    try:
        return (event.profile.end - event.profile.start) * 1e-9
    except cl.Error:  # e.g. a copy the driver did not profile
        return 0.0


# ---------------------------------------------------------------------------------------------
# convenience


def run_opencl(program_or_compiled: Union[Lambda, CompiledProgram], *inputs: Any,
               device: Union[str, Device, None] = None, options: Optional[CompileOptions] = None,
               sizes: Optional[Mapping[str, int]] = None, runner: Optional[OpenCLRunner] = None) -> Any:
    """Compile (if needed) and run once; for repeated runs keep an `OpenCLRunner`."""
    if isinstance(program_or_compiled, CompiledProgram):
        compiled = program_or_compiled
    else:
        from liftkit.codegen.compiler import compile_program

        compiled = compile_program(program_or_compiled, options)
    runner = runner if runner is not None else OpenCLRunner(device)
    return runner.run(compiled, *inputs, sizes=sizes)
