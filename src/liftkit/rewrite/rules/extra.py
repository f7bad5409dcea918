"""Rules beyond seed 002 Fig. 6/7: fission, fusion through zip, zip-join, interchange, data
movement and cancellation, copy insertion, slide tiling, and tiling / register-blocking macros.

Each is a small named `Rule` (built with `algorithmic.make_rule`, so reshaping rules get their
choices re-checked by the type checker); side conditions come from the types at the site and
from which parameters a function refers to (a function may be moved out of a lambda only when
it does not use the lambda's parameter).

The macro rules (`EXTRA_MACROS`) are `MacroRule`s built from split-join and the rules here:
1-D tiling, 2-D tiling of a matrix product's output and 1-D/2-D register blocking; their numeric
parameters are enumerated by `macro_choices`.
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Node, Param, apply, walk
from liftkit.ir.userfuns import id_of
from liftkit.rewrite.core import Path, Rule, Site, get
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import (
    array_arg,
    call,
    const,
    divisors,
    fresh,
    is_copy,
    lam,
    same_len,
)
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType

Options = list[dict[str, Any]]
SOURCE = "liftkit extension (not in seed 002 Fig. 6/7)"


def uses(node: Node, p: Param) -> bool:
    """Whether parameter p occurs in node."""
    return any(n is p for n in walk(node))


def _map_lambda(site: Site) -> Optional[Lambda]:
    """The function of a high-level map site, as a one-parameter lambda."""
    if type(site.f) is not P.Map or len(site.call.args) != 1:
        return None
    f = site.f.f  # type: ignore[attr-defined]
    return f if isinstance(f, Lambda) and len(f.params) == 1 else None


def _call_of(e: Any, cls: type) -> Optional[FunCall]:
    return e if isinstance(e, FunCall) and type(e.f) is cls else None


# ---------------------------------------------------------------------------------------------
# 1. fission, fusion through zip, zip-join


def _fission_parts(site: Site) -> Optional[tuple[Lambda, int]]:
    """map(λx. h(.., g(x), ..)) with exactly one argument of h using x, that argument a call
    (not x itself), and h not using x: (the lambda, index of that argument)."""
    f = _map_lambda(site)
    if f is None or not isinstance(f.body, FunCall):
        return None
    x, body = f.params[0], f.body
    if uses(body.f, x):
        return None
    ks = [k for k, a in enumerate(body.args) if uses(a, x)]
    if len(ks) != 1 or not isinstance(body.args[ks[0]], FunCall):
        return None
    return f, ks[0]


def _fission_choices(site: Site) -> Options:
    return [{}] if _fission_parts(site) is not None else []


def _fission_build(site: Site) -> Expr:
    parts = _fission_parts(site)
    assert parts is not None
    f, k = parts
    body: FunCall = f.body  # type: ignore[assignment]
    y = Param("y")
    outer = Lambda((y,), FunCall(body.f, body.args[:k] + (y,) + body.args[k + 1:]))
    inner = Lambda(f.params, body.args[k])
    return call(P.Map(outer), call(P.Map(inner), site.call.args[0]))


MAP_FISSION = make_rule(
    "map-fission", "map(f ∘ g) → map(f) ∘ map(g)   (f does not use map's parameter)", SOURCE,
    _fission_choices, _fission_build)


def _map_zip_parts(site: Site) -> Optional[list[FunCall]]:
    h = _map_lambda(site)
    z = _call_of(site.call.args[0], P.Zip) if h is not None else None
    if z is None:
        return None
    maps = [_call_of(a, P.Map) for a in z.args]
    if any(m is None or not isinstance(m.f.f, Lambda) or len(m.f.f.params) != 1  # type: ignore[attr-defined]
           for m in maps):
        return None
    return maps  # type: ignore[return-value]


def _map_zip_fusion_build(site: Site) -> Expr:
    """map(λc. B)(zip(map(f1) a1, ..)) → map(λq. B[get i c := fi(get i q), c := tuple(..)])
    (zip(a1, ..)): each projection of c becomes its function applied to the projection of q."""
    maps = _map_zip_parts(site)
    assert maps is not None
    h: Lambda = site.f.f  # type: ignore[attr-defined]
    c, q = h.params[0], Param("q")

    def comp(i: int) -> Expr:
        return apply(fresh(maps[i].f.f), [call(P.Get(cst(i)), q)])  # type: ignore[attr-defined]

    def go(n: Any) -> Any:
        if isinstance(n, FunCall) and type(n.f) is P.Get and n.args == (c,):
            return comp(n.f.index())
        if n is c:
            return call(P.Tuple(len(maps)), *(comp(i) for i in range(len(maps))))
        if isinstance(n, FunCall):
            return FunCall(go(n.f), tuple(go(a) for a in n.args))
        if isinstance(n, Lambda):
            return Lambda(n.params, go(n.body))
        if isinstance(n, P.Pattern) and n.functions():
            return n.with_functions([go(f) for f in n.functions()])
        return n

    zipped = call(P.Zip(len(maps)), *(m.args[0] for m in maps))
    return call(P.Map(Lambda((q,), go(h.body))), zipped)


MAP_ZIP_FUSION = make_rule(
    "map-zip-fusion",
    "map(h) ∘ zip(map f a, map g b) → map(λq. h(f(get 0 q), g(get 1 q))) ∘ zip(a, b)", SOURCE,
    lambda s: [{}] if _map_zip_parts(s) else [], _map_zip_fusion_build)


def _zip_join_choices(site: Site) -> Options:
    if type(site.f) is not P.Zip:
        return []
    joins = [_call_of(a, P.Join) for a in site.call.args]
    if any(j is None for j in joins):
        return []
    ts = [site.type_of(j.args[0]) for j in joins]  # type: ignore[union-attr]
    if not all(isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) for t in ts):
        return []
    n0 = ts[0].elem.length  # type: ignore[attr-defined]
    ok = all(same_len(t.elem.length, n0) for t in ts)  # type: ignore[attr-defined]
    return [{}] if ok else []


def _zip_join_build(site: Site) -> Expr:
    k = len(site.call.args)
    per_chunk = lam(1, lambda c: call(P.Zip(k), *(call(P.Get(cst(i)), c) for i in range(k))), ("c",))
    inner = call(P.Zip(k), *(j.args[0] for j in site.call.args))  # type: ignore[union-attr]
    return call(P.Join(), call(P.Map(per_chunk), inner))


ZIP_JOIN = make_rule(
    "zip-join", "zip(join a, join b) → join ∘ map(λc. zip(get 0 c, get 1 c)) ∘ zip(a, b)   "
    "(equal inner lengths)", SOURCE, _zip_join_choices, _zip_join_build, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# 2. interchange


def _map_map_inner(site: Site) -> Optional[FunCall]:
    """For map(λr. map(g)(r)) with g not using r: the inner map call."""
    f = _map_lambda(site)
    if f is None:
        return None
    r = f.params[0]
    m = _call_of(f.body, P.Map)
    if m is None or m.args != (r,) or uses(m.f, r):
        return None
    t = array_arg(site)
    return m if t is not None and isinstance(t.elem, ArrayType) else None


def _interchange_build(site: Site) -> Expr:
    m = _map_map_inner(site)
    assert m is not None
    col = lam(1, lambda c: call(P.Map(fresh(m.f.f)), c), ("col",))  # type: ignore[attr-defined]
    return call(P.Transpose(), call(P.Map(col), call(P.Transpose(), site.call.args[0])))


MAP_MAP_INTERCHANGE = make_rule(
    "map-map-interchange", "map(map f) → transpose ∘ map(map f) ∘ transpose", SOURCE,
    lambda s: [{}] if _map_map_inner(s) is not None else [], _interchange_build, reshapes=True)


# ---------------------------------------------------------------------------------------------
# 3. movement and cancellation


def _cancel_build(site: Site) -> Expr:
    inner = site.call.args[0]
    assert isinstance(inner, FunCall)
    return inner.args[0]


TRANSPOSE_TRANSPOSE = make_rule(
    "transpose-transpose-id", "transpose ∘ transpose → id", SOURCE,
    lambda s: [{}] if type(s.f) is P.Transpose and _call_of(s.call.args[0], P.Transpose) else [],
    _cancel_build, reshapes=True, opaque=False)


def _same_index_fun(a: P.IndexFun, b: P.IndexFun) -> bool:
    if a == b:
        return True
    try:
        i, n = a.i, a.n
        return str(a.body) == str(b(i, n))
    except (LiftTypeError, TypeError, ValueError, AttributeError):
        return False


def _perm_pair_choices(outer: type, inner: type) -> Any:
    def choices(site: Site) -> Options:
        if type(site.f) is not outer:
            return []
        c = _call_of(site.call.args[0], inner)
        return [{}] if c is not None and _same_index_fun(site.f.f, c.f.f) else []  # type: ignore[attr-defined]
    return choices


GATHER_SCATTER = make_rule(
    "gather-scatter-id", "gather(f) ∘ scatter(f) → id   (f a permutation: scatter checks it)",
    SOURCE, _perm_pair_choices(P.Gather, P.Scatter), _cancel_build)
SCATTER_GATHER = make_rule(
    "scatter-gather-id", "scatter(f) ∘ gather(f) → id   (f a permutation: scatter checks it)",
    SOURCE, _perm_pair_choices(P.Scatter, P.Gather), _cancel_build)


def _map_join_choices(site: Site) -> Options:
    return [{}] if _map_lambda(site) is not None and _call_of(site.call.args[0], P.Join) else []


def _map_join_build(site: Site) -> Expr:
    j = site.call.args[0]
    assert isinstance(j, FunCall)
    return call(P.Join(), call(P.Map(lam(1, lambda c: call(site.f, c), ("chunk",))), j.args[0]))


MAP_JOIN = make_rule(
    "map-join-commute", "map(f) ∘ join → join ∘ map(map f)", SOURCE,
    _map_join_choices, _map_join_build, reshapes=True, opaque=False)


def _split_map_choices(site: Site) -> Options:
    if type(site.f) is not P.Split:
        return []
    m = _call_of(site.call.args[0], P.Map)
    return [{}] if m is not None and isinstance(m.f.f, Lambda) else []  # type: ignore[attr-defined]


def _split_map_build(site: Site) -> Expr:
    m = site.call.args[0]
    assert isinstance(m, FunCall)
    return call(P.Map(lam(1, lambda c: call(m.f, c), ("chunk",))), call(site.f, m.args[0]))


SPLIT_MAP = make_rule(
    "split-map-commute", "split n ∘ map(f) → map(map f) ∘ split n", SOURCE,
    _split_map_choices, _split_map_build, reshapes=True, opaque=False)


def _join_map_join_choices(site: Site) -> Options:
    if type(site.f) is not P.Join:
        return []
    m = _call_of(site.call.args[0], P.Map)
    if m is None or not isinstance(m.f.f, Lambda) or len(m.f.f.params) != 1:  # type: ignore[attr-defined]
        return []
    body = m.f.f.body  # type: ignore[attr-defined]
    ok = _call_of(body, P.Join) is not None and body.args == m.f.f.params  # type: ignore[attr-defined]
    return [{}] if ok else []


def _join_map_join_build(site: Site) -> Expr:
    m = site.call.args[0]
    assert isinstance(m, FunCall)
    return call(P.Join(), call(P.Join(), m.args[0]))


JOIN_MAP_JOIN = make_rule(
    "join-mapJoin", "join ∘ map(join) → join ∘ join", SOURCE,
    _join_map_join_choices, _join_map_join_build, reshapes=True, opaque=False)


# ---------------------------------------------------------------------------------------------
# 4. copy insertion


def _copyable(t: Type) -> bool:
    if isinstance(t, ArrayType):
        return _copyable(t.elem)
    if isinstance(t, (ScalarType, VectorType)):
        return True
    return isinstance(t, TupleType) and all(isinstance(e, (ScalarType, VectorType)) for e in t.elems)


def copy_of(t: Type, e: Expr) -> Expr:
    """map(id) (nested for nested arrays) applied to e of array type t."""
    assert isinstance(t, ArrayType)
    if isinstance(t.elem, ArrayType):
        inner = t.elem
        return call(P.Map(lam(1, lambda r: copy_of(inner, r), ("row",))), e)
    idf = id_of(t.elem)
    return call(P.Map(lam(1, lambda x: call(idf, x))), e)


def _is_copy_map(n: Any) -> bool:
    """n is a call map(id) or map(λr. <copy of r>)."""
    if not isinstance(n, FunCall) or type(n.f) is not P.Map:
        return False
    f = n.f.f
    if is_copy(f):
        return True
    return isinstance(f, Lambda) and len(f.params) == 1 and _is_copy_map(f.body) and f.body.args == f.params


def _parent_call(site: Site) -> Optional[FunCall]:
    """The call whose argument the site is, through the lambda of a map (map(λx. site) counts)."""
    for k in (1, 3):
        if len(site.path) > k:
            n = get(site.program, site.path[:-k])
            if isinstance(n, FunCall) and _is_copy_map(n):
                return n
    return None


def _copy_choices(site: Site) -> Options:
    t = site.type
    if not isinstance(t, ArrayType) or not _copyable(t) or _is_copy_map(site.call):
        return []
    if _parent_call(site) is not None:
        return []  # already copied
    return [{}]


def _copy_build(site: Site) -> Expr:
    return copy_of(site.type, site.call)


COPY_INSERTION = make_rule(
    "copy-insertion", "f → map(id) ∘ f   (f returns an array; id copies, so toLocal/toGlobal can "
    "place the copy)", SOURCE, _copy_choices, _copy_build)


# ---------------------------------------------------------------------------------------------
# 5. slide tiling


def _slide_tiling_choices(site: Site) -> Options:
    if _map_lambda(site) is None:
        return []
    s = _call_of(site.call.args[0], P.Slide)
    xs = site.type_of(s.args[0]) if s is not None else None
    if s is None or not isinstance(xs, ArrayType):
        return []
    n, st, length = const(s.f.size), const(s.f.step), const(xs.length)  # type: ignore[attr-defined]
    if None in (n, st, length) or length < n:  # type: ignore[operator]
        return []
    windows = (length - n) // st + 1  # type: ignore[operator]
    out = []
    for k in divisors(windows):
        if 1 < k < windows:
            v = k * st  # type: ignore[operator]
            out.append({"u": v + n - st, "v": v})  # type: ignore[operator]
    return out


def _slide_tiling_build(site: Site, u: int, v: int) -> Expr:
    s = site.call.args[0]
    assert isinstance(s, FunCall)
    sl = s.f
    tile = lam(1, lambda t: call(site.f, call(sl, t)), ("tile",))
    return call(P.Join(), call(P.Map(tile), call(P.Slide(cst(u), cst(v)), s.args[0])))


SLIDE_TILING = make_rule(
    "slide-tiling",
    "map(f) ∘ slide(n, s) → join ∘ map(λtile. map(f) ∘ slide(n, s) $ tile) ∘ slide(u, v)   "
    "(u - n = v - s, v = k·s, k divides the number of windows)", SOURCE,
    _slide_tiling_choices, _slide_tiling_build, reshapes=True, opaque=False)


def _map_of_one(e: Any, cls: type) -> Optional[FunCall]:
    """map(λx. p(x)) $ y with p a pattern of class cls applied to the map's parameter."""
    m = _call_of(e, P.Map)
    f = m.f.f if m is not None else None  # type: ignore[attr-defined]
    ok = (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)
          and type(f.body.f) is cls and f.body.args == (f.params[0],))
    return m if ok else None


