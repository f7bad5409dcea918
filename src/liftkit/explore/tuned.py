"""Reading tuned results back: the best derivation the database holds for a program, its sizes
and a device — what `liftkit compile/run --tuned` use instead of a hand-written low-level program.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Union

from liftkit.ir.nodes import Lambda, UserFun, walk
from liftkit.ir.printer import show
from liftkit.rewrite.core import Choice
from liftkit.types import LiftTypeError

from liftkit.explore.db import Record, TuningDB, tuning_key
from liftkit.explore.problem import program_text, size_names
from liftkit.explore.space import RuleSpace


class NotTunedError(LiftTypeError):
    """Nothing is tuned for a (program, sizes, device) key."""


def tuned_key(program: Lambda, sizes: Mapping[str, int], device: Any) -> str:
    """The key `liftkit explore` stored results under (device: a Device or its fingerprint)."""
    fingerprint = device if isinstance(device, str) else device.fingerprint
    used = {k: int(v) for k, v in sizes.items() if k in size_names(program)}
    return tuning_key(program_text(program), used, fingerprint)


def best_record(program: Lambda, sizes: Mapping[str, int], device: Any,
                db: Optional[TuningDB] = None) -> Optional[Record]:
    """The fastest candidate timed on this device, including those a search over both
    backends filed under the other backend's key (`TuningDB.best_measured`)."""
    return (db or TuningDB()).best_measured(tuned_key(program, sizes, device))


def best_for(program: Lambda, sizes: Mapping[str, int], device: Any,
             db: Optional[TuningDB] = None, space: Optional[RuleSpace] = None
             ) -> Optional[tuple[Lambda, tuple[Choice, ...]]]:
    """(low-level program, derivation) of the fastest valid candidate for this key, or None.

    The program is read back from its stored text (user functions as in `program`); when that
    fails it is rebuilt by replaying the derivation with `space` (default: the default rules)."""
    rec = best_record(program, sizes, device, db)
    if rec is None:
        return None
    return program_of(rec, program, space), rec.derivation


def program_of(rec: Record, program: Lambda, space: Optional[RuleSpace] = None) -> Lambda:
    """The low-level program of a record, from its text or else by replaying its derivation."""
    from liftkit.ir.parser import parse_program
    from liftkit.ir.userfuns import standard_user_funs

    funs = dict(standard_user_funs()) | rule_user_funs() | \
        {u.name: u for u in walk(program) if isinstance(u, UserFun)}
    problems = []
    try:
        parsed = parse_program(rec.low_level, funs)
        if show(parsed) == rec.low_level:
            return parsed
        problems.append("its stored text does not read back identically")
    except Exception as err:  # noqa: BLE001 - fall back to replaying
        problems.append(f"its stored text cannot be read ({type(err).__name__}: {err})")
    try:
        from liftkit.explore.space import load_rule_space

        sp = space or load_rule_space("default")
        return sp.replay(program, rec.derivation)
    except Exception as err:  # noqa: BLE001
        problems.append(f"its derivation cannot be replayed ({type(err).__name__}: {err})")
    raise NotTunedError("the tuned program cannot be rebuilt: " + "; ".join(problems))


def rule_user_funs() -> dict[str, UserFun]:
    """The user functions the rules put into programs (e.g. the MM rules' multiply-adds), by
    name: a derived program's text names them, and the parser must know them to read it."""
    import importlib
    import pkgutil

    import liftkit.rewrite.rules as rules

    out: dict[str, UserFun] = {}
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"{rules.__name__}.{info.name}")
        out |= {u.name: u for u in vars(module).values() if isinstance(u, UserFun)}
    return out


def require_tuned(name: str, program: Lambda, sizes: Mapping[str, int], device: Any,
                  db: Optional[TuningDB] = None, space: Optional[RuleSpace] = None
                  ) -> tuple[Lambda, tuple[Choice, ...]]:
    """best_for, or a NotTunedError saying how to tune it."""
    db = db or TuningDB()
    missing = [n for n in size_names(program) if n not in sizes]
    if missing:
        raise NotTunedError(f"{name}: give the size(s) {', '.join(missing)} to look up a tuned "
                            f"version (results are stored per input size)")
    found = best_for(program, sizes, device, db, space)
    if found is None:
        dev_label = device if isinstance(device, str) else getattr(device, "label", str(device))
        used = " ".join(f"--size {k}={v}" for k, v in sorted(sizes.items()) if k in size_names(program))
        raise NotTunedError(
            f"nothing is tuned for {name} at {used or 'these sizes'} on {dev_label} (database "
            f"{db.path}); run `liftkit explore {name} {used} --device ...` first")
    return found


def fingerprint_of(device: Union[str, Any]) -> str:
    return device if isinstance(device, str) else device.fingerprint
