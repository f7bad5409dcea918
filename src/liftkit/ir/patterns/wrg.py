"""Work-groups that meet in global memory: `lastWrg b c (f, g)`, a sum across work-groups in one
kernel (issue 15, GEMV T); and work-groups larger than the code generator's default,
`wrgItems n (f)`.

`lastWrg 0 0 (f, g) $ (xs, zs)`, xs : [[T]_r]_n, zs : [Z]_n: n blocks of r parts each. The work-group
(b, k) of a grid of n × r work-groups (dimension 0: the blocks, 1: the parts) computes f's
partial result U of part k of block b into a global workspace; the last of a block's r
work-groups to finish (an atomic counter per block, after a fence) applies g to the block's r
partials and z_b. Within a kernel OpenCL and CUDA order nothing across work-groups, except
through atomics and fences: the counter is that order, taken once per work-group, never waited
on (no work-group spins, so any schedule of the grid finishes). Which work-group is last varies
from run to run, what it computes does not: g reads the r partials in part order, so the
result is deterministic (no floating-point atomics).

Meaning (the interpreter's): map(λ(ps, z). g(map(f) $ ps, z)) $ zip(xs, zs).

Type: f : T → U and g : ([U]_r, Z) → V are typed as functions a work-group runs (inside mapWrg(0)
and mapWrg(1): they may use mapLcl and local memory); the result is [V]_n. The pattern is a
kernel's whole grid: it may not be nested in a parallel map, nor contain one over work-groups.

`lastWrg b (f, g)`, b > 0: the kernel is built for at least b resident work-groups per
multiprocessor (CUDA's `__launch_bounds__`, a register cap: the dialect table's `occupancy`;
OpenCL C has no such attribute and leaves the choice to its compiler). A grid of n × r
work-groups runs in one wave only where they all fit at once: on the H100 the GEMV T kernel
took 34 registers a work-item, 6 groups of 256 per multiprocessor, 792 slots for 1024
work-groups (results/issue15/gemv25b). b = 0: the compiler's choice.

`lastWrg b c (f, g)`, c = 1: a block's r ≤ 8 parts run as one thread-block cluster (Hopper):
each part's partial stays in its work-group's local memory, a cluster barrier (release /
acquire) publishes them, the block's part 0 reads the r partials from the others' local memory
(distributed shared memory) and applies g, and a second barrier keeps the others' memory alive
until it has. No counters, no workspace, no round trip through L2. The dialect table spells it
(`cluster_dims`, `cluster_sync`, `cluster_word`); a dialect without clusters (OpenCL C) runs
the counters of c = 0. The meaning depends on neither b nor c.

`wrgItems n (f)`: f (a kernel's grid of mapWrg work-groups) with work-groups of up to n work-items.
The code generator keeps an inferred work-group within 256 work-items (a mapLcl longer than
that keeps a loop), which a driver allows for kernels of any register use; n (up to 1024)
lifts that cap for f's groups, and the kernel is built for n work-items (CUDA's
`__launch_bounds__(n, 1)`: at most 65536 / n registers a work-item, so the launch cannot fail
for want of registers; OpenCL C has no such attribute). cuBLAS's float32 GEMV T at 4096² runs
blocks of 512 threads at 128 registers (results/issue15/gemv25b). Meaning: f.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from liftkit.arith import ArithExpr, cst
from liftkit.ir.nodes import FunDecl, walk
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, expect_args, param
from liftkit.ir.patterns.maps import MapGlb, MapWrg, ParallelMap
from liftkit.semantics.values import axis_len
from liftkit.types import ArrayType, Type, int32, same_type

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value


MAX_BOUND = 32  # an NVIDIA multiprocessor holds at most 32 work-groups
MAX_CLUSTER = 8  # the portable cluster size of CUDA's thread-block clusters
MAX_ITEMS = 1024  # the work-items of a CUDA block (and of NVIDIA's OpenCL work-groups)
# the work-items the code generator gives an inferred work-group without wrgItems: NVIDIA's
# driver allows 256 for kernels of moderate register use (it refused 512 and 1024 for small
# random kernels on an H100); a longer mapLcl keeps a loop
CAPPED_ITEMS = 256


@dataclass(frozen=True, repr=False)
class LastWrg(Pattern):
    """lastWrg b (f, g): see the module docstring."""

    name = "lastWrg"
    f: FunDecl = param(Kind.FUN)
    g: FunDecl = param(Kind.FUN)
    bound: ArithExpr = param(Kind.SIZE, default=cst(0))
    cluster: ArithExpr = param(Kind.SIZE, default=cst(0))
    arity = 2
    high_level = False

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("bound", Kind.SIZE), ("cluster", Kind.SIZE), ("f", Kind.FUN), ("g", Kind.FUN)]

    def clustered(self) -> bool:
        """c = 1: a block's parts meet in a thread-block cluster (checked: 0 or 1)."""
        c = self.cluster
        if not (c.is_constant and c.value in (0, 1)):
            raise PatternError(f"lastWrg: the cluster flag must be 0 (parts meet in global memory) "
                               f"or 1 (in a thread-block cluster), got {c}")
        return bool(c.value)

    def resident(self) -> int:
        """b: the work-groups per multiprocessor the kernel is built for (0: any), checked."""
        b = self.bound
        if not (b.is_constant and 0 <= b.value <= MAX_BOUND):
            raise PatternError(f"lastWrg: the resident work-groups per multiprocessor must be a "
                               f"constant from 0 to {MAX_BOUND}, got {b}")
        return int(b.value)

    def groups(self, fun: FunDecl) -> tuple[MapWrg, MapWrg]:
        """The work-group maps f and g run inside (what their mapLcl and toLocal nest in)."""
        return MapWrg(fun, 0), MapWrg(fun, 1)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        from liftkit.ir.typecheck import Typing

        expect_args(self, args)
        self.resident()
        xs, zs = args
        if not (isinstance(xs, ArrayType) and isinstance(xs.elem, ArrayType)):
            raise PatternError(f"lastWrg: expects blocks of parts ([[T]_r]_n) first, got {xs}")
        if not isinstance(zs, ArrayType):
            raise PatternError(f"lastWrg: expects one value per block second ([Z]_n), got {zs}")
        if not same_type(ArrayType(int32, xs.length), ArrayType(int32, zs.length)):
            raise PatternError(f"lastWrg: {xs.length} blocks but {zs.length} values for them")
        r = xs.elem.length
        if self.clustered() and not (r.is_constant and 1 <= r.value <= MAX_CLUSTER):
            raise PatternError(f"lastWrg: a thread-block cluster holds at most {MAX_CLUSTER} parts "
                               f"of a block, got {r}")
        for p in t.enclosing:
            if isinstance(p, (ParallelMap, LastWrg)):
                raise PatternError(f"lastWrg is a kernel's whole grid: it cannot be nested inside "
                                   f"{p.name}")
        for fun in (self.f, self.g):
            inner = next((n for n in walk(fun) if isinstance(n, (MapGlb, MapWrg, LastWrg))), None)
            if inner is not None:
                raise PatternError(f"lastWrg's functions run in one work-group each: they may not "
                                   f"contain {inner.name}")
        u = Typing(t.checker, t.env, t.enclosing + self.groups(self.f)).apply(self.f, [xs.elem.elem])
        v = Typing(t.checker, t.env, t.enclosing + self.groups(self.g)).apply(
            self.g, [ArrayType(u, xs.elem.length), zs.elem])
        return ArrayType(v, xs.length)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        xs, zs = args
        blocks = ev.nested(axis_len(xs, ev.brank))
        parts = blocks.nested(axis_len(xs, blocks.brank)).call(self.f, [xs], env)
        return blocks.call(self.g, [parts, zs], env)


