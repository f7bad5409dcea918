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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from liftkit.arith import ArithExpr, Var, cst
from liftkit.codegen import views as V
from liftkit.codegen.memory import Memory, ctype
from liftkit.codegen.views import CodegenError, View
from liftkit.ir.patterns.cuda_schedule import ReduceMmaSplit, ReduceSplitTail
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


@dataclass(frozen=True)
class _Split:
    """The C names of a split schedule's prologue (see split_tail)."""

    split: str  # this work-group's tile is split
    part: str  # its part (blockIdx.z)
    slot: str  # its tail slot
    k0: str  # its range of the loop
    k1: str


def _prologue(g: "Generator", what: str, parts: int, slots: int, kt: ArithExpr, ctx: "Ctx") -> _Split:
    """The tile's linear index, whether it is in the tail, its part and range of the loop."""
    em = g.em
    wrg = {s.dim: s for s in ctx.scopes if s.kind == "wrg"}
    if not wrg or set(wrg) - {0, 1} or len(wrg) != len([s for s in ctx.scopes if s.kind == "wrg"]):
        raise CodegenError(f"{what}: the loop must be inside mapWrg(0) (and mapWrg(1)), one "
                           "each: the third grid dimension holds the parts")
    if any(s.kind in ("lcl", "glb") for s in ctx.scopes):
        raise CodegenError(f"{what} splits a work-group's loop: it cannot be inside mapLcl")
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
    return _Split(split, part, slot, k0, k1)


def _fixup(g: "Generator", sk: _Split, parts: int, flags: str, ws: str, per: int, threads: int,
           tid: str, lead: str, add_from: Callable[[Callable[[int], str]], None],
           write_to: Callable[[Callable[[int], str]], None]) -> None:
    """A split tile's parts in turn: part q waits for its flag, adds the running sum (q > 0),
    and, unless last, writes it back, passes the flag on and returns. `add_from(at)` and
    `write_to(at)` emit the additions from and the stores to the workspace of the work-item's
    `per` accumulator elements, element j at `at(j)`."""
    em = g.em
    with em.if_(sk.split):
        with em.if_(lead):
            spin = em.names.fresh("sk_spin")
            em.line(f"unsigned {spin} = 0;  // parts are dispatched in order: bounded, never hangs")
            em.line(f"while (atomicAdd(&{flags}[{sk.slot}], 0) != {sk.part}) "
                    f"{{ __nanosleep(40); if (++{spin} == {SPIN_LIMIT}u) __trap(); }}")
            em.line("__threadfence();")
        em.line("__syncthreads();")

        def at(j: int) -> str:
            return f"&{ws}[({sk.slot} * {per} + {j}) * {threads} + {tid}]"

        with em.if_(f"{sk.part} > 0"):
            add_from(at)
        with em.if_(f"{sk.part} < {parts - 1}"):
            write_to(at)
            em.line("__threadfence();")
            em.line("__syncthreads();")
            with em.if_(lead):
                em.line(f"atomicExch(&{flags}[{sk.slot}], {sk.part} + 1);")
            em.line("return;  // the tile's last part stores it")
        with em.if_(lead):
            em.line(f"atomicExch(&{flags}[{sk.slot}], 0);")


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
    if not isinstance(init, V.ThreadPrivateView):
        raise CodegenError("reduceSplitTail: the accumulator must be the work-items' registers "
                           "(toPrivate of a mapLcl copy), which the parts add up")
    sk = _prologue(g, "reduceSplitTail", parts, slots, kt, ctx)
    nm = em.names.fresh

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
        raise CodegenError(f"reduceSplitTail adds float, double or complex accumulators, not "
                           f"{elem}")
    # complex accumulators go through the workspace as their (re, im) pairs of reals
    pair = 2 if scalar.is_complex else 1
    per = len(mine) * width * pair
    flags = _temp(g, "sk_flags", int32, slots, zeroed=True)
    ws = _temp(g, "sk_ws", scalar.real if pair == 2 else scalar, slots * per * threads,
               zeroed=False)

    def epilogue() -> None:
        tid = " + ".join(f"{name} * {math.prod(ls[:d])}" if d else name
                         for name, d in zip([t.to_c() for t in tids], init.dims)) or "0"
        lead = " && ".join(f"{t.to_c()} == 0" for t in tids) or "true"
        views = []
        for path, _ in mine:
            v = init
            for i in tids:
                v = v.access(i)
            for i in path:
                v = v.access(cst(i))
            views.append(v)

        def add_from(at: Callable[[int], str]) -> None:
            for n, v in enumerate(views):
                if pair == 2:
                    acc = f"({em.load(v)})"
                    em.store(v, f"{scalar.name}_new({acc}.x + __ldcg({at(2 * n)}), "
                                f"{acc}.y + __ldcg({at(2 * n + 1)}))")
                    continue
                got = [f"__ldcg({at(n * width + c)})" for c in range(width)]
                val = f"{ctype(elem)}({', '.join(got)})" if width > 1 else got[0]
                em.store(v, f"{em.load(v)} + {val}")

        def write_to(at: Callable[[int], str]) -> None:
            for n, v in enumerate(views):
                if pair == 2:
                    for c, part in enumerate("xy"):
                        em.line(f"__stcg({at(2 * n + c)}, ({em.load(v)}).{part});")
                    continue
                for c in range(width):
                    lane = f"({em.load(v)}).s[{c}]" if width > 1 else em.load(v)
                    em.line(f"__stcg({at(n * width + c)}, {lane});")

        _fixup(g, sk, parts, flags, ws, per, threads, tid, lead, add_from, write_to)

    return Var(sk.k0, 0, kt), Var(sk.k1, 0, kt), epilogue


