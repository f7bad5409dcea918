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
# tensor cores: reduceMmaTF32 / reduceMmaBF16 / reduceMmaF64 (mma.sync through inline PTX)

# per precision: the instruction, the per-lane register counts (A, B, C), the C coordinates of
# accumulator r of a lane (group g = lane/4, t = lane%4), the register constraint of the
# accumulators and of A/B ("r": 32-bit words holding tf32 or two bf16, "d": doubles)
_MMA = {
    "reduceMmaTF32": ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, 4, "f", "r"),
    "reduceMmaBF16": ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 4, 2, 4, "f", "r"),
    "reduceMmaF64": ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 1, 1, 2, "d", "d"),
}


def _c_coord(name: str, r: int, g: ArithExpr, t: ArithExpr) -> tuple[ArithExpr, ArithExpr]:
    if name == "reduceMmaF64":
        return g, t * cst(2) + cst(r)
    return g + cst(8 * (r // 2)), t * cst(2) + cst(r % 2)


def _a_coords(name: str, r: int, g: ArithExpr, t: ArithExpr) -> list[tuple[ArithExpr, ArithExpr]]:
    """(row, k) of the element(s) in A register r: one, or two for a bf16 pair (low half first)."""
    if name == "reduceMmaF64":
        return [(g, t)]
    row, word = g + cst(8 * (r % 2)), t + cst(4 * (r // 2))
    if name == "reduceMmaBF16":
        return [(row, word * cst(2)), (row, word * cst(2) + cst(1))]
    return [(row, word)]


def _b_coords(name: str, r: int, g: ArithExpr, t: ArithExpr) -> list[tuple[ArithExpr, ArithExpr]]:
    """(n, k) of the element(s) in B register r."""
    if name == "reduceMmaF64":
        return [(g, t)]
    word = t + cst(4 * r)
    if name == "reduceMmaBF16":
        return [(g, word * cst(2)), (g, word * cst(2) + cst(1))]
    return [(g, word)]


def warp_grid(frags_m: int, frags_n: int, warps: int, shape: tuple[int, int, int]) -> tuple[int, int]:
    """(warps along m, along n) sharing frags_m × frags_n fragments in whole fragments, the warp
    tiles as square as possible; (0, 0) when no split fits."""
    best, fit = (0, 0), None
    for wm in range(1, warps + 1):
        wn = warps // wm
        if wm * wn != warps or frags_m % wm or frags_n % wn:
            continue
        h, w = frags_m // wm * shape[0], frags_n // wn * shape[1]
        score = max(h, w) / min(h, w)
        if fit is None or score < fit:
            best, fit = (wm, wn), score
    return best


def reduce_mma(g: "Generator", p: P.ReduceMma, args: Sequence["Arg"], env: dict[Param, View],
               ctx: "Ctx", dest: Optional[View]) -> View:
    """The warps split the m×n tile into warp tiles of whole fragments; each lane keeps its
    accumulators in registers for the whole loop over the tile pairs; per pair, f stages the
    operands (a copy into local memory, or nothing), each k-step loads the lane's A and B
    fragment elements through the operands' views (rounded with cvt for TF32/BF16) and issues
    one mma.sync per fragment pair; the accumulators go to the destination at the end."""
    em = g.em
    warps = p.warp_count()
    ls = g.local_size or (1,)
    threads = 1
    for d in ls:
        threads *= d
    if threads != WARP * warps:
        raise CodegenError(f"{p.name} {warps} runs on {warps} warps ({WARP * warps} threads), but "
                           f"the work-group has {threads}: give the copies in its function "
                           f"mapLcl(0) loops of {WARP * warps} threads")
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    ops_t = g.result_type(p.f, [tt.elem], env, ctx.inside(p))
    m, n, k, _ = p.check_tiles(ops_t)
    im, in_, ik = p.shape
    wm, wn = warp_grid(m // im, n // in_, warps, p.shape)
    if not wm:
        raise CodegenError(f"{p.name} {warps}: {warps} warps cannot share a {m}×{n} tile in whole "
                           f"{im}×{in_} fragments")
    fm_n, fn_n = m // im // wm, n // in_ // wn
    instr, a_regs, b_regs, c_regs, c_con, ab_con = _MMA[p.name]
    acc_t: ScalarType = p.acc
    out_t = ArrayType(ArrayType(ArrayType(acc_t, cst(n)), cst(m)), cst(1))
    if dest is None:
        dest = g.allocate(out_t, ctx.write_to or "global", ctx, "mma_tile")

    # the lane's place: warp (along m, along n), group g and thread t in the group
    lcl = [em.dialect.ids("lcl", d) for d in range(len(ls))]
    lin = lcl[0] + "".join(f" + {_prod(ls[:d])} * {lcl[d]}" for d in range(1, len(ls)) if ls[d] > 1)
    names = {h: em.names.fresh(h) for h in ("lk_warp_m", "lk_warp_n", "lk_g", "lk_t")}
    em.line(f"int {names['lk_warp_m']} = ({lin}) / {WARP * wn}, {names['lk_warp_n']} = (({lin}) / {WARP}) % {wn};")
    em.line(f"int {names['lk_g']} = (({lin}) % {WARP}) >> 2, {names['lk_t']} = ({lin}) & 3;")
    warp_m, warp_n = Var(names["lk_warp_m"], 0, wm), Var(names["lk_warp_n"], 0, wn)
    gv, tv = Var(names["lk_g"], 0, 8), Var(names["lk_t"], 0, 4)
    row0 = [warp_m * cst(fm_n * im) + cst(fm * im) for fm in range(fm_n)]
    col0 = [warp_n * cst(fn_n * in_) + cst(fn * in_) for fn in range(fn_n)]

    def c_elem(view: View, fm: int, fn: int, r: int) -> View:
        row, col = _c_coord(p.name, r, gv, tv)
        return view.access(row0[fm] + row).access(col0[fn] + col)

    acc = {}
    for fm in range(fm_n):
        for fn in range(fn_n):
            for r in range(c_regs):
                start = em.load(init) if isinstance(init.type, ScalarType) else em.load(c_elem(init, fm, fn, r))
                acc[fm, fn, r] = em.private_var(acc_t, f"c{fm}_{fn}_{r}", start).name

    def operand(elems: list[str], hint: str) -> str:
        if p.name == "reduceMmaF64":
            return em.private_var(acc_t, hint, elems[0]).name
        name = em.names.fresh(hint)
        if p.name == "reduceMmaTF32":
            em.line(f'unsigned {name}; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"({name}) : "f"({elems[0]}));')
        else:  # the pair's first element goes to the low half
            em.line(f'unsigned {name}; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"({name}) '
                    f': "f"({elems[1]}), "f"({elems[0]}));')
        return name

    def products(a: View, b: View) -> None:
        """Every k-step of one tile pair: fragments through the operands' views, then mma.sync."""
        for kk in range(k // ik):
            k0 = cst(kk * ik)
            a_frag = {(fm, r): operand([em.load(a.access(row0[fm] + row).access(k0 + kcol))
                                        for row, kcol in _a_coords(p.name, r, gv, tv)], f"a{fm}_{r}")
                      for fm in range(fm_n) for r in range(a_regs)}
            b_frag = {(fn, r): operand([em.load(b.access(col0[fn] + ncol).access(k0 + krow))
                                        for ncol, krow in _b_coords(p.name, r, gv, tv)], f"b{fn}_{r}")
                      for fn in range(fn_n) for r in range(b_regs)}
            for fm in range(fm_n):
                for fn in range(fn_n):
                    cs = [acc[fm, fn, r] for r in range(c_regs)]
                    ab = [a_frag[fm, r] for r in range(a_regs)] + [b_frag[fn, r] for r in range(b_regs)]
                    ph = iter(range(len(cs) + len(ab)))
                    c_ph = ",".join(f"%{next(ph)}" for _ in cs)
                    a_ph = ",".join(f"%{next(ph)}" for _ in range(a_regs))
                    b_ph = ",".join(f"%{next(ph)}" for _ in range(b_regs))
                    outs = ", ".join(f'"+{c_con}"({x})' for x in cs)
                    ins = ", ".join(f'"{ab_con}"({x})' for x in ab)
                    em.line(f'asm volatile("{instr} {{{c_ph}}}, {{{a_ph}}}, {{{b_ph}}}, {{{c_ph}}};" '
                            f': {outs} : {ins});')

    body = replace(ctx, write_to=None)
    staging = async_staging(p)
    if staging is not None:
        if "cp.async" not in em.dialect.features:
            raise CodegenError(P.ToLocalAsync.refusal)
        pipelined_loop(g, p, staging, tiles, env, body, products)
    else:
        for i, c in g.loop("seq", 0, tt.length, body, p, False):
            ops = g.apply(p.f, [tiles.access(i)], env, c, None)
            a, b = ops.get(0), ops.get(1)
            products(a, b)
            if "local" in (space_of_view(a), space_of_view(b)):
                em.barrier({"CLK_LOCAL_MEM_FENCE"})  # the next pair's copy overwrites these tiles
    out = dest.access(cst(0))
    for (fm, fn, r), name in acc.items():
        em.store(c_elem(out, fm, fn, r), name)
    return dest


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


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


def pipelined_loop(g: "Generator", p: P.ReduceMma, chains: list[Chain], tiles: View,
                   env: dict[Param, View], ctx: "Ctx", products: Any) -> None:
    """s local buffers per operand; the first s-1 tiles' copies issued before the loop; at
    iteration k the copy of tile k+s-1 is issued (one commit group per tile, empty past the
    end), then the group of tile k is waited for (`wait_group s-1` leaves the s-1 younger ones
    in flight), a barrier makes every thread's copies visible, the warps compute on buffer k % s,
    and a barrier frees that buffer for the copy issued at iteration k+1."""
    em = g.em
    stages = chains[0][1].stage_count()
    kt = V.array_view_type(tiles.type).length
    buffers = []
    pair_t = V.array_view_type(tiles.type).elem
    for k, (_, it, pre) in enumerate(chains):
        src_t = pair_t.elems[k]  # type: ignore[attr-defined]
        for h in reversed(pre):
            src_t = g.result_type(h, [src_t], env, ctx)
        levels = copy_levels(it.f)
        if levels is None:
            raise CodegenError("toLocalAsync: the function must be a copy (mapSeqUnroll, mapSeq or "
                               "mapLcl(0) of id)")
        buffers.append((g.allocate(ArrayType(src_t, cst(stages)), "local", ctx, "stage"), levels))

    def issue(j: ArithExpr, slot: ArithExpr, c: "Ctx") -> None:
        for k, ((_, _, pre), (buf, levels)) in enumerate(zip(chains, buffers)):
            src = _through(g, pre, tiles.access(j).get(k), env, c)
            _async_copy(g, levels, src, buf.access(slot), c)

    commit = 'asm volatile("cp.async.commit_group;" ::: "memory");'
    for s in range(stages - 1):
        with em.if_(f"{s} < {kt.to_c()}"):
            issue(cst(s), cst(s), ctx)
        em.line(commit)
    for i, c in g.loop("seq", 0, kt, ctx, p, False):
        ahead = i + cst(stages - 1)
        with em.if_(f"{ahead.to_c()} < {kt.to_c()}"):
            issue(ahead, ahead % cst(stages), c)
        em.line(commit)
        em.line(f'asm volatile("cp.async.wait_group {stages - 1};" ::: "memory");')
        em.barrier({"CLK_LOCAL_MEM_FENCE"})
        slot = i % cst(stages)
        ops = [_through(g, post, buf.access(slot), env, c) for (post, _, _), (buf, _) in zip(chains, buffers)]
        products(ops[0], ops[1])
        em.barrier({"CLK_LOCAL_MEM_FENCE"})

