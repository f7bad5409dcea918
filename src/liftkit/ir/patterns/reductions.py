"""Reductions and iteration: reduce, reduceSeq(Unroll), partRed, iterate (seed 002 Fig. 4/5, 9).

Reductions take `(init, xs)` and return an array of length 1, as in the papers, so they compose
with the array patterns. The interpreter folds left (seed 000's reduceSeq); when the operator is
declared associative and has a NumPy ufunc it reduces the whole axis at once instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from liftkit.arith import ArithExpr, cst, divides
from liftkit.ir.nodes import FunDecl, UserFun, unwrap_eta
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, expect_args, param
from liftkit.semantics.values import axis_len, expand, take, tmap
from liftkit.types import ArrayType, Type, same_type

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value


def fold(ev: "Evaluator", f: FunDecl, init: "Value", xs: "Value", env: "Env") -> "Value":
    """Left fold of xs along the first non-batch axis, vectorised over the batch."""
    axis = ev.brank
    f = unwrap_eta(f)
    if (isinstance(f, UserFun) and f.ufunc is not None and f.associative
            and not isinstance(xs, tuple) and not isinstance(init, tuple)):
        total = f.ufunc.reduce(xs, axis=axis, dtype=xs.dtype)
        return ev.call(f, [init, total], env)
    acc = init
    for i in range(axis_len(xs, axis)):
        acc = ev.call(f, [acc, take(xs, i, axis)], env)
    return acc


@dataclass(frozen=True, repr=False)
class AbstractReduce(Pattern):
    f: FunDecl = param(Kind.FUN)
    arity = 2
    inline_init = True

    def check_operator(self, t: "Typing", init: Type, elem: Type) -> None:
        """Extra conditions on the operator (reduce: associative and commutative)."""

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        init, xs = args
        if not isinstance(xs, ArrayType):
            raise PatternError(f"{self.name}: expects an array to reduce, got {xs}")
        self.check_operator(t, init, xs.elem)
        out = t.apply(self.f, [init, xs.elem], enter=self)
        if not same_type(out, init):
            raise PatternError(
                f"{self.name}: the operator returns {out} but the initial value has type {init}")
        return self.result_type(init, xs)

    def result_type(self, init: Type, xs: ArrayType) -> Type:
        return ArrayType(init, cst(1))

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, xs = args
        return expand(fold(ev, self.f, init, xs, env), ev.brank)


def _check_assoc(p: Pattern, f: FunDecl, init: Type, elem: Type) -> None:
    f = unwrap_eta(f)
    if not isinstance(f, UserFun):
        raise PatternError(
            f"{p.name}: the operator must be a user function declared associative and commutative "
            f"(use reduceSeq for an arbitrary sequential fold)")
    if not (f.associative and f.commutative):
        raise PatternError(f"{p.name}: operator {f.name} is not declared associative and commutative")
    if not same_type(init, elem):
        raise PatternError(f"{p.name}: the initial value has type {init} but the elements are {elem}")


@dataclass(frozen=True, repr=False)
class Reduce(AbstractReduce):
    """reduce(⊕, z): z ⊕ x0 ⊕ ... ⊕ xn-1 for an associative and commutative ⊕."""

    name = "reduce"

    def check_operator(self, t: "Typing", init: Type, elem: Type) -> None:
        _check_assoc(self, self.f, init, elem)


@dataclass(frozen=True, repr=False)
class ReduceSeq(AbstractReduce):
    """reduceSeq(f, z): a sequential left fold in one thread; f : (A, B) -> A."""

    name = "reduceSeq"
    high_level = False


@dataclass(frozen=True, repr=False)
class ReduceSeqUnroll(AbstractReduce):
    name = "reduceSeqUnroll"
    high_level = False


@dataclass(frozen=True, repr=False)
class PartRed(AbstractReduce):
    """partRed(⊕, z) m: reduce an array of n elements to m, each the reduction of n/m of them."""

    name = "partRed"
    m: ArithExpr = param(Kind.SIZE, default=cst(1))

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("m", Kind.SIZE), ("f", Kind.FUN)]

    def check_operator(self, t: "Typing", init: Type, elem: Type) -> None:
        _check_assoc(self, self.f, init, elem)

    def result_type(self, init: Type, xs: ArrayType) -> Type:
        if divides(self.m, xs.length) is False:
            raise PatternError(f"partRed {self.m}: {self.m} does not divide the length {xs.length}")
        return ArrayType(init, self.m)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, xs = args
        m = ev.eval_size(self.m)
        n = axis_len(xs, ev.brank)
        if n % m:
            raise PatternError(f"partRed {self.m}: {m} does not divide the length {n}")
        b = ev.brank
        chunks = tmap(lambda a: a.reshape(a.shape[:b] + (m, n // m) + a.shape[b + 1:]), xs)
        inner = ev.nested(m)
        init_b = inner.lift(init, ev.brank)
        return fold(inner, self.f, init_b, chunks, env)


@dataclass(frozen=True, repr=False)
class Iterate(Pattern):
    """iterate n (f): f applied n times, each output fed back as the next input."""

    name = "iterate"
    n: ArithExpr = param(Kind.SIZE)
    f: FunDecl = param(Kind.FUN)

    def count(self) -> int:
        if not self.n.is_constant or self.n.value < 0:
            raise PatternError(f"iterate {self.n}: the count must be a non-negative constant")
        return self.n.value

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        (cur,) = args
        for _ in range(self.count()):
            nxt = t.apply(self.f, [cur], enter=self)
            if not (isinstance(cur, ArrayType) and isinstance(nxt, ArrayType)
                    and same_type(cur.elem, nxt.elem)):
                raise PatternError(
                    f"iterate {self.n}: the function must map arrays to arrays of the same "
                    f"element type, but it maps {cur} to {nxt}")
            cur = nxt
        return cur

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        (v,) = args
        for _ in range(self.count()):
            v = ev.call(self.f, [v], env)
        return v


REDUCE_PATTERNS = (Reduce, ReduceSeq, ReduceSeqUnroll, PartRed, Iterate)
