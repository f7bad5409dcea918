"""Code for `reduceSplitTail` (ir/patterns/cuda_schedule.py): the cp.async tile loop of
codegen/cuda_patterns.py run over a range of its tiles, with the last partial wave's
work-groups split along the loop and their partial sums added in order.

The launch has the pattern's p parts as the grid's third dimension (compiler.launch_geometry).
In the kernel, before the loop: the work-group's tile (its two mapWrg indices, x fastest: the
order in which the hardware hands out blocks), whether that tile is in the tail (its linear
index ≥ T − T mod slots), and its range of the loop (the whole loop for part 0 of a tile outside
the tail; the others return at once). After the loop, a split tile's parts take turns through a
flag per tail slot: part q waits until the flag says q, adds the running sum from a global
workspace into its registers (q > 0), and, unless last, writes the sum back, releases the flag to
q + 1 and returns; the last part resets the flag and goes on to the loop's consumer, which
stores the tile. Parts of a tile are dispatched in order (the grid's z slowest), so a waiting
part waits only on parts already resident or done. The flags and the workspace are global
temporaries, kernel parameters the host allocates per launch or per stream: the flags zero-filled
when allocated (`Buffer.zeroed`) and back at zero after every launch, so launches in order on one
stream may share them and launches on other streams get their own (static arrays would let two
overlapping launches of one kernel take each other's turns and sums).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional

from liftkit.arith import ArithExpr, Var, cst
from liftkit.codegen import views as V
from liftkit.codegen.memory import Memory, ctype
from liftkit.codegen.views import CodegenError, View
from liftkit.ir.patterns.cuda_schedule import ReduceSplitTail
from liftkit.types import ArrayType, ScalarType, Type, VectorType, int32

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Ctx, Generator

# polls of a part's flag before the kernel traps instead of hanging (each an L2 atomic, about
# 1 us: seconds, where a legal wait is at most one part's loop, about a millisecond)
SPIN_LIMIT = 1 << 22


def _leaves(t: Type, prefix: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Type]]:
    """The constant index paths to t's scalar/vector leaves, in order."""
    if isinstance(t, ArrayType):
        if not t.length.is_constant:
            raise CodegenError(f"reduceSplitTail: the accumulator's length {t.length} must be a constant")
        return [x for i in range(t.length.value) for x in _leaves(t.elem, prefix + (i,))]
    return [(prefix, t)]


