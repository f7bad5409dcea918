"""The complex128 tile loop on the FP64 tensor cores (issue 15: ZGEMM without the real
embedding's packing pass).

`reduceMmaZ64 w c (f, z)` over tile pairs `[(a: [[cdouble]_k]_m, b: [[cdouble]_k]_n)]_KT` means
`reduceSeq(λ(acc, t). acc + op(a')·op(b')ᵀ, z)` with `(a', b') = f(t)` (f stages the complex
tiles as they are, e.g. by cp.async into local memory), in complex128 arithmetic; `c` says which
factors are conjugated (bit 0: a's, bit 1: b's; 0 for the plain product). It is reduceMma's
meaning over complex numbers.

Its code (`codegen.cuda_zmma`) runs the m16n8k8 DMMA on the complex tiles through the real
embedding of the product without building it: a's complex rows are read as rows of twice as many
reals, and b's 2×2 real blocks [[br, bi], [-bi, br]] (the signs moved by `c`) are made at the
fragment reads, so no packing kernel writes them and the staged b tile is half the embedded
one's size. One instruction is 16 rows × 4 complex columns × 4 complex k: `shape` in complex
units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst
from liftkit.ir.patterns.base import Kind, PatternError, param
from liftkit.ir.patterns.cuda import ReduceMma
from liftkit.semantics.values import axis_len, expand, take
from liftkit.types import ScalarType, complex128

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value
    from liftkit.types import Type


@dataclass(frozen=True, repr=False)
class ReduceMmaZ64(ReduceMma):
    """reduceMmaZ64 w c (f, z): see the module docstring."""

    name = "reduceMmaZ64"
    warps: ArithExpr = param(Kind.SIZE, default=cst(4))
    conj: ArithExpr = param(Kind.SIZE, default=cst(0))
    f: "object" = param(Kind.FUN, default=None)  # type: ignore[assignment]
    shape: ClassVar[tuple[int, int, int]] = (16, 4, 4)  # m16n8k8 DMMA in complex units
    operand: ClassVar[ScalarType] = complex128
    acc: ClassVar[ScalarType] = complex128
    # read-ahead: each k-step's fragments read a step early, across the tile boundary too
    ahead: ClassVar[int] = 0

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("warps", Kind.SIZE), ("conj", Kind.SIZE), ("f", Kind.FUN)]

    def conjugated(self) -> tuple[bool, bool]:
        """(a's factor conjugated, b's), checked."""
        if not self.conj.is_constant or self.conj.value not in (0, 1, 2, 3):
            raise PatternError(f"{self.name} {self.warps} {self.conj}: the conjugation flags must "
                               "be a constant from 0 to 3 (bit 0: the first factor, bit 1: the "
                               "second)")
        return bool(self.conj.value & 1), bool(self.conj.value & 2)

    def infer(self, t: "Typing", args: Sequence["Type"]) -> "Type":
        self.conjugated()
        return super().infer(t, args)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, tiles = args
        b = ev.brank
        ca, cb = self.conjugated()
        acc = np.asarray(init).astype(np.complex128)
        for i in range(axis_len(tiles, b)):
            a, bt = ev.call(self.f, [take(tiles, i, b)], env)  # type: ignore[misc]
            a, bt = np.asarray(a, np.complex128), np.asarray(bt, np.complex128)
            prod = np.einsum("...ik,...jk->...ij", np.conjugate(a) if ca else a,
                             np.conjugate(bt) if cb else bt)
            if acc.ndim < prod.ndim:  # one initial value for every element
                acc = np.broadcast_to(acc.reshape(acc.shape + (1, 1)), prod.shape)
            acc = acc + prod
        return expand(acc, b)


@dataclass(frozen=True, repr=False)
class ReduceMmaZ64Ahead(ReduceMmaZ64):
    """reduceMmaZ64 whose lanes read each k-step's fragments one step ahead, across the tile
    boundary too (the next tile's first fragments read right after the pipeline's barrier,
    before the current tile's last products issue; the next copies issued among those
    products): the same meaning; its function must pipeline the copies with toLocalAsync s ≥ 2."""

    name = "reduceMmaZ64Ahead"
    ahead: ClassVar[int] = 1


ZMMA_PATTERNS = (ReduceMmaZ64, ReduceMmaZ64Ahead)
