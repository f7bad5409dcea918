"""Matrix multiplication tiled and blocked for GPUs and CPUs (seed 001's MM fragments, seed 004).

The high-level program (`liftkit.programs.apps.mm`) is a map over the rows of A of a map over
the columns of B of a dot product:

    map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A

Each rule below rewrites that whole nest in one step into a kernel shape of the papers (as the
stencil rules of rules/stencil.py tile and lower in one step), with every size a constant
parameter, so the tiles and register blocks have constant sizes:

* `mm-local-tiles` (tm, tn, tk, rm, rn, unroll, w): the CLBlast/NVIDIA shape (seed 001 Listing 1
  with local memory; the bundled `mm_nvidia`). 2D tiling of C into tm×tn tiles, one work-group
  each (`mapWrg(1) ∘ mapWrg(0)`); the K loop split by the constant tk (`split tk` of A's rows and
  B's columns: a `reduceSeq` over the K/tk tile pairs); each tile pair copied into local memory
  cooperatively (`toLocal(mapSeqUnroll(mapLcl(1)(mapLcl(0)(id))))`, coalesced float4 rounds);
  2D register blocking: (tn/rn)×(tm/rm) work-items each accumulate an rm×rn block of C in
  private memory (rm = 1 or rn = w give the 1D blockings), A and B read from local memory as
  float4 (asVector 4, aligned vector loads; w = 4) or as scalars (w = 1, rm = rn = 1: no register
  blocking, the bundled `mm_tiled`'s shape with the accumulator in a register); the tk/w steps of a tile and the block
  update fully unrolled (`reduceSeqUnroll`, `mapSeqUnroll`: the private arrays become
  registers); unroll=0 keeps the K steps of a tile a loop.
* `mm-private-blocks` (rm, rn, wx, wy): the CLBlast/AMD shape (the bundled `mm_amd`): 2D
  register blocking without local memory. Work-groups of wx×wy work-items, each an rm×rn block
  of C in registers; A read as float4 along K, B as float4 rows; neighbouring work-items read
  neighbouring float4 of B (coalesced on GPUs, one cache line on CPUs).

* `mm-tile-2d` (tm, tn, tk) then `mm-tiles-lower` (rm, rn, w, unroll): `mm-local-tiles` in two
  steps. The first is algorithmic (still high-level): tm×tn tiles of C, each element's dot
  product split into K/tk partial sums of tk products; the second lowers exactly that tiled
  form (compared with a rebuilt copy up to parameter names) to the kernel of `mm-local-tiles`.
  The `mm-tiles` macro is the two in sequence; between them the search may also take the
  tiled program elsewhere.

All need the reduction to be `add` with 0 and the products `mult`, over float32 (the float4
multiply-add `madS4` replaces them: acc + a·b, a broadcast over b's lanes; `madS` for w = 1). The sizes must be
multiples of the tiles; for constant sizes the rules offer only dividing parameters, for
symbolic ones a fixed list (the exploration's filters check the splits at the real sizes).
Both results are OpenCL-level programs.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, UserFun, walk
from liftkit.ir.userfuns import FLOAT, id4
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.types import ArrayType, float32

Options = list[dict[str, Any]]
SOURCE = "seed 001 (matrix-multiplication fragments: tiling, register blocking), seed 004"

# acc + a·b with a scalar a broadcast over the lanes of b (one vector FMA): reduce(add) ∘ map(mult)
# over float4 lanes of B with A's scalar
MAD_S4 = D.user_fun("madS4", [("acc", D.float4), ("a", float32), ("b", D.float4)], D.float4,
                    "return fma((float4)(a), b, acc);",
                    lambda acc, a, b: acc + (np.asarray(a)[..., None] if np.ndim(a) else a) * b)
# the scalar form (vector width 1): acc + a·b
MAD = D.user_fun("madS", [("acc", float32), ("a", float32), ("b", float32)], float32,
                 "return fma(a, b, acc);", lambda acc, a, b: acc + a * b)

# the parameter sets offered where a size is symbolic: (tm, tn, tk, rm, rn, unroll, w) and (rm,
# rn, wx, wy); they include every set the macros of explore/macros.py try
SYMBOLIC_TILES = ((64, 64, 16, 8, 8, 1, 4), (64, 128, 16, 8, 8, 1, 4), (128, 64, 16, 8, 8, 1, 4),
                  (64, 64, 32, 8, 8, 1, 4), (64, 128, 32, 8, 8, 1, 4), (128, 128, 16, 8, 8, 1, 4),
                  (64, 64, 16, 4, 8, 1, 4), (128, 64, 16, 8, 4, 1, 4), (64, 32, 16, 8, 4, 1, 4),
                  (32, 32, 16, 4, 4, 1, 4), (32, 64, 16, 2, 8, 0, 4), (64, 64, 16, 8, 8, 0, 4),
                  # scalar (w = 1): 1×1 (no register blocking, the bundled mm_tiled), 1D, 2D
                  (16, 16, 16, 1, 1, 1, 1), (32, 32, 16, 2, 2, 1, 1), (64, 64, 16, 4, 4, 1, 1),
                  (32, 32, 32, 2, 2, 1, 1), (32, 32, 16, 4, 1, 1, 1), (64, 64, 16, 8, 8, 1, 1))
SYMBOLIC_BLOCKS = ((4, 4, 8, 8), (4, 8, 8, 8), (8, 8, 8, 8), (4, 4, 16, 16), (8, 4, 8, 8),
                   (2, 4, 16, 8), (2, 8, 4, 8))
# the candidates for constant sizes (filtered by divisibility)
TILE_SIZES = (8, 16, 32, 64, 128)
K_TILES = (4, 8, 16, 32)
BLOCKS = ((8, 8), (4, 8), (8, 4), (2, 8), (4, 4), (2, 4), (4, 1), (1, 4), (2, 2), (1, 1))
GROUPS = ((8, 8), (16, 16), (8, 4), (4, 4), (16, 8), (2, 2))
MAX_GROUP = 256
MIN_GROUP = 16
WIDTHS = (4, 1)  # float4 or scalar loads and blocks
MAX_CHOICES = 8
_NOT_AROUND = (P.ParallelMap, P.MapSeq, P.MapSeqUnroll, P.AbstractReduce, P.MapVec, P.Iterate)


# ---------------------------------------------------------------------------------------------
# matching


def _is_user(f: Any, uf: UserFun) -> bool:
    """f is the user function uf, or λ(x1..xn). uf(x1..xn) (its rewrite normal form; for map(mult)
    over a zip, λp. mult(p) with one tuple parameter). The papers' float `add` and `mult`
    themselves, not any function of that name: the rules rely on what they compute."""
    if isinstance(f, Lambda):
        b = f.body
        if not (isinstance(b, FunCall) and b.args == f.params):
            return False
        f = b.f
    return f == uf


def mm_parts(site: Site) -> Optional[tuple[Expr, Expr, ArithExpr, ArithExpr, ArithExpr]]:
    """(A, B, M, N, K) when the site is map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult)
    $ zip(rowA, colB)) ∘ transpose $ B) $ A with A: [[float]_K]_M and B: [[float]_N]_K."""
    f = site.f
    if type(f) is not P.Map or not isinstance(f.f, Lambda) or len(f.f.params) != 1:
        return None
    if site.inside(*_NOT_AROUND):
        return None
    row = f.f.params[0]
    j = f.f.body
    if not (isinstance(j, FunCall) and type(j.f) is P.Join):
        return None
    cols = j.args[0]
    if not (isinstance(cols, FunCall) and type(cols.f) is P.Map and isinstance(cols.f.f, Lambda)):
        return None
    t = cols.args[0]
    if not (isinstance(t, FunCall) and type(t.f) is P.Transpose):
        return None
    b = t.args[0]
    if any(n is row for n in walk(b)):
        return None
    dot = cols.f.f
    if len(dot.params) != 1:
        return None
    col = dot.params[0]
    red = dot.body
    if not (isinstance(red, FunCall) and type(red.f) is P.Reduce and _is_user(red.f.f, FLOAT.add)):
        return None
    z, prods = red.args
    if not (isinstance(z, Literal) and z.type == float32 and float(z.value) == 0.0):
        return None
    if not (isinstance(prods, FunCall) and type(prods.f) is P.Map and _is_user(prods.f.f, FLOAT.mult)):
        return None
    zp = prods.args[0]
    if not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and zp.args == (row, col)):
        return None
    a_t, b_t = site.arg_types[0], site.type_of(b)
    if not (isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType) and a_t.elem.elem == float32
            and isinstance(b_t, ArrayType) and isinstance(b_t.elem, ArrayType)
            and b_t.elem.elem == float32):
        return None
    if a_t.elem.length != b_t.length:
        return None
    return site.call.args[0], b, a_t.length, b_t.elem.length, a_t.elem.length


def _fits(n: Optional[int], d: int) -> bool:
    return n is None or (n % d == 0 and n >= d)


# ---------------------------------------------------------------------------------------------
# shared pieces of both shapes


def _private_copy4(depth: int, w: int = 4) -> Any:
    """toPrivate of a fully unrolled copy of a depth-dimensional array of float4 (w = 4) or
    float (w = 1): registers."""
    f: Any = id4 if w == 4 else FLOAT.id
    for _ in range(depth):
        f = D.mapSeqUnroll(f)
    return D.toPrivate(f)


def _block_update(acc: Any, a_cols: Any, b_rows: Any, w: int = 4) -> Any:
    """acc[r][c] += Σ_kk a_cols[r][kk] · b_rows[kk][c] for a register block (all unrolled)."""
    mad = MAD_S4 if w == 4 else MAD
    return D.mapSeqUnroll(lambda acc_a: D.join << D.mapSeqUnroll(
        lambda acc_b: D.reduceSeqUnroll(lambda s, ab: mad(s, ab[0], ab[1]), acc_b[0])
        << D.zip(acc_a[1], acc_b[1])) << D.zip(acc_a[0], D.transpose << b_rows)) << D.zip(acc, a_cols)


def _zeros4(shape: tuple[int, ...], w: int = 4) -> Any:
    t: Any = D.float4 if w == 4 else float32
    for n in reversed(shape):
        t = t[n]
    return D.lit(np.zeros(shape + ((4,) if w == 4 else ()), np.float32), t)


# ---------------------------------------------------------------------------------------------
# mm-local-tiles


def _tiles_ok(tm: int, tn: int, tk: int, rm: int, rn: int, w: int = 4) -> bool:
    if w not in WIDTHS or tm % rm or tn % rn or rn % w or tk % w:
        return False
    nt = (tm // rm) * (tn // rn)
    return MIN_GROUP <= nt <= MAX_GROUP and (tm * tk // w) % nt == 0 and (tk * tn // w) % nt == 0


def _choices_tiles(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    _, _, m, n, k = parts
    cm, cn, ck = const(m), const(n), const(k)
    if cm is None or cn is None or ck is None:
        combos = [c for c in SYMBOLIC_TILES if _fits(cm, c[0]) and _fits(cn, c[1]) and _fits(ck, c[2])]
        combos = list(dict.fromkeys(combos))
    else:
        combos = [(tm, tn, tk, rm, rn, 1, w) for w in WIDTHS for tm in TILE_SIZES for tn in TILE_SIZES
                  for tk in K_TILES for rm, rn in BLOCKS
                  if _fits(cm, tm) and _fits(cn, tn) and _fits(ck, tk) and _tiles_ok(tm, tn, tk, rm, rn, w)]
        combos.sort(key=lambda c: (-c[6], -(c[0] * c[1]), -c[3] * c[4], -c[2]))
        combos = combos[:MAX_CHOICES] + [c for c in combos if c[6] == 1][:MAX_CHOICES // 2]
    return [{"tm": tm, "tn": tn, "tk": tk, "rm": rm, "rn": rn, "unroll": u, "w": w}
            for tm, tn, tk, rm, rn, u, w in dict.fromkeys(combos) if _tiles_ok(tm, tn, tk, rm, rn, w)]


def local_tiles(a: Expr, b: Expr, tm: int, tn: int, tk: int, rm: int, rn: int,
                unroll: int = 1, w: int = 4) -> Expr:
    """C = A·B in the CLBlast/NVIDIA shape (see the module docstring); w = 1: scalar loads and
    register blocks instead of float4."""
    if not _tiles_ok(tm, tn, tk, rm, rn, w):
        raise ValueError(f"inconsistent tiles tm={tm} tn={tn} tk={tk} rm={rm} rn={rn} w={w}")
    wy, wx = tm // rm, tn // rn
    idw = id4 if w == 4 else FLOAT.id
    vec: tuple[Any, ...] = (D.map(D.asVector(4)),) if w == 4 else ()
    a_tiles = D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(tm))
    b_tiles = D.compose(D.transpose, D.map(D.transpose), D.map(D.map(D.split(tn))), D.split(tk))
    init = D.toPrivate(D.mapLcl(1)(D.mapLcl(0)(D.mapSeqUnroll(D.mapSeqUnroll(idw)))))
    from_local = lambda row: D.compose(D.split(row), D.join, D.map(D.join))  # noqa: E731
    a_threads = D.compose(D.transpose, D.split(wy), from_local(tk // w))
    b_threads = D.compose(D.transpose, D.map(D.transpose), D.map(D.split(wx)), from_local(tn // w))
    # a tile (as float4) in rounds of WX·WY work-items: neighbouring work-items read neighbours
    rounds = D.compose(D.map(D.split(wx)), D.split(wx * wy), D.join, *vec)
    over_k = D.reduceSeqUnroll if unroll else D.reduceSeq
    a_cols = D.compose(D.map(D.asScalar), D.split(1)) if w == 4 else D.split(1)

    def thread(acc: Any, a_t: Any, b_t: Any) -> Any:
        def chunk(regs: Any, ab: Any) -> Any:
            return D.let(_private_copy4(1, w) << ab[0], _private_copy4(2, w) << ab[1], lambda aP, bP:
                         _block_update(regs, a_cols << aP, bP, w))

        return (D.mapSeqUnroll(D.mapSeqUnroll(idw)) << D.join
                << over_k(chunk, _private_copy4(2, w) << acc)
                << D.zip(D.transpose << a_t, D.split(w) << b_t))

    def step(acc: Any, tiles: Any) -> Any:
        copy = lambda: D.toLocal(D.mapSeqUnroll(D.mapLcl(1)(D.mapLcl(0)(idw))))  # noqa: E731
        return D.let(copy() << rounds(tiles[0]), copy() << rounds(tiles[1]), lambda lA, lB:
                     D.mapLcl(1)(lambda acc_a: D.mapLcl(0)(
                         lambda acc_b: thread(acc_b[0], acc_a[1], acc_b[1]))
                         << D.zip(acc_a[0], b_threads(lB))) << D.zip(acc, a_threads(lA)))

    out = D.toGlobal(D.mapLcl(1)(D.mapLcl(0)(D.mapSeqUnroll(D.mapSeqUnroll(idw)))))
    by_block = D.compose(D.map(D.transpose), D.transpose, D.map(D.map(D.transpose)), D.map(D.transpose))
    scalars: tuple[Any, ...] = (D.map(D.asScalar),) if w == 4 else ()
    wg_rows = D.compose(*scalars, D.join, D.map(D.map(D.join)), D.map(D.transpose), by_block)
    zeros = _zeros4((wy, wx, rm, rn // w), w)
    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose << D.map(wg_rows)
                                  << D.mapWrg(0)(lambda b_col: out << D.join
                                                 << D.reduceSeq(step, init << zeros)
                                                 << D.zip(a_row, b_col))
                                  << b_tiles(b)) << a_tiles(a))


def _build_tiles(site: Site, tm: int, tn: int, tk: int, rm: int, rn: int, unroll: int = 1,
                 w: int = 4) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    a, b = parts[0], parts[1]
    return local_tiles(fresh(a), fresh(b), tm, tn, tk, rm, rn, unroll, w)


MM_LOCAL_TILES = make_rule(
    "mm-local-tiles",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRow. untile ∘ mapWrg(0)(λbCol. toGlobal(copy) ∘ join ∘ reduceSeq(λ(acc, "
    "(a, b)). let lA = toLocal(copy rounds a), lB = toLocal(copy rounds b) in mapLcl(1)(mapLcl(0)("
    "rm×rn float4 register block += lA·lB, unrolled)), 0) $ zip(aRow, bCol)) ∘ tiles(tk, tn) $ B) "
    "∘ tiles(tm, tk) $ A",
    SOURCE + ": 2D tiling, local-memory tiles with cooperative copies, K split by tk, 2D register "
    "blocking, unrolling, float4 loads", _choices_tiles, _build_tiles, lowering=True, reshapes=True,
    opaque=False)


# ---------------------------------------------------------------------------------------------
# the same in two steps: mm-tile-2d (algorithmic), then mm-tiles-lower


def tiled(a: Expr, b: Expr, tm: int, tn: int, tk: int) -> Expr:
    """C = A·B tiled, still high-level: tm×tn tiles of C (tm rows of A against tn columns of B),
    each element's dot product split into K/tk partial sums of tk products (2D tiling and the K
    loop split by tk)."""

    def dot(row: Any, col: Any) -> Any:
        return (D.reduce(FLOAT.add, 0.0) << D.join
                << D.map(lambda p: D.reduce(FLOAT.add, 0.0) << D.map(FLOAT.mult) << D.zip(p[0], p[1]))
                << D.zip(D.split(tk) << row, D.split(tk) << col))

    def tile(a_rows: Any, b_cols: Any) -> Any:
        return D.map(lambda rowA: D.join << D.map(lambda colB: dot(rowA, colB)) << b_cols) << a_rows

    return (D.join << D.map(lambda a_rows: D.map(D.join) << D.transpose
                            << D.map(lambda b_cols: tile(a_rows, b_cols))
                            << D.split(tn) << D.transpose << b) << D.split(tm) << a)


def _choices_tile2d(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    _, _, m, n, k = parts
    cm, cn, ck = const(m), const(n), const(k)
    if cm is None or cn is None or ck is None:
        shapes = [c[:3] for c in SYMBOLIC_TILES]
    else:
        shapes = [(tm, tn, tk) for tm in TILE_SIZES for tn in TILE_SIZES for tk in K_TILES
                  if any(_tiles_ok(tm, tn, tk, rm, rn, w) for rm, rn in BLOCKS for w in WIDTHS)]
        shapes.sort(key=lambda c: (-(c[0] * c[1]), -c[2]))
    shapes = [c for c in dict.fromkeys(shapes) if _fits(cm, c[0]) and _fits(cn, c[1]) and _fits(ck, c[2])]
    return [{"tm": tm, "tn": tn, "tk": tk} for tm, tn, tk in shapes[:2 * MAX_CHOICES]]


def _build_tile2d(site: Site, tm: int, tn: int, tk: int) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    return tiled(fresh(parts[0]), fresh(parts[1]), tm, tn, tk)


MM_TILE_2D = make_rule(
    "mm-tile-2d",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ map(λaRows. map(join) ∘ transpose ∘ map(λbCols. map(λrowA. join ∘ map(λcolB. "
    "reduce(add, 0) ∘ join ∘ map(λp. reduce(add, 0) ∘ map(mult) $ zip(p.0, p.1)) $ zip(split tk "
    "rowA, split tk colB)) $ bCols) $ aRows) ∘ split tn ∘ transpose $ B) ∘ split tm $ A",
    SOURCE + ": 2D tiling of C and the K loop split by the constant tk", _choices_tile2d,
    _build_tile2d, reshapes=True, opaque=False)


def _same(x: Any, y: Any, names: dict[int, Any]) -> bool:
    """x and y are the same expression up to the names of their bound parameters (`names`: x's
    parameters, by uid, to what stands for them in y)."""
    if isinstance(x, Param):
        target = names.get(x.uid, x)
        if not isinstance(target, Param):  # a free parameter standing for an expression
            return target is y or _same(target, y, {})
        return target is y
    if isinstance(y, Param):
        return False
    if type(x) is not type(y):
        return False
    if isinstance(x, Lambda):
        if len(x.params) != len(y.params):
            return False
        names = {**names, **{p.uid: q for p, q in zip(x.params, y.params)}}
        return _same(x.body, y.body, names)
    if isinstance(x, FunCall):
        return (len(x.args) == len(y.args) and _same(x.f, y.f, names)
                and all(_same(u, v, names) for u, v in zip(x.args, y.args)))
    if isinstance(x, Literal):
        return x.type == y.type and np.array_equal(np.asarray(x.value), np.asarray(y.value))
    if isinstance(x, P.Pattern):
        fx, fy = x.functions(), y.functions()
        return (x.static_params() == y.static_params() and len(fx) == len(fy)
                and all(_same(u, v, names) for u, v in zip(fx, fy)))
    return bool(x == y)


def tiled_parts(site: Site) -> Optional[tuple[Expr, Expr, int, int, int]]:
    """(A, B, tm, tn, tk) when the site is exactly what mm-tile-2d makes of A·B (compared up to
    parameter names with a rebuilt copy, so nothing a later rewrite changed is lowered)."""
    from liftkit.rewrite.core import normalize

    j = site.call
    if type(site.f) is not P.Join or site.inside(*_NOT_AROUND):
        return None
    m = j.args[0]
    if not (isinstance(m, FunCall) and type(m.f) is P.Map and isinstance(m.f.f, Lambda)
            and len(m.f.f.params) == 1):
        return None
    sa = m.args[0]  # split tm $ A
    if not (isinstance(sa, FunCall) and type(sa.f) is P.Split):
        return None
    tm, a = const(sa.f.n), sa.args[0]
    rows = m.f.f.params[0]
    # split tn ∘ transpose $ B: the one split in the body whose argument is free of aRows
    outer = [n for n in walk(m.f.f.body) if isinstance(n, FunCall) and type(n.f) is P.Split
             and isinstance(n.args[0], FunCall) and type(n.args[0].f) is P.Transpose
             and not any(q is rows for q in walk(n.args[0]))]
    inner = [const(n.n) for n in walk(m.f.f.body) if isinstance(n, P.Split)]
    if tm is None or len(outer) != 1 or len(inner) != 3:
        return None
    tn, b = const(outer[0].f.n), outer[0].args[0].args[0]
    if tn is None or None in inner:
        return None
    inner.remove(tn)
    tk = inner[0] if inner[0] == inner[1] else None
    if tk is None:
        return None
    try:
        want = normalize(D.fun([site.type_of(a), site.type_of(b)],  # type: ignore[list-item]
                               lambda x, y: tiled(x, y, tm, tn, tk)))
    except Exception:  # noqa: BLE001 - no such tiling of these arguments
        return None
    sub = {want.params[0].uid: a, want.params[1].uid: b}  # type: ignore[union-attr]
    if not _same(want.body, j, sub):  # type: ignore[union-attr]
        return None
    return a, b, tm, tn, tk


def _choices_lower(site: Site) -> Options:
    parts = tiled_parts(site)
    if parts is None:
        return []
    _, _, tm, tn, tk = parts
    return [{"rm": rm, "rn": rn, "w": w, "unroll": u} for u in (1, 0) for w in WIDTHS
            for rm, rn in BLOCKS if _tiles_ok(tm, tn, tk, rm, rn, w)]


def _build_lower(site: Site, rm: int, rn: int, w: int = 4, unroll: int = 1) -> Expr:
    parts = tiled_parts(site)
    assert parts is not None
    a, b, tm, tn, tk = parts
    return local_tiles(fresh(a), fresh(b), tm, tn, tk, rm, rn, unroll, w)


MM_TILES_LOWER = make_rule(
    "mm-tiles-lower",
    "join ∘ map(λaRows. map(join) ∘ transpose ∘ map(λbCols. tm×tn dot products of K/tk partial "
    "sums) ∘ split tn ∘ transpose $ B) ∘ split tm $ A → mapWrg(1)/mapWrg(0) "
    "over the tiles, A and B tiles copied into local memory cooperatively (float4 rounds), rm×rn "
    "register blocks per work-item, unrolled (= mm-local-tiles)",
    SOURCE + ": local-memory tiles with cooperative copies, 1D/2D register blocking, vectorised "
    "loads, unrolling", _choices_lower, _build_lower, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# mm-private-blocks


def _blocks_ok(rm: int, rn: int, wx: int, wy: int) -> bool:
    return rn % 4 == 0 and wx * wy <= MAX_GROUP


def _choices_blocks(site: Site) -> Options:
    parts = mm_parts(site)
    if parts is None:
        return []
    _, _, m, n, k = parts
    cm, cn, ck = const(m), const(n), const(k)
    if not _fits(ck, 4):
        return []
    if cm is None or cn is None:
        combos = [c for c in SYMBOLIC_BLOCKS if _fits(cm, c[3] * c[0]) and _fits(cn, c[2] * c[1])]
    else:
        combos = [(rm, rn, wx, wy) for rm, rn in BLOCKS for wx, wy in GROUPS
                  if _fits(cm, wy * rm) and _fits(cn, wx * rn) and _blocks_ok(rm, rn, wx, wy)]
        combos.sort(key=lambda c: (-(c[0] * c[1]), -(c[2] * c[3])))
        combos = combos[:MAX_CHOICES]
    return [{"rm": rm, "rn": rn, "wx": wx, "wy": wy} for rm, rn, wx, wy in combos
            if _blocks_ok(rm, rn, wx, wy)]


def private_blocks(a: Expr, b: Expr, rm: int, rn: int, wx: int, wy: int) -> Expr:
    """C = A·B in the CLBlast/AMD shape (see the module docstring)."""
    if not _blocks_ok(rm, rn, wx, wy):
        raise ValueError(f"inconsistent blocks rm={rm} rn={rn} wx={wx} wy={wy}")

    def thread(a_blk: Any, b_blk: Any) -> Any:
        # a_blk: [[float]_K]_RM, b_blk: [[float4]_K]_(RN/4)
        a_steps = D.transpose << D.map(D.asVector(4)) << a_blk  # [[float4]_RM]_(K/4)
        b_steps = D.transpose << D.map(D.split(4)) << b_blk  # [[[float4]_4]_(RN/4)]_(K/4)

        def step(acc: Any, ab: Any) -> Any:
            return D.let(_private_copy4(1) << ab[0], _private_copy4(2) << ab[1], lambda aP, bP:
                         _block_update(acc, D.map(D.asScalar) << D.split(1) << aP, D.transpose << bP))

        return (D.toGlobal(_private_copy4(2)) << D.join
                << D.reduceSeq(step, _private_copy4(2) << _zeros4((rm, rn // 4)))
                << D.zip(a_steps, b_steps))

    b_tiles = D.compose(D.map(D.compose(D.transpose, D.split(wx))), D.split(wx * rn // 4),
                        D.transpose, D.map(D.asVector(4)))
    wg_rows = D.compose(D.join, D.map(D.compose(D.map(D.asScalar), D.map(D.join), D.map(D.transpose),
                                                D.transpose)))
    return (D.join << D.mapWrg(1)(lambda a_rows: D.map(D.join) << D.transpose << D.map(wg_rows)
                                  << D.mapWrg(0)(lambda b_cols: D.mapLcl(1)(lambda a_blk: D.mapLcl(0)(
                                      lambda b_blk: thread(a_blk, b_blk)) << b_cols)
                                      << D.split(rm) << a_rows) << b_tiles(b))
            << D.split(wy * rm) << a)


def _build_blocks(site: Site, rm: int, rn: int, wx: int, wy: int) -> Expr:
    parts = mm_parts(site)
    assert parts is not None
    return private_blocks(fresh(parts[0]), fresh(parts[1]), rm, rn, wx, wy)


MM_PRIVATE_BLOCKS = make_rule(
    "mm-private-blocks",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRows. untile ∘ mapWrg(0)(λbCols. mapLcl(1)(λaBlk. mapLcl(0)(λbBlk. "
    "toGlobal(copy) ∘ join ∘ reduceSeq(rm×rn float4 register block += float4 of A · float4 rows "
    "of B, 0) $ zip(float4 steps of aBlk, of bBlk)) $ bCols) ∘ split rm $ aRows) ∘ float4 column "
    "blocks(wx, rn) $ B) ∘ split (wy·rm) $ A",
    SOURCE + ": 2D register blocking, float4 loads, no local memory (CLBlast for AMD)",
    _choices_blocks, _build_blocks, lowering=True, reshapes=True, opaque=False)

MM_RULES: tuple[Rule, ...] = (MM_LOCAL_TILES, MM_TILE_2D, MM_TILES_LOWER, MM_PRIVATE_BLOCKS)
