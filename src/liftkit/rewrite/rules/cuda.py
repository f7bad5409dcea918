"""Rules that introduce the patterns beyond OpenCL (`liftkit.ir.patterns.cuda`), so that the
exploration finds them (rule set `cuda`: the search rules plus these).

- `tree-chunks-32`, `reduceWarp`: warp reductions (rules/cuda_warp.py, re-exported here).

- `mm-tensor-cores` (tm, tn, tk, warps, staged): the high-level matrix product
  `map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A`
  → tm×tn tiles of C per work-group (`mapWrg(1) ∘ mapWrg(0)`), the K loop split by tk into
  tile pairs reduced by `reduceMma… warps` on the tensor cores, each pair copied into local
  memory by the work-group first (staged = 1, coalesced rounds of `mapLcl(0)`), or by cp.async
  pipelined `staged` tiles deep (staged > 1, `toLocalAsync`), or read in place (staged = 0);
  with `lines`, the copies move 16-byte chunks over whole lines into rotated rows (a gather
  around the copy) instead of single elements into the fragment-blocked layout, each operand's
  lines along the direction its memory is contiguous in (a transposed view, as A of TN or B of
  NT, is copied along its stored rows).
  For double: DMMA (`reduceMmaF64`; with ik = 8, offered for the `lines` tilings at least 16
  deep, `reduceMmaF64K8`: m16n8k8 throughout, +1–6 % on the H100, results/issue12/gemm6 run 7;
  with ahead = 1 as well, `reduceMmaF64K8Ahead`: each k-step's fragments read one step ahead,
  across the tile boundary too, offered after those; ahead = 2, `reduceMmaF64K8AheadSpread`:
  the next tile's copies issued among the last products; then ik = 16 with ahead = 2,
  `reduceMmaF64K16AheadSpread`: that loop on m16n8k16, offered last).
  For float only where both operands were rounded by the
  program itself (`map(map(toTF32))` or `map(map(toBF16))` of A and B): the rule never makes an
  FP32 product TF32; the casts move into the pattern (it rounds its operands the same way).

All change the order of the reduction (exact on the integer-valued inputs of the soundness
tests, reassociated rounding on floats, as every reduce rule).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from liftkit.arith import ArithExpr, cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, UserFun, unwrap_eta, walk
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import call, const, fresh, type_checks
from liftkit.rewrite.rules.cuda_tma import MM_WGMMA_TMA, MM_WGMMA_TMA_PAIR
from liftkit.rewrite.rules.cuda_warp import REDUCE_WARP, TREE_CHUNKS_32
from liftkit.rewrite.rules.cuda_wgmma import MM_WGMMA, MM_WGMMA_ASYNC, MM_WGMMA_PAIR, mm_wgmma
from liftkit.rewrite.rules.mm_pairs import PAIR_BLOCK, pair_k, pairs_ok
from liftkit.types import ArrayType, ScalarType, float32, float64, same_type

Options = list[dict[str, Any]]
# ---------------------------------------------------------------------------------------------
# matrix products on the tensor cores

# (tm, tn, tk) offered, largest first; warps from WARPS; tk a multiple of the instruction's k
MMA_TILES = ((128, 128, 32), (128, 128, 16), (128, 128, 8), (128, 64, 32), (128, 64, 16),
             (64, 128, 32), (64, 128, 16), (128, 64, 8), (64, 128, 8), (64, 64, 32), (64, 64, 16),
             (64, 64, 8), (32, 32, 16), (32, 32, 8), (32, 16, 8), (16, 16, 16), (16, 8, 8),
             (16, 8, 4), (8, 8, 4))
WARPS = (8, 4, 2, 1)
# staged: 0 operands read in place, 1 copied into local memory, s > 1 copied by cp.async s deep
STAGINGS = (4, 3, 2, 1, 0)
MAX_MMA_CHOICES = 240
# local memory of a staged product: beyond 48 KB a CUDA block gets it at launch (dynamic shared
# memory; an H100 gives up to 227 KB, an A100 163 KB; the runner refuses more in words)
MMA_LOCAL_BYTES = 128 * 1024
# deeper pipelines offered only to the read-ahead loops (ahead=2 on m16n8k16, then m16n8k8), after
# every other choice: cuBLAS's DGEMM shape on the H100 (128×64×32 tiles, 3 stages = 144 KB, 8
# warps, DMMA m16n8k16; results/issue15/fp64-24 run1/ncu.txt), within an A100's 163 KB
MMA_DEEP_LOCAL_BYTES = 160 * 1024
_CASTS = {"toTF32": P.ReduceMmaTF32, "toBF16": P.ReduceMmaBF16}


def _user_named(f: FunDecl, name: str, elem: ScalarType, arity: int) -> bool:
    g = unwrap_eta(f)
    if isinstance(g, Lambda) and isinstance(g.body, FunCall) and g.body.args == g.params:
        g = g.body.f
    names = (name, f"{name}_{elem.name}")  # add, add_double (ir.userfuns' scalar families)
    return (isinstance(g, UserFun) and g.name in names and len(g.param_types) == arity
            and all(t == elem for t in g.param_types) and g.out_type == elem)


def _cast_rows(e: Expr, casts: dict[str, type]) -> Optional[tuple[str, Expr]]:
    """(cast name, X) when e is map(map(cast)) $ X (any spelling of the two maps), cast one of `casts`."""
    if not (isinstance(e, FunCall) and type(e.f) is P.Map and len(e.args) == 1):
        return None
    f = unwrap_eta(e.f.f)
    if isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall) \
            and f.body.args == f.params:
        f = f.body.f
    if type(f) is not P.Map:
        return None
    for name in casts:
        if _user_named(f.f, name, float32, 1):
            return name, e.args[0]
    return None


def mm_nest(site: Site, casts: Optional[dict[str, type]] = None, f64: Optional[type] = P.ReduceMmaF64
            ) -> Optional[tuple[Expr, Expr, ArithExpr, ArithExpr, ArithExpr, type]]:
    """(A, B, M, N, K, the reduceMma class) when the site is the high-level matrix product of
    A: [[T]_K]_M and B: [[T]_N]_K that a tensor-core product may compute (see the docstring);
    for double, B's columns may also be the rows of a stored N×K array (NT: B is then its
    transpose, a view whose tiles the staging copies along k);
    `casts` maps the casts A and B may be rounded with to the pattern, `f64` is the one for
    double (None: no double product)."""
    casts = _CASTS if casts is None else casts
    f = site.f
    if type(f) is not P.Map or not isinstance(f.f, Lambda) or len(f.f.params) != 1 or site.enclosing:
        return None
    row, j = f.f.params[0], f.f.body
    if not (isinstance(j, FunCall) and type(j.f) is P.Join and isinstance(j.args[0], FunCall)):
        return None
    cols = j.args[0]
    if not (type(cols.f) is P.Map and isinstance(cols.f.f, Lambda) and len(cols.f.f.params) == 1):
        return None
    t = cols.args[0]
    stored = not (isinstance(t, FunCall) and type(t.f) is P.Transpose)  # NT: B's columns stored
    if any(n is row for n in walk(t)):
        return None
    col, red = cols.f.f.params[0], cols.f.f.body
    a_t = site.arg_types[0]
    if not (isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType)
            and isinstance(a_t.elem.elem, ScalarType)):
        return None
    elem = a_t.elem.elem
    if elem not in (float32, float64):
        return None
    if not (isinstance(red, FunCall) and type(red.f) is P.Reduce and _user_named(red.f.f, "add", elem, 2)):
        return None
    z, prods = red.args
    if not (isinstance(z, Literal) and z.type == elem and float(z.value) == 0.0):
        return None
    if not (isinstance(prods, FunCall) and type(prods.f) is P.Map
            and _user_named(prods.f.f, "mult", elem, 2)):
        return None
    zp = prods.args[0]
    if not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and zp.args == (row, col)):
        return None
    if stored and (elem != float64 or f64 is None):
        return None  # an NT product only on the FP64 tensor cores (DMMA copies B's rows along k)
    a, b = site.call.args[0], (call(P.Transpose(), t) if stored else t.args[0])  # b: K×N
    b_t = site.type_of(b)
    if not (isinstance(b_t, ArrayType) and isinstance(b_t.elem, ArrayType) and b_t.elem.elem == elem
            and same_type(ArrayType(elem, a_t.elem.length), ArrayType(elem, b_t.length))):
        return None
    if elem == float64:
        if f64 is None:
            return None
        cls: type = f64
    else:
        ca, cb = _cast_rows(a, casts), _cast_rows(b, casts)
        if ca is None or cb is None or ca[0] != cb[0]:
            return None  # an FP32 product stays FP32
        cls = casts[ca[0]]
        a, b = ca[1], cb[1]
    return a, b, a_t.length, b_t.elem.length, a_t.elem.length, cls


def _mma_ok(cls: type, tm: int, tn: int, tk: int, warps: int, staged: int,
            cap: int = MMA_LOCAL_BYTES) -> bool:
    from liftkit.codegen.cuda_mma import plan

    im, in_, ik = cls.shape
    if tm % im or tn % in_ or tk % ik:
        return False
    found = plan(cls, tm, tn, tk, warps)
    if found is None:
        return False
    frags = (tm // im) * (tn // in_) // warps
    if frags > 32:  # accumulators per lane beyond a register file's share
        return False
    threads = 32 * warps
    local_bytes = (tm + tn) * tk * cls.operand.dtype.itemsize * max(staged, 1)
    return not staged or (tm * tk % threads == 0 and tn * tk % threads == 0 and tk % 4 == 0
                          and local_bytes <= cap)


def _mma_choices(site: Site) -> Options:
    found = mm_nest(site)
    if found is None:
        return []
    a, b, m, n, k, cls = found
    across = _copied_across(a, b)
    cm, cn, ck = const(m), const(n), const(k)
    out = []
    for tm, tn, tk in MMA_TILES:
        if not all(c is None or c % t == 0 for c, t in ((cm, tm), (cn, tn), (ck, tk))):
            continue
        for warps in WARPS:
            for staged in STAGINGS:
                if _mma_ok(cls, tm, tn, tk, warps, staged):
                    out.append({"tm": tm, "tn": tn, "tk": tk, "warps": warps, "staged": staged})
                    if staged > 1 and min(tm, tn) >= 64 and _lines_ok(cls, tm, tn, tk, warps, across):
                        out.append({"tm": tm, "tn": tn, "tk": tk, "warps": warps, "staged": staged,
                                    "lines": True})
    out = out[:MAX_MMA_CHOICES]
    if cls is P.ReduceMmaF64:  # the same tilings on m16n8k8 (reduceMmaF64K8) after all others
        k8 = [{**o, "ik": 8} for o in out if o.get("lines") and o["tk"] >= 16]
        out += k8 + [{**o, "ahead": h} for h in (1, 2) for o in k8]  # then reading fragments ahead
        out += [{**o, "ik": 16, "ahead": 2} for o in k8]  # and that loop on m16n8k16
        out += [{"tm": tm, "tn": tn, "tk": tk, "warps": warps, "staged": staged, "lines": True,
                 "ik": ik, "ahead": 2} for tm, tn, tk, warps, staged in _deep_tilings(
                     cls, (cm, cn, ck), across) for ik in (16, 8)]  # then deeper pipelines, read ahead
        # then the read-ahead loops with k permuted for 16-byte fragment reads (pairs)
        out += [{**o, "pairs": True} for o in out if o.get("ahead") == 2 and o["tk"] % PAIR_BLOCK == 0]
        # then the read-ahead loops with the operands copied as k rows kept in blocks of 4 rows
        # (lines=2: no rotation to compute per fragment read; A of TN, B of NN and TN)
        # (lines=3: their 128-byte segments rotated instead)
        out += [{**o, "lines": b} for b in (2, 3) for o in out if o.get("ahead") == 2
                and not o.get("pairs") and any(across) and all(
                    blocked_rows_ok(cls, t, o["tk"], 32 * o["warps"])
                    for t, x in zip((o["tm"], o["tn"]), across) if x)]
    return out


def _deep_tilings(cls: type, sizes: tuple[Optional[int], ...], across: tuple[bool, bool]
                  ) -> list[tuple[int, int, int, int, int]]:
    """The `lines` tilings at least 32 deep whose cp.async stages fit MMA_DEEP_LOCAL_BYTES but
    not MMA_LOCAL_BYTES (constant sizes: those the tiles divide)."""
    out = []
    for tm, tn, tk in MMA_TILES:
        if tk < 32 or not all(c is None or c % t == 0 for c, t in zip(sizes, (tm, tn, tk))):
            continue
        for warps in WARPS:
            for staged in STAGINGS:
                if staged > 1 and min(tm, tn) >= 64 and not _mma_ok(cls, tm, tn, tk, warps, staged) \
                        and _mma_ok(cls, tm, tn, tk, warps, staged, MMA_DEEP_LOCAL_BYTES) \
                        and _lines_ok(cls, tm, tn, tk, warps, across):
                    out.append((tm, tn, tk, warps, staged))
    return out


def f64_mma_class(ik: int, ahead: int, staged: int) -> type:
    """The DMMA pattern of mm-tensor-cores' (ik, ahead) on a tiling staged `staged` deep:
    reduceMmaF64 (ik 0), m16n8k8 throughout (ik 8: reduceMmaF64K8, fragments read ahead where
    a cp.async pipeline stages the tiles), or the read-ahead loop on m16n8k16 (ik 16, ahead 2)."""
    from liftkit.ir.patterns.cuda import (ReduceMmaF64K8Ahead, ReduceMmaF64K8AheadSpread,
                                          ReduceMmaF64K16AheadSpread)

    if ik == 16:
        return ReduceMmaF64K16AheadSpread
    if ik == 8:
        return ({1: ReduceMmaF64K8Ahead, 2: ReduceMmaF64K8AheadSpread}.get(ahead, P.ReduceMmaF64K8)
                if staged > 1 else P.ReduceMmaF64K8)
    return P.ReduceMmaF64


def _transposed_view(e: Expr) -> bool:
    """Whether e is its stored array read transposed (an odd number of transposes on top), so
    that e's rows run down the memory's columns."""
    flips = False
    while isinstance(e, FunCall) and len(e.args) == 1 and type(e.f) is P.Transpose:
        flips, e = not flips, e.args[0]
    return flips


def _copied_across(a: Expr, b: Expr) -> tuple[bool, bool]:
    """For A (m×k) and B (k×n) as the product reads them: whether each operand's tile (A's
    tm×tk, B's tn×tk view) is copied in lines across it, i.e. along m or n, the direction its
    memory is contiguous in: A only where it is a transposed view (TN), B unless it is one (NT)."""
    return _transposed_view(a), not _transposed_view(b)


def _lines_ok(cls: type, tm: int, tn: int, tk: int, warps: int, across: tuple[bool, bool]) -> bool:
    """Both operand tiles can be staged in whole lines (`_stage_lines`) along the direction
    their memory is contiguous in (`_copied_across`)."""
    return (line_layout(cls, tm, tk, 32 * warps, across[0]) is not None
            and line_layout(cls, tn, tk, 32 * warps, across[1]) is not None)


def _at(depth: int, f: Any) -> Any:
    """f applied at nesting depth `depth` (map^depth f)."""
    from liftkit import dsl as D

    for _ in range(depth):
        f = D.map(f)
    return f


def _permute(src: Sequence[str], dst: Sequence[str]) -> list[Any]:
    """Adjacent transposes (map^d transpose), in the order applied, that reorder the nested
    dimensions named `src` (outermost first) into `dst`."""
    from liftkit import dsl as D

    order, steps = list(src), []
    for want in range(len(dst)):
        j = order.index(dst[want])
        while j > want:
            order[j - 1], order[j] = order[j], order[j - 1]
            steps.append(_at(j - 1, D.transpose))
            j -= 1
    return steps


def fragment_blocks(kind: type, rows: int, k: int, transposed: bool) -> Optional[tuple[int, int]]:
    """(row block, k block) of the local layout whose fragment reads are 8/16-byte vectors for
    an m16n8 shape of one element per register (TF32, FP64), or None (BF16, FP64 on 8-row
    fragments, k too short): A is kept [rows/16][k/4P][g 8][t 4][P][h 2] with row 16R + 8h + g
    and k 4P·J + 4p + t, so lane (g, t) reads its rows g and g + 8 (and P k-steps) as one vector;
    B (n×k) is kept [n/8][k/4Q][g 8][t 4][Q], lane (g, t) reading k t, t+4, …, t+4(Q-1)."""
    if kind is P.ReduceMmaBF16 or (rows % (8 if transposed else 16)):
        return None
    words = 2 if kind.operand == float32 else 1  # 16 bytes: 4 floats or 2 doubles
    if transposed:
        q = next((q for q in (2 * words, words, 1) if k % (4 * q) == 0), 0)
        return (8, q) if q else None
    return (16, words) if k % (4 * words) == 0 else None


def line_layout(kind: type, rows: int, cols: int, threads: int, transposed: bool) -> Optional[tuple[int, int, int]]:
    """(elements per 16-byte chunk W, chunks per row C, rows sharing a 128-byte line L) of the
    `lines` staging of a rows×cols operand tile (`transposed`: copied as its k×rows rows), or
    None where it does not apply: 16-byte chunks, whole rows in the copy rounds, rows of at
    least 32 bytes, and k rows covering a 128-byte line (the fragment reads' rotation needs it)."""
    size = kind.operand.dtype.itemsize
    if kind is P.ReduceMmaBF16:
        return None
    w = 16 // size
    r, c = (cols, rows) if transposed else (rows, cols)  # B is copied in its k×n orientation
    if c % w or (r * c // w) % threads or c * size < 32 or (transposed and c * size < 128):
        return None
    return w, c // w, max(1, 128 // (c * size))


def line_shift(r: Any, kind: type, c: int, lines: int, transposed: bool, pairs: bool = False) -> Any:
    """The rotation s(r) (in chunks) of row r of a `lines` staging with C = c chunks per row and
    `lines` rows per 128-byte line (`_stage_lines`)."""
    if not transposed:
        return r // lines % c
    step = max(1, 8 * kind.operand.dtype.itemsize // 16)  # 8 elements, in chunks
    return (r + r // 4 if pairs else r) * step % c


def blocked_rows_ok(kind: type, rows: int, cols: int, threads: int) -> bool:
    """Whether a rows×cols operand tile copied as k rows (`transposed`) can be staged with its
    k rows in blocks of 4 (`_stage_lines` with `blocked`): FP64 (a DMMA fragment read touches 4
    k rows of 8 doubles), k a multiple of 4, an even number of chunks per row."""
    found = line_layout(kind, rows, cols, threads, True)
    return (found is not None and kind.operand == float64 and cols % 4 == 0
            and found[1] % 2 == 0)


def blocked_position(i: Any, c: int) -> Any:
    """Where chunk i (row-major: k row i/c, chunk i mod c) of k rows of c 16-byte chunks sits
    when the rows are kept in blocks of 4: chunk ch of row r at 4c·(r/4) + 8·(ch/2) +
    2·(r mod 4) + ch mod 2, the block's rows interleaved 32 bytes at a time ([r/4][ch/2][r mod
    4][ch mod 2]). Integers or arithmetic expressions."""
    r, ch = i // c, i % c
    return 4 * c * (r // 4) + 8 * (ch // 2) + 2 * (r % 4) + ch % 2


def blocked_chunk(p: Any, c: int) -> Any:
    """The chunk at position p (the inverse of `blocked_position`)."""
    q = p % (4 * c)
    return (4 * (p // (4 * c)) + q % 8 // 2) * c + 2 * (q // 8) + q % 2


def segment_position(i: Any, c: int) -> Any:
    """Where chunk i (k row i/c, chunk i mod c) of k rows of c 16-byte chunks sits when each
    row's 128-byte segments (8 chunks) are rotated by 2·(r mod 4) chunks within themselves: row
    r at r·c, chunk ch in segment ch/8 at (ch + 2·(r mod 4)) mod 8. A global line lands in one
    shared segment; a fragment read (k rows t + 4j, doubles g + 8q) puts its 4 rows in the 4
    quarters of a bank line at a lane offset that depends on q's parity alone."""
    r, ch = i // c, i % c
    return r * c + 8 * (ch // 8) + (ch % 8 + 2 * (r % 4)) % 8


def segment_chunk(p: Any, c: int) -> Any:
    """The chunk at position p (the inverse of `segment_position`)."""
    r = p // c
    return r * c + 8 * (p % c // 8) + (p % 8 + 8 - 2 * (r % 4)) % 8


def _blocked_gathers(c: int, segments: bool = False) -> tuple[Any, Any]:
    """(position → chunk, chunk → position) gathers of k rows kept in blocks of 4, or
    (`segments`) with their 128-byte segments rotated."""
    from liftkit import dsl as D

    if segments:
        return (D.gather(lambda p, n: segment_chunk(p, c)),
                D.gather(lambda i, n: segment_position(i, c)))
    return (D.gather(lambda p, n: blocked_chunk(p, c)),
            D.gather(lambda i, n: blocked_position(i, c)))


def _stage_lines(rows: int, cols: int, threads: int, kind: type, transposed: bool, staged: int,
                 pairs: bool = False, blocked: int = 0) -> Any:
    """The rows×cols tile (cols along k) copied in 16-byte chunks (double2, float4), each
    warp's chunks covering whole rows, i.e. whole 128-byte lines (cp.async.cg of 16 bytes, the
    fewest L1 wavefronts), into a row-major layout whose rows are rotated so that the lanes of a
    fragment read spread over all banks: chunk c of row r sits at position (c + s(r)) mod C.
    Copied along k (`transposed` false: A of NN, B of NT), s(r) = r/L (a read's 8 fragment rows
    land in different chunks); copied across, as k rows (B of NN, A of TN), s(r) = r·(8 elements
    in chunks) (the 4 k rows a read touches land in different quarters or halves of a line);
    with `pairs` (k permuted by `pair_k`, a read's 4 k rows are 4t + x) s(r) = (r + r/4)·(8
    elements in chunks), so that those rows too land in both halves of a line. With `blocked`
    (lines 2 or 3: FP64 copied across, `blocked_rows_ok`), 2: the k rows are kept in blocks of 4
    interleaved 32 bytes at a time instead (`blocked_position`): a fragment read's lanes (k row
    t + 4j, column g + 8q) then sit at a lane offset plus a constant, with no rotation to compute
    per read, its 4 rows in the 4 quarters of a bank line; a warp's copy round fills 4 rows ×
    128 bytes, 512 contiguous bytes, but each global line lands in 4 shared segments; 3: each
    row's 128-byte segments rotated by 2·(r mod 4) chunks within themselves
    (`segment_position`): a global line lands in one segment, a read's rows in the 4 quarters
    at one of two lane offsets (q even or odd). It means the tile."""
    from liftkit import dsl as D

    w, c, lines = line_layout(kind, rows, cols, threads, transposed)  # type: ignore[misc]

    def shift(r: Any) -> Any:
        return line_shift(r, kind, c, lines, transposed, pairs)

    rounds = D.mapSeqUnroll(D.mapLcl(0)(D.id_of(D.vector(kind.operand, w))))
    copy = D.toLocalAsync(staged, rounds) if staged > 1 else D.toLocal(rounds)
    if blocked and transposed:
        to_pos, to_chunk = _blocked_gathers(c, blocked == 3)
    else:
        to_pos = D.gather(lambda p, n: (p // c) * c + ((p % c) + c - shift(p // c)) % c)  # position → chunk
        to_chunk = D.gather(lambda i, n: (i // c) * c + ((i % c) + shift(i // c)) % c)  # chunk → position
    forward = [D.transpose] if transposed else []
    forward += [D.map(D.asVector(w)), D.join, to_pos, D.split(threads)]
    backward = [D.join, to_chunk, D.split(c), D.map(D.asScalar)] + ([D.transpose] if transposed else [])
    return D.compose(*reversed(forward + [copy] + backward))


def _stage(rows: int, cols: int, threads: int, kind: type, transposed: bool, staged: int) -> Any:
    """A tile copied into local memory in rounds of `threads` by cp.async `staged` deep (staged >
    1) or by plain copies, in a layout whose fragment reads are vectors without bank conflicts
    (`fragment_blocks`): each lane's 8 or 16 bytes lie next to each other and the 32 lanes of a
    read cover one contiguous run. Where that layout does not apply, a blocked one whose
    single-element reads hit 32 different banks: A (rows×cols = m×k) as [k/4][m][4], B (the n×k
    view of a k×n row-major matrix) as [n/8][k][8]. Each copy round reads whole 32-byte sectors."""
    from liftkit import dsl as D

    elem = kind.operand
    rounds = D.mapSeqUnroll(D.mapLcl(0)(D.id_of(elem)))
    copy = D.toLocalAsync(staged, rounds) if staged > 1 else D.toLocal(rounds)
    blocks = fragment_blocks(kind, rows, cols, transposed)
    if blocks is not None:
        rb, w = blocks
        if transposed:  # [N][g][J][q][t] → [N][J][g][t][q]
            splits = [D.split(8), _at(2, D.split(4 * w)), _at(3, D.split(4))]
            src, dst = ["N", "g", "J", "q", "t"], ["N", "J", "g", "t", "q"]
            sizes = [rows // 8, cols // (4 * w), 8, 4, w]
        else:  # [R][h][g][J][p][t] → [R][J][g][t][p][h]
            splits = [D.split(16), _at(1, D.split(8)), _at(3, D.split(4 * w)), _at(4, D.split(4))]
            src, dst = ["R", "h", "g", "J", "p", "t"], ["R", "J", "g", "t", "p", "h"]
            sizes = [rows // 16, cols // (4 * w), 8, 4, w, 2]
        forward = splits + _permute(src, dst)
        joins = [_at(d, D.join) for d in (4, 3, 1, 0)] if not transposed else \
            [_at(d, D.join) for d in (3, 2, 0)]
        backward = [D.split(n) for n in reversed(sizes[1:])] + _permute(dst, src) + joins
        flatten = [D.join] * (len(sizes) - 1)
        flat = D.compose(D.join, copy, D.split(threads), *reversed(flatten))
        return D.compose(*reversed(forward + [flat] + backward))
    flat = D.compose(D.join, copy, D.split(threads), D.join, D.join)  # copied in its own order
    if transposed:  # [n][k] ← [n/8][k][8] ← B's rows [k][n]
        blocked = D.compose(D.transpose, D.map(D.split(8)), D.transpose)
        back = D.compose(D.transpose, D.map(D.join), D.transpose, D.split(cols), D.split(8))
    else:  # [m][k] ← [k/4][m][4]
        blocked = D.compose(D.transpose, D.map(D.split(4)))
        back = D.compose(D.map(D.join), D.transpose, D.split(rows), D.split(4))
    return D.compose(back, flat, blocked)


def mm_tensor_cores(a: Expr, b: Expr, cls: type, tm: int, tn: int, tk: int, warps: int,
                    staged: int, lines: int = 0, pairs: bool = False) -> Expr:
    """C = A·B with `cls` over tm×tn×tk tiles (see the module docstring); `lines`: the staged
    tiles are copied in 16-byte chunks over whole lines into rotated rows (`_stage_lines`;
    lines=2: the operands copied as k rows kept in blocks of 4 rows instead, `blocked`);
    `pairs`: both operands read with k permuted (`pair_k`), so that a lane's fragment elements
    of a k-step lie next to each other where the tile is stored along k."""
    from liftkit import dsl as D
    from liftkit.ir.nodes import Literal as Lit
    from liftkit.ir.patterns.cuda import ReduceMmaF64K8AheadSpread, ReduceMmaF64K16AheadSpread

    across = _copied_across(a, b)
    deep = cls in (ReduceMmaF64K8AheadSpread, ReduceMmaF64K16AheadSpread)
    cap = MMA_DEEP_LOCAL_BYTES if deep else MMA_LOCAL_BYTES
    if not _mma_ok(cls, tm, tn, tk, warps, staged, cap) or \
            (lines and not (staged and _lines_ok(cls, tm, tn, tk, warps, across))):
        raise ValueError(f"{cls.name}: tiles {tm}×{tn}×{tk} with {warps} warps do not fit")
    if pairs and not pairs_ok(cls, tk, bool(lines)):
        raise ValueError(f"{cls.name}: k-permuted fragment reads (pairs) take DMMA m16n8k8/k16 "
                         f"tiles staged in lines, k a multiple of {PAIR_BLOCK}, not {tk}")
    blocked = lines if lines in (2, 3) else 0
    if blocked and (pairs or not any(across) or not all(
            blocked_rows_ok(cls, t, tk, 32 * warps) for t, x in zip((tm, tn), across) if x)):
        raise ValueError(f"{cls.name}: k rows in blocks of 4 (lines={lines}) take FP64 operands "
                         f"copied as k rows, k a multiple of 4 and no pairs; not {tm}×{tn}×{tk}")
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))  # noqa: E731
    if staged:  # `_stage`'s flag names B's layout; `_stage_lines`'s the copy's direction
        stage, flags = (_stage_lines, across) if lines else (_stage, (False, True))
        more = {"pairs": True} if pairs else {"blocked": blocked} if blocked else {}
        sa = stage(tm, tk, 32 * warps, cls, flags[0], staged, **more)
        sb = stage(tn, tk, 32 * warps, cls, flags[1], staged, **more)
        if pairs:
            sa, sb = D.compose(pair_k(tk), sa), D.compose(pair_k(tk), sb)
        op: Any = lambda pair: D.tuple_(sa << D.get(0) << pair, sb << D.get(1) << pair)  # noqa: E731
    else:
        op = lambda pair: pair  # noqa: E731
    mma = cls(cst(warps), D.fn(op))
    zero = Lit(0.0, cls.acc)
    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose << D.mapWrg(0)(
        lambda b_col: D.join << FunCall(mma, (zero, D.zip(a_row, b_col))))
        << tiles(tn) << D.transpose << b) << tiles(tm) << a)


def _mma_build(site: Site, tm: int, tn: int, tk: int, warps: int, staged: int,
               lines: int = 0, ik: int = 0, ahead: int = 0, pairs: bool = False) -> Expr:
    a, b, _, _, _, cls = mm_nest(site)  # type: ignore[misc]
    if ik and cls is P.ReduceMmaF64:  # m16n8k8 (k16) throughout, fragments read ahead
        cls = f64_mma_class(ik, ahead, staged)
    return mm_tensor_cores(fresh(a), fresh(b), cls, tm, tn, tk, warps, staged, lines, pairs)


MM_TENSOR_CORES = make_rule(
    "mm-tensor-cores",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRow. map(join) ∘ transpose ∘ mapWrg(0)(λbCol. join ∘ reduceMma<P> w "
    "(stage, 0) $ zip(aRow, bCol)) ∘ tiles(tn, tk) ∘ transpose $ B) ∘ tiles(tm, tk) $ A   (P = F64 "
    "for double; TF32/BF16 only where A and B are map(map(toTF32/toBF16)) of the inputs)",
    "issue 12 (tensor cores)", _mma_choices, _mma_build, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# the tile copies of a reduceSeq pipelined with cp.async

ASYNC_STAGES = (2, 3, 4)


def _async_copy_of(f: Any) -> bool:
    """f is toLocal of a copy that cp.async can do (nested mapSeqUnroll/mapSeq/mapLcl of id)."""
    from liftkit.ir.patterns.cuda import copy_levels

    return isinstance(f, P.ToLocal) and copy_levels(f.f) is not None


def _staged_let(site: Site) -> Optional[tuple[Lambda, FunCall]]:
    """(the reduceSeq's function, its let) when the site is reduceSeq(λ(acc, t). (λ(x, y). body)(
    a, b), z) with an array accumulator, run by the whole work-group, where a and b each contain
    exactly one toLocal of a copy (and no toLocalAsync yet)."""
    f = site.f
    if type(f) is not P.ReduceSeq or not isinstance(f.f, Lambda) or len(f.f.params) != 2:
        return None
    if site.inside(P.MapLcl, P.MapSeq, P.MapSeqUnroll, P.AbstractReduce, P.ReduceMma):
        return None
    if not any(isinstance(p, P.MapWrg) for p in site.enclosing):
        return None
    body = f.f.body
    if not (isinstance(body, FunCall) and isinstance(body.f, Lambda) and len(body.args) == 2
            and len(body.f.params) == 2):
        return None
    if not isinstance(site.arg_types[0], ArrayType):
        return None
    if any(isinstance(n, P.ToLocalAsync) for n in walk(f.f)):
        return None
    for a in body.args:
        if sum(1 for n in walk(a) if _async_copy_of(n)) != 1:
            return None
    return f.f, body


def _async_choices(site: Site) -> Options:
    found = _staged_let(site)
    if found is None:
        return []
    out = []
    for s in ASYNC_STAGES:
        try:
            new = _async_build(site, s)
        except Exception:  # noqa: BLE001 - not a pipelinable staging after all
            return []
        if not type_checks(site, new):
            return []
        out.append({"stages": s})
    return out


def _async_build(site: Site, stages: int) -> Expr:
    fun, let = _staged_let(site)  # type: ignore[misc]

    def go(n: Any) -> Any:
        if _async_copy_of(n):
            return P.ToLocalAsync(cst(stages), n.f)
        if isinstance(n, Lambda):
            return Lambda(n.params, go(n.body))
        if isinstance(n, FunCall):
            return FunCall(go(n.f), tuple(go(a) for a in n.args))
        if isinstance(n, P.Pattern):
            fs = n.functions()
            return n.with_functions([go(f) for f in fs]) if fs else n
        return n

    staged = FunCall(let.f, tuple(go(a) for a in let.args))
    new_f = fresh(Lambda(fun.params, staged))
    return call(P.ReduceSeq(new_f), *site.call.args)


TILES_ASYNC = make_rule(
    "tiles-async",
    "reduceSeq(λ(acc, t). (λ(x, y). body)(… toLocal(copy) … $ get 0 t, … toLocal(copy) … $ get 1 "
    "t), z) → reduceSeq(λ(acc, t). (λ(x, y). body)(… toLocalAsync s (copy) … $ get 0 t, …), z)   "
    "(s tiles in flight: cp.async, one barrier per tile)",
    "issue 12 (asynchronous tile copies)", _async_choices, _async_build, lowering=True)


CUDA_RULES: tuple[Rule, ...] = (TREE_CHUNKS_32, REDUCE_WARP, MM_TENSOR_CORES, MM_WGMMA, MM_WGMMA_ASYNC,
                                MM_WGMMA_PAIR, MM_WGMMA_TMA, MM_WGMMA_TMA_PAIR, TILES_ASYNC)
CUDA_RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in CUDA_RULES}




def warp_reductions(program: Any) -> Any:
    """The derivation turning every work-group tree reduction of `program` (at least five
    levels, as in the bundled asum_gpu/dot_gpu) into warp shuffles plus the levels left over: a
    replayable `Derivation` (its `rules` carry these rules)."""
    from liftkit.rewrite.strategies import normalize_with, try_

    strategy = try_(normalize_with(TREE_CHUNKS_32)) >> normalize_with(REDUCE_WARP)
    return strategy.derive(program, rules=CUDA_RULES_BY_NAME, name="warp-reductions")


__all__ = ["CUDA_RULES", "CUDA_RULES_BY_NAME", "MM_TENSOR_CORES", "MM_WGMMA", "MM_WGMMA_ASYNC", "MM_WGMMA_PAIR", "REDUCE_WARP", "TILES_ASYNC",
           "TREE_CHUNKS_32", "MM_TILES_ASYNC", "sgemm_derivation",
           "mm_nest", "mm_tensor_cores", "mm_wgmma", "tensor_core_mm", "warp_reductions"]


def _search_rules() -> tuple[Rule, ...]:
    from liftkit.rewrite.rules import SEARCH_RULES
    from liftkit.rewrite.rules.mm_schedule import SCHEDULE_RULES  # the tile loop's schedule

    # mm-wgmma-async is left out: its kernel gave wrong products on the H100 for some tilings
    # (results/final22/runB/wgmma.log), so the code generator refuses it until that is found
    # (mm-wgmma-tma: every offered tiling right on the H100, results/issue12/tma/run4-5).
    # mm-wgmma-tma-pair is left out too: right on the H100 and no faster than mm-wgmma-tma at
    # its best tiling (run 5), but its consumers free a stage in the partner block with a
    # CTA-scope arrive, an order the PTX memory model does not promise across a cluster
    left_out = (MM_WGMMA_ASYNC, MM_WGMMA_TMA_PAIR)
    return tuple(SEARCH_RULES) + tuple(r for r in CUDA_RULES if r not in left_out) + \
        SCHEDULE_RULES


# `liftkit explore … --backend cuda --rules liftkit.rewrite.rules.cuda:CUDA_SEARCH_RULES`
CUDA_SEARCH_RULES: tuple[Rule, ...] = _search_rules()


def tensor_core_mm(kind: str, tm: int, tn: int, tk: int, warps: int, staged: int,
                   lines: int = 0, wgmma: bool = False, copy: str = "registers",
                   ik: int = 0, ahead: int = 0, group: Optional[int] = None,
                   pairs: bool = False) -> Any:
    """The derivation of C = A·B on the tensor cores from the high-level product (kind "tf32":
    the program rounds A and B with toTF32 first; "tf32z" truncates them with truncTF32; "bf16"
    rounds with toBF16; "f64": double): one application of mm-tensor-cores with these
    parameters, replayable (`lines`: the staged tiles copied in 16-byte chunks over whole lines
    into rotated rows; lines=2: operands copied as k rows kept in blocks of 4 rows, 3: with
    their 128-byte segments rotated); with `wgmma`, one application of mm-wgmma instead (Hopper's warpgroup
    MMA, TF32 kinds only), `staged` tiles deep; with `copy="cp.async"` as well, mm-wgmma-async
    (the tiles copied raw by cp.async, B through registers); `copy="pair"`, mm-wgmma-pair (the
    same in 2-block clusters sharing B); `copy="tma"`, mm-wgmma-tma (tf32z: the bulk tensor
    copy, a producer warpgroup, `warps` consumer warps); `copy="tma-pair"`, mm-wgmma-tma-pair
    (the same in 2-block clusters, B multicast). `ik=8` (f64): DMMA m16n8k8 throughout
    (reduceMmaF64K8; `ik=16` with `ahead=2`: reduceMmaF64K16AheadSpread, the ahead=2 loop on
    m16n8k16); with `ahead=1` too, each k-step's fragments read one step ahead, across
    tiles (reduceMmaF64K8Ahead; staged > 1); `ahead=2`, also the next tile's copies issued among
    the last products (reduceMmaF64K8AheadSpread); `pairs` (ahead=2), k permuted in blocks of
    16 in both operands (`pair_k`) for 16-byte fragment reads. `group` (copy="tma"): the blocks
    started that many row tiles at a time (0: the grid's order; None: the rule's first offer)."""
    from liftkit import dsl as D
    from liftkit.ir.patterns.cuda import toBF16, toTF32, truncTF32
    from liftkit.rewrite.strategies import rule, topdown

    if kind not in ("tf32", "tf32z", "bf16", "f64"):
        raise ValueError(f"tensor-core product of kind {kind!r}: tf32, tf32z, bf16 or f64")
    if (wgmma and kind not in ("tf32", "tf32z")) or (kind == "tf32z" and not wgmma):
        raise ValueError(f"tensor-core product of kind {kind}: the warpgroup MMA (wgmma) takes "
                         "tf32 and tf32z, mma.sync tf32, bf16 and f64")
    T = float64 if kind == "f64" else float32
    cast = {"tf32": toTF32, "tf32z": truncTF32, "bf16": toBF16}.get(kind)
    rows = (lambda X: D.map(D.map(cast)) << X) if cast else (lambda X: X)
    add_, mult_ = (D.add, D.mult) if T == float32 else (D.DOUBLE.add, D.DOUBLE.mult)
    M, N, K = D.size("M"), D.size("N"), D.size("K")
    program = D.fun([T[K][M], T[N][K]], lambda A, B: D.map(lambda rowA: D.join << D.map(
        lambda colB: D.reduce(add_, D.lit(0.0, T)) << D.map(mult_) << D.zip(rowA, colB))
        << D.transpose << rows(B)) << rows(A))
    rules = {"registers": (MM_WGMMA, ""), "cp.async": (MM_WGMMA_ASYNC, "-async"), "pair": (MM_WGMMA_PAIR, "-pair"),
             "tma": (MM_WGMMA_TMA, "-tma"), "tma-pair": (MM_WGMMA_TMA_PAIR, "-tma-pair")}
    if copy not in rules or (copy != "registers" and not wgmma) or (copy.startswith("tma") and kind != "tf32z"):
        raise ValueError(f"tensor-core product copying its tiles by {copy!r}: 'registers', or "
                         "'cp.async', 'pair' (2-block clusters sharing B), 'tma' or 'tma-pair' (tf32z: "
                         "the bulk tensor copy) with the warpgroup MMA (wgmma)")
    if group is not None and copy != "tma":
        raise ValueError(f"a grouped launch order (group={group}) is offered with copy='tma' only")
    if wgmma:
        which, tag = rules[copy]
        grp = {} if group is None else {"group": group}
        step = rule(which, tm=tm, tn=tn, tk=tk, warps=warps, stages=staged, **grp)
        return topdown(step).derive(program, rules=CUDA_RULES_BY_NAME, name=f"mm-{kind}-wgmma{tag}")
    extra: dict[str, Any] = {"lines": lines if lines in (2, 3) else True} if lines else {}
    if ik:  # f64 only: reduceMmaF64K8 (m16n8k8 throughout), K16AheadSpread (m16n8k16)
        if kind != "f64" or ik not in (8, 16):
            raise ValueError(f"tensor-core product of kind {kind} with ik={ik}: only f64 takes "
                             "ik=8 (DMMA m16n8k8 throughout) or ik=16 (m16n8k16, ahead=2)")
        extra["ik"] = int(ik)
    if ahead or extra.get("ik") == 16:
        if staged < 2 or (extra.get("ik"), ahead) not in ((8, 1), (8, 2), (16, 2)):
            raise ValueError("tensor-core product reading fragments ahead: ahead=1 or 2, only f64 "
                             "with ik=8 (ik=16: ahead=2) and a cp.async pipeline (staged ≥ 2)")
        extra["ahead"] = int(ahead)
    if pairs:
        if ahead != 2 or not lines or tk % PAIR_BLOCK:
            raise ValueError(f"tensor-core product with k-permuted fragment reads (pairs): f64 "
                             f"read ahead (ahead=2), lines, tk a multiple of {PAIR_BLOCK}")
        extra["pairs"] = True
    step = rule(MM_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, **extra)
    return topdown(step).derive(program, rules=CUDA_RULES_BY_NAME, name=f"mm-{kind}-tensor-cores")


def _mm_tiles_async(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int, rot: int = 0,
                    kt: int = 0, w: int = 4, pair: int = 0) -> Any:
    """mm-local-tiles (float4, unrolled; w=1: scalars, complex numbers' form; rot: A's rows
    rotated in local memory; kt: NT's and TN's transposed operands tiled as stored,
    rules/mm_layouts.py; pair: complex K-outer operands owned in consecutive pairs), then its
    tile loop's copies pipelined `stages` deep."""
    from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
    from liftkit.rewrite.strategies import rule, seq, topdown

    extra = {**({"rot": rot} if rot else {}), **({"kt": kt} if kt else {}),
             **({"pair": pair} if pair else {})}
    return seq(rule(MM_LOCAL_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=w, **extra),
               topdown(rule(TILES_ASYNC, stages=stages)))


def _at_mm(site: Site) -> bool:
    from liftkit.rewrite.rules.mm import mm_parts

    return mm_parts(site) is not None


def _mm_tiles_async_macro() -> Any:
    from liftkit.rewrite.strategies import MacroRule

    return MacroRule(
        "mm-tiles-async", _mm_tiles_async,
        "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) "
        "$ A → tm×tn tiles of C per work-group, rm×rn float4 register blocks per thread, the A and "
        "B tiles of depth tk copied by cp.async `stages` deep (mm-local-tiles, then tiles-async; "
        "rot=1: A's rows rotated in local memory against bank conflicts)",
        "issue 12 (the Hopper FFMA matrix-product shape)", where=_at_mm)


# the Hopper SGEMM shape as one macro (the search's `--rules` may name it with the others)
MM_TILES_ASYNC = _mm_tiles_async_macro()


def sgemm_derivation(m: int, n: int, k: int, tm: int, tn: int, tk: int, rm: int, rn: int,
                     stages: int, rot: int = 0) -> Any:
    """The replayable derivation of FP32 C = A·B (FFMA) from the bundled high-level `mm`
    program (symbolic M, N, K, as `run mm --tuned` replays it; m, n, k are checked against the
    tiles): mm-local-tiles(tm, tn, tk, rm, rn[, rot]), then tiles-async(stages) for stages > 1."""
    from liftkit.programs.apps import mm
    from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
    from liftkit.rewrite.strategies import rule, topdown

    if m % tm or n % tn or k % tk:
        raise ValueError(f"sgemm {m}x{n}x{k}: tiles {tm}x{tn}x{tk} must divide the sizes")
    rules = {**CUDA_RULES_BY_NAME, MM_LOCAL_TILES.name: MM_LOCAL_TILES, MM_TILES_ASYNC.name: MM_TILES_ASYNC}
    extra = {"rot": rot} if rot else {}
    if stages > 1:
        step = topdown(rule(MM_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages,
                            **extra))
    else:
        step = topdown(rule(MM_LOCAL_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=4,
                            **extra))
    return step.derive(mm(), rules=rules, name=f"sgemm-{tm}x{tn}x{tk}-{rm}x{rn}-s{stages}"
                       + ("-rot" if rot else ""))
