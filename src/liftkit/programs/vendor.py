"""Low-level Lift versions of seed 000 Table 1's vendor reference kernels: N-Body (NVIDIA SDK:
positions staged in local-memory tiles) and matrix multiplication (CLBlast for AMD: register
blocking and float4 without local memory; CLBlast for NVIDIA: local-memory tiles plus register
blocking). They share inputs and NumPy references with the high-level `nbody` and `mm`.

The tunables (tile, block and work-group sizes) are parameters with defaults chosen for a large
NVIDIA GPU, so variants can be swept later: `PROGRAMS` holds the defaults; call the builders
(`mm_nvidia(ts=(64, 64), rb=(4, 8))`) for others. Private register blocks are private arrays
indexed only by constants inside unrolled loops (mapSeqUnroll/reduceSeqUnroll), which the code
generator turns into scalar variables, i.e. registers.

`XP_REFERENCES` holds what a NumPy/CuPy user would write for some programs (`fn(xp, *inputs)`),
for comparisons with array libraries on the GPU."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs import apps, lowlevel
from liftkit.programs.registry import ProgramSpec

# ruff: noqa: F405
N, M, K = size("N"), size("M"), size("K")
F4_ZERO = lit((0.0, 0.0, 0.0, 0.0), float4)

# acc + a·b with a scalar a broadcast over the lanes of b (one vector FMA)
madS4 = user_fun("madS4", [("acc", float4), ("a", float32), ("b", float4)], float4,
                 "return fma((float4)(a), b, acc);",
                 lambda acc, a, b: acc + (np.asarray(a)[..., None] if np.ndim(a) else a) * b)


def _zeros4(rows: int, cols: int) -> Any:
    """A rows×cols block of float4 zeros (the initial register block)."""
    return lit(np.zeros((rows, cols, 4), np.float32), float4[cols][rows])


def _private_copy4(depth: int) -> Any:
    """toPrivate of a fully unrolled copy of a depth-dimensional array of float4 (registers)."""
    f: Any = id4
    for _ in range(depth):
        f = mapSeqUnroll(f)
    return toPrivate(f)


def _block_update(acc: Any, a_cols: Any, b_rows: Any) -> Any:
    """acc[r][c] += Σ_kk a_cols[r][kk] · b_rows[kk][c] for a register block.

    acc: [[float4]_(RN/4)]_RM, a_cols: [[float]_KU]_RM (scalars of A), b_rows: [[float4]_(RN/4)]_KU.
    Every loop is unrolled, so all indices are constants and everything stays in registers."""
    return mapSeqUnroll(lambda acc_a: join << mapSeqUnroll(
        lambda acc_b: reduceSeqUnroll(lambda s, ab: madS4(s, ab[0], ab[1]), acc_b[0])
        << zip(acc_a[1], acc_b[1])) << zip(acc_a[0], transpose << b_rows)) << zip(acc, a_cols)


# -- matrix multiplication, CLBlast for AMD: register blocking + float4, no local memory --------
def mm_amd(rb: tuple[int, int] = (4, 4), wg: tuple[int, int] = (8, 8), ku: int = 4) -> Any:
    """C = A·B; each work-item computes an RM×RN block of C (rb) in registers, reading A as
    float4 along K (ku = 4: one float4 per block row per step) and B as float4 rows of its RN
    columns; work-groups of wg = (WX, WY) work-items, nothing shared in local memory.
    The defaults are the fastest of `benchmarks/mm_sweep.py` on an H100 (docs/perf.md)."""
    rm, rn = rb
    wx, wy = wg
    if rn % 4 or ku != 4:
        raise ValueError("mm_amd: RN must be a multiple of 4 and ku == 4 (float4 loads of A)")

    def thread(a_blk: Any, b_blk: Any) -> Any:
        # a_blk: [[float]_K]_RM, b_blk: [[float4]_K]_(RN/4)
        a_steps = transpose << map(asVector(4)) << a_blk  # [[float4]_RM]_(K/4)
        b_steps = transpose << map(split(4)) << b_blk  # [[[float4]_4]_(RN/4)]_(K/4)

        def step(acc: Any, ab: Any) -> Any:
            return let(_private_copy4(1) << ab[0], _private_copy4(2) << ab[1], lambda aP, bP:
                       _block_update(acc, map(asScalar) << split(1) << aP, transpose << bP))

        return (toGlobal(_private_copy4(2)) << join
                << reduceSeq(step, _private_copy4(2) << _zeros4(rm, rn // 4)) << zip(a_steps, b_steps))

    # B as float4 columns; work-group tiles of WX·RN/4 of them; thread tx takes every WX-th
    # (c4·WX + tx), so neighbouring work-items read neighbouring float4 (coalesced)
    b_tiles = compose(map(compose(transpose, split(wx))), split(wx * rn // 4), transpose,
                      map(asVector(4)))
    # a work-group's result [ty][tx][r][c4] as rows of C: row ty·RM + r, float4 column c4·WX + tx
    wg_rows = compose(join, map(compose(map(asScalar), map(join), map(transpose), transpose)))
    return fun([float32[K][M], float32[N][K]], lambda A, B:
               join << mapWrg(1)(lambda a_rows: map(join) << transpose << map(wg_rows)
                                 << mapWrg(0)(lambda b_cols: mapLcl(1)(lambda a_blk: mapLcl(0)(
                                     lambda b_blk: thread(a_blk, b_blk)) << b_cols)
                                     << split(rm) << a_rows) << b_tiles(B)) << split(wy * rm) << A)


# -- matrix multiplication, CLBlast for NVIDIA: local-memory tiles + register blocking -----------
def _tile_rounds(wx: int, wy: int) -> Any:
    """A tile as float4 in rounds of WX·WY: [e][ty][tx] is float4 number e·WX·WY + ty·WX + tx,
    so neighbouring work-items read neighbouring float4 (coalesced)."""
    return compose(map(split(wx)), split(wx * wy), join, map(asVector(4)))


def _copy_rounds() -> Any:
    """Copy [e][ty][tx] into local memory round by round: the local array keeps the tile's
    natural layout (one barrier after the rounds)."""
    return toLocal(mapSeqUnroll(mapLcl(1)(mapLcl(0)(id4))))


def _from_local_tile(row_len4: int) -> Any:
    """The view of a copied tile as [[float4]_row_len4]_rows again."""
    return compose(split(row_len4), join, map(join))


def mm_nvidia(ts: tuple[int, int] = (64, 64), tk: int = 16, rb: tuple[int, int] = (8, 8),
              unroll: bool = True, prefetch: bool = False) -> Any:
    """C = A·B; a work-group computes a TM×TN tile of C (ts) with (TN/RN)×(TM/RM) work-items.
    Per K step of tk: the TM×tk tile of A and the tk×TN tile of B are copied into local memory
    (float4, coalesced); each work-item adds tk rank-1 updates to its RM×RN block of C (rb; rows
    r·WY + ty, float4 columns c4·WX + tx, so local accesses of a warp are contiguous) with float4
    FMAs, A read as float4 along K.

    The blocks of C are the work-items' private memory for the whole K loop (registers: private
    memory under an exactly-once mapLcl is per work-item). Local memory: 4·(TM·tk + tk·TN)
    bytes (8 KB by default). unroll: unroll the tk/4 float4 steps of a tile too (reduceSeqUnroll).
    prefetch: software-pipelined K loop: each work-item loads its share of tile i+1 into
    registers (the accumulator is a tuple: next A share, next B share, C block) while the
    group computes on tile i, and stores it into local memory at the start of the next step.
    The defaults are among the fastest of `benchmarks/mm_sweep.py` on an H100 (docs/perf.md)."""
    (tm, tn), (rm, rn) = ts, rb
    wy, wx = tm // rm, tn // rn
    nt = wx * wy
    if tm % rm or tn % rn or rn % 4 or tk % 4 or (tm * tk // 4) % nt or (tk * tn // 4) % nt:
        raise ValueError(f"mm_nvidia: inconsistent sizes ts={ts}, tk={tk}, rb={rb}")
    a_tiles = compose(map(compose(transpose, map(split(tk)))), split(tm))
    b_tiles = compose(transpose, map(transpose), map(map(split(tn))), split(tk))
    zeros = lit(np.zeros((wy, wx, rm, rn // 4, 4), np.float32), float4[rn // 4][rm][wx][wy])
    init = toPrivate(mapLcl(1)(mapLcl(0)(mapSeqUnroll(mapSeqUnroll(id4)))))
    a_threads = compose(transpose, split(wy), _from_local_tile(tk // 4))  # [ty] -> [[float4]_(tk/4)]_RM
    b_threads = compose(transpose, map(transpose), map(split(wx)), _from_local_tile(tn // 4))

    def thread(acc: Any, a_t: Any, b_t: Any) -> Any:
        # acc: [[float4]_(RN/4)]_RM (registers), a_t: [[float4]_(tk/4)]_RM, b_t: [[float4]_(RN/4)]_tk
        def chunk(regs: Any, ab: Any) -> Any:
            return let(_private_copy4(1) << ab[0], _private_copy4(2) << ab[1], lambda aP, bP:
                       _block_update(regs, map(asScalar) << split(1) << aP, bP))

        # the copies in and out are register moves the OpenCL compiler removes
        over_k = reduceSeqUnroll if unroll else reduceSeq
        return (mapSeqUnroll(mapSeqUnroll(id4)) << join
                << over_k(chunk, _private_copy4(2) << acc)
                << zip(transpose << a_t, split(4) << b_t))

    def compute(acc: Any, lA: Any, lB: Any) -> Any:
        return mapLcl(1)(lambda acc_a: mapLcl(0)(
            lambda acc_b: thread(acc_b[0], acc_a[1], acc_b[1]))
            << zip(acc_a[0], b_threads(lB))) << zip(acc, a_threads(lA))

    rounds, copy = _tile_rounds(wx, wy), _copy_rounds()

    def step(acc: Any, tiles: Any) -> Any:
        return let(copy << rounds(tiles[0]), copy << rounds(tiles[1]),
                   lambda lA, lB: compute(acc, lA, lB))

    # software pipeline: a work-item's share of a tile is its float4 of every round, held in
    # registers as [ty][tx][e] (TM·tk/4/(WX·WY) rounds for A, tk·TN/4/(WX·WY) for B)
    share = compose(map(transpose), transpose, rounds)
    load = toPrivate(mapLcl(1)(mapLcl(0)(mapSeqUnroll(id4))))
    unshare = compose(transpose, map(transpose))  # [ty][tx][e] -> [e][ty][tx]

    def with_stored(acc: Any, body: Any) -> Any:
        """The shares of the current tile (acc[0], acc[1]) copied into local memory."""
        return let(copy << unshare << acc[0], copy << unshare << acc[1], body)

    def pipelined_step(acc: Any, window: Any) -> Any:
        nxt = at(window, 1)
        return with_stored(acc, lambda lA, lB: tuple_(
            load << share << nxt[0], load << share << nxt[1], compute(acc[2], lA, lB)))

    def last_step(acc: Any) -> Any:
        return with_stored(acc, lambda lA, lB: compute(acc[2], lA, lB))

    def k_loop(tiles: Any) -> Any:
        if not prefetch:
            return join << reduceSeq(step, init << zeros) << tiles
        first = at(tiles, 0)
        start = tuple_(load << share << first[0], load << share << first[1], init << zeros)
        return let(at(reduceSeq(pipelined_step, start) << slide(2, 1) << tiles, 0), last_step)

    out = toGlobal(mapLcl(1)(mapLcl(0)(mapSeqUnroll(mapSeqUnroll(id4)))))
    # a work-group's result [ty][tx][r][c4] as rows of C: row r·WY + ty, float4 column c4·WX + tx
    by_block = compose(map(transpose), transpose, map(map(transpose)), map(transpose))
    wg_rows = compose(map(asScalar), join, map(map(join)), map(transpose), by_block)
    return fun([float32[K][M], float32[N][K]], lambda A, B:
               join << mapWrg(1)(lambda a_row: map(join) << transpose << map(wg_rows) << mapWrg(0)(
                   lambda b_col: out << k_loop(zip(a_row, b_col)))
                   << b_tiles(B)) << a_tiles(A))


# -- N-Body, NVIDIA SDK: one work-item per particle, positions staged in local-memory tiles ------
def nbody_nvidia(wg: int = 256) -> Any:
    """Work-groups of wg work-items, one particle each. For each tile of wg positions, the group
    copies the tile into local memory (toLocal(mapLcl(id))), then every work-item adds the tile's
    wg interactions to its acceleration, its own position kept in a private register. The
    acceleration is the work-item's private memory (a register) across all tiles."""
    zeros = lit(np.zeros((wg, 4), np.float32), float4[wg])

    def tile_step(accs: Any, tile: Any, chunk: Any, espSqr: Any) -> Any:
        return let(toLocal(mapLcl(0)(id4)) << tile, lambda lt:
                   join << mapLcl(0)(lambda a_pv: let(toPrivate(id4) << a_pv[1][0], lambda p:
                       reduceSeq(lambda acc, q: apps.calcAcc(acc, p, q, espSqr), a_pv[0]) << lt))
                   << zip(accs, chunk))

    return fun([float4[N], float4[N], float32, float32], lambda pos, vel, espSqr, dt:
               join << mapWrg(0)(lambda chunk: toGlobal(mapLcl(0)(
                   lambda pv_a: apps.update(pv_a[0][0], pv_a[0][1], dt, pv_a[1])))
                   << zip(chunk, join << reduceSeq(lambda accs, tile: tile_step(accs, tile, chunk, espSqr),
                                                   toPrivate(mapLcl(0)(id4)) << zeros) << split(wg) << pos))
               << split(wg) << zip(pos, vel))


