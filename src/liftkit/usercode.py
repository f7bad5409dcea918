"""Loading user code (`module:attr`, `path/to/file.py:attr`) and reporting its errors in one
line: shared by the CLI's program references and the exploration's rule sets."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


class LoadError(Exception):
    """A module or file could not be imported; the message names the cause."""


def load_module(where: str) -> ModuleType:
    """Import a module by dotted name (the current directory first, as `python -m` does) or a
    file by path (once per process). User code may fail in any way; every failure becomes a
    LoadError naming its cause."""
    is_path = where.endswith(".py") or os.sep in where or "/" in where
    try:
        if is_path:
            return _import_file(Path(where))
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(where)
    except LoadError:
        raise
    except ModuleNotFoundError as err:
        if err.name and where.startswith(err.name):
            raise LoadError(f"no module named {where!r} (give a file as path/to/file.py:attr)") from None
        raise LoadError(f"cannot import {where}: {type(err).__name__}: {one_line(err)}") from err
    except Exception as err:  # noqa: BLE001 - user code: report, do not crash
        raise LoadError(f"cannot import {where}: {type(err).__name__}: {one_line(err)}") from err


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise LoadError(f"no such file: {path}")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    name = f"_liftkit_user_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise LoadError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def one_line(err: BaseException) -> str:
    """A message on one line: multi-line messages (e.g. a type error and its location) joined."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return "; ".join(lines) if lines else type(err).__name__
