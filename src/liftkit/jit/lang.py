"""PyRaptor's language extensions (seed 003 §9.2.1): ``prange``, ``PAR`` and ``Domain``.

Outside compiled code they behave like plain Python (serial iteration), so a decorated function
still runs uncompiled, e.g. under a debugger."""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence


def prange(*args: int) -> range:
    """A ``range`` whose iterations may run in parallel inside ``@jit``."""
    return range(*args)


class Domain:
    """A multi-dimensional iteration domain: ``Domain(m, n)`` is ``range(m) x range(n)``;
    a dimension may also be a ``(start, stop)`` or ``(start, stop, step)`` tuple."""

    def __init__(self, *dims: int | Sequence[int]) -> None:
        self.ranges = tuple(range(*d) if isinstance(d, (tuple, list)) else range(d) for d in dims)

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*self.ranges)


def PAR(domain: Domain, shared: Sequence[object] = ()) -> Iterator[tuple[int, ...]]:
    """A parallel loop over ``domain``; ``shared`` lists the arrays all iterations write."""
    it = iter(domain)
    if len(domain.ranges) == 1:
        return (t[0] for t in it)
    return it


class gpu:
    """``with liftkit.gpu():`` marks an accelerated section (seed 003 §4.5.4): inside ``@jit``
    its parallel loops and element-wise array statements run on the GPU through the task
    runtime. In plain Python it does nothing."""

    def __enter__(self) -> "gpu":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def gpu_begin() -> None:
    """PyRaptor's spelling of the start of an accelerated section (ended by ``gpu_end()``)."""


def gpu_end() -> None:
    """The end of the accelerated section ``gpu_begin()`` started."""
