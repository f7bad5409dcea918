"""Code for `lastWrg b (f, g)` (ir/patterns/wrg.py): a grid of n × r work-groups whose partial
results meet in global memory, the last work-group of each block finishing it.

    for each work-group (b, k) of its share of the grid (b along dimension 0, k along 1):
        f(xs[b][k]) → ws[b][k]                    every work-item its part
        barrier                                   the group's writes all made
        lead: fence                               ... and seen by every work-group
              last = atomic_inc(&count[b]) == r − 1
              fence                               what the others fenced is seen here
        barrier                                   `last` is the group's, in local memory
        if (last) {                               uniform: g's barriers are reached by all
            g(ws[b], zs[b]) → out[b]
            lead: count[b] = 0                    ready for the next launch
        }

Every work-group fences its partial before it counts itself (one work-item after the
group's barrier: the fence is cumulative, as in CUDA's grid synchronisation), so the one that
counts r − 1 sees all r partials; it reads them through a volatile pointer (not from a cache
that may hold an older line). The counters are a global temporary the host zero-fills when it allocates it
(`Buffer.zeroed`) and that each launch leaves zero (the last work-group of a block resets its
counter): launches in order on one stream share them; a launch that never starts leaves them
as they were; a launch that dies part way (a device fault) leaves the CUDA context or OpenCL
queue unusable, and a new session allocates new, zeroed counters. The spellings of the atomic
increment and the fence come from the dialect table, and so does b > 0's kernel attribute
(`occupancy`: CUDA's `__launch_bounds__(work-items, b)`; OpenCL C has none).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional, Sequence

from liftkit.arith import ArithExpr, cst
from liftkit.codegen import views as V
from liftkit.codegen.memory import Memory, c_layout, element_count, storage_elem
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Param
from liftkit.ir.typecheck import TypeChecker
from liftkit.types import ArrayType, Type, int32

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator

_BOTH = {"CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE"}


def gen_last_wrg(g: "Generator", p: P.LastWrg, args: Sequence["Arg"], env: dict[Param, View],
                 ctx: "Ctx", dest: Optional[View]) -> View:
    """Emit lastWrg b c (f, g) $ (xs, zs) into dest (see the module docstring)."""
    from liftkit.codegen.generator import GlobalTemp

    em, d = g.em, g.em.dialect
    if ctx.scopes:
        raise CodegenError("lastWrg is a kernel's whole grid: it cannot run inside a map")
    xs, zs = args[0].gen(None), args[1].gen(None)
    xt = V.array_view_type(xs.type)
    zt = V.array_view_type(zs.type)
    assert isinstance(xt, ArrayType) and isinstance(xt.elem, ArrayType)
    n, r = xt.length, xt.elem.length
    u = TypeChecker().apply(p.f, [xt.elem.elem], g.type_env(env), ctx.enclosing + p.groups(p.f))
    if dest is None:
        out_t = g.result_type(p, [xt, zt], env, ctx)
        dest = g.allocate(out_t, "global", ctx, "tmp")

    def temp(hint: str, t: ArrayType, zeroed: bool) -> View:
        elem = storage_elem(t, "global")
        em.note_type(elem)
        mem = Memory(em.names.fresh(hint), "global", elem, element_count(t, "global"), "param",
                     volatile=True)
        g.temps.append(GlobalTemp(mem, t, zeroed=zeroed))
        return V.MemoryView(mem, t)

    ls = g.local_size or (1,)
    bound = p.resident()
    if bound and d.occupancy is not None:
        em.kernel_attributes.append(d.occupancy(math.prod(ls), bound))
    if p.clustered() and d.cluster_dims is not None:
        return _in_cluster(g, p, xs, zs, u, n, r, env, ctx, dest)
    ws = temp("lw_parts", ArrayType(ArrayType(u, r), n), False)
    count = temp("lw_count", ArrayType(int32, n), True)
    last = em.local_array(int32, "lw_last", cst(1)).name
    lead = " && ".join(f"{d.ids('lcl', k)} == 0" for k in range(len(ls)) if ls[k] > 1) or "true"
    wrg0, wrg1 = p.groups(p.f)
    for b, ctx_b in g.loop("wrg", 0, n, ctx, wrg0, False):
        for k, ctx_k in g.loop("wrg", 1, r, ctx_b, wrg1, False):
            since = len(em.block.stmts)
            g.apply(p.f, [xs.access(b).access(k)], env, ctx_k, ws.access(b).access(k))
            em.barrier(em.take_trailing_barrier(since) | _BOTH)
            with em.if_(lead):
                em.line(d.global_fence)
                em.line(f"{last}[0] = {d.atomic_inc(em.load(count.access(b)))} == "
                        f"{(r - 1).to_c()};")
                em.line(d.global_fence)
            em.barrier({"CLK_LOCAL_MEM_FENCE"})
            with em.if_(f"{last}[0]"):
                since = len(em.block.stmts)
                g.apply(p.g, [ws.access(b), zs.access(b)], env, ctx_k, dest.access(b))
                em.take_trailing_barrier(since)  # nothing reads g's result in this launch
                with em.if_(lead):
                    em.store(count.access(b), "0")
    return dest


def _in_cluster(g: "Generator", p: P.LastWrg, xs: View, zs: View, u: Type, n: ArithExpr,
                r: ArithExpr, env: dict[Param, View], ctx: "Ctx", dest: View) -> View:
    """lastWrg b 1 (f, g): a block's r parts as one thread-block cluster along dimension 1
    (the grid's r parts exactly, so part k is the cluster's block of rank k):

        f(xs[b][k]) → mine                        this work-group's local memory
        cluster barrier                           every part's partial written and published
        part 0: all[q] = mine of rank q, q < r    32-bit words, the work-items in turn
        cluster barrier                           the others' memory read: they may go on / exit
        part 0: g(all, zs[b]) → out[b]
    """
    em, d = g.em, g.em.dialect
    assert d.cluster_dims is not None and d.cluster_word is not None
    parts = r.value
    em.kernel_attributes.append(d.cluster_dims(1, parts, 1))
    ls = g.local_size or (1,)
    all_t = ArrayType(u, r)
    mine = em.local_array(u, "lw_mine", cst(1))
    every = em.local_array(all_t, "lw_all", cst(1))
    nbytes = element_count(u, "local").value * c_layout(mine.elem)[0]
    if nbytes % 4:
        raise CodegenError(f"lastWrg in a cluster copies 32-bit words: a part's {u} is {nbytes} bytes")
    words, threads = nbytes // 4, math.prod(ls)
    tid = " + ".join(f"{d.ids('lcl', k)} * {math.prod(ls[:k])}" if k else d.ids("lcl", 0)
                     for k in range(len(ls)) if ls[k] > 1) or "0"
    nm = em.names.fresh
    w, v = nm("lw_w"), nm("lw_v")
    wrg0, wrg1 = p.groups(p.f)
    for b, ctx_b in g.loop("wrg", 0, n, ctx, wrg0, False):
        for k, ctx_k in g.loop("wrg", 1, r, ctx_b, wrg1, False):
            since = len(em.block.stmts)
            g.apply(p.f, [xs.access(b).access(k)], env, ctx_k, V.MemoryView(mine, u))
            em.take_trailing_barrier(since)  # the cluster barrier orders the group too
            em.line(d.cluster_sync)
            with em.if_(f"{k.to_c()} == 0"):
                read = d.cluster_word(v, f"(unsigned*){mine.name} + {w} % {words}", f"{w} / {words}")
                em.line(f"for (int {w} = {tid}; {w} < {parts * words}; {w} += {threads}) "
                        f"{{ unsigned {v}; {read} ((unsigned*){every.name})[{w}] = {v}; }}")
            em.line(d.cluster_sync)
            with em.if_(f"{k.to_c()} == 0"):
                since = len(em.block.stmts)
                g.apply(p.g, [V.MemoryView(every, all_t), zs.access(b)], env, ctx_k, dest.access(b))
                em.take_trailing_barrier(since)  # nothing reads g's result in this launch
    return dest
