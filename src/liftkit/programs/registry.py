"""The bundled programs: each a Lift program plus what is needed to run and check it.

A `ProgramSpec` knows how to make inputs for given sizes and how to compute the expected output
with plain NumPy (written independently of the Lift program), so the CLI, the tests and later the
benchmarks all use the same definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from liftkit.ir.nodes import Lambda
from liftkit.types import LiftTypeError


@dataclass(frozen=True)
class ProgramSpec:
    name: str
    summary: str
    source: str  # where it comes from in the seeds, e.g. "seed 002 Fig. 13"
    build: Callable[[], Lambda]  # builds the program (fresh parameters each call)
    make_inputs: Callable[[Mapping[str, int], np.random.Generator], list[Any]]
    reference: Callable[..., Any]  # NumPy reference on the same inputs
    sizes: Mapping[str, int]  # small default sizes (interpreter- and CI-friendly)
    level: str = "high"  # "high" or "low"
    rtol: float = 1e-4
    atol: float = 1e-4
    size_rule: str = ""  # constraints on sizes in words, e.g. "N multiple of 262144"
    tags: tuple[str, ...] = field(default=())

    @property
    def program(self) -> Lambda:
        return self.build()

    def inputs(self, sizes: Optional[Mapping[str, int]] = None, seed: int = 0) -> list[Any]:
        return self.make_inputs(dict(self.sizes) | dict(sizes or {}), np.random.default_rng(seed))


class Registry:
    """Programs by name. An explicit object, so tests can build their own."""

    def __init__(self, specs: Sequence[ProgramSpec] = ()) -> None:
        self._specs: dict[str, ProgramSpec] = {}
        for s in specs:
            self.add(s)

    def add(self, spec: ProgramSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"duplicate program name {spec.name}")
        self._specs[spec.name] = spec

    def __getitem__(self, name: str) -> ProgramSpec:
        try:
            return self._specs[name]
        except KeyError:
            close = [n for n in self._specs if name.lower() in n.lower()]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise LiftTypeError(f"no bundled program named {name!r}{hint} (see `liftkit list`)") from None

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._specs.values())

    def names(self) -> list[str]:
        return list(self._specs)
