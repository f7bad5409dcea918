"""Code generation for the tensor-core patterns reduceMmaTF32 / reduceMmaBF16 / reduceMmaF64
(`liftkit.ir.patterns.cuda`): mma.sync through inline PTX, over a work-group's tile loop.

The warps split the m×n tile into warp tiles of whole fragments; each lane keeps its
accumulators in registers for the whole loop over the tile pairs. Per pair, the pattern's
function stages the operands (a copy into local memory, a cp.async pipeline, or nothing); each
k-step reads the lane's fragment elements through the operands' views and issues one mma.sync
per fragment pair; the accumulators go to the destination at the end.

Two things make it fast without changing what it computes:
- the instruction: on Hopper (sm_90) FP64 uses the m16n8k{4,8,16} shapes (the largest the
  tile's k allows; reduceMmaF64K8 m16n8k8 throughout), which run the FP64 tensor cores at their
  full rate; the Ampere shape
  m8n8k4 runs at about half of it there (docs/perf.md, issue 12). The same accumulators serve
  the m8n8k4 fallback compiled for older GPUs (`#if __CUDA_ARCH__ >= 900`).
- the reads: a lane's fragment elements that lie next to each other in local memory (the rule
  `mm-tensor-cores` lays the tiles out so that they do) are read as one 8- or 16-byte vector
  when every element of the vector is one the lane needs in this tile; everything else is
  read element by element through its view.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst
from liftkit.arith.nodes import Sum
from liftkit.codegen import views as V
from liftkit.codegen.emit import space_of_view
from liftkit.codegen.memory import ctype
from liftkit.codegen.views import CodegenError, MemLoc, View
from liftkit.ir import patterns as P
from liftkit.ir.patterns.cuda import WARP, ReduceMmaF64K8Ahead, ReduceMmaF64K8AheadSpread
from liftkit.ir.patterns.cuda_schedule import ReduceMmaSplit
from liftkit.types import ArrayType, ScalarType

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator
    from liftkit.ir.nodes import Param

Coord = tuple[ArithExpr, ArithExpr]


@dataclass(frozen=True)
class Instr:
    """One mma.sync shape: the PTX, m×n×k, and per lane (group g = lane/4, t = lane%4) the
    (row, k) of the A elements of register r, the (n, k) of B's, the (row, col) of C's."""

    ptx: str
    shape: tuple[int, int, int]
    a_regs: int
    b_regs: int
    c_regs: int
    a: Callable[[int, ArithExpr, ArithExpr], list[Coord]]
    b: Callable[[int, ArithExpr, ArithExpr], list[Coord]]
    c: Callable[[int, ArithExpr, ArithExpr], Coord]
    c_con: str  # register constraint of the accumulators ("f" float, "d" double)
    ab_con: str  # of A and B ("r": 32-bit words holding tf32 or two bf16, "d": doubles)


def _m16n8(k: int, ptx: str, c_con: str, ab_con: str) -> Instr:
    """The m16n8k{4,8,16} layout of one element per register (TF32, FP64): A register r holds
    (g + 8(r%2), t + 4(r/2)), B register r holds (n g, k t + 4r), C r holds (g + 8(r/2), 2t + r%2)."""
    return Instr(ptx, (16, 8, k), k // 2, k // 4, 4,
                 lambda r, g, t: [(g + cst(8 * (r % 2)), t + cst(4 * (r // 2)))],
                 lambda r, g, t: [(g, t + cst(4 * r))],
                 lambda r, g, t: (g + cst(8 * (r // 2)), t * cst(2) + cst(r % 2)), c_con, ab_con)


TF32 = _m16n8(8, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "f", "r")
BF16 = Instr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", (16, 8, 16), 4, 2, 4,
             lambda r, g, t: [(g + cst(8 * (r % 2)), (t + cst(4 * (r // 2))) * cst(2) + cst(j))
                              for j in range(2)],  # a bf16 pair, low half first
             lambda r, g, t: [(g, (t + cst(4 * r)) * cst(2) + cst(j)) for j in range(2)],
             TF32.c, "f", "r")
F64_HOPPER = {k: _m16n8(k, f"mma.sync.aligned.m16n8k{k}.row.col.f64.f64.f64.f64", "d", "d")
              for k in (4, 8, 16)}
F64_AMPERE = Instr("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", (8, 8, 4), 1, 1, 2,
                   lambda r, g, t: [(g, t)], lambda r, g, t: [(g, t)],
                   lambda r, g, t: (g, t * cst(2) + cst(r)), "d", "d")
HOPPER = "__CUDA_ARCH__ >= 900"  # the m16n8k{4,8,16} FP64 shapes are sm_90's


def f64_k(k: int) -> int:
    """The k of the Hopper FP64 shape used for a k-deep tile: the largest of 16, 8, 4 dividing it."""
    return next(s for s in (16, 8, 4) if k % s == 0)


def plan(cls: type, m: int, n: int, k: int, warps: int) -> Optional[tuple[Instr, tuple[int, int]]]:
    """(the instruction, (warps along m, along n)) of an m×n×k tile on `warps` warps, or None
    when the warps cannot share it in whole fragments. TF32 and BF16 on their one shape; FP64 on
    Hopper's m16n8k{16,8,4} (16×8 fragments: its Ampere fallback m8n8k4 uses the same
    accumulators) where the warps can share the tile in 16×8 fragments, else on m8n8k4."""
    if k % 4:
        return None
    if issubclass(cls, P.ReduceMmaF64):  # reduceMmaF64K8 (K16…): its shape's k throughout
        ik = cls.shape[2] if issubclass(cls, P.ReduceMmaF64K8) else f64_k(k)
        options = [(F64_HOPPER[ik], (16, 8)), (F64_AMPERE, (8, 8))]
    else:
        options = [(TF32 if issubclass(cls, P.ReduceMmaTF32) else BF16, (16, 8))]
    for ins, (um, un) in options:
        if m % um or n % un or k % ins.shape[2]:
            continue
        grid = warp_grid(m // um, n // un, warps, (um, un))
        if grid[0]:
            return ins, grid
    return None


def check_warps(g: "Generator", name: str, warps: int) -> None:
    """A tensor-core loop on `warps` warps needs a work-group of exactly that many threads: its
    fragments are spread over them."""
    threads = _prod(g.local_size or (1,))
    if threads != WARP * warps:
        raise CodegenError(f"{name} {warps} runs on {warps} warps ({WARP * warps} threads), but "
                           f"the work-group has {threads}: give the copies in its function "
                           f"mapLcl(0) loops of {WARP * warps} threads")


def warp_grid(frags_m: int, frags_n: int, warps: int, shape: Sequence[int]) -> tuple[int, int]:
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


class _Reads:
    """A lane's reads of fragment elements in one tile: each element by itself, or, where the
    elements of an aligned 8/16-byte vector in local memory are all ones the lane reads in this
    tile, the vector once (the first use loads it, later uses take its component)."""

    def __init__(self, g: "Generator", views: Sequence[View],
                 regs: Optional[Sequence[tuple[Any, int, View]]] = None,
                 lane: Optional[frozenset[str]] = None) -> None:
        self.em = g.em
        # with `lane` (the lane's index variables): an offset's terms in other variables (the
        # loop's buffer slot) are added to the memory's address once, a slot pointer, and each
        # read indexes it by the lane's part alone, which stays the same across the loop (so
        # the compiler keeps it in a register instead of adding the slot and scaling per read)
        self.lane = lane
        self.slots: dict[tuple[int, str], str] = {}
        self.vectors: dict[tuple[int, str], tuple[str, int]] = {}
        self.needed: set[tuple[int, str]] = set()
        for v in views:
            loc = self._local(v)
            if loc is not None:
                self.needed.add(self._key(loc.mem, loc.offset))
        # with `regs` ((fragment, register, element) of one element per register), a vector only
        # where it fills registers r0…r0+w-1 of one fragment in order (r0 a multiple of w): an
        # mma.sync operand is a run of registers, and a vector in another order costs moves
        self.regs: Optional[dict[tuple[int, str], tuple[Any, int]]] = None
        if regs is not None:
            self.regs = {}
            for frag, r, v in regs:
                loc = self._local(v)
                if loc is not None:
                    self.regs[self._key(loc.mem, loc.offset)] = (frag, r)

    def _local(self, v: View) -> Optional[MemLoc]:
        try:
            loc = self.em.resolve(v)
        except V.NeedsTupleIndex:
            return None
        ok = (isinstance(loc, MemLoc) and loc.mem.space == "local" and loc.mem.kind == "array"
              and not loc.fields and not loc.width and loc.lane is None
              and isinstance(loc.mem.elem, ScalarType))
        return loc if ok else None

    @staticmethod
    def _key(mem: Any, offset: ArithExpr) -> tuple[int, str]:
        return id(mem), offset.to_c()

    def vector(self, v: View) -> Optional[tuple[MemLoc, int]]:
        """(the aligned vector of local memory holding v, v's component in it) where every
        element of that vector is one the lane reads in this tile; None: v is read by itself."""
        loc = self._local(v)
        if loc is None:
            return None
        size = loc.mem.elem.dtype.itemsize  # type: ignore[union-attr]
        for w in (16 // size, 8 // size):
            if w < 2:
                continue
            for d in range(w):
                base = loc.offset - cst(d)
                if not self.em.aligned(cst(w), base):
                    continue
                keys = [self._key(loc.mem, base + cst(j)) for j in range(w)]
                if all(k in self.needed for k in keys) and self._in_order(keys, w):
                    return MemLoc(loc.mem, base, (), w), d
        return None

    def _in_order(self, keys: list[tuple[int, str]], w: int) -> bool:
        if self.regs is None:
            return True
        at = [self.regs.get(k) for k in keys]
        if at[0] is None or at[0][1] % w:
            return False
        return all(a is not None and a == (at[0][0], at[0][1] + j) for j, a in enumerate(at))

    def _split(self, offset: ArithExpr) -> Optional[tuple[ArithExpr, ArithExpr]]:
        """(slot, lane part) of an offset: its terms in variables other than the lane's, and
        the rest; None where it has no such terms or only those."""
        if self.lane is None or not isinstance(offset, Sum):
            return None
        slot, rest = [], []
        for t in offset.terms:
            (rest if {v.name for v in t.free_vars()} <= self.lane else slot).append(t)
        if not slot or not rest:
            return None
        return sum(slot[1:], slot[0]), sum(rest[1:], rest[0])

    def _c(self, loc: MemLoc) -> str:
        """The C expression reading `loc` (an element or an aligned vector of local memory),
        through the slot pointer where its offset has a slot part."""
        parts = self._split(loc.offset)
        w = loc.width or 1
        if parts is None or not (self.em.aligned(cst(w), parts[0]) and self.em.aligned(cst(w), parts[1])):
            return self.em.loc_c(loc)
        slot, rest = parts
        key = (id(loc.mem), slot.to_c())
        if key not in self.slots:
            name = self.em.names.fresh(f"{loc.mem.name}_slot")
            scalar = ctype(loc.mem.elem)
            self.em.line(f"{self.em.dialect.pointer('local', scalar)} {name} = "
                         f"{loc.mem.name} + {slot.to_c()};")
            self.slots[key] = name
        # in bytes from the slot pointer: NVVM then keeps the lane's part as a byte offset in
        # a register and ptxas adds the slot (uniform across the warp) in the read itself,
        # LDS [R + UR + imm] (indexed by elements, it added the slot to each element index
        # and scaled it: two instructions a read; DGEMM TN 64×64, NVRTC sm_90a: 138 → 78
        # integer instructions per 16 DMMAs)
        size = loc.mem.elem.dtype.itemsize  # type: ignore[union-attr]
        ptr = self.em.dialect.pointer("local", f"{ctype(loc.mem.elem)}{w if loc.width else ''}")
        return f"(*({ptr})((char*){self.slots[key]} + {size}*({rest.to_c()})))"

    def load(self, v: View) -> str:
        found = self.vector(v)
        if found is None:
            loc = self._local(v)
            return self._c(loc) if loc is not None and self.lane is not None else self.em.load(v)
        vloc, d = found
        key = self._key(vloc.mem, vloc.offset)
        if key not in self.vectors:
            name = self.em.names.fresh("frag")
            self.em.line(f"{ctype(vloc.mem.elem)}{vloc.width} {name} = {self._c(vloc)};")
            self.vectors[key] = (name, vloc.width)
        return f"{self.vectors[key][0]}.{'xyzw'[d]}"

    def assign(self, v: View, into: str) -> None:
        """into = v, where `into` is the component of a vector variable that load made for the
        same component of another tile's vector: the whole vector is assigned once (one
        vector read into the carried registers); else the element by itself."""
        found = self.vector(v)
        name, dot, comp = into.rpartition(".")
        if found is not None and dot and comp == "xyzw"[found[1]]:
            key, vec = ("into", name), self._c(found[0])
            if key not in self.vectors:
                self.em.line(f"{name} = {vec};")
                self.vectors[key] = (vec, found[0].width)  # type: ignore[index]
                return
            if self.vectors[key][0] == vec:  # (assigned whole with its other components)
                return
        self.em.line(f"{into} = {self.load(v)};")


def reduce_mma(g: "Generator", p: P.ReduceMma, args: Sequence["Arg"], env: dict["Param", View],
               ctx: "Ctx", dest: Optional[View]) -> View:
    """See the module docstring."""
    em = g.em
    warps = p.warp_count()
    check_warps(g, p.name, warps)
    ls = g.local_size or (1,)
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    ops_t = g.result_type(p.f, [tt.elem], env, ctx.inside(p))
    m, n, k, _ = p.check_tiles(ops_t)
    found = plan(type(p), m, n, k, warps)
    if found is None:
        im, in_, _ = p.shape
        raise CodegenError(f"{p.name} {warps}: {warps} warps cannot share a {m}×{n} tile in whole "
                           f"{im}×{in_} fragments")
    main, (wm, wn) = found
    unit = main.shape[:2]
    fm_n, fn_n = m // unit[0] // wm, n // unit[1] // wn
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
    row0 = [warp_m * cst(fm_n * unit[0]) + cst(fm * unit[0]) for fm in range(fm_n)]
    col0 = [warp_n * cst(fn_n * unit[1]) + cst(fn * unit[1]) for fn in range(fn_n)]

    def c_elem(view: View, fm: int, fn: int, r: int) -> View:
        row, col = main.c(r, gv, tv)
        return view.access(row0[fm] + row).access(col0[fn] + col)

    acc = {}
    for fm in range(fm_n):
        for fn in range(fn_n):
            for r in range(main.c_regs):
                start = em.load(init) if isinstance(init.type, ScalarType) else em.load(c_elem(init, fm, fn, r))
                acc[fm, fn, r] = em.private_var(acc_t, f"c{fm}_{fn}_{r}", start).name

    def operand(elems: list[str], hint: str) -> str:
        if isinstance(p, P.ReduceMmaF64):
            return em.private_var(acc_t, hint, elems[0]).name
        name = em.names.fresh(hint)
        if isinstance(p, P.ReduceMmaTF32):
            em.line(f'unsigned {name}; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"({name}) : "f"({elems[0]}));')
        else:  # the pair's first element goes to the low half
            em.line(f'unsigned {name}; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"({name}) '
                    f': "f"({elems[1]}), "f"({elems[0]}));')
        return name

    def issue(ins: Instr, cs: list[str], ab: list[str]) -> None:
        ph = iter(range(len(cs) + len(ab)))
        c_ph = ",".join(f"%{next(ph)}" for _ in cs)
        a_ph = ",".join(f"%{next(ph)}" for _ in range(ins.a_regs))
        b_ph = ",".join(f"%{next(ph)}" for _ in range(ins.b_regs))
        outs = ", ".join(f'"+{ins.c_con}"({x})' for x in cs)
        ins_ = ", ".join(f'"{ins.ab_con}"({x})' for x in ab)
        em.line(f'asm volatile("{ins.ptx} {{{c_ph}}}, {{{a_ph}}}, {{{b_ph}}}, {{{c_ph}}};" '
                f': {outs} : {ins_});')

    def products_with(ins: Instr, a: View, b: View) -> None:
        """Every k-step of one tile pair in `ins`, the fragments read through _Reads."""
        steps = [cst(kk * ins.shape[2]) for kk in range(k // ins.shape[2])]
        a_el = {(s, fm, r): [a.access(row0[fm] + row).access(k0 + kc) for row, kc in ins.a(r, gv, tv)]
                for s, k0 in enumerate(steps) for fm in range(fm_n) for r in range(ins.a_regs)}
        b_el = {(s, fn, r): [b.access(col0[fn] + nc).access(k0 + kr) for nc, kr in ins.b(r, gv, tv)]
                for s, k0 in enumerate(steps) for fn in range(fn_n) for r in range(ins.b_regs)}
        reads = _Reads(g, [v for vs in list(a_el.values()) + list(b_el.values()) for v in vs])
        for s in range(len(steps)):
            af = {(fm, r): operand([reads.load(v) for v in a_el[s, fm, r]], f"a{fm}_{r}")
                  for fm in range(fm_n) for r in range(ins.a_regs)}
            bf = {(fn, r): operand([reads.load(v) for v in b_el[s, fn, r]], f"b{fn}_{r}")
                  for fn in range(fn_n) for r in range(ins.b_regs)}
            for fm in range(fm_n):
                for fn in range(fn_n):
                    issue(ins, [acc[fm, fn, r] for r in range(ins.c_regs)],
                          [af[fm, r] for r in range(ins.a_regs)] + [bf[fn, r] for r in range(ins.b_regs)])

    def ampere_fallback(a: View, b: View) -> None:
        """m8n8k4 on the 16×8 fragments' accumulators: the upper 8 rows are registers 0-1, the
        lower 8 rows 2-3, as in the m16n8 layout."""
        for kk in range(k // 4):
            k0 = cst(4 * kk)
            reads = _Reads(g, [])
            bf = {fn: operand([reads.load(b.access(col0[fn] + gv).access(k0 + tv))], f"b{fn}")
                  for fn in range(fn_n)}
            for fm in range(fm_n):
                for h in range(2):
                    af = operand([reads.load(a.access(row0[fm] + cst(8 * h) + gv).access(k0 + tv))], f"a{fm}_{h}")
                    for fn in range(fn_n):
                        issue(F64_AMPERE, [acc[fm, fn, 2 * h], acc[fm, fn, 2 * h + 1]], [af, bf[fn]])

    def products(a: View, b: View) -> None:
        if main in F64_HOPPER.values():
            em.line(f"#if {HOPPER}")
            products_with(main, a, b)
            em.line("#else")
            ampere_fallback(a, b)
            em.line("#endif")
        else:
            products_with(main, a, b)

    def step_loader(ins: Instr, a: View, b: View, s: int) -> Callable[..., dict[Any, str]]:
        """The loader of the lane's A and B fragment registers of k-step s of one tile pair,
        read through the views (vectors only within the step): load(keys) gives those of `keys`
        (("a", fm, r) / ("b", fn, r)) as new variables, load(keys, into) assigns into's."""
        k0 = cst(s * ins.shape[2])
        els = {("a", fm, r): [a.access(row0[fm] + row).access(k0 + kc) for row, kc in ins.a(r, gv, tv)]
               for fm in range(fm_n) for r in range(ins.a_regs)}
        els.update({("b", fn, r): [b.access(col0[fn] + nc).access(k0 + kr) for nc, kr in ins.b(r, gv, tv)]
                    for fn in range(fn_n) for r in range(ins.b_regs)})
        regs = [((key[0], key[1]), key[2], vs[0]) for key, vs in els.items() if len(vs) == 1]
        reads = _Reads(g, [v for vs in els.values() for v in vs],
                       regs if isinstance(p, P.ReduceMmaF64) else None,
                       frozenset(names.values()) if SLOT_POINTERS else None)

        def load(keys: Sequence[Any], into: Optional[dict[Any, str]] = None,
                 carry: bool = False) -> dict[Any, str]:
            """`carry` (FP64, registers carried across the loop): an element read within a
            vector is kept as that vector variable's component, so that the next tile's
            vector goes into the same registers whole (`into`)."""
            if into is None:
                if carry and isinstance(p, P.ReduceMmaF64):
                    return {key: reads.load(els[key][0]) if reads.vector(els[key][0]) else
                            operand([reads.load(v) for v in els[key]], f"{key[0]}{key[1]}_{key[2]}")
                            for key in keys}
                return {key: operand([reads.load(v) for v in els[key]], f"{key[0]}{key[1]}_{key[2]}")
                        for key in keys}
            for key in keys:
                reads.assign(els[key][0], into[key])
            return {key: into[key] for key in keys}
        return load

    a_keys = {fm: [("a", fm, r) for r in range(main.a_regs)] for fm in range(fm_n)}
    b_keys = [("b", fn, r) for fn in range(fn_n) for r in range(main.b_regs)]

    def issue_step(ins: Instr, fr: dict[Any, str], then: Callable[[int], None]) -> None:
        """The products of one k-step, row of fragments by row; then(fm) after row fm (whose A
        registers are then free: the next step's A row is read there)."""
        for fm in range(fm_n):
            for fn in range(fn_n):
                issue(ins, [acc[fm, fn, r] for r in range(ins.c_regs)],
                      [fr["a", fm, r] for r in range(ins.a_regs)] + [fr["b", fn, r] for r in range(ins.b_regs)])
            then(fm)

    def ahead_loop(chains: list[Any]) -> None:
        """The cp.async pipeline of reduceMmaF64K8Ahead: s tiles issued before the loop; in tile
        i each k-step's products issue after the next step's fragments are read; at the last
        step, `wait_group s-2` (tile i+1 landed), one barrier (tile i's fragments all read),
        the copy of tile i+s into tile i's buffer, tile i+1's first fragments read, then tile
        i's last products (reduceMmaF64K8AheadSpread: the copies between the rows of those
        products). Before sm_90, m8n8k4 on tile i before the barrier."""
        from liftkit.codegen.cuda_patterns import _async_copy, _through, prove_lt, stage_buffers
        from liftkit.codegen.generator import Scope

        stages = chains[0][1].stage_count()
        if stages < 2:
            raise CodegenError(f"{p.name} reads the next tile's fragments while a cp.async "
                               "pipeline copies it: stage the tiles with toLocalAsync s ≥ 2")
        kt = tt.length
        lo, hi, fix_up = cst(0), kt, None
        if isinstance(p, ReduceMmaSplit):  # this work-group's range of the tiles, then the fix-up
            from liftkit.codegen.cuda_schedule import split_registers

            lo, hi, fix_up = split_registers(g, p, kt, ctx, list(acc.values()), acc_t)
        buffers, issue_copies = stage_buffers(g, chains, tiles, env, body)
        commit = 'asm volatile("cp.async.commit_group;" ::: "memory");'
        for s in range(stages):
            if prove_lt(lo + cst(s), hi):
                issue_copies(lo + cst(s), cst(s), body)
            else:
                with em.if_(f"{(lo + cst(s)).to_c()} < {hi.to_c()}"):
                    issue_copies(lo + cst(s), cst(s), body)
            em.line(commit)
        em.line(f'asm volatile("cp.async.wait_group {stages - 1};" ::: "memory");')
        em.barrier({"CLK_LOCAL_MEM_FENCE"})

        spread = isinstance(p, ReduceMmaF64K8AheadSpread)

        def copy_operand(k_: int, j: ArithExpr, slot: ArithExpr, c: "Ctx") -> None:
            """The copies of operand k_ of tile j into buffer slot `slot`, where tile j exists."""
            (_, _, pre), (buf, levels) = chains[k_], buffers[k_]
            with em.if_(f"{j.to_c()} < {hi.to_c()}"):
                _async_copy(g, levels, _through(g, pre, tiles.access(j).get(k_), env, c),
                            buf.access(slot), c)

        def ops_at(slot: ArithExpr, c: "Ctx") -> list[View]:
            return [_through(g, post, buf.access(slot), env, c)
                    for (post, _, _), (buf, _) in zip(chains, buffers)]

        steps = k // main.shape[2]
        em.line(f"#if {HOPPER}")
        first = step_loader(main, *ops_at(cst(0), body), 0)
        carried = first(b_keys, carry=True)
        for fm in range(fm_n):
            carried.update(first(a_keys[fm], carry=True))
        em.line("#endif")
        name = em.names.fresh("i")
        i = Var(name, 0, kt)
        rel = i if fix_up is None else i - lo  # the tile's place in this work-group's range
        with em.for_loop(name, lo.to_c(), f"{name} < {hi.to_c()}", f"{name} += 1"):
            c = body.inside(p, Scope("seq", 0, i, kt))
            a, b = ops_at(rel % cst(stages), c)
            cur = carried
            for j in range(steps):
                last = j + 1 == steps
                if j == 0:  # before sm_90: the whole tile on m8n8k4, before the barrier
                    em.line(f"#if !({HOPPER})")
                    ampere_fallback(a, b)
                    em.line("#endif")
                ahead, slot = i + cst(stages), rel % cst(stages)
                if last:  # tile i+1 landed and tile i's fragments all read: copy tile i+s
                    em.line(f'asm volatile("cp.async.wait_group {stages - 2};" ::: "memory");')
                    em.barrier({"CLK_LOCAL_MEM_FENCE"})
                    if not spread:
                        with em.if_(f"{ahead.to_c()} < {hi.to_c()}"):
                            issue_copies(ahead, slot, c)
                        em.line(commit)
                em.line(f"#if {HOPPER}")
                load = (step_loader(main, *ops_at((rel + cst(1)) % cst(stages), c), 0) if last
                        else step_loader(main, a, b, j + 1))
                # the next tile's first fragments go straight into the loop's registers once
                # this tile's first ones are spent (a one-step tile still reads its own)
                into = carried if last and steps > 1 else None
                nxt = load(b_keys, into)
                copied = spread and last

                def after_row(fm: int) -> None:
                    nxt.update(load(a_keys[fm], into))
                    if copied and fm < len(chains):
                        copy_operand(fm, ahead, slot, c)
                issue_step(main, cur, after_row)
                if copied:
                    for k_ in range(fm_n, len(chains)):
                        copy_operand(k_, ahead, slot, c)
                if last and steps == 1:
                    for key, v in nxt.items():
                        em.line(f"{carried[key]} = {v};")
                if copied:
                    em.line("#else")
                    for k_ in range(len(chains)):
                        copy_operand(k_, ahead, slot, c)
                em.line("#endif")
                if copied:
                    em.line(commit)
                cur = nxt
        em.line('asm volatile("cp.async.wait_group 0;" ::: "memory");')
        em.barrier({"CLK_LOCAL_MEM_FENCE"})  # the buffers are free for whatever follows
        if fix_up is not None:
            fix_up()  # a split tile's parts add their sums in order; the last stores the tile

    body = replace(ctx, write_to=None)
    tile_loop(g, p, tiles, env, body, products,
              ahead_loop if isinstance(p, ReduceMmaF64K8Ahead) else None)  # and …AheadSpread
    out = dest.access(cst(0))
    # FP64 m16n8: a lane's accumulators r, r+1 (r even) are columns 2t, 2t+1 of one row
    pairs = VECTOR_STORES and isinstance(p, P.ReduceMmaF64) and main.c_regs == 4
    for (fm, fn, r), name in acc.items():
        if pairs and r % 2 == 1 and _paired(em, c_elem(out, fm, fn, r - 1), c_elem(out, fm, fn, r)):
            continue  # stored with r - 1
        if pairs and r % 2 == 0 and _paired(em, c_elem(out, fm, fn, r), c_elem(out, fm, fn, r + 1)):
            loc = em.resolve(c_elem(out, fm, fn, r))
            vec = em.aligned_vector(MemLoc(loc.mem, loc.offset, (), 2))  # type: ignore[union-attr]
            # (by components: CUDA's double2 and the prelude's vector type alike)
            tmp = em.names.fresh("acc2")
            em.line(f"{ctype(acc_t)}2 {tmp}; {tmp}.x = {name}; {tmp}.y = {acc[fm, fn, r + 1]}; "
                    f"{vec} = {tmp};")
            continue
        if pairs and r % 2 == 1 and _guarded_pair(em, c_elem(out, fm, fn, r - 1),
                                                  c_elem(out, fm, fn, r)) is not None:
            continue  # stored with r - 1
        guarded = _guarded_pair(em, c_elem(out, fm, fn, r), c_elem(out, fm, fn, r + 1)) \
            if pairs and r % 2 == 0 else None
        if guarded is not None:  # the ragged edge: one 16-byte store where both are written
            cond, vec = guarded
            tmp = em.names.fresh("acc2")
            with em.if_(cond):
                em.line(f"{ctype(acc_t)}2 {tmp}; {tmp}.x = {name}; "
                        f"{tmp}.y = {acc[fm, fn, r + 1]}; {vec} = {tmp};")
            with em.if_(f"!({cond})"):
                em.store(c_elem(out, fm, fn, r), name)
                em.store(c_elem(out, fm, fn, r + 1), acc[fm, fn, r + 1])
            continue
        em.store(c_elem(out, fm, fn, r), name)
    return dest