def split_registers(g: "Generator", p: Any, kt: ArithExpr, ctx: "Ctx", regs: list[str],
                    scalar: ScalarType) -> tuple[ArithExpr, ArithExpr, Callable[[], None]]:
    """The split schedule for a loop whose accumulators are the work-item's scalar registers
    `regs` (the DMMA tile loop, reduceMmaF64K8AheadSplit): (first tile, end of the range, the
    epilogue's emitter)."""
    em = g.em
    parts, slots, _ = p.schedule()
    if parts == 1:
        return cst(0), kt, lambda: None
    ls = g.local_size or (1,)
    threads = math.prod(ls)
    sk = _prologue(g, p.name, parts, slots, kt, ctx)
    lin = em.dialect.ids("lcl", 0) if len(ls) == 1 else " + ".join(
        f"{em.dialect.ids('lcl', d)} * {math.prod(ls[:d])}" if d else em.dialect.ids("lcl", 0)
        for d in range(len(ls)) if ls[d] > 1)
    tid = em.names.fresh("sk_t")
    em.line(f"const int {tid} = {lin};")
    flags = _temp(g, "sk_flags", int32, slots, zeroed=True)
    ws = _temp(g, "sk_ws", scalar, slots * len(regs) * threads, zeroed=False)

    def add_from(at: Callable[[int], str]) -> None:
        for j, r in enumerate(regs):
            em.line(f"{r} = {r} + __ldcg({at(j)});")

    def write_to(at: Callable[[int], str]) -> None:
        for j, r in enumerate(regs):
            em.line(f"__stcg({at(j)}, {r});")

    def epilogue() -> None:
        _fixup(g, sk, parts, flags, ws, len(regs), threads, tid, f"{tid} == 0", add_from, write_to)

    return Var(sk.k0, 0, kt), Var(sk.k1, 0, kt), epilogue


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
    if isinstance(f, (ReduceSplitTail, ReduceMmaSplit)):
        parts = f.schedule()[0]
        return parts if parts > 1 else None
    return None