def _slide2d_parts(e: Any) -> Optional[tuple[P.Slide, Expr]]:
    """slide2D(n, s) $ X = map(transpose) ∘ slide(n, s) ∘ map(slide(n, s)) $ X: (slide, X)."""
    outer = _map_of_one(e, P.Transpose)
    sl = _call_of(outer.args[0], P.Slide) if outer is not None else None
    inner = _map_of_one(sl.args[0], P.Slide) if sl is not None else None
    if inner is None:
        return None
    sl2 = inner.f.f.body.f  # type: ignore[attr-defined]
    if not (same_len(sl.f.size, sl2.size) and same_len(sl.f.step, sl2.step)):  # type: ignore[union-attr]
        return None
    return sl.f, inner.args[0]  # type: ignore[union-attr, return-value]


def _slide2d(sl: P.Slide, x: Expr) -> Expr:
    rows = call(P.Map(lam(1, lambda r: call(P.Slide(sl.size, sl.step), r), ("row",))), x)
    return call(P.Map(lam(1, lambda w: call(P.Transpose(), w), ("w",))), call(sl, rows))


def _slide_tiling_2d_parts(site: Site) -> Optional[tuple[Lambda, P.Slide, Expr]]:
    f = _map_lambda(site)
    inner = f.body if f is not None else None
    if not (isinstance(inner, FunCall) and type(inner.f) is P.Map and inner.args == (f.params[0],)):  # type: ignore[union-attr]
        return None
    parts = _slide2d_parts(site.call.args[0])
    return (f, *parts) if parts is not None else None  # type: ignore[return-value]


