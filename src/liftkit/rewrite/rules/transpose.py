"""A transposition copied in r×r blocks (rule `transpose-blocks`, liftkit.blas's transpose
codelet for GPUs).

    map(map f) ∘ transpose $ X
  → join ∘ mapGlb(d₁)(λbrow. map(join) ∘ transpose ∘ mapGlb(d₀)(λb. mapSeq(mapSeq f) $ b) $ brow)
      ∘ transpose ∘ map(map(transpose) ∘ transpose ∘ map(split r)) ∘ split r $ X

X (M rows of N) is cut into r×r blocks; block (g, j) read transposed is block (j, g) of the
result, and `join ∘ map(map(join) ∘ transpose)` puts the blocks back as rows. Each work-item
copies one block with r×r sequential accesses: along dimension 0 run the blocks of one block-row
of the result (`swap` = 0: work-items next to each other write neighbouring r-runs of the same
rows, and read r-runs of r rows each that the cache serves across the block's loop) or of X
(`swap` = 1: the reads are the neighbouring runs). Exact (a copy), for any unary f; M and N
must be multiples of r.
"""

from __future__ import annotations

from typing import Any

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import fresh

BLOCKS = (4, 8, 16)


def _parts(site: Site) -> Any:
    """(f, X) when the site is map(λrow. map(f) $ row) $ transpose(X)."""
    m = site.f
    if type(m) is not P.Map or not isinstance(m.f, Lambda) or len(m.f.params) != 1:
        return None
    inner = m.f.body
    if not (isinstance(inner, FunCall) and type(inner.f) is P.Map and inner.args == m.f.params):
        return None
    t = site.call.args[0]
    if not (isinstance(t, FunCall) and type(t.f) is P.Transpose and len(t.args) == 1):
        return None
    return inner.f.f, t.args[0]


def _choices(site: Site) -> list[dict[str, Any]]:
    if site.enclosing or _parts(site) is None:
        return []
    return [{"r": r, "swap": s} for r in BLOCKS for s in (0, 1)]


def transpose_blocks(f: Any, x: Expr, r: int, swap: int) -> Expr:
    """The blocked copy of (map(map f) ∘ transpose) x (see the module docstring)."""
    from liftkit import dsl as D

    d1, d0 = (0, 1) if swap else (1, 0)
    blocks = D.compose(D.transpose, D.map(D.compose(D.map(D.transpose), D.transpose,
                                                    D.map(D.split(r)))), D.split(r))
    return D.join << D.mapGlb(d1)(lambda brow: D.map(D.join) << D.transpose << D.mapGlb(d0)(
        lambda blk: D.mapSeq(D.mapSeq(fresh(f))) << blk) << brow) << blocks(x)


def _build(site: Site, r: int, swap: int) -> Expr:
    f, x = _parts(site)
    return transpose_blocks(f, fresh(x), r, swap)


TRANSPOSE_BLOCKS = make_rule(
    "transpose-blocks",
    "map(map f) ∘ transpose → join ∘ mapGlb(λbrow. map(join) ∘ transpose ∘ mapGlb(mapSeq(mapSeq f)) "
    "$ brow) ∘ transpose ∘ map(map(transpose) ∘ transpose ∘ map(split r)) ∘ split r   (r×r blocks)",
    "liftkit.blas transpose (issue 15)", _choices, _build, lowering=True, reshapes=True,
    opaque=False)

TRANSPOSE_RULES: dict[str, Rule] = {TRANSPOSE_BLOCKS.name: TRANSPOSE_BLOCKS}