# the fragment reads of the read-ahead loops through a slot pointer per buffer slot (`_Reads`).
# Off: NVRTC here (sm_90a) takes the loop's integer instructions down (DGEMM TN 64×64: 138 → 78
# per 16 DMMAs), but the device's NVRTC gave the kernels more registers and they lost there
# (H200, results/issue15/fp64-25b: TN 1024 0.898 → 0.861x cuBLAS, NN 0.949 → 0.807x, NT
# 0.970 → 0.960x, the guarded 1000³ kernel 0.820 → 0.803x)
SLOT_POINTERS = False

# the accumulators of FP64 products written two at a time (16-byte stores) where a lane's
# columns 2t, 2t+1 lie next to each other, 16-byte aligned, in global or local memory
VECTOR_STORES = True


def _paired(em: Any, first: View, second: View) -> bool:
    """Whether two destination elements are one aligned 2-vector of an array (first at its
    even offset, second after it), so that one vector store writes both."""
    try:
        a, b = em.resolve(first), em.resolve(second)
    except V.NeedsTupleIndex:
        return False
    ok = all(isinstance(x, MemLoc) and x.mem.kind in ("param", "array") and x.mem.space != "private"
             and not x.fields and not x.width and x.lane is None and isinstance(x.mem.elem, ScalarType)
             for x in (a, b))
    return (ok and a.mem is b.mem and (a.offset + cst(1)).to_c() == b.offset.to_c()
            and em.aligned_vector(MemLoc(a.mem, a.offset, (), 2)) is not None)