def _slide_tiling_2d_choices(site: Site) -> Options:
    parts = _slide_tiling_2d_parts(site)
    if parts is None:
        return []
    _, sl, x = parts
    t = site.type_of(x)
    if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)):
        return []
    n, st = const(sl.size), const(sl.step)
    rows, cols = const(t.length), const(t.elem.length)
    if None in (n, st, rows, cols) or rows < n or cols < n:  # type: ignore[operator]
        return []
    wr, wc = (rows - n) // st + 1, (cols - n) // st + 1  # type: ignore[operator]
    out = []
    for k in divisors(wr):
        if 1 < k < wr and wc % k == 0 and k < wc:
            v = k * st  # type: ignore[operator]
            out.append({"u": v + n - st, "v": v})  # type: ignore[operator]
    return out


def _slide_tiling_2d_build(site: Site, u: int, v: int) -> Expr:
    parts = _slide_tiling_2d_parts(site)
    assert parts is not None
    f, sl, x = parts

    def per_tile(tile: Expr) -> Expr:
        return call(P.Map(fresh(f)), _slide2d(sl, tile))

    def tile_row(tr: Expr) -> Expr:
        tiles = call(P.Map(lam(1, per_tile, ("tile",))), tr)
        return call(P.Map(lam(1, lambda r: call(P.Join(), r), ("r",))), call(P.Transpose(), tiles))

    big = P.Slide(cst(u), cst(v))
    return call(P.Join(), call(P.Map(lam(1, tile_row, ("tiles",))), _slide2d(big, x)))


