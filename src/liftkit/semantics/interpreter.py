"""The reference interpreter: the denotational semantics of seed 002 Fig. 9, run in NumPy.

Low-level patterns mean their high-level counterparts (mapWrg = map, reduceSeq = reduce, toLocal
= identity on its function). It is the oracle every compiled kernel and every rewrite is checked
against, so maps are vectorised: a map's body is evaluated once over the whole array, with the
map's axis as an extra leading *batch* axis of every value.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from liftkit.arith import ArithError, ArithExpr, Var
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Param, UserFun, spread_tuples
from liftkit.ir.patterns.base import Pattern
from liftkit.semantics.values import (
    Value,
    broadcast_batch,
    cast,
    constant,
    ensure_batch,
    to_numpy,
    to_value,
)
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType

Env = Mapping[Param, "tuple[Value, int]"]  # parameter -> (value, batch rank where it was bound)


class EvaluationError(LiftTypeError):
    """A run-time failure of a program in the interpreter (bad index, non-divisible size, ...)."""


class Evaluator:
    """Evaluation at one batch shape; `nested(n)` enters a map over n elements."""

    def __init__(self, sizes: Mapping[str, int], batch: tuple[int, ...] = ()) -> None:
        self.sizes = dict(sizes)
        self.batch = batch

    @property
    def brank(self) -> int:
        return len(self.batch)

    def nested(self, n: int) -> "Evaluator":
        return Evaluator(self.sizes, self.batch + (int(n),))

    def lift(self, v: Value, rank_from: int) -> Value:
        return broadcast_batch(v, rank_from, self.batch)

    def eval_size(self, e: ArithExpr) -> int:
        try:
            return e.eval(self.sizes)
        except ArithError as err:
            raise EvaluationError(str(err)) from None

    def expr(self, e: Expr, env: Env) -> Value:
        if isinstance(e, FunCall):
            return self.call(e.f, [self.expr(a, env) for a in e.args], env)
        if isinstance(e, Param):
            try:
                v, rank = env[e]
            except KeyError:
                raise EvaluationError(f"parameter {e.name} has no value") from None
            return self.lift(v, rank)
        if isinstance(e, Literal):
            return constant(e.value, e.type, self.batch)
        raise EvaluationError(f"cannot evaluate {e!r}")

    def call(self, f: FunDecl, args: Sequence[Value], env: Env) -> Value:
        if isinstance(f, Lambda):
            env2 = dict(env)
            for p, a in zip(f.params, args):
                env2[p] = (a, self.brank)
            return self.expr(f.body, env2)
        if isinstance(f, UserFun):
            return self.user_fun(f, args)
        if isinstance(f, Pattern):
            return f.evaluate(self, args, env)
        raise EvaluationError(f"cannot call {f!r}")

    def user_fun(self, f: UserFun, args: Sequence[Value]) -> Value:
        args = spread_tuples(f, args)
        try:
            with np.errstate(all="ignore"):  # C semantics: inf/nan propagate silently
                if f.vectorized or not self.batch:
                    out = f.impl(*args)
                else:
                    out = self._per_element(f, args)
        except EvaluationError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's Python code: name it, do not crash
            detail = " ".join(str(err).split()) or type(err).__name__
            raise EvaluationError(f"user function {f.name}: its Python implementation failed "
                                  f"({type(err).__name__}: {detail})") from err
        return ensure_batch(cast(out, f.out_type), f.out_type, self.batch)

    def _per_element(self, f: UserFun, args: Sequence[Value]) -> Value:
        """For user functions whose NumPy twin only takes single elements."""
        results = []
        for ix in np.ndindex(*self.batch):
            elem_args = [_index_value(a, ix) for a in args]
            results.append(f.impl(*elem_args))
        return _stack(results, self.batch)


def _index_value(v: Value, ix: tuple[int, ...]) -> Any:
    if isinstance(v, tuple):
        return tuple(_index_value(x, ix) for x in v)
    return v[ix]


def _stack(results: list[Any], batch: tuple[int, ...]) -> Value:
    if results and isinstance(results[0], tuple):
        return tuple(_stack([r[k] for r in results], batch) for k in range(len(results[0])))
    arr = np.asarray(results)
    return arr.reshape(batch + arr.shape[1:])


# ---------------------------------------------------------------------------------------------
# running whole programs


def bind_sizes(program: Lambda, inputs: Sequence[Any], sizes: Optional[Mapping[str, int]] = None
               ) -> dict[str, int]:
    """Size variables from the inputs' shapes, checked against every declared length.

    Bare variables (`N`) are read off the shapes; every other length (`2*N`, `N/4`) is then
    evaluated and compared, so a mismatch is reported in the program's own terms."""
    bound: dict[str, int] = {k: int(v) for k, v in (sizes or {}).items()}
    for k, v in bound.items():
        if v < 1:  # the types' arithmetic assumes positive sizes (N/N = 1)
            raise EvaluationError(f"size {k} = {v}: sizes are at least 1")
    if len(inputs) != len(program.params):
        raise EvaluationError(f"the program takes {len(program.params)} input(s) "
                              f"({', '.join(p.name for p in program.params)}), got {len(inputs)}")
    shapes = [(p, _shapes(p.type, x)) for p, x in zip(program.params, inputs)]  # type: ignore[arg-type]
    for p, pairs in shapes:
        for length, actual in pairs:
            if isinstance(length, Var) and length.name not in bound:
                if actual < 1:  # decided once, as for --size N=0 on the command line
                    raise EvaluationError(f"input {p.name} is empty ({length.name} = {actual}); "
                                          f"sizes are at least 1")
                bound[length.name] = actual
    _solve_lengths([pair for _p, pairs in shapes for pair in pairs], bound)
    for p, pairs in shapes:
        for length, actual in pairs:
            try:
                want = length.eval(bound)
            except ArithError:
                free = sorted(v.name for v in length.free_vars() if v.name not in bound)
                if len(free) == 1:
                    raise EvaluationError(f"input {p.name}: no value of {free[0]} makes {length} "
                                          f"= {actual}, the array's extent") from None
                raise EvaluationError(f"input {p.name}: cannot determine {length} from the input "
                                      f"shapes; give it with sizes={{...}}") from None
            if want != actual:
                raise EvaluationError(f"input {p.name}: length {length} = {want} but the array has "
                                      f"{actual} elements in that dimension")
    return bound


