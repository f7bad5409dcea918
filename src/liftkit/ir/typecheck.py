"""Type inference along the data flow (seed 000 §5.1), with structural legality checks.

Types flow from a program's typed parameters through every call. Each pattern's own `infer` is its
type rule; this module supplies the traversal, the parameter environment, the stack of enclosing
patterns (for OpenCL nesting rules) and error locations: the first failing call is named in the
message, printed in the papers' notation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun, spread_tuples
from liftkit.ir.patterns.base import Pattern
from liftkit.types import LiftTypeError, Type, same_type


class LocatedTypeError(LiftTypeError):
    """A type error that already names the sub-expression at fault. `where` is the printed
    sub-expression, or the call itself, printed when the error is shown: a search rejects
    thousands of ill-typed rewrites and never shows most of them."""

    def __init__(self, message: str, where: Union[str, FunCall]) -> None:
        super().__init__(message)
        self.message = message
        self._where = where

    @property
    def where(self) -> str:
        if not isinstance(self._where, str):
            self._where = _where(self._where)
        return self._where

    def __str__(self) -> str:
        return f"{self.message}\n  in: {self.where}"

    def __reduce__(self) -> tuple:  # pickled (search workers) with the printed location
        return (type(self), (self.message, self.where))


@dataclass(frozen=True)
class Typing:
    """What a pattern's type rule may use: typing of nested functions and the enclosing patterns."""

    checker: "TypeChecker"
    env: Mapping[Param, Type]
    enclosing: tuple[Pattern, ...]

    def apply(self, f: FunDecl, arg_types: Sequence[Type], enter: Optional[Pattern] = None) -> Type:
        ctx = self.enclosing + (enter,) if enter is not None else self.enclosing
        return self.checker.apply(f, arg_types, self.env, ctx)


class TypeChecker:
    """Infers types; `types` maps id(FunCall) to the type it had at its last visit.

    The table is an explicit object (no global state): a pass that needs per-call types runs a
    checker and keeps it alongside the program.
    """

    def __init__(self) -> None:
        self.types: dict[int, Type] = {}

    def expr(self, e: Expr, env: Mapping[Param, Type], enclosing: tuple[Pattern, ...] = ()) -> Type:
        if isinstance(e, Literal):
            return e.type
        if isinstance(e, Param):
            t = env.get(e, e.type)
            if t is None:
                raise LiftTypeError(f"parameter {e.name} is used outside the lambda that binds it")
            return t
        if isinstance(e, FunCall):
            arg_types = [self.expr(a, env, enclosing) for a in e.args]
            try:
                t = self.apply(e.f, arg_types, env, enclosing)
            except LocatedTypeError:
                raise
            except LiftTypeError as err:
                raise LocatedTypeError(str(err), e) from None
            self.types[id(e)] = t
            return t
        raise LiftTypeError(f"not a Lift expression: {e!r}")

    def apply(self, f: FunDecl, arg_types: Sequence[Type], env: Mapping[Param, Type],
              enclosing: tuple[Pattern, ...]) -> Type:
        if isinstance(f, Lambda):
            if len(f.params) != len(arg_types):
                raise LiftTypeError(f"a lambda of {len(f.params)} parameter(s) is applied to "
                                    f"{len(arg_types)} argument(s)")
            env2 = dict(env)
            for p, t in zip(f.params, arg_types):
                if p.type is not None and not same_type(p.type, t):
                    raise LiftTypeError(f"parameter {p.name} is declared {p.type} but receives {t}")
                env2[p] = t
            return self.expr(f.body, env2, enclosing)
        if isinstance(f, UserFun):
            given = spread_tuples(f, arg_types)
            if len(f.param_types) != len(given):
                raise LiftTypeError(f"user function {f.name} takes {len(f.param_types)} argument(s), "
                                    f"got {len(arg_types)}")
            for name, want, got in zip(f.param_names, f.param_types, given):
                if not same_type(want, got):
                    raise LiftTypeError(
                        f"user function {f.name}: parameter {name} has type {want}, got {got}")
            return f.out_type
        if isinstance(f, Pattern):
            return f.infer(Typing(self, env, enclosing), arg_types)
        raise LiftTypeError(f"not a function: {f!r}")


def _where(e: FunCall) -> str:
    from liftkit.ir.printer import show_short

    return show_short(e)


def infer_type(e: Expr, env: Optional[Mapping[Param, Type]] = None) -> Type:
    """The type of an expression whose free parameters have types (declared or in `env`)."""
    return TypeChecker().expr(e, dict(env or {}))


def check_program(program: Lambda) -> Type:
    """Type-check a whole program (a lambda with typed parameters) and return its result type."""
    if not isinstance(program, Lambda):
        raise LiftTypeError("a program is a lambda whose parameters have types")
    for p in program.params:
        if p.type is None:
            raise LiftTypeError(f"program parameter {p.name} needs a type")
    return TypeChecker().apply(program, [p.type for p in program.params], {}, ())  # type: ignore[misc]


def is_low_level(node: Node) -> bool:
    """True when no high-level-only pattern remains (reduce, partRed, reorder, or a map that
    computes), i.e. the program can go to the code generator. A map of a function that only
    rearranges data is compiled as a view and may stay."""
    from liftkit.ir.nodes import walk
    from liftkit.ir.patterns import Map

    for n in walk(node):
        if isinstance(n, Pattern) and n.high_level and n.name in _HIGH_ONLY:
            if isinstance(n, Map) and layout_only(n.f):
                continue
            return False
    return True


def layout_only(f: Node) -> bool:
    """No computation inside: only data-layout patterns, maps of them and lambdas."""
    from liftkit.ir import patterns as P
    from liftkit.ir.nodes import walk

    for n in walk(f):
        if isinstance(n, (UserFun, P.At, P.AbstractReduce, P.Iterate, P.AddressSpaceWrapper,
                          P.ParallelMap, P.MapSeq, P.MapSeqUnroll, P.MapVec, Literal)):
            return False
    return True


# patterns the code generator has no implementation for (seed 002: "bold functions are known to
# the code generator"); data-layout patterns are high-level *and* compiled as views.
_HIGH_ONLY = frozenset({"map", "reduce", "partRed", "reorder"})
