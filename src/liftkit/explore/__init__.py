"""Automatic exploration of derivations (seed 002 §6): a Monte-Carlo descent over the rewrite
rules, candidates evaluated on a device (filtered, checked against the interpreter, timed) and
recorded in a tuning database, and the search-efficiency plot of Fig. 12.

    from liftkit.explore import explore
    result = explore("asum", {"N": 1 << 24}, device="gpu", budget=200)
    print(result.best.time, result.source)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional, Union

from liftkit.explore.db import Record, TuningDB, default_db_path, tuning_key
from liftkit.explore.evaluate import EvalSettings, Evaluator, check_sizes, results_match
from liftkit.explore.filters import (
    DEFAULT_FILTERS,
    DeviceLimits,
    FilterContext,
    FilterLimits,
    first_rejection,
)
from liftkit.explore.problem import Problem, program_text, random_inputs
from liftkit.explore.search import Search, SearchResult, SearchSettings, search
from liftkit.explore.space import RuleSetError, RuleSpace, load_rule_space
from liftkit.explore.tuned import NotTunedError, best_for, require_tuned, tuned_key
from liftkit.explore.worker import DEFAULT_TIMEOUT_S, CandidateWorker, WorkerCrash


def make_problem(program: Any, sizes: Optional[Mapping[str, int]] = None,
                 name: Optional[str] = None) -> Problem:
    """A Problem from a bundled program name, a ProgramSpec or a high-level Lambda."""
    from liftkit.ir.nodes import Lambda

    if isinstance(program, str):
        from liftkit.programs import PROGRAMS

        program = PROGRAMS[program]
    if isinstance(program, Lambda):
        return Problem.from_program(name or "program", program, dict(sizes or {}))
    problem = Problem.from_spec(program, sizes)
    return replace(problem, name=name) if name else problem


def explore(program: Any, sizes: Optional[Mapping[str, int]] = None, device: Any = None, *,
            rules: Union[str, RuleSpace, None] = None, budget: Optional[int] = None,
            seed: Optional[int] = None, settings: SearchSettings = SearchSettings(),
            eval_settings: EvalSettings = EvalSettings(), db: Optional[TuningDB] = None,
            progress: bool = False, runner: Any = None, name: Optional[str] = None,
            measure: Any = None, timeout: float = DEFAULT_TIMEOUT_S,
            backend: str = "opencl") -> SearchResult:
    """Search for a fast derivation of `program` at `sizes` on `device` ("cpu", "gpu", a Device
    or None for the default); records go to `db` (pass TuningDB() for the default file).
    Candidates are built and run in a worker process (a driver crash or a candidate running
    past `timeout` seconds fails that candidate only) unless a `runner` is given. `backend`:
    "opencl", "cuda", or "any" (each candidate on both backends of a GPU CUDA drives too, the
    faster recorded; OpenCL alone elsewhere, with one warning)."""
    problem = make_problem(program, sizes, name)
    space = rules if isinstance(rules, RuleSpace) else load_rule_space(rules)
    if budget is not None:
        settings = replace(settings, budget=budget)
    if seed is not None:
        settings = replace(settings, seed=seed)
        eval_settings = replace(eval_settings, seed=seed)
    if runner is not None:
        return search(problem, space, Evaluator(problem, runner, eval_settings, measure=measure),
                      settings, db, progress)
    if backend not in ("opencl", "cuda", "any"):
        raise ValueError(f"backend must be opencl, cuda or any, got {backend!r}")
    if backend == "cuda":
        from liftkit.backends.cuda import CUDARunner

        evaluator = Evaluator(problem, CUDARunner(device), eval_settings, measure=measure)
        return search(problem, space, evaluator, settings, db, progress)
    if backend == "any":
        import warnings

        from liftkit.explore.backends import AnyBackendRunners, any_note

        with AnyBackendRunners(device, timeout) as runners:
            if runners.note:
                warnings.warn(any_note(runners.note), stacklevel=2)
            return search(problem, space, runners.evaluator(problem, eval_settings, measure),
                          settings, db, progress)
    with CandidateWorker(device, timeout=timeout) as worker:
        evaluator = Evaluator(problem, worker, eval_settings, measure=measure)
        return search(problem, space, evaluator, settings, db, progress)


__all__ = [
    "CandidateWorker", "DEFAULT_FILTERS", "DEFAULT_TIMEOUT_S", "DeviceLimits", "EvalSettings", "Evaluator", "FilterContext", "FilterLimits",
    "NotTunedError", "Problem", "Record", "RuleSetError", "RuleSpace", "Search", "SearchResult",
    "SearchSettings", "TuningDB", "best_for", "check_sizes", "default_db_path", "explore",
    "first_rejection", "load_rule_space", "make_problem", "program_text", "random_inputs",
    "require_tuned", "results_match", "search", "tuned_key", "tuning_key",
    "WorkerCrash",
]