def _guarded_pair(em: Any, first: View, second: View) -> Optional[tuple[str, str]]:
    """(condition, 16-byte destination) for two guarded destination elements (a `crop`'s
    ragged edge: SelectLoc … DropLoc) at consecutive offsets of one array whose first offset is
    even wherever the sizes in it are (for any sizes otherwise): the vector store runs where
    both elements' guards hold and those sizes are even at run time; elsewhere each element is
    stored under its own guard, as before (so any M, N, K stay correct)."""
    from liftkit.arith import divides, size_var

    try:
        a, b = em.resolve(first), em.resolve(second)
    except V.NeedsTupleIndex:
        return None
    conds: list[str] = []
    locs = []
    for x in (a, b):
        while isinstance(x, V.SelectLoc) and isinstance(x.other, V.DropLoc):
            conds.append(x.cond.to_c())
            x = x.then
        locs.append(x)
    a, b = locs
    if len(conds) == 0 or not all(
            isinstance(x, MemLoc) and x.mem.kind in ("param", "array") and x.mem.space != "private"
            and not x.fields and not x.width and x.lane is None
            and isinstance(x.mem.elem, ScalarType) for x in (a, b)):
        return None
    if a.mem is not b.mem or (a.offset + cst(1)).to_c() != b.offset.to_c():
        return None
    vec = em.aligned_vector(MemLoc(a.mem, a.offset, (), 2))
    if vec is None:  # even where its sizes are: those sizes checked at run time
        sizes = sorted({v.name for v in a.offset.free_vars() if isinstance(v, Var) and v.hi is None})
        if not sizes:
            return None
        try:
            scaled = a.offset.substitute({n: cst(2) * size_var(n) for n in sizes})
        except Exception:  # noqa: BLE001 - a form substitute cannot take: no verdict
            return None
        if divides(cst(2), scaled) is not True:
            return None
        conds = [f"({n} & 1) == 0" for n in sizes] + conds
        ptr = em.dialect.pointer(a.mem.space, f"{ctype(a.mem.elem)}2", const=a.mem.readonly)
        vec = f"(({ptr}){a.mem.name})[({a.offset.to_c()}) >> 1]"
    return " && ".join(f"({c})" for c in dict.fromkeys(conds)), vec


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def tile_loop(g: "Generator", p: P.Pattern, tiles: View, env: dict["Param", View], ctx: "Ctx",
              products: Callable[[View, View], None],
              ahead: Optional[Callable[[list[Any]], None]] = None) -> None:
    """The tensor-core tile loop of the real and complex DMMA patterns: `ahead` (fragments read
    a step ahead across tiles, on a cp.async pipeline's staging), else a cp.async pipeline
    (`cp_async_pipeline`: the warps' products on tile k while tiles k+1..k+s-1 are in flight),
    else one tile pair after another (in place, or copied by the work-group first)."""
    from liftkit.codegen.cuda_patterns import async_staging, cp_async_pipeline

    em = g.em
    staging = async_staging(p)
    if ahead is not None:
        if staging is None or "cp.async" not in em.dialect.features:
            raise CodegenError(f"{p.name} reads the next tile's fragments while a cp.async "
                               "pipeline copies it: stage the tiles with toLocalAsync s ≥ 2 "
                               "(CUDA)")
        ahead(staging)
    elif staging is not None:
        if "cp.async" not in em.dialect.features:
            raise CodegenError(P.ToLocalAsync.refusal)
        cp_async_pipeline(g, p, staging, tiles, env, ctx, lambda ops, i, c: products(ops[0], ops[1]))
    else:
        tt = V.array_view_type(tiles.type)
        for i, c in g.loop("seq", 0, tt.length, ctx, p, False):
            ops = g.apply(p.f, [tiles.access(i)], env, c, None)
            a, b = ops.get(0), ops.get(1)
            products(a, b)
            if "local" in (space_of_view(a), space_of_view(b)):
                em.barrier({"CLK_LOCAL_MEM_FENCE"})  # the next pair's copy overwrites these tiles
