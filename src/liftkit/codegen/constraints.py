"""Size constraints a program imposes: patterns whose input length must be divisible (split,
asVector, reorderStride, partRed). The runtime checks them before every launch; the code
generator may therefore assume them (e.g. that a float4 load's offset is a multiple of 4)."""

from __future__ import annotations

from dataclasses import dataclass
from math import lcm

from liftkit.arith import ArithExpr, Var
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Lambda
from liftkit.ir.typecheck import TypeChecker
from liftkit.types import ArrayType


@dataclass(frozen=True)
class Divides:
    """A pattern that needs `by` to divide `length` (split, asVector, reorderStride, partRed)."""

    what: str
    length: ArithExpr
    by: ArithExpr


_DIVISORS = ((P.Split, "n", "split"), (P.AsVector, "n", "asVector"),
             (P.ReorderStride, "s", "reorderStride"), (P.PartRed, "m", "partRed"))


class _DivisibilityRecorder(TypeChecker):
    """Type checker that notes every pattern whose input length must be divisible."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[tuple[str, str, str], Divides] = {}

    def apply(self, f, arg_types, env, enclosing):  # type: ignore[no-untyped-def]
        for cls, attr, label in _DIVISORS:
            if isinstance(f, cls) and arg_types and isinstance(arg_types[0], ArrayType):
                by = getattr(f, attr)
                length = arg_types[0].length
                d = Divides(f"{label} {by}", length, by)
                self.found.setdefault((d.what, str(length), str(by)), d)
        return super().apply(f, arg_types, env, enclosing)


def divisibility_checks(program: Lambda) -> list[Divides]:
    rec = _DivisibilityRecorder()
    rec.apply(program, [p.type for p in program.params], {}, ())  # type: ignore[misc]
    return list(rec.found.values())


def size_multiples(program: Lambda) -> dict[str, int]:
    """Size variables the checks make multiples of a constant: asVector 4 over [float]_K
    gives K ↦ 4 (the least common multiple of every such fact)."""
    out: dict[str, int] = {}
    for d in divisibility_checks(program):
        if isinstance(d.length, Var) and d.length.hi is None and d.by.is_constant and d.by.value > 1:
            out[d.length.name] = lcm(out.get(d.length.name, 1), int(d.by.value))
    return out
