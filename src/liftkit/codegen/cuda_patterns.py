"""Code generation for the patterns beyond OpenCL (`liftkit.ir.patterns.cuda`).

The shared generator hands every `CudaPattern` call here (one hook in `Generator.call`). Each
pattern first asks the dialect for the feature it needs and refuses in its own words where the
dialect lacks it (OpenCL C), then emits its statements through the same emitter and views as
every other pattern, so its inputs may be any view (global, local or a thread's private value)
and its result lands in whatever destination the consumer owns.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst, divides
from liftkit.codegen import views as V
from liftkit.codegen.emit import space_of_view
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Param, walk
from liftkit.codegen.stages import is_layout
from liftkit.ir.patterns.cuda import WARP, copy_levels
from liftkit.types import ArrayType, ScalarType

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
    if isinstance(p, P.ReduceMma):
        from liftkit.codegen.cuda_mma import reduce_mma  # tensor cores: codegen/cuda_mma.py

        return reduce_mma(g, p, args, env, ctx, dest)
    if isinstance(p, P.ToLocalAsync):
        raise CodegenError("toLocalAsync: its copies are pipelined by the reduceMma loop around it; "
                           "use it only in the staging function of a reduceMma, around the copy")
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


# ---------------------------------------------------------------------------------------------
# toLocalAsync: cp.async copies pipelined over a reduceMma's tile loop

Chain = tuple[list[FunDecl], P.ToLocalAsync, list[FunDecl]]  # (after it, it, before it): outer first


def _flatten(e: Expr) -> tuple[list[FunDecl], Expr]:
    """A chain of unary calls f(g(h(x))) as ([f, g, h], x), looking through λx. f(g(x))."""
    funs: list[FunDecl] = []
    while isinstance(e, FunCall) and len(e.args) == 1 and not isinstance(e.f, P.Get):
        f = e.f
        if isinstance(f, Lambda) and len(f.params) == 1:
            inner, end = _flatten(f.body)
            if end is not f.params[0]:
                raise CodegenError("toLocalAsync: the staging function must be a chain of data "
                                   "layout patterns around the copy")
            funs += inner
        else:
            funs.append(f)
        e = e.args[0]
    return funs, e


def async_staging(p: P.ReduceMma) -> Optional[list[Chain]]:
    """For a staging function λpair. tuple(post_a ∘ toLocalAsync s (copy) ∘ pre_a $ get 0 pair,
    … get 1 pair) with layout-only pre/post: the two chains; None without toLocalAsync."""
    if not any(isinstance(n, P.ToLocalAsync) for n in walk(p.f)):
        return None
    f = p.f
    why = ("toLocalAsync: the staging function of a pipelined reduceMma must be λpair. tuple(… ∘ "
           "toLocalAsync s (copy) ∘ … $ get 0 pair, … $ get 1 pair), the other steps data layout")
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)
            and isinstance(f.body.f, P.Tuple) and len(f.body.args) == 2):
        raise CodegenError(why)
    chains: list[Chain] = []
    stages = set()
    for k, e in enumerate(f.body.args):
        funs, end = _flatten(e)
        if not (isinstance(end, FunCall) and isinstance(end.f, P.Get) and end.f.i == k
                and end.args[0] is f.params[0]):
            raise CodegenError(why)
        where = [j for j, h in enumerate(funs) if isinstance(h, P.ToLocalAsync)]
        if len(where) != 1 or not all(is_layout(h) for j, h in enumerate(funs) if j != where[0]):
            raise CodegenError(why)
        it: P.ToLocalAsync = funs[where[0]]  # type: ignore[assignment]
        stages.add(it.stage_count())
        chains.append((funs[:where[0]], it, funs[where[0] + 1:]))
    if len(stages) != 1:
        raise CodegenError("toLocalAsync: both operands' copies need the same pipeline depth")
    return chains


def _through(g: "Generator", funs: Sequence[FunDecl], v: View, env: dict[Param, View], ctx: "Ctx") -> View:
    for h in reversed(funs):  # innermost first
        v = g.apply(h, [v], env, ctx, None)
    return v


def _async_copy(g: "Generator", levels: Sequence[P.Pattern], src: View, dst: View, ctx: "Ctx") -> None:
    """cp.async of every element of src into dst, the copy's maps as loops (mapLcl(0) over the
    threads, mapSeqUnroll unrolled, mapSeq a loop)."""
    em = g.em
    if not levels:
        elem = src.type
        size = elem.dtype.itemsize  # type: ignore[union-attr]
        em.line(f'asm volatile("cp.async.ca.shared.global [%0], [%1], {size};" :: '
                f'"r"((unsigned)__cvta_generic_to_shared(&{em.load(dst)})), "l"(&{em.load(src)}));')
        return
    lv, rest = levels[0], levels[1:]
    n = V.array_view_type(src.type).length
    if isinstance(lv, P.MapLcl):
        loop = g.loop("lcl", 0, n, ctx, lv, False)
    else:
        loop = g.loop("seq", 0, n, ctx, lv, isinstance(lv, P.MapSeqUnroll))
    for i, c in loop:
        _async_copy(g, rest, src.access(i), dst.access(i), c)