@dataclass(frozen=True, repr=False)
class WrgItems(Pattern):
    """wrgItems n (f): see the module docstring."""

    name = "wrgItems"
    items: ArithExpr = param(Kind.SIZE)
    f: FunDecl = param(Kind.FUN)
    high_level = False

    @property
    def arity(self) -> int:  # type: ignore[override]
        return self.f.arity

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("items", Kind.SIZE), ("f", Kind.FUN)]

    def count(self) -> int:
        """n: the work-items f's work-groups may have, checked."""
        n = self.items
        if not (n.is_constant and 1 <= n.value <= MAX_ITEMS):
            raise PatternError(f"wrgItems: the work-items of a work-group must be a constant from 1 "
                               f"to {MAX_ITEMS}, got {n}")
        return int(n.value)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        self.count()
        for p in t.enclosing:
            if isinstance(p, (ParallelMap, LastWrg, WrgItems)):
                raise PatternError(f"wrgItems sizes a kernel's work-groups: it cannot be nested "
                                   f"inside {p.name}")
        if not any(isinstance(n, MapWrg) for n in walk(self.f)):
            raise PatternError("wrgItems sizes work-groups: its function must contain a mapWrg")
        return t.apply(self.f, list(args), enter=self)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return ev.call(self.f, list(args), env)


WRG_PATTERNS = (LastWrg, WrgItems)
