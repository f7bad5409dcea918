"""The search as a pipeline of stages: derive → generate → build → check → time.

Everything but timing is host work that does not depend on the timings of the other
candidates of a derivation step: the random walks are seeded by their position in the search
(see `liftkit.explore.search`), the code generator and the interpreter are pure. So for each
step the driver lists the step's jobs in draw order — for each sampled choice, its own program
(when it is OpenCL-level) and its R walks — and hands them to an `Engine`: a pool of worker
processes (`ProcessEngine`) or a Ray cluster (`liftkit.explore.distributed`). A worker replays
the job's derivation from the high-level program (no program crosses a process boundary, only
rule choices), walks, generates the kernels, builds them and checks them against the
interpreter on small inputs, each in its own `CandidateWorker` child, so a driver crash costs one
candidate. The driver consumes the results in draw order and times one candidate at a time on
the device, so measurements do not disturb each other and the search makes the same decisions
in the same order whatever the number of workers.

Before timing, two checks save device time: a candidate whose kernels (sources and launch
configurations) were already timed takes that time (recorded with `duplicate_of`); a candidate
whose lower bound — bytes its buffers must move over the device's bandwidth, the problem's
flops over its peak — cannot beat the best so far by `tolerance` is recorded as `skipped`.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import os
import pickle
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional, Protocol, Sequence, Union

from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show
from liftkit.ir.typecheck import is_low_level
from liftkit.rewrite.core import Choice
from liftkit.types import LiftTypeError

from liftkit.explore.backends import PerBackend
from liftkit.explore.db import Record
from liftkit.explore.evaluate import Evaluator, Ready, _record
from liftkit.explore.worker import CandidateWorker, _dumps

LOST_RETRIES = 2  # a job whose worker died this many times is recorded as failed


@dataclass(frozen=True)
class Job:
    """One candidate to prepare: the derivation to the choice's program, and the seed parts
    of the walk from there (None: the program itself)."""

    prefix: tuple[Choice, ...]
    walk: Optional[tuple[Any, ...]] = None


@dataclass(frozen=True)
class Outcome:
    """A job's result: the walk's steps (None for a walk that found no OpenCL-level program),
    and the candidate's failure record or what timing needs."""

    steps: Optional[tuple[Choice, ...]]
    text: str = ""
    result: Union[Record, Ready, None] = None


@dataclass(frozen=True)
class Bound:
    """The device's ceilings for the lower-bound skip: bandwidth (GB/s) and peak (GFLOP/s,
    optional), the problem's flops (optional), and the tolerance a candidate must be able to
    beat the best by. The bytes are the candidate's own: inputs read and outputs written once,
    intermediate and temporary buffers written and read once."""

    bandwidth_gbs: float
    peak_gflops: Optional[float] = None
    flops: Optional[float] = None
    tolerance: float = 0.05
    headroom: float = 1.5  # the ceiling: the larger of the measured and the best achieved rate,
    calibrate: bool = True  # times this (a copy's rate is no hard ceiling: caches help kernels)

    @staticmethod
    def nbytes(ready: Ready, sizes: Mapping[str, int]) -> Optional[float]:
        total = 0.0
        for b in ready.compiled.buffers:
            try:
                n = float(b.nbytes.eval(dict(sizes)))
            except Exception:  # noqa: BLE001 - sizes the host cannot evaluate: no bound
                return None
            total += n if b.role in ("input", "output") else 2 * n
        return total

    def seconds(self, ready: Ready, sizes: Mapping[str, int], achieved_gbs: float = 0.0) -> Optional[float]:
        total = self.nbytes(ready, sizes)
        if total is None:
            return None
        gbs = self.bandwidth_gbs
        if self.calibrate:
            gbs = max(gbs, achieved_gbs) * self.headroom
        t = total / (gbs * 1e9)
        if self.flops and self.peak_gflops:
            t = max(t, self.flops / (self.peak_gflops * 1e9 * (self.headroom if self.calibrate else 1.0)))
        return t


# ---------------------------------------------------------------------------------------------
# the host stages (in a worker process)


@dataclass(frozen=True)
class _WalkDevice:
    """What a walk needs of the evaluator (the device's limits, for the divisibility check)."""

    device_fingerprint: str
    device_limits: Any


@dataclass(frozen=True)
class _NoRunner:
    """A runner that only names its dialect: the host stages generate code for it but leave
    the build and check to the process that owns the device."""

    dialect: str = "opencl"