SLIDE_TILING_2D = make_rule(
    "slide-tiling-2d",
    "map(map f) ∘ slide2D(n, s) → untile ∘ map(map(λtile. map(map f) ∘ slide2D(n, s) $ tile)) ∘ "
    "slide2D(u, v)   (u - n = v - s, v = k·s, k divides the windows of both dimensions; "
    "untile = join ∘ map(map(join) ∘ transpose))", SOURCE,
    _slide_tiling_2d_choices, _slide_tiling_2d_build, reshapes=True, opaque=False)


EXTRA_RULES: tuple[Rule, ...] = (
    MAP_FISSION, MAP_ZIP_FUSION, ZIP_JOIN, MAP_MAP_INTERCHANGE, TRANSPOSE_TRANSPOSE,
    GATHER_SCATTER, SCATTER_GATHER, MAP_JOIN, SPLIT_MAP, JOIN_MAP_JOIN, COPY_INSERTION,
    SLIDE_TILING, SLIDE_TILING_2D,
)


# ---------------------------------------------------------------------------------------------
# 6. tiling and register blocking (macro rules)
#
# The strategies are built when a macro runs (strategies imports the rules package lazily, so
# importing it here at module level would be circular).


def _first_map_path(program: Lambda, focus: Path, pred: Any) -> Optional[Path]:
    """The first (pre-order) high-level map call at or below the focus satisfying pred."""
    from liftkit.rewrite.core import positions

    for path, node in positions(get(program, focus), focus):
        if isinstance(node, FunCall) and type(node.f) is P.Map and pred(node):
            return path
    return None


