"""Stencils tiled into local memory (seed 000 §3.2, the CGO paper's stencil rules; seed 004).

A stencil is a map over the windows of a slide: `map(g) ∘ slide(n, s)` (1D) or
`map(map g) ∘ slide2D(n, s)` (2D, slide2D = map(transpose) ∘ slide ∘ map(slide)). Neighbouring
windows overlap, so each input element is read n (n² in 2D) times; tiling copies each
work-group's tile — its windows' union — into local memory once and reads the windows from
there. One rule per dimensionality does overlapped tiling and its lowering in one step, the
shape of the NVIDIA SDK convolution (the bundled `conv2d`):

    map(g) ∘ slide(n, s) $ x
      → join ∘ mapWrg(0)(λtile. toGlobal(mapLcl(0)(g)) ∘ slide(n, s) ∘ toLocal(mapLcl(0)(id)) $ tile)
             ∘ slide(u, v) $ x                      (v = k·s windows' worth, u = v + n - s)

and in 2D r×c windows per work-group (tiles of (r·s+n-s)×(c·s+n-s) elements, work-groups of
c×r work-items), with the tiles' results put back in place by views (join ∘ map(map(join) ∘
transpose)). The window function g stays as it was (the other rules lower it).

The tiling is exact when k (r, c) divides the number of windows: for constant lengths the rules
offer only such k; for symbolic lengths they offer the usual work-group shapes and the
exploration's filters check the tiling at the real sizes (`tiling_exact`).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Param
from liftkit.ir.typecheck import layout_only
from liftkit.ir.userfuns import id_of
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import NOT_AROUND as _NOT_AROUND
from liftkit.rewrite.rules.common import call, const, divisors, fresh, lam
from liftkit.rewrite.rules.extra import _slide2d_parts
from liftkit.types import ArrayType, ScalarType, Type

Options = list[dict[str, Any]]
SOURCE = "seed 000 §3.2 (CGO stencils: overlapped tiling in local memory), seed 004"
MAX_GROUP = 256  # work-items per work-group the rules offer
SYMBOLIC_1D = (64, 128, 256)  # windows per work-group offered for symbolic lengths
SYMBOLIC_2D = ((4, 16), (8, 16), (4, 32), (8, 32), (2, 64), (4, 64), (16, 16))  # (r, c)


def _scalar_elements(t: Optional[Type]) -> bool:
    while isinstance(t, ArrayType):
        t = t.elem
    return isinstance(t, ScalarType)


def _copy(t: Type, e: Expr, dims: tuple[int, ...]) -> Expr:
    """mapLcl(d0)(mapLcl(d1)(… id)) $ e: a cooperative copy of an array of scalars."""
    assert isinstance(t, ArrayType)
    if len(dims) > 1:
        inner = t.elem
        return call(P.MapLcl(lam(1, lambda r: _copy(inner, r, dims[1:]), ("row",)), dims[0]), e)
    return call(P.MapLcl(lam(1, lambda x: call(id_of(t.elem), x)), dims[0]), e)  # type: ignore[arg-type]


def _map_fun(site: Site) -> Optional[Lambda]:
    if type(site.f) is not P.Map or not isinstance(site.f.f, Lambda) or len(site.f.f.params) != 1:
        return None
    if site.inside(*_NOT_AROUND) or layout_only(site.f.f):
        return None  # a map of views (map(transpose) of slide2D) is no stencil
    return site.f.f


def _call_of(e: Any, cls: type) -> Optional[FunCall]:
    return e if isinstance(e, FunCall) and type(e.f) is cls else None


# ---------------------------------------------------------------------------------------------
# 1D


def _parts_1d(site: Site) -> Optional[tuple[Lambda, P.Slide, Expr, Type]]:
    f = _map_fun(site)
    s = _call_of(site.call.args[0], P.Slide) if f is not None else None
    if s is None:
        return None
    xs = site.type_of(s.args[0])
    if not isinstance(xs, ArrayType) or not isinstance(xs.elem, ScalarType):
        return None
    return f, s.f, s.args[0], xs  # type: ignore[return-value]


def _choices_1d(site: Site) -> Options:
    parts = _parts_1d(site)
    if parts is None:
        return []
    _, sl, _, xs = parts
    n, s, length = const(sl.size), const(sl.step), const(xs.length)
    if n is None or s is None:
        return []
    if length is None:
        ks = list(SYMBOLIC_1D)
    else:
        if length < n:
            return []
        windows = (length - n) // s + 1
        ks = [k for k in divisors(windows) if 1 < k < windows and k <= MAX_GROUP][-4:]
    return [{"u": k * s + n - s, "v": k * s} for k in ks]


def _build_1d(site: Site, u: int, v: int) -> Expr:
    parts = _parts_1d(site)
    assert parts is not None
    f, sl, x, xs = parts
    tile_t = ArrayType(xs.elem, cst(u))

    def per_tile(tile: Param) -> Expr:
        local = call(P.ToLocal(lam(1, lambda t: _copy(tile_t, t, (0,)), ("t",))), tile)
        return call(P.ToGlobal(P.MapLcl(fresh(f), 0)), call(P.Slide(sl.size, sl.step), local))

    groups = call(P.MapWrg(lam(1, per_tile, ("tile",)), 0), call(P.Slide(cst(u), cst(v)), x))
    return call(P.Join(), groups)


STENCIL_LOCAL_1D = make_rule(
    "stencil-local-1d",
    "map(g) ∘ slide(n, s) → join ∘ mapWrg(0)(toGlobal(mapLcl(0)(g)) ∘ slide(n, s) ∘ "
    "toLocal(mapLcl(0)(id))) ∘ slide(u, v)   (v = k·s, u = v + n - s, k divides the windows)",
    SOURCE, _choices_1d, _build_1d, lowering=True, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# 2D


def _parts_2d(site: Site) -> Optional[tuple[Lambda, Lambda, bool, P.Slide, Expr, Type]]:
    """(the row function, the window function g, whether the row's results are joined, the
    slide, the matrix, its type) for map(λrow. [join ∘] map(g) $ row) ∘ slide2D(n, s) $ X."""
    f = _map_fun(site)
    if f is None:
        return None
    body, joined = f.body, False
    j = _call_of(body, P.Join)
    if j is not None:
        body, joined = j.args[0], True
    inner = _call_of(body, P.Map)
    if inner is None or inner.args != (f.params[0],) or not isinstance(inner.f.f, Lambda):  # type: ignore[attr-defined]
        return None
    parts = _slide2d_parts(site.call.args[0])
    if parts is None:
        return None
    sl, x = parts
    t = site.type_of(x)
    if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and _scalar_elements(t)):
        return None
    return f, inner.f.f, joined, sl, x, t  # type: ignore[attr-defined]


def _choices_2d(site: Site) -> Options:
    parts = _parts_2d(site)
    if parts is None:
        return []
    *_, sl, _, t = parts
    n, s = const(sl.size), const(sl.step)
    rows, cols = const(t.length), const(t.elem.length)  # type: ignore[attr-defined]
    if n is None or s is None:
        return []
    if rows is None or cols is None:
        shapes = list(SYMBOLIC_2D)
    else:
        if rows < n or cols < n:
            return []
        wr, wc = (rows - n) // s + 1, (cols - n) // s + 1
        shapes = [(r, c) for r in divisors(wr) for c in divisors(wc)
                  if 1 < r * c <= MAX_GROUP and (r < wr or c < wc)]
        shapes.sort(key=lambda rc: (-rc[0] * rc[1], rc))
        shapes = shapes[:6]
    return [{"r": r, "c": c} for r, c in shapes]


def _slide2d(n_rows: tuple[int, int], n_cols: tuple[int, int], x: Expr) -> Expr:
    """map(transpose) ∘ slide(rows) ∘ map(slide(cols)) $ x."""
    cols = call(P.Map(lam(1, lambda r: call(P.Slide(cst(n_cols[0]), cst(n_cols[1])), r), ("row",))), x)
    return call(P.Map(lam(1, lambda w: call(P.Transpose(), w), ("w",))),
                call(P.Slide(cst(n_rows[0]), cst(n_rows[1])), cols))


def _build_2d(site: Site, r: int, c: int) -> Expr:
    parts = _parts_2d(site)
    assert parts is not None
    _, g, joined, sl, x, t = parts
    n, s = const(sl.size), const(sl.step)
    assert n is not None and s is not None
    ur, vr, uc, vc = r * s + n - s, r * s, c * s + n - s, c * s
    tile_t = ArrayType(ArrayType(t.elem.elem, cst(uc)), cst(ur))  # type: ignore[attr-defined]

    def row_fun() -> Lambda:
        def body(row: Param) -> Expr:
            out = call(P.MapLcl(fresh(g), 0), row)
            return call(P.Join(), out) if joined else out
        return lam(1, body, ("row",))

    def per_tile(tile: Param) -> Expr:
        local = call(P.ToLocal(lam(1, lambda u: _copy(tile_t, u, (1, 0)), ("t",))), tile)
        windows = _slide2d((n, s), (n, s), local)
        return call(P.ToGlobal(P.MapLcl(row_fun(), 1)), windows)

    tiles = _slide2d((ur, vr), (uc, vc), x)
    groups = call(P.MapWrg(lam(1, lambda tr: call(P.MapWrg(lam(1, per_tile, ("tile",)), 0), tr),
                               ("tiles",)), 1), tiles)
    untile = lam(1, lambda tr: call(P.Map(lam(1, lambda q: call(P.Join(), q), ("q",))),
                                    call(P.Transpose(), tr)), ("tr",))
    return call(P.Join(), call(P.Map(untile), groups))


STENCIL_LOCAL_2D = make_rule(
    "stencil-local-2d",
    "map([join ∘] map g) ∘ slide2D(n, s) → join ∘ map(map(join) ∘ transpose) ∘ mapWrg(1)(mapWrg(0)("
    "toGlobal(mapLcl(1)([join ∘] mapLcl(0)(g))) ∘ slide2D(n, s) ∘ toLocal(mapLcl(1)(mapLcl(0)(id))))) "
    "∘ slide2D((r·s+n-s, r·s), (c·s+n-s, c·s))   (r, c divide the windows of each dimension)",
    SOURCE, _choices_2d, _build_2d, lowering=True, reshapes=True, opaque=False)

STENCIL_RULES: tuple[Rule, ...] = (STENCIL_LOCAL_1D, STENCIL_LOCAL_2D)


def tiling_exact(program: Any, sizes: Any) -> Optional[str]:
    """Why a tiling slide of `program` drops windows at `sizes` (None when every one is exact):
    a slide(u, v) whose tiles are slid by slide(n, s) with u - n = v - s covers the windows
    exactly when (L - u) is a multiple of v."""
    from liftkit.rewrite.core import typed_sites

    sites = [st for st in typed_sites(program) if type(st.f) is P.Slide]
    slides = {(const(st.f.size), const(st.f.step)) for st in sites}  # type: ignore[attr-defined]
    for st in sites:
        u, v = const(st.f.size), const(st.f.step)  # type: ignore[attr-defined]
        length = st.arg_types[0].length if st.arg_types and isinstance(st.arg_types[0], ArrayType) else None
        if u is None or v is None or v < 2 or length is None:
            continue
        tiled = any(n is not None and s is not None and n < u and u - n == v - s and v % s == 0
                    for n, s in slides)
        if not tiled:
            continue
        try:
            value = int(length.eval(sizes))
        except Exception:  # noqa: BLE001 - lengths over program-internal variables: no verdict
            continue
        if value < u or (value - u) % v:
            return f"tiles of slide {u} {v} do not cover {length} = {value} exactly"
    return None
