"""Code generation for the patterns beyond OpenCL (`liftkit.ir.patterns.cuda`).

The shared generator hands every `CudaPattern` call here (one hook in `Generator.call`). Each
pattern first asks the dialect for the feature it needs and refuses in its own words where the
dialect lacks it (OpenCL C), then emits its statements through the same emitter and views as
every other pattern, so its inputs may be any view (global, local or a thread's private value)
and its result lands in whatever destination the consumer owns.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst, divides, prove_lt
from liftkit.codegen import views as V
from liftkit.codegen.emit import space_of_view
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Param, walk
from liftkit.codegen.stages import is_layout
from liftkit.ir.patterns.cuda import WARP, copy_levels
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64
from liftkit.types import ArrayType, VectorType

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
    if isinstance(p, P.ReduceWgmma):
        from liftkit.codegen.cuda_wgmma import reduce_wgmma  # Hopper: codegen/cuda_wgmma.py

        return reduce_wgmma(g, p, args, env, ctx, dest)
    if isinstance(p, ReduceMmaZ64):  # complex128 on the FP64 tensor cores: codegen/cuda_zmma.py
        from liftkit.codegen.cuda_zmma import reduce_zmma

        return reduce_zmma(g, p, args, env, ctx, dest)
    if isinstance(p, P.ReduceMma):
        from liftkit.codegen.cuda_mma import reduce_mma  # tensor cores: codegen/cuda_mma.py

        return reduce_mma(g, p, args, env, ctx, dest)
    if isinstance(p, P.ReduceSeq):  # reduceSplitTail: the tile loop below, scheduled
        return g.gen_reduce(p, args, env, ctx, dest)
    if isinstance(p, P.ToLocalAsync):
        raise CodegenError("toLocalAsync: its copies are pipelined by the loop around it; use it "
                           "only in the staging function of a reduceMma, or at the start of the "
                           "function of a reduceSeq over tiles with an array accumulator")
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


def _zero_filled(loc: Any) -> tuple[Optional[str], Any]:
    """(condition, source) for a padded element whose padding is zeros (`pad … 0` read as
    cond ? x : 0, also nested): cp.async copies the source where the condition holds and
    zero-fills otherwise (its src-size operand 0); (None, loc) for any other element."""
    from liftkit.codegen.views import SelectLoc, is_zero

    conds: list[str] = []
    while isinstance(loc, SelectLoc) and is_zero(loc.other):
        conds.append(loc.cond.to_c())
        loc = loc.then
    return (" && ".join(conds) if conds else None), loc


def _check_async_source(g: "Generator", src: View, size: int) -> None:
    """Refuses, in the copy's words, an element one cp.async cannot read: it copies one piece of
    4, 8 or 16 bytes that lies contiguous (and aligned to its size) in global memory, so a
    vector whose lanes live apart (asVector across a transposed array's rows), a computed or
    padded value, or a vector at an offset not provably a multiple of its width has no source
    address to give it."""
    what = "toLocalAsync: cp.async copies one contiguous, aligned 4-, 8- or 16-byte piece of global memory"
    if size not in (4, 8, 16):
        raise CodegenError(f"{what}, but each copied element ({src.type}) is {size} bytes: copy "
                           "elements of 4, 8 or 16 bytes (float, double, float2, float4, double2)")
    _, loc = _zero_filled(g.em.resolve(src))
    if isinstance(loc, V.LanesLoc):
        raise CodegenError(f"{what}, but each copied {src.type} is built from {len(loc.lanes)} "
                           "separate elements that are not adjacent in memory (a vector across "
                           "the rows of a transposed or permuted array): copy single elements, "
                           "or vectors along the rows the array is stored in")
    if not isinstance(loc, V.MemLoc):
        raise CodegenError(f"{what}, but each copied {src.type} is a computed or padded value, "
                           "not an element in memory: copy the array itself")
    if loc.mem.space != "global":
        raise CodegenError(f"{what}, but the copied {src.type} elements are in {loc.mem.space} "
                           "memory: copy from an input array")
    if loc.width and g.em.aligned_vector(loc) is None:
        raise CodegenError(f"{what}, but the copied {src.type} elements start at an offset not "
                           f"provably a multiple of {loc.width} elements: copy vectors whose "
                           "offsets are multiples of their width (or single elements)")


def _async_copy(g: "Generator", levels: Sequence[P.Pattern], src: View, dst: View, ctx: "Ctx") -> None:
    """cp.async of every element of src into dst, the copy's maps as loops (mapLcl over the
    threads of its dimension, mapSeqUnroll unrolled, mapSeq a loop). 16-byte elements (float4,
    double2) go around L1 (`.cg`, the only form of that size), smaller ones through it (`.ca`)."""
    em = g.em
    if not levels:
        elem = src.type
        size = (elem.elem.dtype.itemsize * elem.width if isinstance(elem, VectorType)
                else elem.dtype.itemsize)  # type: ignore[union-attr]
        _check_async_source(g, src, size)
        level = "cg" if size == 16 else "ca"
        cond, loc = _zero_filled(em.resolve(src))
        if cond is not None:  # padding: 0 source bytes zero-fill the element
            em.line(f'asm volatile("cp.async.{level}.shared.global [%0], [%1], {size}, %2;" :: '
                    f'"r"((unsigned)__cvta_generic_to_shared(&{em.load(dst)})), '
                    f'"l"(&{em.loc_c(loc)}), "r"(({cond}) ? {size} : 0));')
            return
        em.line(f'asm volatile("cp.async.{level}.shared.global [%0], [%1], {size};" :: '
                f'"r"((unsigned)__cvta_generic_to_shared(&{em.load(dst)})), "l"(&{em.load(src)}));')
        return
    lv, rest = levels[0], levels[1:]
    n = V.array_view_type(src.type).length
    if isinstance(lv, P.MapLcl):
        loop = g.loop("lcl", lv.dim, n, ctx, lv, False)
    else:
        loop = g.loop("seq", 0, n, ctx, lv, isinstance(lv, P.MapSeqUnroll))
    for i, c in loop:
        _async_copy(g, rest, src.access(i), dst.access(i), c)


# ---------------------------------------------------------------------------------------------
# toLocalAsync at the start of a reduceSeq's function: a cp.async pipeline over the tile loop


def stage_buffers(g: "Generator", chains: list[Any], tiles: View, env: dict[Param, View],
                  ctx: "Ctx") -> tuple[list[tuple[View, Sequence[P.Pattern]]],
                                       Callable[[ArithExpr, ArithExpr, "Ctx"], None]]:
    """The local buffers of a cp.async pipeline (one per copied operand, `stages` tiles deep)
    and the function that issues the copies of tile j into buffer slot `slot`: shared by the
    FFMA tile loop and the tensor-core loop, which differ only in what they compute."""
    stages = chains[0][1].stage_count()
    pair_t = V.array_view_type(tiles.type).elem
    buffers = []
    for k, (_, it, pre) in enumerate(chains):
        src_t = pair_t.elems[k]  # type: ignore[attr-defined]
        for h in reversed(pre):
            src_t = g.result_type(h, [src_t], env, ctx)
        levels = copy_levels(it.f)
        if levels is None:
            raise CodegenError("toLocalAsync: the function must be a copy (mapSeqUnroll, mapSeq or "
                               "mapLcl of id)")
        buffers.append((g.allocate(ArrayType(src_t, cst(stages)), "local", ctx, "stage"), levels))

    def issue(j: ArithExpr, slot: ArithExpr, c: "Ctx") -> None:
        for k, ((_, _, pre), (buf, levels)) in enumerate(zip(chains, buffers)):
            src = _through(g, pre, tiles.access(j).get(k), env, c)
            _async_copy(g, levels, src, buf.access(slot), c)

    return buffers, issue


def async_reduce(p: P.AbstractReduce) -> Optional[tuple[Lambda, Lambda, list[Chain]]]:
    """For reduceSeq(λ(acc, t). (λ(x, y). body)(… ∘ toLocalAsync s (copy) ∘ … $ get 0 t, … $ get
    1 t), z) with layout-only steps around the copies: (the function, the let, the two chains);
    None without toLocalAsync; a refusal in words for any other place of it."""
    if not (isinstance(p, P.ReduceSeq) and any(isinstance(n, P.ToLocalAsync) for n in walk(p.f))):
        return None
    f = p.f
    why = ("toLocalAsync in a reduceSeq: its function must be λ(acc, t). (λ(x, y). …)(… ∘ "
           "toLocalAsync s (copy) ∘ … $ get 0 t, … $ get 1 t), the other steps data layout, and "
           "toLocalAsync nowhere else in it")
    if not (isinstance(f, Lambda) and len(f.params) == 2 and isinstance(f.body, FunCall)
            and isinstance(f.body.f, Lambda) and len(f.body.args) == len(f.body.f.params) == 2):
        raise CodegenError(why)
    let = f.body.f
    if any(isinstance(n, P.ToLocalAsync) for n in walk(let.body)):
        raise CodegenError(why)
    chains: list[Chain] = []
    for k, e in enumerate(f.body.args):
        funs, end = _flatten(e)
        if not (isinstance(end, FunCall) and isinstance(end.f, P.Get) and end.f.i == k
                and end.args[0] is f.params[1]):
            raise CodegenError(why)
        where = [j for j, h in enumerate(funs) if isinstance(h, P.ToLocalAsync)]
        if len(where) != 1 or not all(is_layout(h) for j, h in enumerate(funs) if j != where[0]):
            raise CodegenError(why)
        chains.append((funs[:where[0]], funs[where[0]], funs[where[0] + 1:]))  # type: ignore[arg-type]
    if len({it.stage_count() for _, it, _ in chains}) != 1:
        raise CodegenError("toLocalAsync: both operands' copies need the same pipeline depth")
    return f, let, chains


def pipelined_reduce(g: "Generator", p: P.ReduceSeq, init: View, xs: View, env: dict[Param, View],
                     ctx: "Ctx") -> None:
    """The tile loop of a reduceSeq whose function starts with toLocalAsync copies (`async_reduce`),
    its accumulator updated in place, as a cp.async pipeline (`cp_async_pipeline`): one barrier
    per tile, the next tiles' loads in flight under the body."""
    if "cp.async" not in g.em.dialect.features:
        raise CodegenError(P.ToLocalAsync.refusal)
    f, let, chains = async_reduce(p)  # type: ignore[misc]
    em = g.em

    def body(staged: list[View], i: ArithExpr, c: "Ctx") -> None:
        env2 = {**env, f.params[0]: init, f.params[1]: xs.access(i), **dict(zip(let.params, staged))}
        since = len(em.block.stmts)
        g.gen(let.body, env2, c, init)
        # a barrier ending the body is the next iteration's first one (or the one after the loop)
        em.take_trailing_barrier(since)

    if isinstance(p, P.CudaPattern):  # reduceSplitTail: a range of the loop (codegen/cuda_schedule.py)
        from liftkit.codegen.cuda_schedule import split_tail

        start, stop, epilogue = split_tail(g, p, init, V.array_view_type(xs.type).length, ctx)  # type: ignore[arg-type]
        cp_async_pipeline(g, p, chains, xs, env, ctx, body, start, stop)
        epilogue()
        return
    cp_async_pipeline(g, p, chains, xs, env, ctx, body)


