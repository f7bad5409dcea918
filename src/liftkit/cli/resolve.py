"""Finding the program a command names: a bundled name, `module:attribute` or `file.py:attribute`.

Kept apart from the commands so that every command (and later backends) resolves names the same
way, and so that user code is imported in one place, where its failures become one-line errors.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

from liftkit.ir.nodes import Lambda
from liftkit.usercode import LoadError, load_module, one_line

__all__ = ["CliError", "Resolved", "bundled_registry", "one_line", "resolve"]


class CliError(Exception):
    """A user error the CLI reports as one line (exit code 1), never with a traceback."""


@dataclass(frozen=True)
class Resolved:
    """A program to work on: its display name, the Lambda, and its spec when it has one."""

    name: str
    program: Lambda
    spec: Optional[Any] = None  # a liftkit.programs.registry.ProgramSpec, when known


def bundled_registry() -> Any:
    """The bundled `PROGRAMS` registry; imported lazily so `check`/`show` of a user file work even
    while the bundled set is broken."""
    try:
        from liftkit.programs import PROGRAMS
    except Exception as err:  # noqa: BLE001 - any failure here is "bundled programs unavailable"
        raise CliError(f"the bundled programs cannot be loaded ({type(err).__name__}: "
                       f"{one_line(err)})") from err
    return PROGRAMS


def resolve(ref: str) -> Resolved:
    """Resolve PROGRAM as given on the command line."""
    if ":" not in ref:
        registry = bundled_registry()
        if ref not in registry:
            names = list(registry.names())
            close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
            close += [n for n in names if ref and ref.lower() in n.lower() and n not in close]
            hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
            raise CliError(f"no bundled program named {ref!r}{hint} (see `liftkit list`)")
        spec = registry[ref]
        return Resolved(spec.name, _build(spec, ref), spec)
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise CliError(f"cannot read program {ref!r}: expected NAME, module:attribute or "
                       f"path/to/file.py:attribute")
    module = _load_module(where)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"{where} has no attribute {attr!r}") from None
    return _from_object(ref, obj)


def _from_object(ref: str, obj: Any) -> Resolved:
    from liftkit.programs.registry import ProgramSpec

    if isinstance(obj, Lambda):
        return Resolved(ref, obj, None)
    if isinstance(obj, ProgramSpec):
        return Resolved(ref, _build(obj, ref), obj)
    raise CliError(f"{ref} is a {type(obj).__name__}, not a Lift program (a Lambda built with "
                   f"`fun(...)`) or a ProgramSpec")


def _build(spec: Any, ref: str) -> Lambda:
    from liftkit.types import LiftTypeError

    try:
        prog = spec.program
    except LiftTypeError:
        raise  # the program's own type error, reported as such
    except Exception as err:  # noqa: BLE001 - the spec's build function is user code
        raise CliError(f"program {ref}: its build function failed ({type(err).__name__}: "
                       f"{one_line(err)})") from err
    if not isinstance(prog, Lambda):
        raise CliError(f"program {ref} builds a {type(prog).__name__}, not a Lambda")
    return prog


def _load_module(where: str) -> ModuleType:
    """Import a module or file of user code; any failure is the user's error, a CliError."""
    try:
        return load_module(where)
    except LoadError as err:
        raise CliError(str(err)) from err