def _over_transpose(n: FunCall) -> bool:
    return _call_of(n.args[0], P.Transpose) is not None


def _at_map(pred: Any, what: str, **params: Any) -> Any:
    """A strategy: split-join with these parameters at the first map satisfying pred."""
    from liftkit.rewrite.strategies import Failure, Strategy, rule

    def run(p: Lambda, focus: Path, ctx: Any) -> Any:
        path = _first_map_path(p, focus, pred)
        if path is None:
            return Failure(f"no {what} at or below the focus")
        return rule("split-join", **params).run(p, path, ctx)

    return Strategy(f"split-join({params}) at the first {what}", run)


def _tile_1d(n: int) -> Any:
    return _at_map(lambda node: True, "map", n=n)


def _tile_2d(r: int, c: int) -> Any:
    """Rows in chunks of r, then the map over the columns (the map over transpose B) in chunks
    of c: each (row chunk, column chunk) pair is an r×c tile of the output."""
    from liftkit.rewrite.strategies import seq
    return seq(_at_map(lambda n: True, "map", n=r),
               _at_map(_over_transpose, "map over a transposed matrix", n=c))


def _register_block_1d(r: int) -> Any:
    """Each thread of the outer map computes r rows' outputs: map over rows → join ∘ map(map)
    ∘ split r; the inner map (over the r rows of one thread) is then sequential work."""
    return _at_map(lambda n: True, "map", n=r)


