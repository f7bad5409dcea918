"""Errors the user sees: one message in the user's vocabulary, naming the source line."""

from __future__ import annotations


class JitError(Exception):
    """A function (or a construct in it) that ``@jit`` cannot compile."""


class JitTypeError(JitError, TypeError):
    """Arguments or expressions whose types ``@jit`` cannot handle."""


def at(line: int, message: str) -> JitError:
    return JitError(f"line {line}: {message}")


def type_at(line: int, message: str) -> JitTypeError:
    return JitTypeError(f"line {line}: {message}")