class HostStages:
    """What a worker needs to prepare jobs: the problem, the rule space, the search's settings
    and an Evaluator. With `runner` (a clone of the driver's CandidateWorker, started on first
    use) the worker also builds and checks the kernels; without, the timing side does (CUDA
    in the driver's process, a test's runner, a Ray cluster's timing actor)."""

    def __init__(self, problem: Any, space: Any, settings: Any, eval_settings: Any, filters: Any,
                 device_fingerprint: str, device_limits: Any, dialect: str = "opencl",
                 runner: Optional[CandidateWorker] = None,
                 others: tuple[tuple[str, str, Any], ...] = ()) -> None:
        self.problem, self.space, self.settings = problem, space, settings
        self.eval_settings, self.filters = eval_settings, filters
        self.device = _WalkDevice(device_fingerprint, device_limits)
        self.dialect = dialect
        self.can_check = runner is not None
        self._template = runner
        self._evaluator: Optional[Evaluator] = None
        # a search over both backends: (backend, dialect, device limits) of the other, whose
        # code is generated here and built, checked and timed by the driver
        self.others = others
        self._other_evaluators: dict[str, Evaluator] = {}
        self._walker: Any = None
        self._children: OrderedDict[str, Lambda] = OrderedDict()

    @classmethod
    def of(cls, search: Any, check: bool = True) -> "HostStages":
        """The host stages of a search; `check`: build and check in the workers when the
        search's runner can be cloned into them (a CandidateWorker)."""
        ev = search.evaluator
        both = getattr(ev, "each", None)  # a BothBackends
        others: tuple[tuple[str, str, Any], ...] = ()
        if both is not None:
            names = list(both)
            others = tuple((b, ev.dialect(b), both[b].device_limits) for b in names[1:])
            ev = both[names[0]]
        runner = ev.runner
        template = runner.clone() if check and isinstance(runner, CandidateWorker) else None
        return cls(search.problem, search.space, search.settings, ev.settings, ev.filters,
                   ev.device_fingerprint, ev.device_limits, getattr(runner, "dialect", "opencl"),
                   template, others)

    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            runner: Any = self._template.clone() if self._template is not None else _NoRunner(self.dialect)
            self._evaluator = Evaluator(self.problem, runner, self.eval_settings, self.filters,
                                        None, self.device.device_limits)
        return self._evaluator

    def walker(self) -> Any:
        if self._walker is None:
            from liftkit.explore.search import Search

            self._walker = Search(self.problem, self.space, self.device, self.settings)  # type: ignore[arg-type]
        return self._walker

    def child(self, prefix: tuple[Choice, ...]) -> Lambda:
        """The program a derivation prefix leads to: replayed from the longest prefix of it
        replayed before (the search's fixed steps grow a step at a time, so a worker applies
        little more than the choice's own steps), every program on the way kept (the last 64)."""
        keys = [repr(prefix[:k]) for k in range(len(prefix) + 1)]
        start = next((k for k in range(len(prefix), 0, -1) if keys[k] in self._children), 0)
        program = (self._children[keys[start]] if start
                   else self.space.prepare(self.problem.program))
        for k in range(start, len(prefix)):
            program = self.space.apply(program, prefix[k])
            self._children[keys[k + 1]] = program
        if start:
            self._children.move_to_end(keys[start])
        while len(self._children) > 64:
            self._children.popitem(last=False)
        return program

    def run(self, job: Job) -> Outcome:
        t0 = time.perf_counter()
        program = self.child(job.prefix)
        steps: tuple[Choice, ...] = ()
        if job.walk is not None:
            from liftkit.explore.search import _rng

            end = self.walker().walk_from(program, _rng(*job.walk))
            if end is None:
                return Outcome(None)
            program, steps = end[0], tuple(end[1])
        stages = {"derive": time.perf_counter() - t0}
        ready = self.evaluator().prepare(program, job.prefix + steps, check=self.can_check,
                                         stages=dict(stages))
        if not self.others:
            return Outcome(steps, show(program), ready)
        results: list[tuple[str, Union[Record, Ready]]] = [("", ready)]
        for backend, dialect, limits in self.others:
            ev = self._other_evaluators.get(backend)
            if ev is None:
                ev = self._other_evaluators[backend] = Evaluator(
                    self.problem, _NoRunner(dialect), self.eval_settings, self.filters, None, limits)
            results.append((backend, ev.prepare(program, job.prefix + steps, check=False,
                                                stages=dict(stages))))
        return Outcome(steps, show(program), PerBackend(tuple(results)))

    def close(self) -> None:
        if self._evaluator is not None and isinstance(self._evaluator.runner, CandidateWorker):
            self._evaluator.runner.close()

    def __getstate__(self) -> dict[str, Any]:
        # what travels to a Ray task: no evaluator, walker or cached programs
        return self.__dict__ | {"_evaluator": None, "_walker": None, "_children": OrderedDict()}


