"""Patterns beyond OpenCL: what only the CUDA backend can compile (issue 12, item 4).

Each has the meaning of a high-level composition (so the interpreter is their oracle and rewrite
rules may introduce them) and a code generator that uses an NVIDIA instruction OpenCL C cannot
reach; on OpenCL the compiler refuses them with `refusal`, in the pattern's own words.

- `reduceWarp(⊕, z)`: [T]_{32m} → [T]_m, each run of 32 elements reduced by one warp with
  register shuffles (a butterfly, `__shfl_xor_sync`: every lane ends with the total, so the
  result is broadcast for free) instead of a tree through local memory and barriers. It means
  `join ∘ map(reduce(⊕, z)) ∘ split 32`; the interpreter folds in the butterfly's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from liftkit.arith import cst, divides
from liftkit.ir.nodes import FunDecl, UserFun, unwrap_eta
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, expect_args, param
from liftkit.ir.patterns.maps import MapGlb, MapLcl, MapSeq, MapSeqUnroll, MapWrg
from liftkit.ir.patterns.reductions import AbstractReduce
from liftkit.semantics.values import axis_len
from liftkit.types import ArrayType, ScalarType, Type, same_type

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value

WARP = 32  # threads of an NVIDIA warp
# the scalar types __shfl_xor_sync moves (32- and 64-bit integers and floats)
SHUFFLE_TYPES = ("int", "long", "float", "double")


class CudaPattern(Pattern):
    """A pattern only the CUDA dialect compiles: `feature` names what it needs of the dialect
    (`Dialect.features`), `refusal` is the compiler's one-line answer elsewhere."""

    feature: ClassVar[str] = ""
    refusal: ClassVar[str] = ""


def _in_work_group(p: Pattern, t: "Typing") -> None:
    """A collective of the work-group's threads: inside a mapWrg, outside every per-thread map."""
    if not any(isinstance(e, MapWrg) for e in t.enclosing):
        raise PatternError(f"{p.name} runs on the warps of a work-group: use it inside a mapWrg")
    for e in t.enclosing:
        if isinstance(e, (MapLcl, MapGlb, MapSeq, MapSeqUnroll, AbstractReduce)):
            raise PatternError(f"{p.name} needs every thread of the work-group, so it cannot be "
                               f"nested inside {e.name}")


@dataclass(frozen=True, repr=False)
class ReduceWarp(AbstractReduce, CudaPattern):
    """reduceWarp(⊕, z): [T]_{32m} → [T]_m, one warp per run of 32 (see the module docstring)."""

    name = "reduceWarp"
    high_level = False
    feature = "warp-shuffle"
    refusal = ("reduceWarp needs the CUDA backend (warp shuffles, __shfl_xor_sync); OpenCL C has "
               "no warp-level operations: compile with --backend cuda, or reduce with "
               "join ∘ mapLcl(reduceSeq(⊕, z)) ∘ split 32")

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        init, xs = args
        if not isinstance(xs, ArrayType):
            raise PatternError(f"reduceWarp: expects an array to reduce, got {xs}")
        f = unwrap_eta(self.f)
        if not (isinstance(f, UserFun) and f.associative and f.commutative):
            raise PatternError("reduceWarp: the operator must be a user function declared "
                               "associative and commutative (the lanes combine in a butterfly)")
        if not (isinstance(xs.elem, ScalarType) and xs.elem.name in SHUFFLE_TYPES):
            raise PatternError(f"reduceWarp: shuffles move int, long, float or double values, "
                               f"not {xs.elem}")
        if not same_type(init, xs.elem):
            raise PatternError(f"reduceWarp: the initial value has type {init} but the elements "
                               f"are {xs.elem}")
        if divides(cst(WARP), xs.length) is False:
            raise PatternError(f"reduceWarp: a warp reduces {WARP} elements, which does not "
                               f"divide the length {xs.length}")
        _in_work_group(self, t)
        out = t.apply(self.f, [init, xs.elem], enter=self)
        if not same_type(out, init):
            raise PatternError(f"reduceWarp: the operator returns {out} but the initial value "
                               f"has type {init}")
        return ArrayType(init, xs.length // cst(WARP))

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, xs = args
        b = ev.brank
        n = axis_len(xs, b)
        if n % WARP:
            raise PatternError(f"reduceWarp: the length {n} is not a multiple of {WARP}")
        m = n // WARP
        lanes = np.asarray(xs).reshape(xs.shape[:b] + (m, WARP))  # type: ignore[union-attr]
        per_lane = ev.nested(m).nested(WARP)
        for offset in (16, 8, 4, 2, 1):  # lane i combines its value with lane i ^ offset's
            partner = np.take(lanes, np.arange(WARP) ^ offset, axis=b + 1)
            lanes = per_lane.call(self.f, [lanes, partner], env)  # type: ignore[assignment]
        per_warp = ev.nested(m)
        return per_warp.call(self.f, [per_warp.lift(init, b), lanes[..., 0]], env)


CUDA_PATTERNS: tuple[type[Pattern], ...] = (ReduceWarp,)

