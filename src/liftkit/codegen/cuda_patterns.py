"""Code generation for the patterns beyond OpenCL (`liftkit.ir.patterns.cuda`).

The shared generator hands every `CudaPattern` call here (one hook in `Generator.call`). Each
pattern first asks the dialect for the feature it needs and refuses in its own words where the
dialect lacks it (OpenCL C), then emits its statements through the same emitter and views as
every other pattern, so its inputs may be any view (global, local or a thread's private value)
and its result lands in whatever destination the consumer owns.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Sequence

from liftkit.arith import cst, divides
from liftkit.codegen import views as V
from liftkit.codegen.emit import space_of_view
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Param
from liftkit.ir.patterns.cuda import WARP
from liftkit.types import ArrayType

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator

# the fences of the barrier after a collective wrote memory other threads read
_FENCES = {"local": {"CLK_LOCAL_MEM_FENCE"}, "global": {"CLK_GLOBAL_MEM_FENCE"}}


def generate(g: "Generator", p: P.CudaPattern, args: Sequence["Arg"], env: dict[Param, View],
             ctx: "Ctx", dest: Optional[View]) -> View:
    """The code of a pattern beyond OpenCL, or its refusal where the dialect cannot have it."""
    if p.feature not in g.em.dialect.features:
        raise CodegenError(p.refusal)
    if isinstance(p, P.ReduceWarp):
        return reduce_warp(g, p, args, env, ctx, dest)
    raise CodegenError(f"{p.name}: no code generator")  # every CudaPattern has one above


def warp_lanes(g: "Generator", name: str) -> int:
    """The work-group's threads along dimension 0, checked to be whole warps (warps are runs of
    32 consecutive thread ids, dimension 0 varying fastest)."""
    ls = g.local_size
    if not ls or ls[0] % WARP:
        got = ls[0] if ls else "an unknown number of"
        raise CodegenError(f"{name} runs on whole warps, but the work-group has {got} threads in "
                           f"dimension 0: give it a multiple of {WARP} (a mapLcl(0) over 32·k "
                           "elements, or --local-size)")
    return ls[0]


def reduce_warp(g: "Generator", p: P.ReduceWarp, args: Sequence["Arg"], env: dict[Param, View],
                ctx: "Ctx", dest: Optional[View]) -> View:
    """Each thread takes one element (threads loop over the runs when there are more runs than
    warps: the trip count is the same for all 32 lanes, so whole warps take part in every
    shuffle), five xor-shuffles combine the lanes, and lane 0 writes z ⊕ the warp's total."""
    warp_lanes(g, p.name)
    em = g.em
    init, xs = args[0].gen(None), args[1].gen(None)
    xt = V.array_view_type(xs.type)
    if divides(cst(WARP), xt.length) is not True:
        raise CodegenError(f"reduceWarp over {xt.length} elements: the compiler must know the "
                           f"length is a multiple of {WARP} (split by a multiple of {WARP} first)")
    elem = xt.elem
    out_t = ArrayType(elem, xt.length // cst(WARP))
    if dest is None:
        space = ctx.write_to or "local"
        if space == "private":
            raise CodegenError("reduceWarp writes one result per warp, which the other threads "
                               "read: keep it in local memory (toLocal) or global memory, not "
                               "private memory")
        dest = g.allocate(out_t, space, ctx, "warp_sum")
    shuffle = em.dialect.shuffle_xor
    assert shuffle is not None  # the dialect has the feature
    body = replace(ctx, write_to="private")
    for i, c in g.loop("lcl", 0, xt.length, body, p, False):
        lane = V.MemoryView(em.private_var(elem, "lane", em.load(xs.access(i))), elem)
        for offset in (16, 8, 4, 2, 1):
            other = em.private_var(elem, "other", shuffle(em.load(lane), offset))
            g.apply(p.f, [lane, V.MemoryView(other, elem)], env, c, lane)
        with em.if_(f"({i.to_c()} & {WARP - 1}) == 0"):
            g.apply(p.f, [init, lane], env, c, dest.access(i // cst(WARP)))
    em.barrier(set(_FENCES.get(space_of_view(dest) or "local", _FENCES["local"])))
    return dest
