"""Generic traversal of immutable VRIR trees."""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from .. import types as T
from .. import vrir as V


def children(x: object) -> Iterator[object]:
    if isinstance(x, tuple):
        yield from x
    elif dataclasses.is_dataclass(x) and not isinstance(x, (T.ScalarType, T.ArrayType,
                                                             T.TupleType, T.DomainType)):
        for f in dataclasses.fields(x):
            yield getattr(x, f.name)


def nodes(x: object) -> Iterator[object]:
    """Every node under ``x`` (pre-order)."""
    yield x
    for c in children(x):
        yield from nodes(c)


def rewrite(x: object, fn: Callable[[object], object]) -> object:
    """Bottom-up rebuild: children first, then ``fn`` on the rebuilt node."""
    if isinstance(x, tuple):
        return tuple(rewrite(i, fn) for i in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, (T.ScalarType, T.ArrayType, T.TupleType,
                                                          T.DomainType, T.VoidType,
                                                          T.FunctionType)):
        changes = {}
        for f in dataclasses.fields(x):
            if f.name == "type":
                continue
            v = getattr(x, f.name)
            nv = rewrite(v, fn)
            if nv is not v:
                changes[f.name] = nv
        if changes:
            x = dataclasses.replace(x, **changes)
        return fn(x)
    return x


def assigned(body: object) -> set[str]:
    """Names assigned (or used as loop variables) anywhere in ``body``."""
    out = set()
    for n in nodes(body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name):
            out.add(n.target.name)
        elif isinstance(n, V.For):
            out.add(n.var)
        elif isinstance(n, V.ParFor):
            out.update(n.vars)
    return out
