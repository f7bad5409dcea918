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

from liftkit.arith import ArithExpr, Var, cst, divides
from liftkit.codegen import views as V
from liftkit.codegen.emit import space_of_view
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Param
from liftkit.ir.patterns.cuda import WARP
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

    body = replace(ctx, write_to=None)
    for i, c in g.loop("seq", 0, tt.length, body, p, False):
        ops = g.apply(p.f, [tiles.access(i)], env, c, None)
        a, b = ops.get(0), ops.get(1)
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
