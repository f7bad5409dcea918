"""The schedule of a work-group tile loop over the GPU's slots (issue 12, wave quantisation).

`reduceSplitTail p slots b (f, z)`: a reduceSeq over a work-group's tile pairs whose function
starts with `toLocalAsync` copies (the cp.async tile loop of mm-tiles-async), run with its
work-groups scheduled against the device's `slots` (multiprocessors × resident blocks of the
kernel). A grid of T tiles runs in ⌈T / slots⌉ waves; the last, partial one (T mod slots tiles)
leaves most multiprocessors idle while it runs. Here the tail's tiles are each split along the
loop into p parts (K split p ways: p work-groups per tile, the grid's third dimension), so the
last wave is p times as many, p times shorter pieces; the parts of a tile then add their partial
sums in order (part 0's sum, plus part 1's, ...) through a global workspace, the last part
storing the tile as the whole loop would. The other tiles run the whole loop in one work-group,
as reduceSeq. `b` > 0 also bounds the kernel to at least b resident work-groups per
multiprocessor (`__launch_bounds__`, a register cap), which changes the slots; p = 1 is that
bound alone.

Meaning (the interpreter's): the loop's elements cut into p contiguous parts (part q from
⌊q·n/p⌋ to ⌊(q+1)·n/p⌋), each folded by f from z, the results added element by element in part
order. That is reduceSeq(f, z) reassociated when z is zero and f adds to its accumulator (f(a +
b, x) = f(a, x) + b, as a tile loop's multiply-add does), which is where the rule `mm-split-tail`
(rules/mm_schedule.py) introduces it; in the generated code which tiles are split depends on
the launch, not on the meaning.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.base import Kind, PatternError, expect_args, param
from liftkit.ir.patterns.cuda import CudaPattern, ReduceMmaF64K8AheadSpread, ToLocalAsync
from liftkit.ir.patterns.maps import MapWrg
from liftkit.ir.patterns.reductions import ReduceSeq, fold
from liftkit.semantics.values import axis_len, expand, tmap
from liftkit.types import (ArrayType, ScalarType, Type, VectorType, complex64, complex128, float32,
                           float64)

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value

MAX_PARTS = 16


def _float_leaves(t: Type) -> bool:
    """t is a (nested) array of float/double scalars or vectors, or of complex numbers: what the
    parts add element-wise."""
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType):
        t = t.elem
    return isinstance(t, ScalarType) and t in (float32, float64, complex64, complex128)


@dataclass(frozen=True, repr=False)
class ReduceSplitTail(ReduceSeq, CudaPattern):
    """reduceSplitTail p slots b (f, z): see the module docstring."""

    name = "reduceSplitTail"
    parts: ArithExpr = param(Kind.SIZE, default=cst(2))
    slots: ArithExpr = param(Kind.SIZE, default=cst(1))
    bound: ArithExpr = param(Kind.SIZE, default=cst(0))
    high_level = False
    feature = "cp.async"
    refusal = ("reduceSplitTail needs the CUDA backend (cp.async tile loops, a third grid "
               "dimension and ordered global fix-ups); on OpenCL write the loop as reduceSeq")

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("parts", Kind.SIZE), ("slots", Kind.SIZE), ("bound", Kind.SIZE), ("f", Kind.FUN)]

    def schedule(self) -> tuple[int, int, int]:
        """(parts, slots, bound) as integers, checked."""
        vals = []
        for what, e, lo, hi in (("parts", self.parts, 1, MAX_PARTS), ("slots", self.slots, 1, 1 << 16),
                                ("bound", self.bound, 0, 32)):
            if not e.is_constant or not lo <= e.value <= hi:
                raise PatternError(f"reduceSplitTail: {what} must be a constant from {lo} to {hi}, "
                                   f"got {e}")
            vals.append(e.value)
        return vals[0], vals[1], vals[2]

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        self.schedule()
        if not any(isinstance(n, ToLocalAsync) for n in walk(self.f)):
            raise PatternError("reduceSplitTail schedules a cp.async tile loop: its function must "
                               "start with toLocalAsync copies (apply tiles-async first)")
        if not any(isinstance(e, MapWrg) for e in t.enclosing):
            raise PatternError("reduceSplitTail splits a work-group's loop: use it inside mapWrg")
        if not _float_leaves(args[0]):
            raise PatternError(f"reduceSplitTail adds partial sums element by element: the "
                               f"accumulator must be an array of float, double or complex "
                               f"numbers, got {args[0]}")
        return super().infer(t, args)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, xs = args
        p, _, _ = self.schedule()
        sums = [fold(ev, self.f, init, part, env) for part in _parts(xs, p, ev.brank)]
        return expand(functools.reduce(_add, sums), ev.brank)


def _parts(xs: "Value", p: int, axis: int) -> list["Value"]:
    """xs cut along `axis` into p contiguous parts (part q from ⌊q·n/p⌋ to ⌊(q+1)·n/p⌋)."""
    n = axis_len(xs, axis)
    cuts = [(slice(None),) * axis + (slice(q * n // p, (q + 1) * n // p),) for q in range(p)]
    return [tmap(lambda a: a[index], xs) for index in cuts]  # noqa: B023 - used at once


def _add(a: "Value", b: "Value") -> "Value":
    """a + b element by element in a's dtype (float32 sums stay float32, as on the GPU)."""
    x, y = np.asarray(a), np.asarray(b)
    return (x + y).astype(x.dtype)


@dataclass(frozen=True, repr=False)
class ReduceMmaSplit(ReduceMmaF64K8AheadSpread):
    """reduceMmaF64K8AheadSplit p slots w (f, z): reduceMmaF64K8AheadSpread (the DMMA tile loop
    reading its fragments ahead) with the tail's tiles split along the loop into p parts as
    reduceSplitTail splits an FFMA loop: a grid of T tiles whose last partial wave of `slots`
    (T mod slots tiles; all of them where T < slots) runs p work-groups per tile on the grid's
    third dimension, each over a contiguous range of the tile pairs, their partial sums added
    in part order. Meaning: the pairs cut into p contiguous parts, each folded from z (part 0)
    or zero (the others), the results added in order; the tile loop's sum regrouped."""

    name = "reduceMmaF64K8AheadSplit"
    parts: ArithExpr = param(Kind.SIZE, default=cst(2))
    slots: ArithExpr = param(Kind.SIZE, default=cst(1))

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("parts", Kind.SIZE), ("slots", Kind.SIZE), ("warps", Kind.SIZE), ("f", Kind.FUN)]

    def schedule(self) -> tuple[int, int, int]:
        """(parts, slots, 0) as integers, checked (the bound of reduceSplitTail is not offered)."""
        vals = []
        for what, e, lo, hi in (("parts", self.parts, 1, MAX_PARTS), ("slots", self.slots, 1, 1 << 16)):
            if not e.is_constant or not lo <= e.value <= hi:
                raise PatternError(f"{self.name}: {what} must be a constant from {lo} to {hi}, "
                                   f"got {e}")
            vals.append(e.value)
        return vals[0], vals[1], 0

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        self.schedule()
        return super().infer(t, args)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, tiles = args
        zero = tmap(lambda a: np.zeros_like(np.asarray(a)), init)
        sums = []
        for q, part in enumerate(_parts(tiles, self.schedule()[0], ev.brank)):
            sums.append(super().evaluate(ev, [init if q == 0 else zero, part], env))
        return functools.reduce(_add, sums)