# -- what an array-library user would write -------------------------------------------------------
def xp_convolution(xp: Any, img: Any, w: Any) -> Any:
    """3×3 convolution with clamped borders as nine shifted-slice products of the padded image."""
    p = xp.pad(img, 1, mode="edge")
    h, wd = img.shape
    out = xp.zeros_like(img)
    for i in range(3):
        for j in range(3):
            out = out + w[i, j] * p[i:i + h, j:j + wd]
    return out


XP_REFERENCES: dict[str, Callable[..., Any]] = {"convolution": xp_convolution}

SPECS = [
    ProgramSpec("nbody_nvidia", "N-Body, one work-item per particle, position tiles in local memory",
                "seed 000 Table 1 (NVIDIA SDK)", nbody_nvidia, apps._nbody_inputs, apps._nbody_ref,
                {"N": 512}, level="low", rtol=1e-4, atol=1e-4, size_rule="N a multiple of 256",
                tags=("table1", "gpu")),
    ProgramSpec("mm_amd", "matrix multiplication, 4×4 register blocks, float4, no local memory",
                "seed 000 Table 1 (CLBlast, AMD)", mm_amd, lowlevel._mm_inputs, lowlevel._mm_ref,
                {"M": 128, "K": 16, "N": 128}, level="low", rtol=1e-4, atol=lowlevel.MM_ATOL,
                size_rule="M, N multiples of 32, K a multiple of 4", tags=("table1", "gpu")),
    ProgramSpec("mm_nvidia", "matrix multiplication, 64×64 local tiles, 8×8 register blocks, float4",
                "seed 000 Table 1 (CLBlast, NVIDIA)", mm_nvidia, lowlevel._mm_inputs,
                lowlevel._mm_ref, {"M": 64, "K": 32, "N": 128}, level="low", rtol=1e-4,
                atol=lowlevel.MM_ATOL,
                size_rule="M, N multiples of 64, K a multiple of 16", tags=("table1", "gpu")),
]
