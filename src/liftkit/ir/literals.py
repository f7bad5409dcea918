"""Bare numbers take the type their use asks for.

`reduce(add_double, 0.0)` over doubles: the `0.0` was written without a type and defaults to
float (the papers' `0.0f`), which the reduction's function refuses. Where the use makes the
type unambiguous, `settle_literals` gives such a literal (`Literal.inferred`) that type:

- an argument of a user function: the parameter's scalar type (`add_double(x, 1.0)`);
- a reduction's initial value: the result type of its user function, or, for a lambda that
  the default does not type-check, the element type of the reduced array;
- a `pad` constant: the element type of the padded array.

A literal keeps its default type everywhere else, and a conversion that would change its value
(`2.5` as an int) is not made, so the type checker still reports it in its own words. The pass
never raises: it returns the program with the literals it could settle.
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun, unwrap_eta
from liftkit.ir.typecheck import LocatedTypeError, TypeChecker
from liftkit.types import ArrayType, LiftTypeError, ScalarType, Type, bool_


def settle_literals(program: Lambda) -> Lambda:
    """The program with every bare number typed as its use asks (see the module docstring)."""
    finder = _Uses()
    try:
        finder.apply(program, [p.type for p in program.params], {}, ())  # type: ignore[misc]
    except Exception:  # noqa: BLE001 - the type checker reports the program's errors in its words
        pass  # what could be settled before the error is settled
    if not finder.retype and not finder.pads:
        return program
    out = _rewrite(program, finder.retype, finder.pads)
    assert isinstance(out, Lambda)
    return out


class _Uses(TypeChecker):
    """Type inference that notes, for each bare number, the type its use asks for, and checks
    the rest of the program as if the literal had that type."""

    def __init__(self) -> None:
        super().__init__()
        self.retype: dict[int, Type] = {}
        self.pads: dict[int, P.Pad] = {}

    def expr(self, e: Expr, env: Mapping[Param, Type], enclosing: tuple[P.Pattern, ...] = ()) -> Type:
        if not isinstance(e, FunCall):
            if isinstance(e, Literal) and id(e) in self.retype:
                return self.retype[id(e)]
            return super().expr(e, env, enclosing)
        arg_types = [self.expr(a, env, enclosing) for a in e.args]
        for i, want in self._wanted(e, arg_types, env, enclosing).items():
            if _converts(e.args[i].value, want):  # type: ignore[union-attr]
                self.retype[id(e.args[i])] = want
                arg_types[i] = want
        f = self._settled_pad(e.f, arg_types)
        try:
            t = self.apply(f, arg_types, env, enclosing)
        except LocatedTypeError:
            raise
        except LiftTypeError as err:
            raise LocatedTypeError(str(err), "") from None
        self.types[id(e)] = t
        return t

    def _wanted(self, e: FunCall, arg_types: list[Type], env: Mapping[Param, Type],
                enclosing: tuple[P.Pattern, ...]) -> dict[int, Type]:
        bare = [i for i, a in enumerate(e.args) if _bare(a) and id(a) not in self.retype]
        if not bare:
            return {}
        f = unwrap_eta(e.f)
        if isinstance(f, UserFun) and len(f.param_types) == len(e.args):
            return {i: f.param_types[i] for i in bare
                    if isinstance(f.param_types[i], ScalarType) and f.param_types[i] != arg_types[i]}
        if isinstance(f, P.AbstractReduce) and bare == [0] and len(arg_types) == 2:
            want = self._accumulator(f, arg_types, env, enclosing)
            return {0: want} if want is not None and want != arg_types[0] else {}
        return {}

    def _accumulator(self, f: P.AbstractReduce, arg_types: Sequence[Type], env: Mapping[Param, Type],
                     enclosing: tuple[P.Pattern, ...]) -> Optional[Type]:
        g = unwrap_eta(f.f)
        if isinstance(g, UserFun):
            return g.out_type if isinstance(g.out_type, ScalarType) else None
        try:  # a lambda: keep the default where it type-checks
            _Uses().apply(f, arg_types, env, enclosing)
            return None
        except LiftTypeError:
            xs = arg_types[1]
            return xs.elem if isinstance(xs, ArrayType) and isinstance(xs.elem, ScalarType) else None

    def _settled_pad(self, f: FunDecl, arg_types: Sequence[Type]) -> FunDecl:
        if not (isinstance(f, P.Pad) and _bare(f.boundary.value) and len(arg_types) == 1):
            return f
        xs = arg_types[0]
        value = f.boundary.value
        assert value is not None
        if not (isinstance(xs, ArrayType) and isinstance(xs.elem, ScalarType)
                and xs.elem != value.type and _converts(value.value, xs.elem)):
            return f
        settled = P.Pad(f.left, f.right, P.Boundary("constant", _typed(value, xs.elem)))
        self.pads[id(f)] = settled
        return settled


def _bare(e: Any) -> bool:
    return isinstance(e, Literal) and e.inferred and isinstance(e.type, ScalarType)


def _converts(value: Any, t: Type) -> bool:
    """The number keeps its value as a t."""
    if not isinstance(t, ScalarType) or t == bool_ or isinstance(value, (bool, np.bool_)):
        return False
    if t.is_complex:
        return isinstance(value, numbers.Complex)
    if not isinstance(value, numbers.Real):
        return False
    if t.is_float:
        return True
    return isinstance(value, numbers.Integral) or float(value).is_integer()


def _typed(lit_: Literal, t: ScalarType) -> Literal:
    v = lit_.value
    value = complex(v) if t.is_complex else float(v) if t.is_float else int(v)
    return Literal(value, t)


def _rewrite(node: Node, retype: Mapping[int, Type], pads: Mapping[int, P.Pad]) -> Any:
    if isinstance(node, Literal):
        t = retype.get(id(node))
        return _typed(node, t) if isinstance(t, ScalarType) else node
    if isinstance(node, FunCall):
        return FunCall(_rewrite(node.f, retype, pads), tuple(_rewrite(a, retype, pads) for a in node.args))
    if isinstance(node, Lambda):
        return Lambda(node.params, _rewrite(node.body, retype, pads))
    if id(node) in pads:
        return pads[id(node)]
    if isinstance(node, P.Pattern):
        fs = node.functions()
        if fs:
            return node.with_functions([_rewrite(f, retype, pads) for f in fs])
    return node
