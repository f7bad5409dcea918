"""What a search tunes: a high-level program at given input sizes, how to make inputs for it, and
how close a candidate's result must be. The tuning key is computed here so the search, the
database and `--tuned` lookups agree on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import numpy as np

from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show
from liftkit.rewrite.core import normalize
from liftkit.types import (
    ArrayType,
    LiftTypeError,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    array_dims,
    size_vars_of,
)

from liftkit.explore.db import tuning_key

InputMaker = Callable[[Mapping[str, int], int], list[Any]]  # (sizes, seed) -> inputs


def program_text(program: Lambda) -> str:
    """The normalised program's printed form: what the tuning key hashes."""
    return show(normalize(program))


def size_names(program: Lambda) -> list[str]:
    names: set[str] = set()
    for p in program.params:
        names |= {v.name for v in size_vars_of(p.type)}  # type: ignore[arg-type]
    return sorted(names)


@dataclass(frozen=True)
class Problem:
    """A high-level program to tune at `sizes` (every size variable of its inputs bound)."""

    name: str
    program: Lambda  # as given (the search puts it in its rule set's normal form)
    sizes: Mapping[str, int]
    make_inputs: InputMaker
    rtol: float = 1e-3
    atol: float = 1e-3

    @property
    def text(self) -> str:
        return program_text(self.program)

    def key(self, device_fingerprint: str) -> str:
        return tuning_key(self.text, self.sizes, device_fingerprint)

    def inputs(self, sizes: Optional[Mapping[str, int]] = None, seed: int = 0) -> list[Any]:
        return self.make_inputs(dict(sizes if sizes is not None else self.sizes), seed)

    @classmethod
    def from_spec(cls, spec: Any, sizes: Optional[Mapping[str, int]] = None) -> "Problem":
        """From a bundled `ProgramSpec`: its default sizes overridden by `sizes`, its inputs and
        (at least 1e-3) tolerances — a reordered float reduction differs in the last bits."""
        merged = dict(spec.sizes) | dict(sizes or {})
        program = spec.program
        return cls.from_program(spec.name, program, merged,
                                lambda s, seed: spec.inputs(s, seed),
                                rtol=max(spec.rtol, 1e-3), atol=max(spec.atol, 1e-3))

    @classmethod
    def from_program(cls, name: str, program: Lambda, sizes: Mapping[str, int],
                     make_inputs: Optional[InputMaker] = None, rtol: float = 1e-3,
                     atol: float = 1e-3) -> "Problem":
        missing = [n for n in size_names(program) if n not in sizes]
        if missing:
            raise LiftTypeError(f"{name}: give the size(s) {', '.join(missing)} "
                                f"(e.g. --size {missing[0]}=1048576)")
        used = {k: int(v) for k, v in sizes.items() if k in size_names(program)}
        maker = make_inputs or (lambda s, seed: random_inputs(program, s, seed))
        return cls(name, program, used, maker, rtol, atol)


# ---------------------------------------------------------------------------------------------
# inputs for programs without a spec


def random_inputs(program: Lambda, sizes: Mapping[str, int], seed: int = 0) -> list[Any]:
    """Uniform random inputs for every parameter of `program` at `sizes` (floats in [-1, 1),
    integers in [-100, 100)); arrays of tuples as tuples of arrays, as the runtimes accept."""
    rng = np.random.default_rng(seed)
    return [_random_value(p.type, sizes, rng) for p in program.params]  # type: ignore[arg-type]


def _random_value(t: Type, sizes: Mapping[str, int], rng: np.random.Generator) -> Any:
    dims, elem = array_dims(t)
    shape = tuple(int(d.eval(sizes)) for d in dims)
    if isinstance(elem, TupleType):
        return tuple(_random_value(_rebuild(dims, e), sizes, rng) for e in elem.elems)
    if isinstance(elem, VectorType):
        return _random_scalars(elem.elem, shape + (elem.width,), rng)
    if isinstance(elem, ScalarType):
        out = _random_scalars(elem, shape, rng)
        return out if dims else elem.dtype.type(out[()])
    raise LiftTypeError(f"cannot make random inputs of type {t}")


def _random_scalars(t: ScalarType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = t.dtype
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    return rng.integers(-100, 100, shape).astype(dt)


def _rebuild(dims: list[Any], t: Type) -> Type:
    for d in reversed(dims):
        t = ArrayType(t, d)
    return t
