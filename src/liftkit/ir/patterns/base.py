"""What every built-in pattern is: a FunDecl with typed static parameters, a type rule and a meaning.

A pattern's parameters are dataclass fields tagged with a `Kind`; the printer, the parser and the
rewrite engine read that signature instead of knowing each pattern, so adding a pattern is one
class in one place: its fields, `infer` (the type rule) and `evaluate` (the semantics).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from liftkit.arith import ArithExpr, Var, index_var, size_var
from liftkit.ir.nodes import FunDecl, Literal
from liftkit.types import LiftTypeError, Type

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Evaluator, Env
    from liftkit.semantics.values import Value


class Kind(enum.Enum):
    DIM = "dim"  # OpenCL dimension 0..2, printed mapLcl(0)
    SIZE = "size"  # an ArithExpr, printed `split 128`
    FUN = "fun"  # a nested function, printed mapSeq(f)
    INDEX = "index"  # an index function for gather/scatter
    BOUNDARY = "boundary"  # pad boundary handling
    COUNT = "count"  # how many arguments (zip, tuple); printed through the argument list


def param(kind: Kind, **kw: Any) -> Any:
    return field(metadata={"kind": kind}, **kw)


class PatternError(LiftTypeError):
    """Raised by a type rule; the checker adds the printed sub-expression at fault."""


@dataclass(frozen=True)
class IndexFun:
    """An index function `λ(i, n). body` for gather/scatter: i is the index, n the array length."""

    i: Var
    n: Var
    body: ArithExpr

    def __call__(self, index: ArithExpr | int, length: ArithExpr | int) -> ArithExpr:
        return self.body.substitute({self.i.name: index, self.n.name: length})

    def __str__(self) -> str:
        return f"λ({self.i.name}, {self.n.name}). {self.body}"


def index_fun(fn: Any) -> IndexFun:
    """Build an IndexFun from a Python function of (i, n) over arithmetic expressions."""
    n = size_var("n")
    i = index_var("i", n)
    return IndexFun(i, n, fn(i, n) if not isinstance(fn, ArithExpr) else fn)


BOUNDARY_KINDS = ("clamp", "wrap", "mirror", "constant")


@dataclass(frozen=True)
class Boundary:
    """How `pad` fills the cells outside the array: clamp (repeat the edge), wrap (periodic),
    mirror (reflect, repeating the edge element), or a constant value."""

    kind: str
    value: Literal | None = None

    def __post_init__(self) -> None:
        if self.kind not in BOUNDARY_KINDS:
            raise LiftTypeError(f"pad: unknown boundary {self.kind!r}; use one of {BOUNDARY_KINDS}")
        if (self.kind == "constant") != (self.value is not None):
            raise LiftTypeError("pad: a constant boundary needs exactly one value")

    def __str__(self) -> str:
        return self.kind if self.value is None else f"constant({self.value.value})"


@dataclass(frozen=True)
class Pattern(FunDecl):
    """A built-in function. Subclasses set `name`, declare parameters with `param(...)`, and
    implement `infer` and `evaluate`."""

    name: ClassVar[str] = "?"
    high_level: ClassVar[bool] = True  # False for OpenCL-specific patterns (mapWrg, toLocal, ...)
    arity: ClassVar[int] = 1  # type: ignore[misc]
    # reductions take (init, xs); the init is shown inline when it is a literal: reduceSeq(add, 0.0f)
    inline_init: ClassVar[bool] = False

    # -- signature ---------------------------------------------------------------------------
    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [(f.name, f.metadata["kind"]) for f in fields(cls)]

    def functions(self) -> tuple[FunDecl, ...]:
        return tuple(getattr(self, n) for n, k in self.signature() if k is Kind.FUN)

    def static_params(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n, k in self.signature() if k is not Kind.FUN)

    def with_functions(self, fs: Sequence[FunDecl]) -> "Pattern":
        """The same pattern with its nested functions replaced (used by passes and rewrites)."""
        it = iter(fs)
        kw = {n: (next(it) if k is Kind.FUN else getattr(self, n)) for n, k in self.signature()}
        return type(self)(**kw)

    def num_args(self) -> int:
        return self.arity

    # -- meaning -----------------------------------------------------------------------------
    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        raise PatternError(f"{self.name}: no type rule")  # every concrete pattern overrides

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        raise PatternError(f"{self.name}: no semantics")  # every concrete pattern overrides

    def __repr__(self) -> str:
        from liftkit.ir.printer import show_fun

        return show_fun(self)


def expect_args(p: Pattern, args: Sequence[Type]) -> None:
    if len(args) != p.num_args():
        raise PatternError(f"{p.name}: expects {p.num_args()} argument(s), got {len(args)}")