def split_tail(g: "Generator", p: ReduceSplitTail, init: View, kt: ArithExpr, ctx: "Ctx"
               ) -> tuple[ArithExpr, ArithExpr, Callable[[], None]]:
    """Emit the schedule's prologue; (first tile, end of the range, the epilogue's emitter)."""
    em = g.em
    parts, slots, bound = p.schedule()
    ls = g.local_size or (1,)
    threads = math.prod(ls)
    if bound:
        em.kernel_attributes.append(f"__launch_bounds__({threads}, {bound})")
    if parts == 1:
        return cst(0), kt, lambda: None
    wrg = {s.dim: s for s in ctx.scopes if s.kind == "wrg"}
    if not wrg or set(wrg) - {0, 1} or len(wrg) != len([s for s in ctx.scopes if s.kind == "wrg"]):
        raise CodegenError("reduceSplitTail: the loop must be inside mapWrg(0) (and mapWrg(1)), one "
                           "each: the third grid dimension holds the parts")
    if any(s.kind in ("lcl", "glb") for s in ctx.scopes):
        raise CodegenError("reduceSplitTail splits a work-group's loop: it cannot be inside mapLcl")
    if not isinstance(init, V.ThreadPrivateView):
        raise CodegenError("reduceSplitTail: the accumulator must be the work-items' registers "
                           "(toPrivate of a mapLcl copy), which the parts add up")
    n0 = wrg[0].length
    n1 = wrg[1].length if 1 in wrg else cst(1)
    v0 = wrg[0].var
    v1 = wrg[1].var if 1 in wrg else cst(0)
    nm = em.names.fresh
    T, lin, tail, split, part, slot = (nm(x) for x in ("sk_tiles", "sk_tile", "sk_tail", "sk_split",
                                                       "sk_part", "sk_slot"))
    k0, k1 = nm("sk_k0"), nm("sk_k1")
    one_each = f"(int)gridDim.x == {n0.to_c()}" + (f" && (int)gridDim.y == {n1.to_c()}" if 1 in wrg else "")
    em.line(f"const int {T} = {(n0 * n1).to_c()};")
    em.line(f"const int {lin} = {(v1 * n0 + v0).to_c()};")
    em.line(f"const int {tail} = {T} % {slots};")
    em.line(f"const bool {split} = {one_each} && {lin} >= {T} - {tail};")
    em.line(f"const int {part} = (int)blockIdx.z;")
    em.line(f"if (!{split} && {part} > 0) return;  // this tile runs whole in part 0")
    em.line(f"const int {slot} = {lin} - ({T} - {tail});")
    em.line(f"const int {k0} = {split} ? {part} * ({kt.to_c()}) / {parts} : 0;")
    em.line(f"const int {k1} = {split} ? ({part} + 1) * ({kt.to_c()}) / {parts} : {kt.to_c()};")

    acc_t = V.array_view_type(init.type)
    paths = _leaves(acc_t)
    k = len(init.dims)
    tids: list[ArithExpr] = []
    for d in init.dims:
        name = nm("sk_t")
        em.line(f"const int {name} = {em.dialect.ids('lcl', d)};")
        g.thread_ids[name] = d
        tids.append(Var(name, 0, cst(ls[d]) if d < len(ls) else cst(1)))
    mine = [(path[k:], t) for path, t in paths if all(i == 0 for i in path[:k])]
    elem = mine[0][1]
    scalar = elem.elem if isinstance(elem, VectorType) else elem
    width = elem.width if isinstance(elem, VectorType) else 1
    if not isinstance(scalar, ScalarType):
        raise CodegenError(f"reduceSplitTail adds float or double accumulators, not {elem}")
    per = len(mine) * width
    st = ctype(scalar)
    flags = _temp(g, "sk_flags", int32, slots, zeroed=True)
    ws = _temp(g, "sk_ws", scalar, slots * per * threads, zeroed=False)

    def epilogue() -> None:
        tid = " + ".join(f"{name} * {math.prod(ls[:d])}" if d else name
                         for name, d in zip([t.to_c() for t in tids], init.dims)) or "0"
        lead = " && ".join(f"{t.to_c()} == 0" for t in tids) or "true"
        with em.if_(split):
            with em.if_(lead):
                spin = nm("sk_spin")
                em.line(f"unsigned {spin} = 0;  // parts are dispatched in order: bounded, never hangs")
                em.line(f"while (atomicAdd(&{flags}[{slot}], 0) != {part}) "
                        f"{{ __nanosleep(40); if (++{spin} == {SPIN_LIMIT}u) __trap(); }}")
                em.line("__threadfence();")
            em.line("__syncthreads();")
            views = []
            for path, t in mine:
                v = init
                for i in tids:
                    v = v.access(i)
                for i in path:
                    v = v.access(cst(i))
                views.append(v)

            def at(j: int) -> str:
                return f"&{ws}[({slot} * {per} + {j}) * {threads} + {tid}]"

            with em.if_(f"{part} > 0"):
                for n, v in enumerate(views):
                    got = [f"__ldcg({at(n * width + c)})" for c in range(width)]
                    val = f"{ctype(elem)}({', '.join(got)})" if width > 1 else got[0]
                    em.store(v, f"{em.load(v)} + {val}")
            with em.if_(f"{part} < {parts - 1}"):
                for n, v in enumerate(views):
                    for c in range(width):
                        lane = f"({em.load(v)}).s[{c}]" if width > 1 else em.load(v)
                        em.line(f"__stcg({at(n * width + c)}, {lane});")
                em.line("__threadfence();")
                em.line("__syncthreads();")
                with em.if_(lead):
                    em.line(f"atomicExch(&{flags}[{slot}], {part} + 1);")
                em.line("return;  // the tile's last part stores it")
            with em.if_(lead):
                em.line(f"atomicExch(&{flags}[{slot}], 0);")

    return Var(k0, 0, kt), Var(k1, 0, kt), epilogue


def _temp(g: "Generator", hint: str, elem: ScalarType, count: int, zeroed: bool) -> str:
    """A global temporary of `count` elements, a kernel parameter the host allocates (the
    generator's temps become the kernel's last buffer arguments); its C name."""
    from liftkit.codegen.generator import GlobalTemp

    g.em.note_type(elem)
    mem = Memory(g.em.names.fresh(hint), "global", elem, cst(count), "param")
    g.temps.append(GlobalTemp(mem, ArrayType(elem, cst(count)), zeroed=zeroed))
    return mem.name


def split_parts(f: Any) -> Optional[int]:
    """The grid's third dimension a reduceSplitTail asks of the launch (None: not one, or one
    part)."""
    if isinstance(f, ReduceSplitTail):
        parts = f.schedule()[0]
        return parts if parts > 1 else None
    return None
