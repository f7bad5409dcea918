"""Code generation for reduceWgmmaAsyncTF32 / reduceWgmmaAsyncTF32Z (`liftkit.ir.patterns.cuda`):
Hopper's warpgroup MMA fed by cp.async, with no staging through registers on the way in.

TF32 wgmma reads only k-major tiles from shared memory, and B of a row-major product lies along
its rows (n-major). So the kernel computes Cᵀ = B·Aᵀ: the A tile (m×k, contiguous along k) is
the instruction's shared-memory operand (its n = m), copied 16 bytes at a time by
`cp.async.cg.shared.global` straight into the 128-byte-swizzled layout of codegen/cuda_wgmma.py
(`offset`, `descriptor`); the B tile (k×n in memory) is copied as it lies, k rows of n floats,
16-byte chunk j of row r at position (j mod 8) xor 2(r mod 4) of its 128-byte line (`b_offset`:
the fragment loads below touch every bank once per phase); each warpgroup then loads its rows of
B from shared memory into the A-fragment registers of `wgmma.mma_async…tf32` (register form),
rounding them on the way as the pattern's name says.

Rows of B per warpgroup: nb 64-row blocks (nb 1 or 2). Lane (g, t) of warp w4 holds, for k-step
s, the fragment rows g and g+8 at k 8s+t and 8s+t+4; row g+8h of block fb is column
`b_column` = wg·64nb + w4·16nb + 2nb·g + 2fb + h of C, so a lane's 2nb columns are adjacent: one
8- or 16-byte shared load per k, and at the end one 8- or 16-byte store per row of C.

Pipeline, s stages, L = s-2 tiles copied ahead. Per tile i: B's fragments move from `pre` to
the registers the products read (16 register moves), wgmma.fence, the products of tile i,
commit; while they run, tile i+1 is prepared: cp.async.wait_group L-1 (tile i+1 landed, the
thread's own copies), each thread rewrites its own pieces of A rounded (TF32) or truncated
(TF32Z) in place, then
fence.proxy.async (cp.async and the rounding write through the generic proxy, the tensor cores
read through the async one: without the fence they read stale tiles, as run 1's truncating
kernels did; run 2's completion through an mbarrier per stage, cp.async.mbarrier.arrive, without
the fence was wrong as well), one barrier (every thread's copies visible; every warpgroup's
products of tile i-1 done; with a pair, a cluster barrier, release/acquire: the partner reads
this block's B), the copies of tile i+1+L into the buffer of tile i-1, B's fragments of tile
i+1 from shared memory into `pre`, rounded; then wgmma.wait_group 0. The products never read a
register written while they run (ptxas serialises the warpgroup MMA otherwise, warning C7513,
or silently inserts a wait), and the tensor cores idle only for the register moves between two
tiles. TF32Z truncates A in the same pass (the tensor cores would read the raw bits truncated,
results/issue12/wgmma/run2/raw_operands.log, but the pass is what makes the proxy fence order
the copies: a fence alone after the copies was not checked on a GPU) and B in registers.

Only the pair (reduceWgmmaPair…, 2-block clusters sharing B) is generated: the one-block form
gave wrong products over several k-tiles on the H100 for 4 of 8 tilings
(results/final22/runB/wgmma.log) and is refused in one line until the cause is found.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst, divides
from liftkit.codegen import views as V
from liftkit.codegen.cuda_wgmma import (ALIGN, MAX_ACCUMULATORS, ROW_BYTES, SHARED_LIMIT, _desc_c,
                                        _rounded, global_element, global_vector,
                                        hopper_prologue, tile_direction,
                                        warpgroup_geometry)
from liftkit.codegen.views import CodegenError, MemLoc, View
from liftkit.ir import patterns as P
from liftkit.ir.patterns.cuda import WARP, WGMMA_ASYNC_MAX_M, WGMMA_ROW
from liftkit.types import ArrayType, ScalarType, float32

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.emit import Emitter
    from liftkit.codegen.generator import Arg, Ctx, Generator
    from liftkit.ir.nodes import Param


def plan_error(m: int, n: int, k: int, warps: int, stages: int, pair: bool = False) -> Optional[str]:
    """Why w warps cannot run an m×n×k tile with cp.async `stages` deep (`pair`: B shared by
    the two blocks of a cluster, each copying half its k-rows), in words, or None."""
    groups = warps // 4
    threads = WARP * warps
    if (warps % 4 or not groups or m % 8 or not 8 <= m <= WGMMA_ASYNC_MAX_M or n % (64 * groups)
            or n // (64 * groups) not in (1, 2) or k % WGMMA_ROW):
        return (f"{warps} warps cannot share a {m}×{n}×{k} tile with B in registers (m a multiple "
                f"of 8 up to {WGMMA_ASYNC_MAX_M}, n one or two 64-row blocks per warpgroup, k a "
                f"multiple of {WGMMA_ROW})")
    if n // (64 * groups) * m // 2 > MAX_ACCUMULATORS:
        return f"{n // (64 * groups) * m // 2} accumulators per lane (at most {MAX_ACCUMULATORS})"
    for rows in (m, n):
        if (rows * k // 4) % threads:
            return f"the {rows}×{k} tile's 16-byte pieces do not divide among {threads} threads"
    if pair and m > 128:  # run 1: CUDA_ERROR_INVALID_CLUSTER_SIZE at launch (the H100), cause not found
        return f"{m} rows of A per block: 2-block clusters launched only with at most 128 (checked on an H100)"
    if pair and ((n * k // 8) % threads or k % 16):
        return f"half of the {n}×{k} B tile does not divide among {threads} threads in whole k-steps"
    if not 3 <= stages <= 6:
        return f"{stages} stages (3 to 6: two tiles in the products, the rest in flight)"
    if stage_bytes(m, n, k) * stages + ALIGN > SHARED_LIMIT:
        return f"{stages} staged {m}×{n}×{k} tiles need more than {SHARED_LIMIT // 1024} KB of shared memory"
    return None


def stage_bytes(m: int, n: int, k: int) -> int:
    return (m + n) * k * 4


def b_offset(r: int, j: int, n: int) -> int:
    """Byte offset of 16-byte chunk j (columns 4j..4j+3) of k-row r of the staged B tile."""
    return r * n * 4 + (j // 8) * ROW_BYTES + (((j % 8) ^ (2 * (r % 4))) << 4)


def b_column(wg: int, w4: int, g: int, fb: int, h: int, nb: int) -> int:
    """The column of C (row of B's tile) that fragment row g + 8h of block fb of warp w4 of
    warpgroup wg carries."""
    return wg * 64 * nb + w4 * 16 * nb + 2 * nb * g + 2 * fb + h


def a_pieces(m: int, k: int, threads: int, tid: ArithExpr) -> list[tuple[ArithExpr, ArithExpr]]:
    """(row, 16-byte chunk along k) of the A pieces thread `tid` copies: 8 lanes per row."""
    per = k // 4
    return [((tid + cst(threads * j)) // cst(per), (tid + cst(threads * j)) % cst(per))
            for j in range(m * per // threads)]


def b_pieces(n: int, k: int, threads: int, tid: ArithExpr) -> list[tuple[ArithExpr, ArithExpr]]:
    """(k-row, 16-byte chunk along n) of the B pieces thread `tid` copies: a warp per line run."""
    per = n // 4
    return [((tid + cst(threads * j)) // cst(per), (tid + cst(threads * j)) % cst(per))
            for j in range(k * per // threads)]


def _a_addr(stage: str, row: ArithExpr, c: ArithExpr, m: int) -> str:
    r, cc = f"({row.to_c()})", f"({c.to_c()})"
    return (f"{stage} + (unsigned)(({cc} >> 3) * {m * ROW_BYTES} + {r} * {ROW_BYTES} + "
            f"((({cc} & 7) ^ ({r} & 7)) << 4))")


def _b_addr(stage: str, base: int, r: str, j: str, n: int) -> str:
    return (f"{stage} + {base}u + (unsigned)(({r}) * {n * 4} + (({j}) >> 3) * {ROW_BYTES} + "
            f"(((({j}) & 7) ^ ((({r}) & 3) << 1)) << 4))")


def fragment_addr(stage: str, base: int, n: int, nb: int, k0: int, t: str, col: str) -> str:
    """The shared-memory address of a lane's 2nb adjacent B elements at k-row k0 + t, columns
    col.. (col a multiple of 2nb) of the staged B tile (C expressions t, col)."""
    r = f"({k0} + {t})"
    addr = _b_addr(stage, base, r, f"({col} >> 2)", n)
    return addr + (f" + (unsigned)(({col} & 3) << 2)" if nb == 1 else "")


def reduce_wgmma_async(g: "Generator", p: P.ReduceWgmmaAsync, args: Sequence["Arg"],
                       env: dict["Param", View], ctx: "Ctx", dest: Optional[View]) -> View:
    """See the module docstring."""
    from liftkit.codegen.generator import Scope

    em = g.em
    warps, stages, threads, ls = warpgroup_geometry(g, p)
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    m, n, k, _ = p.check_tiles(g.result_type(p.f, [tt.elem], env, ctx.inside(p)))
    pair = isinstance(p, P.ReduceWgmmaPair)
    why = plan_error(m, n, k, warps, stages, pair)
    if why is not None:
        raise CodegenError(f"{p.name} {warps} {stages}: {why}")
    groups, kt, ahead = warps // 4, tt.length, stages - 2
    nb = n // (64 * groups)  # 64-row blocks of B per warpgroup
    out_t = ArrayType(ArrayType(ArrayType(p.acc, cst(n)), cst(m)), cst(1))
    if dest is None:
        dest = g.allocate(out_t, ctx.write_to or "global", ctx, "mma_tile")

    tid = hopper_prologue(g, p, ls, threads)

    rank: ArithExpr = cst(0)
    if pair:
        _pair_cluster(g, p, ctx)
        rank_name = em.names.fresh("lk_rank")
        em.line(f'unsigned {rank_name}; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"({rank_name}));')
        rank = Var(rank_name, 0, 2)

    sbytes, b_base = stage_bytes(m, n, k), m * k * 4
    buf = em.local_array(ArrayType(float32, cst((sbytes * stages + ALIGN) // 4)), "wgmma_stage", cst(1))
    smem = em.names.fresh("lk_smem")
    em.line(f"unsigned {smem} = ((unsigned)__cvta_generic_to_shared({buf.name}) + {ALIGN - 1}u) & ~{ALIGN - 1}u;")
    slot = lambda i: f"{smem} + (unsigned)(({i}) % {stages}) * {sbytes}u"  # noqa: E731

    operands, _, _ = raw_tile_operands(g, p, tiles, env, ctx, m, n, k)
    if not pair:
        raise CodegenError(
            f"{p.name} {warps} {stages}: its kernel gave wrong products on the H100 for some "
            "tilings (results/final22/runB/wgmma.log: 4 of 8; the same tiles in 2-block "
            "clusters were right), so it is not generated until the cause is found; multiply "
            "the tiles with reduceWgmmaPair (mm-wgmma-pair) or reduceWgmma (mm-wgmma)")
    ap = a_pieces(m, k, threads, tid)
    # this block copies k-rows [rank·k/2, (rank+1)·k/2) of B's tile; the lanes read each half
    # of B in its owner's shared memory
    bp = [(r + rank * cst(k // 2), ch) for r, ch in b_pieces(n, k // 2, threads, tid)]
    owner_base = [em.names.fresh(f"lk_sm{o}") for o in range(2)]
    for o, nm in enumerate(owner_base):
        em.line(f'unsigned {nm}; asm volatile("mapa.shared::cluster.u32 %0, %1, {o};" : "=r"({nm}) : "r"({smem}));')

    def issue(j: ArithExpr, at: str, c: "Ctx") -> None:
        a, b = operands(j, c)
        for row, ch in ap:
            src = global_vector(g, global_element(g, a.access(row).access(ch * cst(4))))
            em.line(f'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: '
                    f'"r"({_a_addr(at, row, ch, m)}), "l"(&{src}) : "memory");')
        for r, ch in bp:
            src = global_vector(g, global_element(g, b.access(ch * cst(4)).access(r)))
            em.line(f'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: '
                    f'"r"({_b_addr(at, b_base, r.to_c(), ch.to_c(), n)}), "l"(&{src}) : "memory");')

    commit = 'asm volatile("cp.async.commit_group;" ::: "memory");'

    # lane coordinates: warpgroup, warp in it, group g and thread t of the fragment layouts
    wg, w4, gv, tv = (em.names.fresh(h) for h in ("lk_wg", "lk_w4", "lk_g", "lk_t"))
    em.line(f"int {wg} = {tid.name} / 128, {w4} = ({tid.name} / 32) % 4;")
    em.line(f"int {gv} = ({tid.name} % 32) >> 2, {tv} = {tid.name} & 3;")
    col, c_view, acc = lane_accumulators(em, p, init, (wg, w4, gv, tv), groups, m, nb)
    # B's fragments: `pre` takes them from shared memory while the products of the previous
    # tile still run; `frag`, what the products read, is written only once those are done (ptxas
    # serialises the warpgroup MMA when a register it reads may change while it runs)
    keys = [(fb, kk, r) for fb in range(nb) for kk in range(k // 8) for r in range(4)]
    pre = {key: em.names.fresh("lk_pre") for key in keys}
    frag = {key: em.names.fresh("lk_frag") for key in keys}
    em.line("unsigned " + ", ".join(list(pre.values()) + list(frag.values())) + ";")

    def fragments(i: str) -> None:
        """B's rows of this lane from staged tile i into `pre`, rounded: the block's own half
        by ld.shared, the other's by ld.shared::cluster (one branch per rank)."""
        for me in range(2):
            with em.if_(f"{rank.to_c()} == {me}u"):
                fragment_loads(i, lambda owner: (smem, "shared") if owner == me
                               else (owner_base[owner], "shared::cluster"))

    def fragment_loads(i: str, place: Callable[[int], tuple[str, str]]) -> None:
        def at(kk: int, hk: int) -> tuple[str, str]:
            base, space = place((8 * kk) // (k // 2))
            stage = f"{base} + (unsigned)(({i}) % {stages}) * {sbytes}u"
            return space, fragment_addr(stage, b_base, n, nb, 8 * kk + 4 * hk, tv, col)
        load_fragments(em, p, pre, k, nb, at)

    def products(at: str) -> None:
        for key in keys:
            em.line(f'asm volatile("mov.b32 %0, %1;" : "=r"({frag[key]}) : "r"({pre[key]}));')
        pin_accumulators(em, acc, nb, m)
        wgmma_products(em, at, acc, frag, m, k, nb)

    def round_a(at: str) -> None:
        """This thread's own pieces of A, landed, rounded in place as the pattern says."""
        for row, ch in ap:
            addr = em.names.fresh("lk_ra")
            em.line(f"unsigned {addr} = {_a_addr(at, row, ch, m)};")
            words = [em.names.fresh("lk_aw") for _ in range(4)]
            em.line("unsigned " + ", ".join(words) + ";")
            em.line('asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : '
                    + ", ".join(f'"=r"({x})' for x in words) + f' : "r"({addr}));')
            rounded = [_rounded(em, f"__uint_as_float({x})", p.rounding) for x in words]
            em.line(f'asm volatile("st.shared.v4.b32 [%0], {{%1, %2, %3, %4}};" :: "r"({addr}), '
                    + ", ".join(f'"r"({x})' for x in rounded) + ' : "memory");')

    def prepare(j: ArithExpr, c: "Ctx") -> None:
        """Tile j landed (and rounded), every thread's copies visible, the copies of tile j+L
        issued, B's fragments of tile j in `pre`."""
        jc = f"({j.to_c()})"
        em.line(f'asm volatile("cp.async.wait_group {ahead - 1};" ::: "memory");')
        # each thread's own pieces of A rewritten rounded (TF32) or truncated (TF32Z: the same
        # values the tensor cores would read, but the sequence run 1 checked on the GPU, where
        # the truncating kernels without this pass and fence were wrong), then fenced
        round_a(slot(jc))
        # cp.async (and the rounding) wrote through the generic proxy; the tensor cores read
        # through the async proxy: without this fence they read stale data (run 1: the truncating
        # kernels, which had none, were wrong on 99 % of the elements)
        em.line('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
        barrier()
        with em.if_(f"{jc} + {ahead} < {kt.to_c()}"):
            issue(j + cst(ahead), slot(f"{jc} + {ahead}"), c)
        em.line(commit)
        fragments(jc)

    def barrier() -> None:
        """Every thread's copies visible and its products of two tiles back done in both blocks
        of the cluster (which also read each other's B). Release/acquire: the partner reads this
        block's copies (a MEMBAR.ALL.GPU per tile in SASS; run 2's relaxed arrive was 1.2x
        faster and passed the checks, but the memory model does not order the partner's reads
        without the release)."""
        em.line('asm volatile("barrier.cluster.arrive.release.aligned;\\n'
                'barrier.cluster.wait.acquire.aligned;" ::: "memory");')

    # prologue: tiles 0 .. L-1 in flight, tile 0 prepared
    for j in range(ahead):
        with em.if_(f"{j} < {kt.to_c()}"):
            issue(cst(j), slot(j), ctx.inside(p))
        em.line(commit)
    with em.if_(f"0 < {kt.to_c()}"):
        prepare(cst(0), ctx.inside(p))

    name = em.names.fresh("i")
    i = Var(name, 0, kt)
    with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 1"):
        c = replace(ctx, write_to=None).inside(p, Scope("seq", 0, i, kt))
        products(slot(name))
        with em.if_(f"{name} + 1 < {kt.to_c()}"):
            prepare(i + cst(1), c)
        em.line('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
        pin_accumulators(em, acc, nb, m)
    em.line('asm volatile("cp.async.wait_group 0;" ::: "memory");')
    # neither block leaves while the other may still read its shared memory
    em.line('asm volatile("barrier.cluster.arrive.release.aligned;\\n'
            'barrier.cluster.wait.acquire.aligned;" ::: "memory");')

    store_accumulators(g, dest.access(cst(0)), c_view, acc, m, nb)
    return dest


def _pair_cluster(g: "Generator", p: P.ReduceWgmma, ctx: "Ctx") -> None:
    """The kernel launched in 2-block clusters along dimension 1; the pattern's work-groups along
    it must come in pairs (an even count: else one block would wait for a partner forever)."""
    wrg = [s for s in ctx.scopes if s.kind == "wrg" and s.dim == 1]
    if not wrg:
        raise CodegenError(f"{p.name} shares B between the two blocks of a cluster along "
                           "dimension 1: use it inside a mapWrg(1) over row tiles")
    length = wrg[-1].length
    if length.is_constant and length.value % 2:  # type: ignore[attr-defined]
        raise CodegenError(f"{p.name}: {length} work-groups along dimension 1 cannot pair up "
                           "(2-block clusters): the row tiles must be even in number")
    g.em.kernel_attributes.append("__cluster_dims__(1, 2, 1)")
    if not (length.is_constant or divides(cst(2), length)):
        raise CodegenError(f"{p.name}: the number of row tiles ({length}) must be known even "
                           "(2-block clusters): split the rows in pairs first (join ∘ split 2, "
                           "as mm-wgmma-pair does)")


def _vector_place(g: "Generator", views: Sequence[View]) -> Optional[str]:
    """The float2/float4 lvalue covering these adjacent elements of a global buffer, or None."""
    try:
        locs = [g.em.resolve(v) for v in views]
    except V.NeedsTupleIndex:
        return None
    first = locs[0]
    if not all(isinstance(x, MemLoc) and x.mem is first.mem and not x.fields and not x.width
               and x.lane is None for x in locs) or first.mem.space != "global":
        return None
    for x, loc in enumerate(locs):
        diff = loc.offset - first.offset
        if not (diff.is_constant and diff.value == x):  # type: ignore[attr-defined]
            return None
    return g.em.aligned_vector(MemLoc(first.mem, first.offset, (), len(locs)))


def raw_tile_operands(g: "Generator", p: P.ReduceWgmma, tiles: View, env: dict["Param", View],
                      ctx: "Ctx", m: int, n: int, k: int
                      ) -> tuple[Callable[[ArithExpr, "Ctx"], tuple[View, View]], View, View]:
    """(`operands`, A's tile 0, B's tile 0): operands(j, ctx), the views of A's and B's tile j
    as the pattern's function lays out the pair, checked at tile 0 to lie as the raw copies
    (cp.async, TMA) take them: A contiguous along k, B along its rows."""
    def operands(j: ArithExpr, c: "Ctx") -> tuple[View, View]:
        ops = g.apply(p.f, [tiles.access(j)], env, c, None)
        return ops.get(0), ops.get(1)

    a0, b0 = operands(cst(0), ctx.inside(p))
    if not tile_direction(g, a0, m, k) or tile_direction(g, b0, n, k):
        raise CodegenError(f"{p.name} copies A's tile into the tensor cores' k-major layout and "
                           "B's as it lies: A must be contiguous along k and B along its rows (a "
                           "row-major product); other layouts: reduceWgmmaTF32 stages through registers")
    return operands, a0, b0


def lane_accumulators(em: "Emitter", p: P.ReduceWgmma, init: View, lanes: tuple[str, str, str, str],
                      groups: int, m: int, nb: int
                      ) -> tuple[str, Callable[[View, int, int], View], dict[tuple[int, int], str]]:
    """A consumer lane's accumulators, for the cp.async and the TMA warpgroup loops alike:
    (`col`, the first of the lane's 2nb adjacent columns of B's tile, declared here; `c_view`,
    register i of block fb as an element of a view of C; the registers by (fb, i), started from
    `init`). `lanes`: the declared names of the warpgroup, its warp, group g and thread t.

    Block fb's accumulators hold D = B·Aᵀ, m64 (B's rows) × m (A's rows): register i is D's row
    16·w4 + g + 8((i mod 4)/2) (column b_column(…, fb, h) of C) and column 8(i/4) + 2t + i mod 2."""
    wg, w4, gv, tv = lanes
    col = em.names.fresh("lk_col")
    em.line(f"int {col} = {wg} * {64 * nb} + {w4} * {16 * nb} + {gv} * {2 * nb};")
    wgv, w4v, gvv, tvv = (Var(nm, 0, r) for nm, r in ((wg, groups), (w4, 4), (gv, 8), (tv, 4)))
    colv = wgv * cst(64 * nb) + w4v * cst(16 * nb) + gvv * cst(2 * nb)

    def c_view(view: View, fb: int, i: int) -> View:
        return view.access(cst(8 * (i // 4)) + tvv * cst(2) + cst(i % 2)).access(
            colv + cst(2 * fb + (i % 4) // 2))

    acc: dict[tuple[int, int], str] = {}
    for fb in range(nb):
        for i in range(m // 2):
            start = em.load(init) if isinstance(init.type, ScalarType) else em.load(c_view(init, fb, i))
            acc[fb, i] = em.private_var(p.acc, f"c{fb}_{i}", start).name
    return col, c_view, acc


def pin_accumulators(em: "Emitter", acc: dict[tuple[int, int], str], nb: int, m: int) -> None:
    """An empty asm that reads and writes every accumulator: they stay in the registers where
    the asynchronous products write them."""
    for fb in range(nb):
        regs = [acc[fb, i] for i in range(m // 2)]
        em.line('asm volatile("" : ' + ", ".join(f'"+f"({r})' for r in regs) + ' :: "memory");')


def load_fragments(em: "Emitter", p: P.ReduceWgmma, frags: dict[tuple[int, int, int], str],
                   k: int, nb: int, place: Callable[[int, int], tuple[str, str]],
                   clobber: str = "") -> None:
    """A lane's B rows of a staged tile into its fragment registers `frags` (by block, k-step,
    register), rounded as the pattern says: one ld.{space}.v2nb per k-row, where
    place(k-step, half) gives (space, address); `clobber`, the asm's clobber list."""
    w = 2 * nb
    for kk in range(k // 8):
        for hk in range(2):
            words = [em.names.fresh("lk_bw") for _ in range(w)]
            em.line("unsigned " + ", ".join(words) + ";")
            space, addr = place(kk, hk)
            outs = ", ".join(f"%{x}" for x in range(w))
            em.line(f'asm volatile("ld.{space}.v{w}.b32 {{{outs}}}, [%{w}];" : '
                    + ", ".join(f'"=r"({x})' for x in words) + f' : "r"({addr}){clobber});')
            for x, word in enumerate(words):  # word x: block x/2, row half x mod 2
                em.line(f"{frags[x // 2, kk, 2 * hk + x % 2]} = "
                        f"{_rounded(em, f'__uint_as_float({word})', p.rounding)};")


def wgmma_products(em: "Emitter", at: str, acc: dict[tuple[int, int], str],
                   frags: dict[tuple[int, int, int], str], m: int, k: int, nb: int) -> None:
    """The products of one staged tile (A's shared-memory stage at `at`, B in `frags`) into the
    accumulators, between wgmma.fence and wgmma.commit_group."""
    regs_n = m // 2
    em.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    body = ", ".join(f"%{r}" for r in range(regs_n))
    for kk in range(k // 8):
        atom, step = divmod(kk * 8, WGMMA_ROW)
        a_desc = _desc_c(f"{at} + {atom * m * ROW_BYTES + step * 4}u")
        for fb in range(nb):
            outs = ", ".join(f'"+f"({acc[fb, i]})' for i in range(regs_n))
            fr = ", ".join(f'"r"({frags[fb, kk, r]})' for r in range(4))
            em.line(f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs_n + 5}, 0;\\n'
                    f'wgmma.mma_async.sync.aligned.m64n{m}k8.f32.tf32.tf32 {{{body}}}, '
                    f'{{%{regs_n}, %{regs_n + 1}, %{regs_n + 2}, %{regs_n + 3}}}, %{regs_n + 4}, p, 1, 1;\\n}}\\n" : '
                    f'{outs} : {fr}, "l"({a_desc}), "r"(1));')
    em.line('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')


def store_accumulators(g: "Generator", out: View, c_view: Callable[[View, int, int], View],
                       acc: dict[tuple[int, int], str], m: int, nb: int) -> None:
    """The accumulators into C (`out`, through `c_view`): per row of C, the lane's 2nb adjacent
    columns as one float2/float4 store where C allows it, else element by element."""
    w = 2 * nb
    for i4 in range(m // 8):
        for lo in range(2):  # C's row 8·i4 + 2t + lo: the lane's w adjacent columns
            vals = [acc[x // 2, 4 * i4 + 2 * (x % 2) + lo] for x in range(w)]
            views = [c_view(out, x // 2, 4 * i4 + 2 * (x % 2) + lo) for x in range(w)]
            vec = _vector_place(g, views)
            if vec is not None:
                g.em.line(f"{vec} = make_float{w}({', '.join(vals)});")
            else:
                for v, val in zip(views, vals):
                    g.em.store(v, val)
