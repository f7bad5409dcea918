"""Tuning the numeric parameters of a derivation once its structure is chosen (`pip install
'liftkit[tune]'`).

The Monte-Carlo descent picks the rewrite structure and, along the way, one value for each
numeric parameter (split factors, work-group sizes, vector widths). Here the structure stays:
each step of the best derivation that has numeric parameters becomes a categorical variable
over the values its rule offers at that position, and a sampler proposes combinations; each is
replayed from the high-level program (a combination the rules refuse fails the trial) and
evaluated like any candidate — checked against the interpreter, then timed. Optuna's TPE (a
model of good and bad regions) is compared against its RandomSampler, plain Monte-Carlo over
the same variables with the same number of trials.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any, Mapping, Optional

from liftkit.rewrite.core import Choice
from liftkit.types import LiftTypeError

from liftkit.explore.distributed import MissingExtraError

EXTRA = "pip install 'liftkit[tune]'"


def require_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise MissingExtraError(f"--tune-trials needs Optuna, which is not installed: {EXTRA}") from None
    return optuna


def _numeric(choice: Choice) -> bool:
    return any(isinstance(v, int) and not isinstance(v, bool) for v in choice.params.values())


def parameter_space(problem: Any, space: Any, derivation: tuple[Choice, ...]) -> dict[int, list[str]]:
    """For each step with numeric parameters: the parameter sets (JSON) its rule offers at
    that position of the derivation (only steps with a choice)."""
    program = space.prepare(problem.program)
    out: dict[int, list[str]] = {}
    for k, c in enumerate(derivation):
        if _numeric(c):
            alts = {json.dumps(x.params, sort_keys=True) for x in space.choices(program)
                    if x.rule == c.rule and x.path == c.path}
            alts.add(json.dumps(c.params, sort_keys=True))
            if len(alts) > 1:
                out[k] = sorted(alts)
        program = space.apply(program, c)
    return out


def tune_numeric(problem: Any, space: Any, evaluator: Any, best: Any, sampler: str, trials: int,
                 seed: int = 0, db: Any = None, key: str = "", search_id: str = "",
                 keys: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """`trials` trials of `sampler` ('tpe' or 'random') over the numeric parameters of the
    derivation of `best` (a Record); the first trial is the derivation as found. Records go to
    `db` under a search of their own, each under `keys[its backend]` (a search over both
    backends), else `key`. Returns the figures for the report."""
    optuna = require_optuna()
    from liftkit.ir.printer import show

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    derivation = tuple(best.derivation)
    domains = parameter_space(problem, space, derivation)
    make = {"tpe": lambda: optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(5, trials)),
            "random": lambda: optuna.samplers.RandomSampler(seed=seed)}[sampler]
    study = optuna.create_study(direction="minimize", sampler=make())
    study.enqueue_trial({f"s{k}": json.dumps(derivation[k].params, sort_keys=True) for k in domains})
    tune_id = db.start_search(key, {"tune": sampler, "trials": trials, "from": search_id}) if db else ""
    seen: dict[str, Optional[float]] = {}
    curve: list[Optional[float]] = []
    best_time: Optional[float] = None
    best_trial = 0
    for t in range(trials):
        trial = study.ask()
        steps = list(derivation)
        for k, opts in domains.items():
            steps[k] = Choice(steps[k].rule, steps[k].path,
                              json.loads(trial.suggest_categorical(f"s{k}", opts)))
        try:
            program = space.replay(problem.program, steps)
        except LiftTypeError:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            curve.append(best_time)
            continue
        text = show(program)
        if text not in seen:
            rec = evaluator.evaluate(program, steps, best_time)
            if db is not None:
                rec = db.insert(replace(rec, key=(keys or {}).get(rec.backend, key),
                                        search_id=tune_id, seq=len(seen)))
            seen[text] = rec.time if rec.ok else None
        value = seen[text]
        if value is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, value)
            if best_time is None or value < best_time:
                best_time, best_trial = value, t + 1
        curve.append(best_time)
    return {"sampler": sampler, "trials": trials, "variables": len(domains),
            "combinations": math.prod(len(v) for v in domains.values()) if domains else 1,
            "evaluated": len(seen), "best_ms": best_time * 1e3 if best_time is not None else None,
            "best_trial": best_trial, "start_ms": best.time * 1e3 if best.time else None,
            "curve_ms": [c * 1e3 if c is not None else None for c in curve]}
