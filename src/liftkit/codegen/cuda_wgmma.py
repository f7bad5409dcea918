"""Code generation for reduceWgmmaTF32 / reduceWgmmaTF32Z (`liftkit.ir.patterns.cuda`):
Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a) over a work-group's tile loop.

The w warps are w/4 warpgroups; warpgroup g owns rows [g·m/(w/4), (g+1)·m/(w/4)) of the m×n
tile in 64-row blocks, one `wgmma.mma_async.m64n{n}k8` per block and k-step, its accumulators
(n/2 floats per lane and block) in registers for the whole loop. The operands come from shared
memory through matrix descriptors, in the layout the tensor cores read with the 128-byte
swizzle: each operand tile (rows × k, k-major) is kept as k/32 atoms of `rows` rows of 128
bytes (32 TF32), 16-byte chunk c of row r stored at chunk position c ^ (r mod 8) (`offset`;
the descriptor's stride between 8-row groups is 1024 bytes, a k-step of 8 adds 32 bytes to its
start, `descriptor`; `tensor_core_address` is how the tensor cores find an element, the model
the tests check the layout against).

The pattern stages the tiles itself: every thread loads 16-byte pieces of the next tile from
global memory into registers, rounds them as the pattern's name says (toTF32: to nearest, ties
away; truncTF32: the low 13 bits cleared), and stores them as 16-byte chunks into the swizzled
layout. An operand contiguous along k (A of a row-major product) is read in whole rows (8 lanes
per 128-byte line); one contiguous along its rows (B of a row-major product, read k×n) is read
as 4×4 blocks (4 k-rows of 4 floats) that each lane transposes in registers, the lanes of a
warp covering 4 whole lines per load and every bank once per 8-lane phase of the stores.

Per tile k of `s` staged ones: wgmma.fence, the products on buffer k mod s, commit; the stores of
tile k+1 (loaded one iteration earlier) into buffer (k+1) mod s; fence.proxy.async (generic-proxy
stores that the tensor cores read next; in SASS a MEMBAR that waits for every outstanding
access of the thread, so it must come before the next loads, not after them); the loads of
tile k+2; wgmma.wait_group s-2 (the products of tile k+2-s are done, so its buffer is free);
one barrier. The products of up
to s-1 tiles are in flight while the loads and stores of the next ones proceed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst
from liftkit.codegen import views as V
from liftkit.codegen.views import CodegenError, MemLoc, View
from liftkit.ir import patterns as P
from liftkit.ir.patterns.cuda import WARP, WGMMA_MAX_N, WGMMA_ROW
from liftkit.types import ArrayType, ScalarType, float32

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator
    from liftkit.ir.nodes import Param

ROW_BYTES = 128  # one swizzled row: 32 TF32 along k
GROUP_BYTES = 8 * ROW_BYTES  # the swizzle's period: 8 rows, the descriptor's stride
SHARED_LIMIT = 227 * 1024  # an H100 block's shared memory
ALIGN = 1024  # the swizzle works on address bits 4-9: buffers start at multiples of 1024 bytes
# descriptor bits: leading byte offset 16 (unused by swizzled k-major tiles), stride 1024, 128B swizzle
DESC_FIXED = (1 << 16) | ((GROUP_BYTES >> 4) << 32) | (1 << 62)
MAX_ACCUMULATORS = 128  # floats per lane


def offset(row: int, k: int, rows: int) -> int:
    """Byte offset of element (row, k) in an operand tile of `rows` rows staged k-major with
    the 128-byte swizzle: k-atom k/32, then row, then 16-byte chunk (k mod 32)/4 at position
    chunk ^ (row mod 8), then the word."""
    atom, c = divmod(k, WGMMA_ROW)
    return atom * rows * ROW_BYTES + row * ROW_BYTES + (((c // 4) ^ (row % 8)) << 4) + 4 * (c % 4)


def descriptor(address: int) -> int:
    """The 64-bit matrix descriptor of a k-major, 128-byte-swizzled operand starting at the
    shared-memory byte `address` (14 bits of address/16)."""
    return DESC_FIXED | ((address & 0x3FFFF) >> 4)


def tensor_core_address(desc: int, row: int, k: int) -> int:
    """Where the tensor cores read element (row, k) of the k-step a descriptor describes (k < 8
    TF32): the start, 1024 bytes per 8-row group, 128 per row, then the 128-byte swizzle (address
    bits 4-6 xor bits 7-9)."""
    start = (desc & 0x3FFF) << 4
    stride = ((desc >> 32) & 0x3FFF) << 4
    a = start + (row // 8) * stride + (row % 8) * ROW_BYTES + 4 * k
    return a ^ (((a >> 7) & 7) << 4)


def plan_error(m: int, n: int, k: int, warps: int, stages: int) -> Optional[str]:
    """Why w warps cannot run an m×n×k tile pipelined `stages` deep, in words, or None."""
    groups = warps // 4
    threads = WARP * warps
    if warps % 4 or not groups or m % (64 * groups) or n % 32 or n > WGMMA_MAX_N or k % WGMMA_ROW:
        return (f"{warps} warps cannot share a {m}×{n}×{k} tile in warpgroups of 64-row blocks "
                f"(n a multiple of 32 up to {WGMMA_MAX_N}, k a multiple of {WGMMA_ROW})")
    if m // groups // 64 * n // 2 > MAX_ACCUMULATORS:
        return f"{m // groups // 64 * n // 2} accumulators per lane (at most {MAX_ACCUMULATORS})"
    for rows in (m, n):
        if (rows * k // 4) % threads or ((k // 16) * (rows // 32)) % warps:
            return f"the {rows}×{k} tile's 16-byte pieces do not divide among {threads} threads"
    if stage_bytes(m, n, k) * stages + ALIGN > SHARED_LIMIT:
        return f"{stages} staged {m}×{n}×{k} tiles need more than {SHARED_LIMIT // 1024} KB of shared memory"
    return None


def stage_bytes(m: int, n: int, k: int) -> int:
    return (m + n) * k * 4


# ---------------------------------------------------------------------------------------------
# loading and storing one operand tile


Piece = tuple[ArithExpr, ArithExpr]  # (row, k) of a 16-byte piece's first element
Chunk = tuple[ArithExpr, ArithExpr, list[tuple[int, int]]]  # (row, chunk, (piece, lane) per word)


def thread_pieces(rows: int, k: int, warps: int, along_k: bool, tid: ArithExpr
                  ) -> tuple[list[Piece], list[Chunk]]:
    """The 16-byte pieces thread `tid` loads of a rows×k operand tile, and the 16-byte chunks of
    the staged layout it stores them as (row, chunk along k, and for each of the chunk's 4 words
    the piece and word it comes from). Along k: piece q = tid + T·j is row q/(k/4), chunk q mod
    (k/4), stored as it is (8 lanes per 128-byte line). Along rows: unit u = warp + w·j covers
    16 k × 32 rows; lane (kc = l mod 4, rb = l/4) loads the 4 k-rows of chunk 4(u mod k/16) + kc
    at rows 32(u / (k/16)) + 4rb.., 4 floats each, and stores its 4 rows' chunks (a 4×4 transpose)."""
    threads = WARP * warps
    pieces: list[Piece] = []
    chunks: list[Chunk] = []
    if along_k:
        per_row = k // 4
        for j in range(rows * per_row // threads):
            q = tid + cst(threads * j)
            row, c = q // cst(per_row), q % cst(per_row)
            chunks.append((row, c, [(len(pieces), w) for w in range(4)]))
            pieces.append((row, c * cst(4)))
        return pieces, chunks
    warp, lane = tid // cst(WARP), tid % cst(WARP)
    ku_n = k // 16
    for j in range(ku_n * (rows // 32) // warps):
        u = warp + cst(warps * j)
        kc = (u % cst(ku_n)) * cst(4) + lane % cst(4)
        r0 = (u // cst(ku_n)) * cst(32) + (lane // cst(4)) * cst(4)
        first = len(pieces)
        pieces += [(r0, kc * cst(4) + cst(i)) for i in range(4)]
        chunks += [(r0 + cst(jj), kc, [(first + i, jj) for i in range(4)]) for jj in range(4)]
    return pieces, chunks


def tile_direction(g: "Generator", x: View, rows: int, k: int) -> bool:
    """True when the rows×k tile's elements are contiguous along k, False along its rows;
    anything else is refused (the pattern loads 16-byte pieces of global memory)."""
    r, kv = Var("lk_r", 0, rows), Var("lk_k", 0, k)
    at = lambda rr, kk: global_element(g, x.access(rr).access(kk))  # noqa: E731
    here, next_k, next_r = at(r, kv), at(r, kv + cst(1)), at(r + cst(1), kv)
    for other, along in ((next_k, True), (next_r, False)):
        diff = other.offset - here.offset
        if other.mem is here.mem and diff.is_constant and diff.value == 1:  # type: ignore[attr-defined]
            return along
    raise CodegenError("reduceWgmma loads its operand tiles in 16-byte pieces: each tile must "
                       "be contiguous in global memory along k or along its rows (a tile of "
                       "an input matrix, transposed or not)")


def global_element(g: "Generator", v: View) -> MemLoc:
    """Where an element of an operand tile lies in global memory (refused in words otherwise)."""
    try:
        loc = g.em.resolve(v)
    except V.NeedsTupleIndex:
        loc = None
    if not (isinstance(loc, MemLoc) and loc.mem.space == "global" and not loc.fields
            and not loc.width and loc.lane is None and loc.mem.elem == float32):
        raise CodegenError("reduceWgmma loads its operand tiles from global memory itself: "
                           "its function may only lay out the tile pair (no copies, no "
                           "computed values)")
    return loc


def global_vector(g: "Generator", loc: MemLoc) -> str:
    """The float4 at a tile element's place in global memory (a C lvalue), or a refusal."""
    vec = g.em.aligned_vector(MemLoc(loc.mem, loc.offset, (), 4))
    if vec is None:
        raise CodegenError("reduceWgmma loads 16-byte pieces of its operands: the rows of "
                           "the input matrices must start at multiples of 4 floats (sizes "
                           "divisible by the tiles)")
    return vec


class _Operand:
    """One operand's per-thread 16-byte pieces of a tile (`thread_pieces`): the registers they
    wait in between the load and the store into the staged layout."""

    def __init__(self, g: "Generator", name: str, rows: int, k: int, x: View, tid: Var,
                 warps: int, base: int) -> None:
        self.g, self.rows, self.k, self.base = g, rows, k, base
        self.along_k = self._direction(x)
        self.pieces, chunks = thread_pieces(rows, k, warps, self.along_k, tid)
        self.regs = [g.em.names.fresh(f"lk_{name}{j}") for j in range(len(self.pieces))]
        self.chunks = [(row, c, [f"{self.regs[pc]}.{'xyzw'[w]}" for pc, w in parts])
                       for row, c, parts in chunks]

    def _direction(self, x: View) -> bool:
        return tile_direction(self.g, x, self.rows, self.k)

    def _global(self, v: View) -> MemLoc:
        return global_element(self.g, v)

    def load(self, x: View) -> None:
        """The registers ← this thread's 16-byte pieces of tile x."""
        em = self.g.em
        for reg, (row, k) in zip(self.regs, self.pieces):
            em.line(f"{reg} = {global_vector(self.g, self._global(x.access(row).access(k)))};")

    def store(self, stage: str, rounding: str) -> None:
        """The registers, rounded, as 16-byte chunks into the staged layout at `stage` (the
        buffer's shared-memory address, a C expression)."""
        em = self.g.em
        for row, c, parts in self.chunks:
            r, cc = f"({row.to_c()})", f"({c.to_c()})"
            addr = (f"{stage} + {self.base}u + (unsigned)(({cc} >> 3) * {self.rows * ROW_BYTES} + "
                    f"{r} * {ROW_BYTES} + ((({cc} & 7) ^ ({r} & 7)) << 4))")
            words = [_rounded(em, p, rounding) for p in parts]
            em.line(f'asm volatile("st.shared.v4.b32 [%0], {{%1, %2, %3, %4}};" :: "r"({addr}), '
                    + ", ".join(f'"r"({w})' for w in words) + ");")


def _rounded(em: "object", value: str, rounding: str) -> str:
    """The TF32 bits of a float as the pattern rounds it (a fresh unsigned variable)."""
    name = em.names.fresh("lk_tf")  # type: ignore[attr-defined]
    if rounding == "truncTF32":
        em.line(f"unsigned {name} = __float_as_uint({value}) & 0xffffe000u;")  # type: ignore[attr-defined]
    else:  # toTF32: to nearest, ties away; infinities and NaNs unchanged
        em.line(f"unsigned {name} = __float_as_uint({value});")  # type: ignore[attr-defined]
        em.line(f"if (({name} & 0x7f800000u) != 0x7f800000u) {name} = ({name} + 0x1000u) & 0xffffe000u;")  # type: ignore[attr-defined]
    return name


# ---------------------------------------------------------------------------------------------
# the pattern


def reduce_wgmma(g: "Generator", p: P.ReduceWgmma, args: Sequence["Arg"], env: dict["Param", View],
                 ctx: "Ctx", dest: Optional[View]) -> View:
    """See the module docstring."""
    from liftkit.codegen.generator import Scope

    if isinstance(p, P.ReduceWgmmaTma):  # tiles copied by TMA: codegen/cuda_wgmma_tma.py
        from liftkit.codegen.cuda_wgmma_tma import reduce_wgmma_tma

        return reduce_wgmma_tma(g, p, args, env, ctx, dest)
    if isinstance(p, P.ReduceWgmmaAsync):  # tiles copied by cp.async: codegen/cuda_wgmma_async.py
        from liftkit.codegen.cuda_wgmma_async import reduce_wgmma_async

        return reduce_wgmma_async(g, p, args, env, ctx, dest)

    em = g.em
    warps, stages, threads, ls = warpgroup_geometry(g, p)
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    m, n, k, _ = p.check_tiles(g.result_type(p.f, [tt.elem], env, ctx.inside(p)))
    why = plan_error(m, n, k, warps, stages)
    if why is not None:
        raise CodegenError(f"{p.name} {warps} {stages}: {why}")
    groups, kt = warps // 4, tt.length
    blocks = m // groups // 64  # 64-row blocks per warpgroup
    out_t = ArrayType(ArrayType(ArrayType(p.acc, cst(n)), cst(m)), cst(1))
    if dest is None:
        dest = g.allocate(out_t, ctx.write_to or "global", ctx, "mma_tile")

    tid = hopper_prologue(g, p, ls, threads)

    # the staged tiles: s buffers of (A tile, B tile), 1024-byte aligned in shared memory
    sbytes = stage_bytes(m, n, k)
    buf = em.local_array(ArrayType(float32, cst((sbytes * stages + ALIGN) // 4)), "wgmma_stage", cst(1))
    smem = em.names.fresh("lk_smem")
    em.line(f"unsigned {smem} = ((unsigned)__cvta_generic_to_shared({buf.name}) + {ALIGN - 1}u) & ~{ALIGN - 1}u;")

    def operands(j: ArithExpr, c: "Ctx") -> tuple[View, View]:
        ops = g.apply(p.f, [tiles.access(j)], env, c, None)
        return ops.get(0), ops.get(1)

    a0, b0 = operands(cst(0), ctx.inside(p))
    ops = (_Operand(g, "a", m, k, a0, tid, warps, 0), _Operand(g, "b", n, k, b0, tid, warps, m * k * 4))
    for o in ops:
        for r in o.regs:
            em.line(f"float4 {r};")

    # accumulators: block fm of warpgroup wg, register i (n/8 groups of the m16n8 layout)
    w4, gv, tv = (Var(em.names.fresh(h), 0, r) for h, r in (("lk_w4", 4), ("lk_g", 8), ("lk_t", 4)))
    wg = Var(em.names.fresh("lk_wg"), 0, groups)
    em.line(f"int {wg.name} = {tid.name} / 128, {w4.name} = ({tid.name} / 32) % 4;")
    em.line(f"int {gv.name} = ({tid.name} % 32) >> 2, {tv.name} = {tid.name} & 3;")

    def c_elem(view: View, fm: int, i: int) -> View:
        row = wg * cst(blocks * 64) + cst(fm * 64) + w4 * cst(16) + gv + cst(8 * ((i % 4) // 2))
        col = cst(8 * (i // 4)) + tv * cst(2) + cst(i % 2)
        return view.access(row).access(col)

    acc: dict[tuple[int, int], str] = {}
    for fm in range(blocks):
        for i in range(n // 2):
            start = em.load(init) if isinstance(init.type, ScalarType) else em.load(c_elem(init, fm, i))
            acc[fm, i] = em.private_var(p.acc, f"c{fm}_{i}", start).name

    def pin() -> None:  # the accumulators stay where the asynchronous products write them
        for fm in range(blocks):
            regs = [acc[fm, i] for i in range(n // 2)]
            em.line('asm volatile("" : ' + ", ".join(f'"+f"({r})' for r in regs) + ' :: "memory");')

    def products(slot: str) -> None:
        pin()
        em.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
        regs_n = n // 2
        body = ", ".join(f"%{r}" for r in range(regs_n))
        for kk in range(k // 8):
            atom, step = divmod(kk * 8, WGMMA_ROW)
            b_addr = f"{slot} + {m * k * 4 + atom * n * ROW_BYTES + step * 4}u"
            for fm in range(blocks):
                a_addr = (f"{slot} + (unsigned)({wg.name} * {blocks * 64 * ROW_BYTES}) + "
                          f"{atom * m * ROW_BYTES + fm * 64 * ROW_BYTES + step * 4}u")
                outs = ", ".join(f'"+f"({acc[fm, i]})' for i in range(regs_n))
                em.line(f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs_n + 2}, 0;\\n'
                        f'wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{body}}}, '
                        f'%{regs_n}, %{regs_n + 1}, p, 1, 1;\\n}}\\n" : {outs} : '
                        f'"l"({_desc_c(a_addr)}), "l"({_desc_c(b_addr)}), "r"(1));')
        em.line('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')

    fence = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
    slot_of: Callable[[str], str] = lambda i: f"{smem} + ({i}) * {sbytes}u"  # noqa: E731

    # prologue: tile 0 stored, tile 1 in registers
    for o, x in zip(ops, (a0, b0)):
        o.load(x)
    for o in ops:
        o.store(slot_of("0"), p.rounding)
    with em.if_(f"1 < {kt.to_c()}"):
        for o, x in zip(ops, operands(cst(1), ctx.inside(p))):
            o.load(x)
    em.line(fence)
    em.barrier({"CLK_LOCAL_MEM_FENCE"})

    name = em.names.fresh("i")
    i = Var(name, 0, kt)
    with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 1"):
        c = replace(ctx, write_to=None).inside(p, Scope("seq", 0, i, kt))
        products(slot_of(f"{name} % {stages}"))
        with em.if_(f"{name} + 1 < {kt.to_c()}"):
            for o in ops:
                o.store(slot_of(f"({name} + 1) % {stages}"), p.rounding)
        # the proxy fence is a MEMBAR that waits for the thread's outstanding memory operations:
        # the next tile's loads go after it, so they stay in flight across the barrier
        em.line(fence)
        with em.if_(f"{name} + 2 < {kt.to_c()}"):
            for o, x in zip(ops, operands(i + cst(2), c)):
                o.load(x)
        em.line(f'asm volatile("wgmma.wait_group.sync.aligned {stages - 2};" ::: "memory");')
        pin()
        em.barrier({"CLK_LOCAL_MEM_FENCE"})
    em.line('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
    pin()
    out = dest.access(cst(0))
    for (fm, idx), acc_name in acc.items():
        em.store(c_elem(out, fm, idx), acc_name)
    return dest


def warpgroup_geometry(g: "Generator", p: P.ReduceWgmma) -> tuple[int, int, int, tuple[int, ...]]:
    """(warps, stages, threads, local size) of a warpgroup product, whose work-group must be
    exactly its warps: every copy and fragment is addressed by the thread's index in it."""
    warps, stages = p.warp_count(), p.stage_count()
    threads = WARP * warps
    ls = tuple(g.local_size or (1,))
    if _prod(ls) != threads:
        raise CodegenError(f"{p.name} {warps}: runs on {warps} warps ({threads} threads), but the "
                           f"work-group has {_prod(ls)}")
    return warps, stages, threads, ls


def hopper_prologue(g: "Generator", p: P.ReduceWgmma, ls: Sequence[int], threads: int) -> Var:
    """Refuse any target but sm_90a in the kernel itself (one NVRTC error line naming the
    pattern), then name the thread's index in the work-group, which every copy and fragment of
    the warpgroup kernels is addressed by."""
    em = g.em
    em.line("#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)")
    em.line(f'#error "{p.name} needs a Hopper GPU (sm_90a: warpgroup MMA, wgmma); this kernel is '
            'compiled for another target"')
    em.line("#endif")
    lcl = [em.dialect.ids("lcl", d) for d in range(len(ls))]
    lin = lcl[0] + "".join(f" + {_prod(ls[:d])} * {lcl[d]}" for d in range(1, len(ls)) if ls[d] > 1)
    tid_name = em.names.fresh("lk_tid")
    em.line(f"int {tid_name} = {lin};")
    return Var(tid_name, 0, threads)


def _desc_c(address: str) -> str:
    return f"(0x{DESC_FIXED:x}ull | (unsigned long long)((({address}) & 0x3FFFFu) >> 4))"


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