# ---------------------------------------------------------------------------------------------
# GPUs: a work-group per r×r block through local memory, rows rotated against bank conflicts
#
#   map(map f) ∘ transpose $ X
# → join ∘ mapWrg(1)(λbrow. map(join) ∘ transpose ∘ mapWrg(0)(λb.
#       let T = toLocal(copy id) ∘ split r ∘ gather(ρ) ∘ join $ b      (X's block, rows rotated)
#       in copy f ∘ transpose ∘ split r ∘ gather(ρ⁻¹) ∘ join $ T) $ brow)
#     ∘ transpose ∘ map(transpose ∘ map(split r)) ∘ split r $ X
#   copy h = join ∘ transpose ∘ mapLcl(1)(mapSeq(mapLcl(0)(h))) ∘ transpose ∘ split(r/k)
#
# Work-item (l, j) of an (r, r/k) work-group copies columns l of the rows j, j + r/k, … (k of
# them): X's block is read along its rows and the result's block written along its rows, both
# coalesced. Local memory holds row i of the block rotated by i (position p of row i holds
# column (p − i) mod r, the gather ρ), so reading a column of the tile (a row of the result)
# touches r different banks: the rotation is the tile's memory layout, a bijection in the
# program (no padded allocation), and the code generator's index arithmetic inverts it.
# Exact (a copy); M and N must be multiples of r.

# r = 64: rows of 256 bytes in float32, as float64's 32-wide tiles (tried for the H200's float32
# transpose at 0.85x its copy against float64's 0.98x; no faster there: 3,343 against 32-wide
# tiles' 3,413 GB/s at 8192², results/issue15/h200-26b)
LOCAL_TILES = ((32, 4), (32, 8), (32, 2), (32, 1), (16, 1), (16, 2), (16, 4), (64, 16), (64, 8))


def _local_choices(site: Site) -> list[dict[str, Any]]:
    if site.enclosing or _parts(site) is None:
        return []
    return [{"r": r, "k": k} for r, k in LOCAL_TILES]


def transpose_local_tiles(f: Any, x: Expr, elem: Any, r: int, k: int) -> Expr:
    """The tiled copy of (map(map f) ∘ transpose) x (X's elements of type `elem`) through
    rotated local tiles (see above)."""
    from liftkit import dsl as D

    g = r // k
    rotate = D.gather(lambda p, n: (p // r) * r + ((p % r) + r - (p // r) % r) % r)
    unrotate = D.gather(lambda i, n: (i // r) * r + ((i % r) + (i // r) % r) % r)

    def copy(h: Any) -> Any:
        return D.compose(D.join, D.transpose, D.mapLcl(1)(D.mapSeq(D.mapLcl(0)(h))),
                         D.transpose, D.split(g))

    def block(b: Any) -> Any:
        tile = D.toLocal(copy(D.id_of(elem))) << D.split(r) << rotate << D.join << b
        return D.let(tile, lambda t: copy(fresh(f)) << D.transpose << D.split(r) << unrotate
                     << D.join << t)

    blocks = D.compose(D.transpose, D.map(D.compose(D.transpose, D.map(D.split(r)))), D.split(r))
    return D.join << D.mapWrg(1)(lambda brow: D.map(D.join) << D.transpose
                                 << D.mapWrg(0)(block) << brow) << blocks(x)


def _build_local(site: Site, r: int, k: int) -> Expr:
    f, x = _parts(site)
    return transpose_local_tiles(f, fresh(x), site.type_of(x).elem.elem, r, k)


TRANSPOSE_LOCAL_TILES = make_rule(
    "transpose-local-tiles",
    "map(map f) ∘ transpose → join ∘ mapWrg(1)(λbrow. map(join) ∘ transpose ∘ mapWrg(0)(λb. let T "
    "= toLocal(copy id) ∘ split r ∘ gather(rotate rows) ∘ join $ b in copy f ∘ transpose ∘ split r "
    "∘ gather(unrotate) ∘ join $ T) $ brow) ∘ transpose ∘ map(transpose ∘ map(split r)) ∘ split r",
    "liftkit.blas GPU transpose (issue 15): local-memory tiles, rotated rows", _local_choices,
    _build_local, lowering=True, reshapes=True, opaque=False)

TRANSPOSE_RULES[TRANSPOSE_LOCAL_TILES.name] = TRANSPOSE_LOCAL_TILES
