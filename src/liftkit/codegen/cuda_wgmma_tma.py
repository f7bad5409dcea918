"""Code generation for reduceWgmmaTmaTF32Z (`liftkit.ir.patterns.cuda`): Hopper's warpgroup MMA
fed by the bulk tensor copy engine (TMA), a producer warpgroup beside the consumers.

As in codegen/cuda_wgmma_async.py the kernel computes Cᵀ = B·Aᵀ (TF32 wgmma reads only k-major
tiles from shared memory, and B of a row-major product lies along n): A's tile (m×k, contiguous
along k) is the instruction's shared-memory operand, B's tile (k rows of n floats) goes from
shared memory into the A-fragment registers of the register form of `wgmma.mma_async…tf32`.
What differs is how the tiles arrive:

- Two tensor maps (`CUtensorMap`, encoded by the host for each launch, kernel parameters
  `const __grid_constant__`, `liftkit.codegen.kernel.TensorMap`): A as rows of K floats in boxes
  of 32×m with the 128-byte swizzle, which lays each k-atom out exactly as the matrix
  descriptors read it (`cuda_wgmma.offset`); B as rows of N floats in one box of n×k, unswizzled
  (a lane's 2nb adjacent columns are one 8- or 16-byte shared load; with nb = 2 a warp's loads
  touch every bank once per 128 bytes).
- `s` stages, each with a `full` and an `empty` mbarrier. One thread of the producer warpgroup
  (the last, `setmaxnreg.dec` to 40 registers) waits until stage i mod s is empty, arms its full
  barrier with the tile's bytes (`mbarrier.arrive.expect_tx`) and issues the copies
  (`cp.async.bulk.tensor.2d…mbarrier::complete_tx::bytes`), which complete on it. The copy
  engine writes through the async proxy, which the tensor cores read as well: no fence, no
  block barrier per tile.
- The consumer warpgroups (`setmaxnreg.inc`, with two of them) per tile i: wgmma.fence, the
  products of tile i, commit; `wgmma.wait_group` (0, or 1 with a tile in flight: `Schedule`);
  one arrive per warp on the empty barrier of the tile whose products are done; wait for tile
  i+1's full barrier (`mbarrier.try_wait.parity`, phase (i+1)/s mod 2) and load its B
  fragments into a register set no running product reads.
- reduceWgmmaTmaPair…: 2-block clusters along the row tiles; each block copies half of their
  common B tile's k-rows to both (`.multicast::cluster`), so each stage's empty barrier counts
  the consumer warps of both blocks (remote arrives through `mapa`), and the blocks meet at a
  cluster barrier after the barriers' initialisation and before leaving.
- One block per work-group (`whole_grid`: the mapWrg's are `if`s): ptxas gives the consumers
  setmaxnreg's registers only outside loops.

Every tiling the rule offers passes `plan_error`; the GPU check (results/issue12/tma/) runs each
over several k-tiles and pipeline wraps before any is offered to the search.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst
from liftkit.codegen import views as V
from liftkit.codegen.cuda_wgmma import (ALIGN, ROW_BYTES, SHARED_LIMIT, global_element,
                                        hopper_prologue)
from liftkit.codegen.cuda_wgmma_async import (_pair_cluster, lane_accumulators, load_fragments,
                                              pin_accumulators, raw_tile_operands,
                                              store_accumulators, wgmma_products)
from liftkit.codegen.kernel import TensorMap
from liftkit.codegen.views import CodegenError, MemLoc, View
from liftkit.ir import patterns as P
from liftkit.ir.patterns.cuda import WARP, WGMMA_ROW
from liftkit.types import ArrayType, float32

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator
    from liftkit.ir.nodes import Param

PRODUCER_REGISTERS = 40  # the producer warpgroup's registers after setmaxnreg.dec
REGISTER_FILE = 65536  # 32-bit registers of an SM, all for one block
MAX_CONSUMER_REGISTERS = 192  # accumulators + both fragment sets, leaving room for addresses


@dataclass(frozen=True)
class Schedule:
    """How the consumers order a tile's steps (both checked on an H100 for every offered tiling,
    results/issue12/tma/run3). `after`: the products of tile i, `wgmma.wait_group 0`, then B's
    fragments of tile i+1 into the one register set. `inflight`: two sets used in turn (the
    loop unrolled by two), `wait_group 1`, so one tile's products stay in flight while the next
    tile's fragments load; an empty asm reads each set once the products reading it are known
    done, so that no other value takes its registers before. (A third order, the next
    fragments loaded into a second set during `wait_group 0`'s products and moved over after
    it, was wrong on the H100 on every two-warpgroup tiling, run 2, though its SASS kept the
    sets apart; it is not generated.)"""

    mode: str = "after"

    @property
    def sets(self) -> int:
        return 1 if self.mode == "after" else 2


def default_schedule(stages: int) -> Schedule:
    """inflight from 4 stages (run 3: 256x128x32 s4 0.377 ms against 0.440 after), after below
    (with 2 or 3 stages a tile in flight holds back the release the producer waits for: s2
    0.734 against 0.518 ms)."""
    return Schedule("inflight" if stages >= 4 else "after")


# benchmarks/cuda_wgmma_tma.py sets this to compare the schedules; None: default_schedule
SCHEDULE: Optional[Schedule] = None


def plan_error(m: int, n: int, k: int, warps: int, stages: int,
               schedule: Optional["Schedule"] = None, pair: bool = False) -> Optional[str]:
    """Why `warps` consumer warps (and a producer warpgroup) cannot run an m×n×k tile with TMA
    copies `stages` deep, in words, or None."""
    groups = warps // 4
    if warps % 4 or groups not in (1, 2) or m % 8 or not 8 <= m <= 256 or k % WGMMA_ROW:
        return (f"{warps} consumer warps cannot share a {m}×{n}×{k} tile (one or two consumer "
                f"warpgroups; m a multiple of 8 up to 256; k a multiple of {WGMMA_ROW})")
    if n % (64 * groups) or n // (64 * groups) not in (1, 2):
        return f"n = {n} is not one or two 64-row blocks of B per consumer warpgroup ({groups})"
    nb = n // (64 * groups)
    sets = (schedule or SCHEDULE or default_schedule(stages)).sets  # fragment register sets
    regs = nb * m // 2 + sets * nb * k // 2
    if regs > MAX_CONSUMER_REGISTERS:
        return f"{regs} accumulator and fragment registers per lane (at most {MAX_CONSUMER_REGISTERS})"
    if n > 256 or k > 256:
        return f"a {n}×{k} box of B (a tensor map's box has at most 256 elements a side)"
    if not 2 <= stages <= 8:
        return f"{stages} stages (2 to 8)"
    if pair and k % 16:
        return f"k = {k}: a pair's blocks copy half of B's k-rows each (k a multiple of 16)"
    if shared_bytes(m, n, k, stages) > SHARED_LIMIT:
        return f"{stages} staged {m}×{n}×{k} tiles need more than {SHARED_LIMIT // 1024} KB of shared memory"
    return None


def stage_bytes(m: int, n: int, k: int) -> int:
    return (m + n) * k * 4


def shared_bytes(m: int, n: int, k: int, stages: int) -> int:
    """The stages, two mbarriers per stage, and the slack to align the stages to 1024 bytes."""
    return stage_bytes(m, n, k) * stages + 16 * stages + ALIGN


def consumer_registers(groups: int) -> int:
    """Registers per consumer thread after setmaxnreg.inc: the SM's file less the producer's,
    a multiple of 8, at most 256."""
    return min(256, (REGISTER_FILE - 128 * PRODUCER_REGISTERS) // (128 * groups) // 8 * 8)


def b_column(wg: int, w4: int, g: int, fb: int, h: int, nb: int) -> int:
    """The column of C (row of B's tile) that fragment row g + 8h of block fb of warp w4 of
    consumer warpgroup wg carries (as in reduceWgmmaAsync)."""
    return wg * 64 * nb + w4 * 16 * nb + 2 * nb * g + 2 * fb + h


def b_fragment_offset(kk: int, t: int, col: int, n: int) -> int:
    """Byte offset in the staged B tile (k rows of n floats, as TMA lands them unswizzled) of a
    lane's first element at k-row kk + t, column col."""
    return (kk + t) * n * 4 + col * 4


def _tile_origin(g: "Generator", x: View, along_k: bool) -> tuple[MemLoc, ArithExpr]:
    """Where tile x's first element lies, and the buffer's row stride (in elements) between
    consecutive k-rows (B) or rows (A) of the tile."""
    first = global_element(g, x.access(cst(0)).access(cst(0)))
    step = x.access(cst(1)).access(cst(0)) if along_k else x.access(cst(0)).access(cst(1))
    return first, global_element(g, step).offset - first.offset


def _tile_map(g: "Generator", x: View, along_k: bool, box: tuple[int, int], swizzle: int,
              hint: str) -> str:
    """A tensor map over the input buffer tile x lies in, as rows of the buffer's row stride
    (registered as a kernel parameter; its C name)."""
    loc, stride = _tile_origin(g, x, along_k)
    mem = loc.mem
    if mem.kind != "param" or not stride.free_vars() <= mem.count.free_vars():
        raise CodegenError(f"the bulk tensor copy reads {hint}'s tiles from a kernel input with "
                           "rows of a length known at launch")
    name = g.em.names.fresh(f"lk_map_{hint}")
    g.em.tensor_maps.append((name, mem.name, TensorMap(stride, mem.count, box, swizzle)))
    return name


def reduce_wgmma_tma(g: "Generator", p: P.ReduceWgmmaTma, args: Sequence["Arg"],
                     env: dict["Param", View], ctx: "Ctx", dest: Optional[View],
                     schedule: Optional[Schedule] = None) -> View:
    """See the module docstring."""
    from liftkit.codegen.generator import Scope

    em = g.em
    warps, stages = p.warp_count(), p.stage_count()
    groups = warps // 4
    threads = WARP * (warps + 4)
    ls = tuple(g.local_size or (1,))
    total = 1
    for x in ls:
        total *= x
    if total != threads:
        raise CodegenError(f"{p.name} {warps}: runs on {warps} consumer warps and a producer "
                           f"warpgroup ({threads} threads), but the work-group has {total}")
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    m, n, k, _ = p.check_tiles(g.result_type(p.f, [tt.elem], env, ctx.inside(p)))
    why = plan_error(m, n, k, warps, stages, schedule, isinstance(p, P.ReduceWgmmaTmaPair))
    if why is not None:
        raise CodegenError(f"{p.name} {warps} {stages}: {why}")
    kt, nb = tt.length, n // (64 * groups)
    out_t = ArrayType(ArrayType(ArrayType(p.acc, cst(n)), cst(m)), cst(1))
    if dest is None:
        dest = g.allocate(out_t, ctx.write_to or "global", ctx, "mma_tile")

    em.kernel_attributes.append(f"__launch_bounds__({threads}, 1)")
    tid = hopper_prologue(g, p, ls, threads)

    operands, a0, b0 = raw_tile_operands(g, p, tiles, env, ctx, m, n, k)
    map_a = _tile_map(g, a0, True, (WGMMA_ROW, m), 128, "A")
    pair = isinstance(p, P.ReduceWgmmaTmaPair)
    if pair:
        _pair_cluster(g, p, ctx)  # __cluster_dims__(1, 2, 1), the row tiles known even
    # B: one box of its k rows, or (a pair) each block's half of them, multicast to both
    map_b = _tile_map(g, b0, False, (n, k // 2 if pair else k), 0, "B")

    sbytes, b_base = stage_bytes(m, n, k), m * k * 4
    nbytes = shared_bytes(m, n, k, stages)
    buf = em.local_array(ArrayType(float32, cst(nbytes // 4)), "wgmma_stage", cst(1))
    smem, full, empty = (em.names.fresh(h) for h in ("lk_smem", "lk_full", "lk_empty"))
    em.line(f"unsigned {smem} = ((unsigned)__cvta_generic_to_shared({buf.name}) + {ALIGN - 1}u) & ~{ALIGN - 1}u;")
    em.line(f"unsigned {full} = {smem} + {stages * sbytes}u, {empty} = {full} + {8 * stages}u;")
    slot = lambda i: f"{smem} + (unsigned)(({i}) % {stages}) * {sbytes}u"  # noqa: E731
    bar = lambda b, i: f"{b} + (unsigned)(({i}) % {stages}) * 8u"  # noqa: E731

    def wait(barrier: str, parity: str, scope: str = "") -> None:
        ok = em.names.fresh("lk_ok")
        em.line(f"unsigned {ok} = 0;")
        em.line(f'do {{ asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity{scope}.shared::cta.b64 p, '
                f'[%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}}\\n" : "=r"({ok}) : "r"({barrier}), '
                f'"r"((unsigned)({parity})) : "memory"); }} while (!{ok});')

    # the barriers: full[s] completes when stage s's copies landed (one arrive with the bytes),
    # empty[s] when every consumer warp is done with it (one arrive per warp)
    em.line("__syncthreads();")  # a previous tile of this block no longer uses the barriers
    with em.if_(f"{tid.name} == 0"):
        for s in range(stages):
            em.line(f'asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"({full} + {8 * s}u) : "memory");')
            em.line(f'asm volatile("mbarrier.init.shared::cta.b64 [%0], {warps * (2 if pair else 1)};" :: '
                    f'"r"({empty} + {8 * s}u) : "memory");')
        em.line('asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
    em.line("__syncthreads();")
    rank = "0"
    if pair:  # the partner's barriers exist before any copy or arrive reaches them
        em.line(_CLUSTER_SYNC)
        rank = em.names.fresh("lk_rank")
        em.line(f'unsigned {rank}; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"({rank}));')

    wg = em.names.fresh("lk_wg")
    em.line(f"int {wg} = {tid.name} / 128;")
    with em.if_(f"{wg} == {groups}"):  # the producer warpgroup
        if groups > 1:
            em.line(f'asm volatile("setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGISTERS};");')
        with em.if_(f"{tid.name} == {128 * groups}"):
            name = em.names.fresh("i")
            i = Var(name, 0, kt)
            with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 1"):
                c = replace(ctx, write_to=None).inside(p, Scope("seq", 0, i, kt))
                with em.if_(f"{name} >= {stages}"):  # (a pair: both blocks' consumers are done)
                    wait(bar(empty, name), f"({name} / {stages} + 1) & 1")
                em.line(f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], {sbytes};" :: '
                        f'"r"({bar(full, name)}) : "memory");')
                a, b = operands(i, c)
                (a_loc, a_st), (b_loc, b_st) = _tile_origin(g, a, True), _tile_origin(g, b, False)
                a_org, a_stride, b_org, b_stride = (a_loc.offset.to_c(), a_st.to_c(),
                                                    b_loc.offset.to_c(), b_st.to_c())
                for atom in range(k // WGMMA_ROW):
                    _copy(em, f"{slot(name)} + {atom * m * ROW_BYTES}u", map_a,
                          f"({a_org}) % ({a_stride}) + {atom * WGMMA_ROW}", f"({a_org}) / ({a_stride})",
                          bar(full, name))
                if pair:  # k-rows [rank·k/2, (rank+1)·k/2) of B, to both blocks
                    _copy(em, f"{slot(name)} + {b_base}u + {rank} * {k // 2 * n * 4}u", map_b,
                          f"({b_org}) % ({b_stride})", f"({b_org}) / ({b_stride}) + (int){rank} * {k // 2}",
                          bar(full, name), multicast=True)
                else:
                    _copy(em, f"{slot(name)} + {b_base}u", map_b, f"({b_org}) % ({b_stride})",
                          f"({b_org}) / ({b_stride})", bar(full, name))
        em.line("__syncwarp();")  # the producer warp whole again before any block barrier
    with em.if_(f"{wg} < {groups}"):  # the consumer warpgroups
        if groups > 1:
            em.line(f'asm volatile("setmaxnreg.inc.sync.aligned.u32 {consumer_registers(groups)};");')
        _consume(g, p, init, dest, tid, wg, m, n, k, kt, stages, groups, nb, slot, bar, full, empty, wait, b_base,
                 schedule or SCHEDULE or default_schedule(stages), pair)
    # every copy landed and was read, in both blocks of a pair: the barriers may go
    em.line(_CLUSTER_SYNC if pair else "__syncthreads();")
    with em.if_(f"{tid.name} == 0"):
        for s in range(2 * stages):
            em.line(f'asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"({full} + {8 * s}u) : "memory");')
    return dest


_CLUSTER_SYNC = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n'
                 'barrier.cluster.wait.acquire.aligned;" ::: "memory");')


def _copy(em: object, dst: str, tmap: str, col: str, row: str, barrier: str,
          multicast: bool = False) -> None:
    """One box of a tensor map into shared memory at dst, completing on `barrier`; multicast:
    into both blocks of the cluster (the same offsets, each block's own barrier)."""
    mc, mask = (".multicast::cluster", ', "h"((unsigned short)3)') if multicast else ("", "")
    em.line(f'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes{mc} '  # type: ignore[attr-defined]
            f'[%0], [%1, {{%2, %3}}], [%4]{", %5" if multicast else ""};" :: "r"({dst}), '
            f'"l"((unsigned long long)&{tmap}), "r"((int)({col})), "r"((int)({row})), "r"({barrier}){mask} : "memory");')


def _consume(g: "Generator", p: P.ReduceWgmmaTma, init: View, dest: View, tid: Var, wg: str,
             m: int, n: int, k: int, kt: ArithExpr, stages: int, groups: int, nb: int, slot, bar,
             full: str, empty: str, wait, b_base: int, sch: Schedule,  # type: ignore[no-untyped-def]
             pair: bool = False) -> None:
    """The consumer warpgroups' loop over the tiles and their stores of C."""
    em = g.em
    w4, gv, tv = (em.names.fresh(h) for h in ("lk_w4", "lk_g", "lk_t"))
    em.line(f"int {w4} = ({tid.name} / 32) % 4, {gv} = ({tid.name} % 32) >> 2, {tv} = {tid.name} & 3;")
    col, c_view, acc = lane_accumulators(em, p, init, (wg, w4, gv, tv), groups, m, nb)
    keys = [(fb, kk, r) for fb in range(nb) for kk in range(k // 8) for r in range(4)]
    sets = [{key: em.names.fresh(f"lk_frag{x}_") for key in keys} for x in range(sch.sets)]
    em.line("unsigned " + ", ".join(r for st in sets for r in st.values()) + ";")

    def keep(st: dict) -> None:  # type: ignore[type-arg]
        """A read of every register of a fragment set: its products are done by now, and until
        here no other value may take its registers."""
        regs = list(st.values())
        for x in range(0, len(regs), 16):
            em.line('asm volatile("" :: ' + ", ".join(f'"r"({r})' for r in regs[x:x + 16]) + ");")

    def fragments(i: str, st: dict) -> None:  # type: ignore[type-arg]
        """B's rows of this lane from staged tile i into the set st (truncated as the tensor
        cores would read them)."""
        load_fragments(em, p, st, k, nb, lambda kk, hk: (
            "shared", f"{slot(i)} + {b_base + (8 * kk + 4 * hk) * n * 4}u + "
                      f"(unsigned)({tv} * {n * 4} + {col} * 4)"), clobber=' : "memory"')

    def release(i: str) -> None:
        """This warp is done with stage i: one arrive on its empty barrier (a pair: on both
        blocks', whose producers both write this block's stage)."""
        em.line("__syncwarp();")
        with em.if_(f"({tid.name} & 31) == 0"):
            if not pair:
                em.line(f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"({bar(empty, i)}) : "memory");')
                return
            # default (CTA-scope) semantics, as CUTLASS's cluster pipelines arrive: this warp's
            # reads of the stage are done (its products waited for, its loads in registers);
            # .release.cluster cost a MEMBAR.ALL.GPU per arrive and the producer's
            # .acquire.cluster wait a CCTL.IVALL per tile (run 3: pairs 2x slower)
            for r in range(2):
                em.line(f'{{ unsigned lk_rb; asm volatile("mapa.shared::cluster.u32 %0, %1, {r};" : "=r"(lk_rb) : '
                        f'"r"({bar(empty, i)})); asm volatile("mbarrier.arrive.shared::cluster.b64 _, '
                        f'[%0];" :: "r"(lk_rb) : "memory"); }}')

    def load_next(i: str, st: dict) -> None:  # type: ignore[type-arg]
        with em.if_(f"{i} + 1 < {kt.to_c()}"):
            wait(bar(full, f"{i} + 1"), f"(({i} + 1) / {stages}) & 1")
            fragments(f"{i} + 1", st)

    with em.if_(f"0 < {kt.to_c()}"):
        wait(bar(full, "0"), "0")
        fragments("0", sets[0])
    name = em.names.fresh("i")
    if sch.mode == "inflight":  # tile i on set i mod 2; tile i-1's products done at wait_group 1
        with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 2"):
            for half in range(2):
                i, cur, nxt = f"({name} + {half})", sets[half], sets[1 - half]
                with em.if_(f"{i} < {kt.to_c()}"):  # (no pin here: the products of i-1 still run)
                    wgmma_products(em, slot(i), acc, cur, m, k, nb)
                    em.line('asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");')
                    keep(nxt)
                    with em.if_(f"{i} > 0"):
                        release(f"{i} - 1")
                    load_next(i, nxt)
        em.line('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
        pin_accumulators(em, acc, nb, m)
        keep(sets[0])
        keep(sets[1])
    elif sch.mode == "after":
        with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 1"):
            pin_accumulators(em, acc, nb, m)
            wgmma_products(em, slot(name), acc, sets[0], m, k, nb)
            em.line('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
            pin_accumulators(em, acc, nb, m)
            release(name)  # the stage goes back to the producer before the next wait
            load_next(name, sets[0])
    else:
        raise CodegenError(f"{p.name}: unknown consumer schedule {sch.mode!r} (after, inflight)")

    store_accumulators(g, dest.access(cst(0)), c_view, acc, m, nb)


__all__ = ["b_column", "b_fragment_offset", "consumer_registers", "plan_error",
           "reduce_wgmma_tma", "shared_bytes", "stage_bytes"]
