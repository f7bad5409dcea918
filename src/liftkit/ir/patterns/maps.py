"""The map family: `map` and its OpenCL implementations (seed 002 Fig. 4/5, seed 000 §3.2).

All have the meaning of `map`; they differ in how the code generator assigns work to threads, so
their type rule also checks that they nest the way OpenCL's thread hierarchy allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from liftkit.ir.nodes import FunDecl
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, expect_args, param
from liftkit.semantics.values import axis_len
from liftkit.types import ArrayType, ScalarType, Type, VectorType

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value


@dataclass(frozen=True, repr=False)
class AbstractMap(Pattern):
    f: FunDecl = param(Kind.FUN)

    def check_nesting(self, t: "Typing") -> None:
        """Structural legality of this map among its enclosing patterns (none for map/mapSeq)."""

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        (xs,) = args
        if not isinstance(xs, ArrayType):
            raise PatternError(f"{self.name}: expects an array, got {xs}")
        self.check_nesting(t)
        return ArrayType(t.apply(self.f, [xs.elem], enter=self), xs.length)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        (xs,) = args
        return ev.nested(axis_len(xs, ev.brank)).call(self.f, [xs], env)


@dataclass(frozen=True, repr=False)
class Map(AbstractMap):
    name = "map"


@dataclass(frozen=True, repr=False)
class MapSeq(AbstractMap):
    name = "mapSeq"
    high_level = False


@dataclass(frozen=True, repr=False)
class MapSeqUnroll(AbstractMap):
    """mapSeq whose loop the code generator fully unrolls (private arrays become registers)."""

    name = "mapSeqUnroll"
    high_level = False


def _dim_ok(d: int, name: str) -> None:
    if d not in (0, 1, 2):
        raise PatternError(f"{name}({d}): OpenCL has dimensions 0, 1 and 2 only")


@dataclass(frozen=True, repr=False)
class ParallelMap(AbstractMap):
    """mapGlb / mapWrg / mapLcl: a map whose iterations run on OpenCL threads of dimension `dim`."""

    dim: int = param(Kind.DIM, default=0)
    high_level = False

    def __post_init__(self) -> None:
        _dim_ok(self.dim, self.name)

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        # printed as mapLcl(0)(f): the dimension comes first
        return [("dim", Kind.DIM), ("f", Kind.FUN)]


@dataclass(frozen=True, repr=False)
class MapGlb(ParallelMap):
    name = "mapGlb"

    def check_nesting(self, t: "Typing") -> None:
        for p in t.enclosing:
            if isinstance(p, (MapWrg, MapLcl)):
                raise PatternError(f"mapGlb({self.dim}) cannot be nested inside {p.name}({p.dim})")
            if isinstance(p, MapGlb) and p.dim == self.dim:
                raise PatternError(f"mapGlb({self.dim}) is nested inside another mapGlb({self.dim})")


@dataclass(frozen=True, repr=False)
class MapWrg(ParallelMap):
    name = "mapWrg"

    def check_nesting(self, t: "Typing") -> None:
        for p in t.enclosing:
            if isinstance(p, (MapGlb, MapLcl)):
                raise PatternError(f"mapWrg({self.dim}) cannot be nested inside {p.name}({p.dim})")
            if isinstance(p, MapWrg) and p.dim == self.dim:
                raise PatternError(f"mapWrg({self.dim}) is nested inside another mapWrg({self.dim})")


@dataclass(frozen=True, repr=False)
class MapLcl(ParallelMap):
    name = "mapLcl"

    def check_nesting(self, t: "Typing") -> None:
        if not any(isinstance(p, MapWrg) for p in t.enclosing):
            raise PatternError(f"mapLcl({self.dim}) must be nested inside a mapWrg")
        for p in t.enclosing:
            if isinstance(p, MapLcl) and p.dim == self.dim:
                raise PatternError(f"mapLcl({self.dim}) is nested inside another mapLcl({self.dim})")
            if isinstance(p, MapGlb):
                raise PatternError(f"mapLcl({self.dim}) cannot be nested inside mapGlb({p.dim})")


@dataclass(frozen=True, repr=False)
class MapVec(Pattern):
    """Apply a scalar function to every lane of a vector (compiled to the vector form of f)."""

    name = "mapVec"
    high_level = False
    f: FunDecl = param(Kind.FUN)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        (v,) = args
        if not isinstance(v, VectorType):
            raise PatternError(f"mapVec: expects a vector, got {v}")
        out = t.apply(self.f, [v.elem])
        if not isinstance(out, ScalarType):
            raise PatternError(f"mapVec: the function must return a scalar, got {out}")
        return VectorType(out, v.width)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        (v,) = args
        return ev.nested(axis_len(v, ev.brank)).call(self.f, [v], env)


MAP_PATTERNS = (Map, MapSeq, MapSeqUnroll, MapGlb, MapWrg, MapLcl, MapVec)
