"""The S-expression text form of VRIR (as the thesis' Appendix A): every node prints as
``(tag field...)`` in field order and parses back to an equal node.

Atoms: integers, floats (``1.5``, ``+inf``, ``-inf``, ``nan``), ``#t``/``#f``, ``nil``,
double-quoted strings; ``[...]`` is a tuple; ``(complex re im)`` a complex constant.
"""

from __future__ import annotations

import dataclasses
import math
import re

from . import types as T
from . import vrir as V

_CLASSES = V.NODE_CLASSES + (T.ScalarType, T.ArrayType, T.DomainType, T.TupleType, T.VoidType,
                             T.FunctionType)
_TAG = {c: c.__name__.lower() for c in _CLASSES}
_BY_TAG = {v: k for k, v in _TAG.items()}


class SexprError(ValueError):
    """Malformed VRIR text."""


def dumps(node: object, indent: int = 0) -> str:
    """The S-expression text of a VRIR node (or type), pretty-printed."""
    return _fmt(node, indent)


def _atom(x: object) -> str:
    if x is None:
        return "nil"
    if isinstance(x, bool):
        return "#t" if x else "#f"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "+inf" if x > 0 else "-inf"
        return repr(x)
    if isinstance(x, complex):
        return f"(complex {_atom(x.real)} {_atom(x.imag)})"
    if isinstance(x, str):
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    raise SexprError(f"cannot print {type(x).__name__}")


def _fmt(x: object, ind: int) -> str:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        parts = [_fmt(getattr(x, f.name), ind + 2) for f in dataclasses.fields(x)]
        flat = "(" + " ".join([_TAG[type(x)]] + parts) + ")"
        if len(flat) + ind <= 100 and "\n" not in flat:
            return flat
        pad = "\n" + " " * (ind + 2)
        return "(" + _TAG[type(x)] + "".join(pad + p for p in parts) + ")"
    if isinstance(x, tuple):
        parts = [_fmt(i, ind + 1) for i in x]
        flat = "[" + " ".join(parts) + "]"
        if len(flat) + ind <= 100 and "\n" not in flat:
            return flat
        pad = "\n" + " " * (ind + 1)
        return "[" + pad.join(parts) + "]"
    return _atom(x)


_TOKEN = re.compile(r'\s*(?:(\()|(\))|(\[)|(\])|("(?:[^"\\]|\\.)*")|([^\s()\[\]"]+))')


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SexprError(f"unexpected character at offset {pos}: {text[pos:pos + 10]!r}")
        out.append(m.group(m.lastindex))
        pos = m.end()
    return out


def loads(text: str) -> object:
    """Parse VRIR text back to nodes."""
    toks = _tokens(text)
    value, pos = _parse(toks, 0)
    if pos != len(toks):
        raise SexprError(f"trailing text after the expression: {' '.join(toks[pos:pos + 5])}")
    return value


def _parse(toks: list[str], i: int) -> tuple[object, int]:
    if i >= len(toks):
        raise SexprError("unexpected end of text")
    t = toks[i]
    if t == "[":
        items, i = [], i + 1
        while i < len(toks) and toks[i] != "]":
            v, i = _parse(toks, i)
            items.append(v)
        if i >= len(toks):
            raise SexprError("missing ']'")
        return tuple(items), i + 1
    if t == "(":
        if i + 1 >= len(toks):
            raise SexprError("unexpected end of text")
        tag = toks[i + 1]
        args, i = [], i + 2
        while i < len(toks) and toks[i] != ")":
            v, i = _parse(toks, i)
            args.append(v)
        if i >= len(toks):
            raise SexprError("missing ')'")
        if tag == "complex":
            if len(args) != 2:
                raise SexprError("complex takes two numbers")
            return complex(float(args[0]), float(args[1])), i + 1  # type: ignore[arg-type]
        cls = _BY_TAG.get(tag)
        if cls is None:
            raise SexprError(f"unknown node {tag!r}")
        fields = dataclasses.fields(cls)
        if len(args) != len(fields):
            raise SexprError(f"{tag} takes {len(fields)} fields, got {len(args)}")
        try:
            return cls(*args), i + 1
        except (TypeError, ValueError) as e:
            raise SexprError(f"bad {tag}: {e}") from None
    if t in (")", "]"):
        raise SexprError(f"unexpected {t!r}")
    return _parse_atom(t), i + 1


def _parse_atom(t: str) -> object:
    if t.startswith('"'):
        body = t[1:-1]
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), body)
    if t == "nil":
        return None
    if t in ("#t", "#f"):
        return t == "#t"
    if t in ("nan", "+inf", "-inf"):
        return float(t)
    if re.fullmatch(r"[-+]?\d+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        raise SexprError(f"unknown atom {t!r}") from None