def cp_async_pipeline(g: "Generator", p: P.Pattern, chains: list[Any], tiles: View,
                      env: dict[Param, View], ctx: "Ctx",
                      body: Callable[[list[View], ArithExpr, "Ctx"], None],
                      start: Optional[ArithExpr] = None, stop: Optional[ArithExpr] = None) -> None:
    """The cp.async pipeline over a tile loop, shared by the FFMA tile loop and the tensor-core
    loop (which differ only in `body`, run on tile i's staged operands), over tiles start..stop-1
    (default: all; reduceSplitTail's parts run a range): s local buffers per operand; tiles
    start..start+s-2 issued before the loop; at iteration k, `wait_group s-2` (tile k has
    landed), one barrier (tile k visible to all, tile k-1 finished by all), the copy of tile
    k+s-1 issued into tile k-1's buffer (one commit group per tile, empty past the end), then
    the body on buffer k % s."""
    from liftkit.codegen.generator import Scope

    em = g.em
    stages = chains[0][1].stage_count()
    kt = V.array_view_type(tiles.type).length
    first = start if start is not None else cst(0)
    end = stop if stop is not None else kt
    buffers, issue = stage_buffers(g, chains, tiles, env, ctx)
    commit = 'asm volatile("cp.async.commit_group;" ::: "memory");'
    for s in range(stages - 1):
        j = first + cst(s)
        if prove_lt(j, end):
            issue(j, j % cst(stages), ctx)
        else:
            with em.if_(f"{j.to_c()} < {end.to_c()}"):
                issue(j, j % cst(stages), ctx)
        em.line(commit)
    name = em.names.fresh("i")
    i = Var(name, 0, kt)
    with em.for_loop(name, first.to_c(), f"{name} < {end.to_c()}", f"{name} += 1"):
        c = ctx.inside(p, Scope("seq", 0, i, kt))
        em.line(f'asm volatile("cp.async.wait_group {stages - 2};" ::: "memory");')
        em.barrier({"CLK_LOCAL_MEM_FENCE"})
        ahead = i + cst(stages - 1)
        with em.if_(f"{ahead.to_c()} < {end.to_c()}"):
            issue(ahead, ahead % cst(stages), c)
        em.line(commit)
        slot = i % cst(stages)
        body([_through(g, post, buf.access(slot), env, c)
              for (post, _, _), (buf, _) in zip(chains, buffers)], i, c)
    em.line('asm volatile("cp.async.wait_group 0;" ::: "memory");')
    em.barrier({"CLK_LOCAL_MEM_FENCE"})  # the buffers are free for whatever follows
