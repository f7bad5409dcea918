"""Evaluating one candidate of the search: filter, compile, check, time.

The order matters for cost: the filters are free; compiling costs milliseconds; the correctness
check runs the kernels on *small* inputs (sizes scaled down, but satisfying every divisibility
and launch constraint of the candidate) against the interpreter on the original high-level
program — so a wrong rewrite is caught before any timing, and the interpreter stays fast; only
then are the kernels timed with profiling events at the real sizes (median of K runs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from liftkit.semantics.compare import difference
from liftkit.usercode import one_line

from liftkit.arith import ArithError
from liftkit.codegen import CompiledProgram, CompileOptions, compile_program
from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show
from liftkit.rewrite.core import Choice

from liftkit.explore.db import Record
from liftkit.explore.filters import (
    DEFAULT_FILTERS,
    DeviceLimits,
    Filter,
    FilterContext,
    FilterLimits,
    first_rejection,
)
from liftkit.explore.problem import Problem

Measure = Callable[[CompiledProgram], float]  # a stand-in timer (tests, cost models)
SEARCH_LIMIT = 1 << 20  # largest value tried per size variable when scaling sizes down
RACE_MARGIN = 1.5  # a backend whose first run is this much slower than the other's cannot win


@dataclass(frozen=True)
class EvalSettings:
    """repeat: timed runs per candidate (the median is recorded); check: compare with the
    interpreter first; check_target: the check wants each size at least this large (when the
    candidate allows it) so several work-groups run; check_max_elements: inputs larger than
    this (64M) are not interpreted (the check is skipped, with the reason recorded: the
    GPU reductions with large splits need 32M-element inputs); cutoff: a
    candidate whose first run is this many times slower than the best so far is recorded with
    that one run instead of K (slow candidates would otherwise dominate a search's time; 0: off)."""

    repeat: int = 5
    cutoff: float = 10.0
    check: bool = True
    check_target: int = 1024
    check_max_elements: int = 1 << 26
    seed: int = 0
    compile_options: Optional[CompileOptions] = None
    limits: FilterLimits = field(default_factory=FilterLimits)


@dataclass(frozen=True)
class Ready:
    """A candidate past the host stages: its program text, derivation, compiled kernels and the
    parameters recorded so far; `checked` once built and compared with the interpreter."""

    text: str
    derivation: tuple[Choice, ...]
    compiled: CompiledProgram
    params: dict[str, Any]
    checked: bool = False

    def failed(self, validity: str, reason: str) -> Record:
        return _record(self.text, self.derivation, self.params, validity, reason,
                       source=self.compiled.source)

    def kernel_key(self) -> str:
        """What makes two candidates the same kernels: sources, entry points and launch
        configurations (global sizes over size variables, local sizes)."""
        import hashlib

        h = hashlib.sha256()
        for k in self.compiled.kernels:
            for part in (k.source, k.function, " ".join(k.build_options),
                         repr(tuple(str(g) for g in k.ndrange.global_size)),
                         repr(k.ndrange.local_size)):
                h.update(part.encode())
                h.update(b"\0")
        return h.hexdigest()


def _record(text: str, derivation: Sequence[Choice], params: dict[str, Any], validity: str,
            reason: str = "", t: Optional[float] = None, source: str = "") -> Record:
    return Record(tuple(derivation), text, validity, t, reason, params, source, created=time.time())


class Evaluator:
    """Evaluates candidates of one problem on one device. Keeps the real-size inputs and the
    interpreter's results on small inputs, which every candidate shares."""

    def __init__(self, problem: Problem, runner: Any, settings: EvalSettings = EvalSettings(),
                 filters: Sequence[Filter] = DEFAULT_FILTERS, measure: Optional[Measure] = None,
                 device_limits: Optional[DeviceLimits] = None) -> None:
        self.problem = problem
        self.runner = runner  # a liftkit.backends.opencl.OpenCLRunner
        self.settings = settings
        self.filters = tuple(filters)
        self.measure = measure
        self.device_limits = device_limits or DeviceLimits.from_device(runner.device)
        self._real_inputs: Optional[list[Any]] = None
        self._references: dict[str, tuple[list[Any], Any]] = {}

    @property
    def device_fingerprint(self) -> str:
        return str(self.runner.device.fingerprint)

    @property
    def backend(self) -> str:
        """Where candidates are built and timed: "cuda" for a CUDA runner, else "opencl"."""
        return "cuda" if getattr(self.runner, "dialect", "opencl") == "cuda" else "opencl"

    def fingerprints(self) -> dict[str, str]:
        """The device fingerprint of each backend this evaluator times candidates on."""
        return {self.backend: self.device_fingerprint}

    # -- the steps --------------------------------------------------------------------------------

    def evaluate(self, program: Lambda, derivation: Sequence[Choice] = (),
                 best: Optional[float] = None) -> Record:
        """A record for one candidate (key, search id and order are the search's to fill in);
        `best` is the best time so far, for the cutoff."""
        ready = self.prepare(program, derivation)
        rec = ready if isinstance(ready, Record) else self.finish(ready, best)
        return replace(rec, backend=self.backend)

    def prepare(self, program: Lambda, derivation: Sequence[Choice] = (), check: bool = True,
                stages: Optional[dict[str, float]] = None) -> Union[Record, "Ready"]:
        """The host stages (filters, code generation, the driver's build, the check against the
        interpreter): a failure's record, or what timing needs. `check=False` leaves the build
        and check to `check_ready` (a search process that cannot run kernels itself)."""
        text = show(program)
        params: dict[str, Any] = {"numeric": [[c.rule, dict(c.params)] for c in derivation if c.params]}
        stages = {} if stages is None else stages
        params["stages"] = stages

        ctx = FilterContext(program, self.problem.sizes, self.device_limits, self.settings.limits)
        try:
            rejected = first_rejection(ctx, self.filters)
        except Exception as err:  # noqa: BLE001 - a filter must not end the search
            rejected = f"filter failed: {type(err).__name__}: {_one_line(err)}"
        if rejected:
            return _record(text, derivation, params, "filtered", rejected)

        t0 = time.perf_counter()
        try:
            compiled = compile_program(program, replace(self.settings.compile_options or CompileOptions(),
                                                        dialect=getattr(self.runner, "dialect", "opencl")))
        except Exception as err:  # noqa: BLE001 - any code generator failure rejects the candidate
            return _record(text, derivation, params, "compile-error", f"{type(err).__name__}: {_one_line(err)}")
        finally:
            stages["generate"] = time.perf_counter() - t0
        ready = Ready(text, tuple(derivation), compiled, params)
        return self.check_ready(ready) if check else ready

    def check_ready(self, ready: "Ready") -> Union[Record, "Ready"]:
        """Build the kernels (when the runner builds on its own) and compare with the interpreter
        on small inputs: the failure's record, or `ready` marked checked."""
        params, stages, compiled = ready.params, ready.params["stages"], ready.compiled
        builder = getattr(self.runner, "build", None)
        if builder is not None:
            t0 = time.perf_counter()
            try:
                builder(compiled)
            except Exception as err:  # noqa: BLE001 - a driver's build failure rejects the candidate
                return ready.failed(_failure_kind(err), f"{type(err).__name__}: {_one_line(err)}")
            finally:
                stages["build"] = time.perf_counter() - t0
        if self.settings.check:
            t0 = time.perf_counter()
            small, note = check_sizes(compiled, self.problem.sizes, self.settings.check_target,
                                      self.settings.check_max_elements, self.problem.program)
            if small is None:
                params["check"] = f"skipped: {note}"
            else:
                params["check_sizes"] = small
                failure = self._check(compiled, small)
                stages["check"] = time.perf_counter() - t0
                if failure is not None:
                    return ready.failed(*failure)
        return replace(ready, checked=True)

    def finish(self, ready: "Ready", best: Optional[float] = None,
               race: Optional[float] = None) -> Record:
        """Time a prepared (and checked) candidate at the real sizes: its record. `race`: a
        time to beat (another backend's for the same candidate); a first run slower than it by
        RACE_MARGIN is recorded alone, as for the cutoff."""
        if not ready.checked:
            checked = self.check_ready(ready)
            if isinstance(checked, Record):
                return checked
            ready = checked
        params, compiled = ready.params, ready.compiled
        t0 = time.perf_counter()
        try:
            if self.measure is not None:
                seconds = float(self.measure(compiled))
            else:
                info = None
                cut = self.settings.cutoff
                if (cut > 0 and best is not None) or race is not None:
                    # after an untimed warm-up run: a driver may finish compiling on the first
                    once = self._time(compiled, 1)
                    if cut > 0 and best is not None and once.total_seconds > cut * best:
                        info = once
                        params["runs"] = 1
                        params["note"] = f"timed once: over {cut:g}x the best so far"
                    elif race is not None and once.total_seconds > RACE_MARGIN * race:
                        info = once
                        params["runs"] = 1
                        params["note"] = (f"timed once: over {RACE_MARGIN:g}x the other "
                                          f"backend's {race * 1e3:.4g} ms")
                if info is None:
                    info = self._time(compiled, self.settings.repeat)
                    params["runs"] = self.settings.repeat
                seconds = float(info.total_seconds)
                params["launches"] = [[la.kernel, list(la.global_size),
                                       list(la.local_size) if la.local_size else None]
                                      for la in info.launches]
                params["kernel_seconds"] = info.kernel_seconds
        except Exception as err:  # noqa: BLE001 - a failing launch rejects the candidate
            return ready.failed(_failure_kind(err), f"{type(err).__name__}: {_one_line(err)}")
        finally:
            params["stages"]["time"] = time.perf_counter() - t0
        notes = [params[k] for k in ("check", "note") if params.get(k)]
        return _record(ready.text, ready.derivation, params, "ok", "; ".join(notes), seconds,
                       compiled.source)

    def _time(self, compiled: CompiledProgram, repeat: int) -> Any:
        """The RunInfo of `repeat` timed runs at the real sizes (after a warm-up run). A
        CandidateWorker does not ship the real-size result back: the check compared results."""
        inputs, sizes = self._inputs(), dict(self.problem.sizes)
        timer = getattr(self.runner, "time", None)
        if timer is not None:
            return timer(compiled, *inputs, sizes=sizes, repeat=repeat, name=self.problem.name)
        return self.runner.run_with_info(compiled, *inputs, sizes=sizes, timing=True, repeat=repeat,
                                         name=self.problem.name)[1]

    def _inputs(self) -> list[Any]:
        if self._real_inputs is None:
            self._real_inputs = self.problem.inputs(self.problem.sizes, self.settings.seed)
        return self._real_inputs

    def _reference(self, sizes: Mapping[str, int]) -> tuple[list[Any], Any]:
        """Inputs at `sizes` and the interpreter's result for the high-level program."""
        from liftkit.semantics import interpret

        k = repr(sorted(sizes.items()))
        if k not in self._references:
            inputs = self.problem.inputs(sizes, self.settings.seed + 1)
            self._references[k] = (inputs, interpret(self.problem.program, *inputs, sizes=dict(sizes)))
        return self._references[k]

    def _check(self, compiled: CompiledProgram, sizes: Mapping[str, int]) -> Optional[tuple[str, str]]:
        """(validity, reason) when the candidate fails on small inputs, else None."""
        try:
            inputs, want = self._reference(sizes)
        except Exception as err:  # noqa: BLE001 - the reference itself fails: cannot judge
            return ("runtime-error", f"interpreter failed at {_sizes(sizes)}: {_one_line(err)}")
        try:
            got = self.runner.run(compiled, *inputs, sizes=dict(sizes), name=self.problem.name)
        except Exception as err:  # noqa: BLE001
            return (_failure_kind(err), f"at {_sizes(sizes)}: {type(err).__name__}: {_one_line(err)}")
        mismatch = results_match(got, want, self.problem.rtol, self.problem.atol)
        if mismatch:
            return ("wrong-result", f"at {_sizes(sizes)}: {mismatch}")
        return None


# ---------------------------------------------------------------------------------------------
# small sizes for the check


def check_sizes(compiled: CompiledProgram, real: Mapping[str, int], target: int = 1024,
                max_elements: int = 1 << 26, program: Optional[Lambda] = None
                ) -> tuple[Optional[dict[str, int]], str]:
    """Sizes for the correctness check: each variable scaled down, one at a time, to the
    smallest value ≥ min(target, real) that satisfies every constraint the runtime checks
    (global sizes positive and multiples of the local sizes, buffers non-empty, split /
    asVector / reorderStride factors dividing their inputs). (None, why) when no such sizes
    are small enough to interpret."""
    from liftkit.codegen.constraints import divisibility_checks

    checks = divisibility_checks(compiled.program)
    sizes = {k: int(v) for k, v in real.items()}
    for var in sorted(sizes):
        found = _valid_range(compiled, checks, sizes, var, min(sizes[var], SEARCH_LIMIT))
        if found is None:
            continue
        vals, ok = found
        good = vals[ok]
        if len(good) == 0:
            continue
        want = min(target, sizes[var])
        above = good[good >= want]
        sizes[var] = int(above[0] if len(above) else good[-1])
    try:
        joint = all(bool(_valid(compiled, checks, sizes, v, np.array([sizes[v]]))[0]) for v in sizes)
    except (ArithError, ZeroDivisionError, FloatingPointError, OverflowError, TypeError):
        joint = True  # constraints over program-internal variables: the run will tell
    if not joint:
        return None, f"no smaller sizes satisfy the launch constraints (tried from {_sizes(real)})"
    elements = _input_elements(program or compiled.program, sizes)
    if elements is not None and elements > max_elements:
        return None, (f"the smallest sizes satisfying the divisibility checks ({_sizes(sizes)}) "
                      f"need {elements} input elements, over the check's {max_elements}")
    return sizes, ""


def _valid_range(compiled: CompiledProgram, checks: Sequence[Any], sizes: Mapping[str, int],
                 var: str, upper: int) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(values, valid) for var in lo..upper, lo the first power of two from which every
    constraint can be evaluated (e.g. N/(N/512) divides by zero below N = 512)."""
    lo = 1
    while lo <= upper:
        vals = np.arange(lo, upper + 1, dtype=np.int64)
        try:
            return vals, _valid(compiled, checks, sizes, var, vals)
        except (ArithError, ZeroDivisionError, FloatingPointError, OverflowError):
            lo *= 2
        except TypeError:
            return None
    return None


def _valid(compiled: CompiledProgram, checks: Sequence[Any], sizes: Mapping[str, int], var: str,
           vals: np.ndarray) -> np.ndarray:
    """For each value of `var` (others as bound): does every launch constraint hold?"""
    from liftkit.backends.pipeline import constraints_hold

    return constraints_hold(compiled, checks, sizes, var, vals)


def _input_elements(program: Lambda, sizes: Mapping[str, int]) -> Optional[int]:
    from liftkit.types import array_dims

    total = 0
    for p in program.params:
        dims, _ = array_dims(p.type)  # type: ignore[arg-type]
        n = 1
        for d in dims:
            try:
                n *= int(d.eval(sizes))
            except ArithError:
                return None
        total += n
    return total


# ---------------------------------------------------------------------------------------------
# comparing results


def results_match(got: Any, want: Any, rtol: float, atol: float) -> str:
    """'' when got ≈ want (tuples and structured arrays component-wise), else what differs."""
    return difference(got, want, rtol, atol)


def _failure_kind(err: BaseException) -> str:
    """A driver's (or NVRTC's) build failure is a compile error; anything else while running a
    runtime error (a worker that crashed or hung says which phase it was in)."""
    from liftkit.backends.cuda.nvrtc import NVRTCError

    validity = getattr(err, "validity", None)
    if validity in ("compile-error", "runtime-error"):
        return validity
    if isinstance(err, NVRTCError):
        return "compile-error"
    try:
        from liftkit.backends.opencl import BuildError

        if isinstance(err, BuildError):
            return "compile-error"
    except ImportError:  # pragma: no cover
        pass
    return "runtime-error"


def _sizes(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "no sizes"


def _one_line(err: BaseException) -> str:
    """One line, at most 400 characters (a record's reason)."""
    text = one_line(err)
    return text if len(text) <= 400 else text[:397] + "..."