def _solve_lengths(pairs: Sequence[tuple[ArithExpr, int]], bound: dict[str, int]) -> None:
    """Bind the variable of every length with exactly one unbound variable (`4*N`, `N/2+1`)
    to the smallest value giving the actual extent. Lengths grow with their variables, so a
    doubling then bisecting search finds it; a length that does not hit the extent exactly
    leaves the variable unbound (the caller reports it)."""
    progress = True
    while progress:
        progress = False
        for length, actual in pairs:
            free = [v for v in length.free_vars() if v.name not in bound]
            if len(free) != 1 or isinstance(length, Var):
                continue
            name = free[0].name

            def at(v: int) -> Optional[int]:
                try:
                    return int(length.eval({**bound, name: v}))
                except (ArithError, ZeroDivisionError):
                    return None

            hi = 1
            while hi < 1 << 48 and (at(hi) is None or at(hi) < actual):  # type: ignore[operator]
                hi *= 2
            lo = 0
            while lo < hi:
                mid = (lo + hi) // 2
                got = at(mid)
                if got is not None and got >= actual:
                    hi = mid
                else:
                    lo = mid + 1
            if at(lo) == actual:
                bound[name] = lo
                progress = True


def _shapes(t: Type, x: Any) -> list[tuple[ArithExpr, int]]:
    """(declared length, actual extent) for every array dimension of one input."""
    out: list[tuple[ArithExpr, int]] = []
    if isinstance(t, TupleType):
        if isinstance(x, np.ndarray) and x.dtype.names:
            x = tuple(x[n] for n in x.dtype.names)
        for et, xi in zip(t.elems, x):
            out += _shapes(et, xi)
        return out
    dims = []
    while isinstance(t, ArrayType):
        dims.append(t.length)
        t = t.elem
    if isinstance(t, TupleType):
        if isinstance(x, np.ndarray) and x.dtype.names:
            comps = [x[n] for n in x.dtype.names]
        elif isinstance(x, tuple):
            comps = list(x)
        else:
            raise EvaluationError("an array of tuples is given as a tuple of arrays or a structured array")
        shape = np.shape(comps[0])
    else:
        shape = np.shape(x)
    extra = 1 if isinstance(t, VectorType) else 0
    if isinstance(t, (ScalarType, VectorType)) and len(shape) != len(dims) + extra:
        raise EvaluationError(f"expected {len(dims) + extra} dimension(s) for type "
                              f"{_rebuild(dims, t)}, got an array of shape {shape}")
    if isinstance(t, VectorType) and shape[-1] != t.width:
        raise EvaluationError(f"vector elements of width {t.width}, got trailing extent {shape[-1]}")
    return list(zip(dims, shape))


def _rebuild(dims: list[ArithExpr], t: Type) -> Type:
    for d in reversed(dims):
        t = ArrayType(t, d)
    return t


def interpret(program: Lambda, *inputs: Any, sizes: Optional[Mapping[str, int]] = None) -> Any:
    """Run a program on NumPy inputs; returns NumPy (tuples as tuples, arrays of tuples as
    structured arrays)."""
    from liftkit.ir.typecheck import check_program  # typecheck imports the patterns, which import us

    out_type = check_program(program)
    bound = bind_sizes(program, inputs, sizes)
    env: dict[Param, tuple[Value, int]] = {}
    for p, x in zip(program.params, inputs):
        try:
            env[p] = (to_value(x, p.type, p.name), 0)  # type: ignore[arg-type]
        except ValueError as err:
            raise EvaluationError(str(err)) from None
    try:
        result = Evaluator(bound).expr(program.body, env)
    except EvaluationError:
        raise
    except LiftTypeError as err:  # a pattern's run-time check (sizes, indices) failed
        raise EvaluationError(str(err)) from None
    return to_numpy(result, out_type)
