"""The host side of running a compiled pipeline, whatever the backend: sizes, launch geometry,
checks before anything is enqueued, kernel arguments, results and timings.

`HostPipeline.run_with_info` binds the sizes from the inputs, evaluates each kernel's launch,
checks buffers and divisibility constraints (a violated one is reported with the sizes that
would work), then asks the backend (OpenCL, CUDA) for what only it can do: get built kernels,
check them against the device, allocate and fill buffers, launch and time, read results back.
"""

from __future__ import annotations

import statistics
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from liftkit.arith import ArithError, ArithExpr
from liftkit.arith.evalnp import eval_numpy
from liftkit.backends.errors import BackendError
from liftkit.backends.hostdata import pack_scalar
from liftkit.codegen.constraints import Divides, divisibility_checks
from liftkit.codegen.kernel import CompiledProgram, Kernel, KernelArg, NDRange
from liftkit.semantics.interpreter import bind_sizes
from liftkit.semantics.values import to_numpy
from liftkit.types import SCALARS, TupleType, Type

INT32_MAX = 2**31 - 1
HINT_SEARCH_LIMIT = 1 << 20  # sizes tried when looking for values that would work
MAX_PLANS = 256  # per-program analyses a runner keeps

NDRangeOverride = Union[NDRange, Mapping[str, NDRange], None]


# ---------------------------------------------------------------------------------------------
# what a run reports


@dataclass(frozen=True)
class Launch:
    """One kernel launch as enqueued: evaluated global and local sizes (OpenCL's terms; on CUDA
    the grid is global / local blocks of `local` threads)."""

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
    """Sizes, launches and device times (seconds, from profiling or CUDA events) of one `run`.

    kernel_times[i] is the median over the timed repetitions of launch i; total_seconds the
    median over repetitions of the whole pipeline's kernel time; runs holds every repetition.
    """

    device: Any  # the backend's Device
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


@dataclass
class Plan:
    """What a runner derives once per compiled program."""

    compiled: CompiledProgram
    checks: list[Divides]


@dataclass
class Transfers:
    """Device buffers by name, what must stay alive until the uploads finish, upload seconds."""

    buffers: dict[str, Any]
    keep_alive: list[Any]
    upload_seconds: float = 0.0


# ---------------------------------------------------------------------------------------------
# the pipeline


def sizes_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "no sizes"