_STAGES: Optional[HostStages] = None  # the worker process's own (set once by _init)


def _init(stages: HostStages) -> None:
    global _STAGES
    import signal
    import warnings

    warnings.simplefilter("ignore")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    _STAGES = stages


def _noop() -> None:
    return None


def _run_job(job: Job) -> bytes:
    assert _STAGES is not None
    return _dumps(_STAGES.run(job))


# ---------------------------------------------------------------------------------------------
# engines


class Engine(Protocol):
    """Runs jobs and yields their outcomes in the jobs' order."""

    def outcomes(self, jobs: Sequence[Job]) -> Iterator[Outcome]: ...

    def close(self) -> None: ...


class InlineEngine:
    """The host stages in the search's own process (one worker, no pool)."""

    def __init__(self, search: Any) -> None:
        self.stages = HostStages.of(search)

    def outcomes(self, jobs: Sequence[Job]) -> Iterator[Outcome]:
        for job in jobs:
            yield self.stages.run(job)

    def close(self) -> None:
        self.stages.close()


class ProcessEngine:
    """A pool of `workers` forked processes. A worker that dies (killed, out of memory) breaks
    the pool: a new pool takes the jobs not finished yet; the finished ones keep their
    results, and a job that was in flight LOST_RETRIES times is recorded as a runtime error."""

    def __init__(self, search: Any, workers: int) -> None:
        self.search = search
        self.workers = max(1, workers)
        self.restarts = 0
        self._pool: Optional[cf.ProcessPoolExecutor] = None

    def _executor(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            ctx = multiprocessing.get_context("fork")
            self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init,
                                                initargs=(HostStages.of(self.search),))
            # a forking pool starts all its workers on the first job: now, before the search
            # starts threads of its own (the progress bar)
            self._pool.submit(_noop).result()
        return self._pool

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests that kill one)."""
        pool = self._pool
        return sorted((pool._processes or {}).keys()) if pool is not None else []  # type: ignore[attr-defined]

    def outcomes(self, jobs: Sequence[Job]) -> Iterator[Outcome]:
        futures: list[Optional[cf.Future[bytes]]] = [self._executor().submit(_run_job, j) for j in jobs]
        lost = [0] * len(jobs)
        try:
            for i, job in enumerate(jobs):
                while True:
                    fut = futures[i]
                    assert fut is not None
                    try:
                        data = fut.result()
                        break
                    except cf.process.BrokenProcessPool:
                        lost[i] += 1
                        self._restart(jobs, futures, i, lost)
                        if lost[i] >= LOST_RETRIES:
                            data = b""
                            break
                futures[i] = None
                if not data:
                    yield Outcome((), "", _record("", job.prefix, {}, "runtime-error",
                                                  "a host worker process died while preparing "
                                                  "this candidate"))
                    continue
                yield pickle.loads(data)
        finally:
            for f in futures:
                if f is not None:
                    f.cancel()

    def _restart(self, jobs: Sequence[Job], futures: list[Any], start: int, lost: list[int]) -> None:
        """A new pool for the jobs from `start` on that did not finish (the one waited for,
        the likely culprit, only while it has retries left)."""
        old = self._pool
        self._pool = None
        self.restarts += 1
        if old is not None:
            old.shutdown(wait=False, cancel_futures=True)
        pool = self._executor()
        for k in range(start, len(jobs)):
            f = futures[k]
            if f is None or (f.done() and not f.cancelled() and f.exception() is None):
                continue
            if k == start and lost[k] >= LOST_RETRIES:
                continue
            futures[k] = pool.submit(_run_job, jobs[k])

    def close(self) -> None:
        """Stop the workers now: jobs still running when the search ends (its budget spent in
        the middle of a step) are not waited for."""
        pool, self._pool = self._pool, None
        if pool is not None:
            for proc in list((pool._processes or {}).values()):  # type: ignore[attr-defined]
                proc.terminate()
            pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# the driver's side


@dataclass(frozen=True)
class PipelineSettings:
    """workers: host-stage processes (0: the plain sequential search, 1: one worker in this
    process); dedup: time identical kernels once; bound: the lower-bound skip (None: off)."""

    workers: int = 0
    dedup: bool = True
    bound: Optional[Bound] = None


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Pipeline:
    """The search's hook: scores a derivation step's choices with the host stages on an
    engine and timing here, one candidate at a time."""

    def __init__(self, settings: PipelineSettings, engine_factory: Any = None) -> None:
        self.settings = settings
        self.engine_factory = engine_factory
        self.engine: Optional[Engine] = None
        self._timed: dict[str, Record] = {}
        self._achieved_gbs = 0.0  # the best rate (bytes over time) a timed candidate reached

    def start(self, search: Any) -> None:
        if self.engine_factory is not None:
            self.engine = self.engine_factory(search)
        elif self.settings.workers <= 1:
            self.engine = InlineEngine(search)
        else:
            self.engine = ProcessEngine(search, self.settings.workers)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def score(self, search: Any, program: Lambda, fixed: Sequence[Choice],
              options: Sequence[Choice], text: str, attempt: int
              ) -> list[tuple[float, int, int, tuple[Choice, ...], Lambda]]:
        """As Search._score: per option (best valid time of its walks, -walks that reached a
        terminal, index, its steps, the rewritten program), the same draws in the same order."""
        s = search.settings
        plan = []
        for i, choice in enumerate(options):
            try:
                child, steps = search.space.apply_steps(program, choice)
            except LiftTypeError:
                continue
            if not search._divisible(child):
                continue
            own = is_low_level(child) and search._generable(child)
            plan.append((i, steps, child, own))
        jobs: list[Job] = []
        for i, steps, _child, own in plan:
            prefix = tuple(fixed) + tuple(steps)
            if own:
                jobs.append(Job(prefix))
            jobs.extend(Job(prefix, (s.seed, "walk", search._step, attempt, i, r, text))
                        for r in range(s.walks))
        assert self.engine is not None
        results = self.engine.outcomes(jobs)
        scored = []
        try:
            for i, steps, child, own in plan:
                best, reached = math.inf, 0
                if own:
                    reached += 1
                    rec = self.take(search, next(results))
                    if rec.ok and rec.time is not None:
                        best = rec.time
                for _ in range(s.walks):
                    search.count_walk()
                    out = next(results)
                    if out.steps is None:
                        search._dead += 1
                        continue
                    reached += 1
                    rec = self.take(search, out)
                    if rec.ok and rec.time is not None:
                        best = min(best, rec.time)
                scored.append((best, -reached, i, steps, child))
        finally:
            results.close()  # type: ignore[attr-defined]
        return scored

    def take(self, search: Any, out: Outcome) -> Record:
        """The record of a prepared candidate: memo, budget, duplicate, bound, then timing."""
        result = out.result
        assert result is not None

        def make() -> Record:
            if isinstance(result, Record):
                return result
            if isinstance(result, PerBackend):  # both backends: each timed, the faster kept
                both = search.evaluator
                first = next(iter(both.each))
                prepared = {b or first: r for b, r in result.results}
                return both.complete(prepared, lambda b, ready, race: self.time(
                    search, ready, both.each[b], race))
            return self.time(search, result)

        return search.admit(out.text, make)

    def time(self, search: Any, ready: Ready, ev: Any = None, race: Optional[float] = None) -> Record:
        """Check (when the host stages did not) and time one prepared candidate on `ev` (default:
        the search's evaluator, or Ray's timing actor), unless a duplicate or the bound says."""
        ev = ev or getattr(self.engine, "timer", None) or search.evaluator
        best = search.best.time if search.best else None
        if not ready.checked:
            checked = ev.check_ready(ready)
            if isinstance(checked, Record):
                return checked
            ready = checked
        key = ready.kernel_key() if self.settings.dedup else ""
        seen = self._timed.get(key) if key else None
        if seen is not None and seen.time is not None:
            params = dict(ready.params) | {"duplicate_of": seen.seq}
            return _record(ready.text, ready.derivation, params, "ok",
                           f"same kernels as candidate {seen.seq + 1}: not timed again",
                           seen.time, ready.compiled.source)
        bound = self.settings.bound
        if bound is not None and best is not None:
            low = bound.seconds(ready, search.problem.sizes, self._achieved_gbs)
            if low is not None and low >= best * (1.0 - bound.tolerance):
                params = dict(ready.params) | {"lower_bound": low}
                return _record(ready.text, ready.derivation, params, "skipped",
                               f"lower bound {low * 1e3:.4g} ms cannot beat the best "
                               f"{best * 1e3:.4g} ms by {bound.tolerance:.0%}",
                               source=ready.compiled.source)
        rec = ev.finish(ready, best, race) if race is not None else ev.finish(ready, best)
        if key and rec.ok:
            self._timed[key] = replace(rec, seq=len(search.records))
        if bound is not None and rec.ok and rec.time:
            moved = bound.nbytes(ready, search.problem.sizes)
            if moved:
                self._achieved_gbs = max(self._achieved_gbs, moved / rec.time / 1e9)
        return rec