def _register_block_2d(r: int, c: int) -> Any:
    return _tile_2d(r, c)


def macro_choices(program: Lambda, name: str) -> list[dict[str, int]]:
    """The numeric parameters of a tiling macro for a program in normal form: divisors (other
    than 1) of the lengths of the outermost map's input and of the first map over a transposed
    matrix (r, c), or n for 1-D tiling."""
    from liftkit.rewrite.core import typed_sites

    sites = {s.path: s for s in typed_sites(program)}
    rows = cols = None
    p = _first_map_path(program, (), lambda n: True)
    if p is not None and array_arg(sites[p]) is not None:
        rows = const(array_arg(sites[p]).length)  # type: ignore[union-attr]
    p2 = _first_map_path(program, (), _over_transpose)
    if p2 is not None and array_arg(sites[p2]) is not None:
        cols = const(array_arg(sites[p2]).length)  # type: ignore[union-attr]
    ds = lambda k: [d for d in divisors(k) if d > 1] if k else []  # noqa: E731
    if name in ("tile-1d",):
        return [{"n": d} for d in ds(rows)]
    if name == "register-block-1d":
        return [{"r": d} for d in ds(rows)]
    return [{"r": a, "c": b} for a in ds(rows) for b in ds(cols)]


def _macros() -> dict[str, Any]:
    from liftkit.rewrite.strategies import MacroRule

    ms = (
        MacroRule("tile-1d", _tile_1d, "map f → join ∘ map(map f) ∘ split t   (1-D tiling)", SOURCE),
        MacroRule("tile-2d", _tile_2d, "mm: rows split r and columns (map over transpose B) split "
                  "c: r×c output tiles", SOURCE),
        MacroRule("register-block-1d", _register_block_1d,
                  "map over rows → join ∘ map(map) ∘ split r   (r outputs per thread)", SOURCE),
        MacroRule("register-block-2d", _register_block_2d,
                  "mm: r rows × c columns of outputs per thread (split-join on both maps)", SOURCE),
    )
    return {m.name: m for m in ms}


def extra_macros() -> dict[str, Any]:
    """The tiling / register-blocking macro rules by name (pass as `rules=` to a strategy)."""
    return _macros()