class HostPipeline(ABC):
    """What every backend's runner shares. Subclasses set `error` (their BackendError) and
    implement the hooks in the last section."""

    error: type[BackendError] = BackendError
    dialect: str = "opencl"  # the C dialect the backend's kernels are written in
    device: Any

    def __init__(self) -> None:
        self._plans: dict[int, Plan] = {}

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
            raise self.error(f"repeat must be at least 1, got {repeat}")
        compiled = self.for_backend(compiled)
        label = name or "/".join(k.name for k in compiled.kernels) or "program"
        bound = bind_sizes(compiled.program, inputs, sizes)
        plan = self._plan(compiled)
        launches = self.launches(compiled, bound, ndrange_override, label, plan)
        self.check_buffers(compiled, bound, label, plan)
        self.check_divisibility(compiled, bound, label, plan)

        t0 = time.perf_counter()
        try:
            kernels = [self.get_kernel(k) for k in compiled.kernels]
        except BackendError as err:  # a compiler crash names the program it was building
            if getattr(err, "needs_program", False):
                raise err.with_program(label) from None  # type: ignore[attr-defined]
            raise
        build_seconds = time.perf_counter() - t0
        for k, handle, launch in zip(compiled.kernels, kernels, launches):
            self.check_device_limits(k, handle, launch, label)

        try:
            transfers = self.allocate(compiled, inputs, bound, label)
            args = [self.arguments(k, transfers.buffers, inputs, bound, compiled, label)
                    for k in compiled.kernels]
        except BackendError as err:
            raise self._own(err) from None
        if timing:
            self.enqueue(kernels, launches, args)
        runs = [self.enqueue(kernels, launches, args) for _ in range(repeat)]
        results, download_seconds = self.download(compiled, transfers, bound, inputs)
        upload_seconds = transfers.upload_seconds
        del transfers  # kept alive until the uploads completed

        result = self.result_value(nest_results(results, compiled.result_type), compiled)
        info = RunInfo(
            device=self.device, sizes=dict(bound), launches=tuple(launches),
            kernel_times=tuple(statistics.median(r[i] for r in runs) for i in range(len(launches))),
            total_seconds=statistics.median(sum(r) for r in runs), runs=tuple(runs),
            upload_seconds=upload_seconds,
            download_seconds=download_seconds, build_seconds=build_seconds, warmup=timing)
        return result, info

    # -- preparation ------------------------------------------------------------------------------

    def _own(self, err: BackendError) -> BackendError:
        """A backend-neutral error (host data) as this backend's error class."""
        return err if isinstance(err, self.error) else self.error(str(err))

    def _plan(self, compiled: CompiledProgram) -> Plan:
        plan = self._plans.get(id(compiled))
        if plan is None or plan.compiled is not compiled:
            plan = Plan(compiled, divisibility_checks(compiled.program))
            if len(self._plans) >= MAX_PLANS:
                self._plans.pop(next(iter(self._plans)))  # the oldest
            self._plans[id(compiled)] = plan  # the plan holds `compiled`, so the id stays unique
        return plan

    def eval(self, e: Union[ArithExpr, int], sizes: Mapping[str, int], what: str) -> int:
        if isinstance(e, (int, np.integer)):
            return int(e)
        try:
            return int(e.eval(sizes))
        except ArithError as err:
            raise self.error(f"{what}: cannot evaluate {e} ({err})") from None

    def launches(self, compiled: CompiledProgram, sizes: Mapping[str, int],
                 override: NDRangeOverride, label: str, plan: Plan) -> list[Launch]:
        if isinstance(override, NDRange):
            if len(compiled.kernels) != 1:
                raise self.error(f"{label}: the pipeline has {len(compiled.kernels)} kernels; give "
                                 f"ndrange_override as {{kernel name: NDRange}}")
            override = {compiled.kernels[0].name: override}
        override = dict(override or {})
        unknown = set(override) - {k.name for k in compiled.kernels}
        if unknown:
            raise self.error(f"{label}: ndrange_override names no kernel of the pipeline: "
                             f"{', '.join(sorted(unknown))} (kernels: "
                             f"{', '.join(k.name for k in compiled.kernels)})")
        out = []
        for k in compiled.kernels:
            nd = override.get(k.name, k.ndrange)
            glob = tuple(self.eval(g, sizes, f"{label}: kernel {k.name} global size")
                         for g in nd.global_size)
            local = None if nd.local_size is None else tuple(int(x) for x in nd.local_size)
            if not 1 <= len(glob) <= 3:
                raise self.error(f"{label}: kernel {k.name} has {len(glob)} dimensions (1 to 3 allowed)")
            if local is not None and len(local) != len(glob):
                raise self.error(f"{label}: kernel {k.name}: local size {local} and global size "
                                 f"{glob} have different numbers of dimensions")
            for d, g in enumerate(glob):
                l = 1 if local is None else local[d]
                if l <= 0:
                    raise self.error(f"{label}: kernel {k.name}: local size {local} must be positive")
                if g <= 0:
                    raise self.error(
                        f"{label}: {sizes_text(sizes)} gives 0 work-groups (kernel {k.name}: global "
                        f"size {nd.global_size[d]} = {g} in dimension {d})"
                        f"{self.hint(compiled, sizes, plan)}")
                if g % l:
                    raise self.error(
                        f"{label}: kernel {k.name}: global size {nd.global_size[d]} = {g} is not a "
                        f"multiple of the local size {l} in dimension {d} ({sizes_text(sizes)})"
                        f"{self.hint(compiled, sizes, plan)}")
            out.append(Launch(k.name, glob, local))
        return out

    def check_buffers(self, compiled: CompiledProgram, sizes: Mapping[str, int], label: str,
                      plan: Plan) -> None:
        for b in compiled.buffers:
            n = self.eval(b.nbytes, sizes, f"{label}: buffer {b.name}")
            if n <= 0:
                raise self.error(f"{label}: {sizes_text(sizes)} gives an empty buffer {b.name} "
                                 f"({b.nbytes} = {n} bytes){self.hint(compiled, sizes, plan)}")

    def check_divisibility(self, compiled: CompiledProgram, sizes: Mapping[str, int], label: str,
                           plan: Plan) -> None:
        for d in plan.checks:
            try:
                length, by = d.length.eval(sizes), d.by.eval(sizes)
            except ArithError:
                continue  # lengths over variables bound inside the program: checked by the types
            if by <= 0 or length % by:
                raise self.error(f"{label}: {sizes_text(sizes)}: {d.what} needs a length divisible "
                                 f"by {by}, but {d.length} = {length}"
                                 f"{self.hint(compiled, sizes, plan)}")

    def arguments(self, k: Kernel, bufs: Mapping[str, Any], inputs: Sequence[Any],
                  sizes: Mapping[str, int], compiled: CompiledProgram, label: str) -> list[Any]:
        """Each kernel argument's value: a device buffer (as `allocate` made it), a scalar
        input with its C type's bytes, or a size."""
        params = compiled.program.params
        values: list[Any] = []
        for a in k.args:
            if a.kind == "buffer":
                if a.buffer not in bufs:
                    raise self.error(f"{label}: kernel {k.name} argument {a.name} names buffer "
                                     f"{a.buffer!r}, which the pipeline does not declare")
                values.append(bufs[a.buffer])
            elif a.kind == "scalar":
                idx = a.param_index
                if idx is None:
                    idx = next((j for j, p in enumerate(params) if p.name == a.name), None)
                if idx is None:
                    raise self.error(f"{label}: kernel {k.name} scalar argument {a.name} has no "
                                     f"program parameter")
                values.append(pack_scalar(inputs[idx], params[idx].type, params[idx].name))  # type: ignore[arg-type]
            elif a.kind == "size":
                if a.size is None:
                    raise self.error(f"{label}: kernel {k.name} size argument {a.name} has no value")
                values.append(self.size_value(
                    a.ctype, self.eval(a.size, sizes, f"{label}: argument {a.name}"),
                    f"{label}: kernel {k.name} argument {a.name} = {a.size}"))
            elif a.kind == "tensormap" and a.buffer in bufs and a.tensor_map is not None:
                values.append(self.tensor_map(a, bufs[a.buffer], sizes, label))
            else:
                raise self.error(f"{label}: kernel {k.name}: unknown argument kind {a.kind!r}")
        return values

    def tensor_map(self, a: KernelArg, buffer: Any, sizes: Mapping[str, int], label: str) -> Any:
        """The value of a tensor-map argument over `buffer` (CUDA's bulk tensor copy)."""
        raise self.error(f"{label}: argument {a.name} is a CUDA tensor map; run the program on "
                         "the CUDA backend")

    def param_by_buffer(self, compiled: CompiledProgram, name: str) -> int:
        pname = name.split(":", 1)[-1]
        for j, p in enumerate(compiled.program.params):
            if p.name == pname:
                return j
        raise self.error(f"input buffer {name} has no program parameter")

    def size_value(self, ctype: str, v: int, what: str) -> Any:
        t = SCALARS.get(ctype.strip().split()[-1], SCALARS["int"])
        info = np.iinfo(t.dtype) if t.dtype.kind in "iu" else None
        if info is None:
            return t.dtype.type(v)
        if not info.min <= v <= info.max:
            raise self.error(f"{what}: the value {v} does not fit in a C {t.name} "
                             f"(at most {info.max}); the kernels index with {t.name}")
        return t.dtype.type(v)

    # -- hints ------------------------------------------------------------------------------------

    def hint(self, compiled: CompiledProgram, sizes: Mapping[str, int], plan: Plan) -> str:
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

    # -- the backend's part -------------------------------------------------------------------------

    def for_backend(self, compiled: CompiledProgram) -> CompiledProgram:
        """The program as this backend runs it (CUDA recompiles OpenCL C kernels as CUDA C)."""
        return compiled

    @abstractmethod
    def get_kernel(self, k: Kernel) -> Any:
        """The built kernel (from the backend's cache or its compiler)."""

    @abstractmethod
    def check_device_limits(self, k: Kernel, handle: Any, launch: Launch, label: str) -> None:
        """Refuse, in words, a launch the device or the built kernel cannot run."""

    @abstractmethod
    def allocate(self, compiled: CompiledProgram, inputs: Sequence[Any], sizes: Mapping[str, int],
                 label: str) -> Transfers:
        """Device buffers for every buffer of the pipeline, inputs uploaded (or borrowed)."""

    @abstractmethod
    def enqueue(self, kernels: Sequence[Any], launches: Sequence[Launch],
                args: Sequence[Sequence[Any]]) -> tuple[float, ...]:
        """Launch every kernel once, in order, and wait; each launch's device seconds."""

    @abstractmethod
    def download(self, compiled: CompiledProgram, transfers: Transfers, sizes: Mapping[str, int],
                 inputs: Sequence[Any]) -> tuple[list[Any], float]:
        """The result buffers' values (interpreter representation) and download seconds; sets
        `transfers.upload_seconds` once the uploads are known to be complete."""

    def result_value(self, value: Any, compiled: CompiledProgram) -> Any:
        return to_numpy(value, compiled.result_type)


def nest_results(results: Sequence[Any], t: Type) -> Any:
    """The result buffers' values (one per array, depth first) in the nesting of the result
    type: a tuple result of any nesting comes back as nested tuples."""
    leaves = iter(results)

    def build(t: Type) -> Any:
        return tuple(build(e) for e in t.elems) if isinstance(t, TupleType) else next(leaves)

    return build(t)


def in_dialect(compiled: CompiledProgram, dialect: str) -> CompiledProgram:
    """The same program with kernels in `dialect` (recompiled from its Lift program if needed:
    the statements are the same, only their spelling differs)."""
    if compiled.options.dialect == dialect:
        return compiled
    from liftkit.codegen.compiler import compile_program

    return compile_program(compiled.program, replace(compiled.options, dialect=dialect))


def _valid_values(compiled: CompiledProgram, plan: Plan, sizes: Mapping[str, int],
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
