"""Rules that cut reductions and maps into chunks of a constant size, and vectorise maps over
zipped arrays: what the GPU and CPU macro rules (`liftkit.explore.macros`) need beyond seed 002's
Figures 6 and 7. Each is one small equation, soundness-tested like the other extra rules.

The Fig. 6d rules reach only a *constant number* of chunks (reduce-partRed m, then
partRed-split-join gives chunks of N/m); a GPU kernel wants chunks of a constant size, and a
one-work-group reduction wants L strided columns of a symbolic-length array:

* `reduce-split-partRed` (n | whole):  reduce(⊕, z) → reduce(⊕, z) ∘ join ∘ map(partRed(⊕, e) 1) ∘
  split n   (whole: n the whole length, one chunk)
* `reduce-single`:  reduce(⊕, e) xs → xs   (xs one element long)
* `partRed-columns` (L):  partRed(⊕, e) 1 [∘ map f] → partRed(⊕, e) 1 ∘ join ∘
  map(partRed(⊕, e) 1 [∘ map f]) ∘ transpose ∘ split L   (L columns: column l holds elements
  l, l+L, …, so L threads reading one column each read consecutive addresses together)
* `split-split`, `split-join-map`, `split-reorder`: layout equations for moving splits
* `vectorize-partRed` (w):  partRed(⊕, e) 1 → partRed(⊕, e) 1 ∘ asScalar ∘ partRed(⊕<w>, e<w>) 1
  ∘ asVector w   (partial-reduce vectorisation)
* `map-reduce-interchange`:  map(reduce(⊕, z)) $ X → transpose ∘ reduceSeq(λ(acc, col). map(⊕) ∘
  zip(acc, col), map(λrow. z) $ X) ∘ transpose $ X   (X a view)
* `vectorize-map-zip` (w):  map(f) ∘ zip(a, b, …) → asScalar ∘ map(f<w>) ∘ zip(asVector w a, …)
  (f a scalar user function of the zipped elements; seed 002 Fig. 7e through zip)

e is the identity of ⊕ and ⊕ associative and commutative (the user function's declared facts).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst, prove_eq
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import (
    ARRAY_MAPS,
    VECTOR_WIDTHS,
    array_arg,
    assoc_comm,
    call,
    const,
    factor_choices,
    fresh,
    identity_literal,
    inner_call,
    is_identity,
    lam,
    operator,
    reduction,
    size_param,
)
from liftkit.types import ArrayType, ScalarType, bool_

Options = list[dict[str, Any]]



def _reduce_split_choices(site: Site) -> Options:
    red = reduction(site)
    if red is None or identity_literal(red[0], site.arg_types[0]) is None:
        return []
    xs = red[1]
    n = const(xs.length)
    return [{"n": k} for k in factor_choices(xs.length) if 1 < k and k != n] + [{"whole": 1}]


def _reduce_split_build(site: Site, n: int | str = 0, whole: int = 0) -> Expr:
    """whole=1: one chunk of the whole (possibly symbolic) length, for a one-work-group
    reduction."""
    red: P.Reduce = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    op = assoc_comm(red.f)
    e = identity_literal(op, site.arg_types[0])  # type: ignore[arg-type]
    assert e is not None
    size = site.arg_types[1].length if whole else size_param(n)  # type: ignore[attr-defined]
    body = lam(1, lambda c: call(P.PartRed(fresh(red.f), cst(1)), e, c), ("chunk",))
    return call(red, z, call(P.Join(), call(P.Map(body), call(P.Split(size), xs))))


REDUCE_SPLIT_PARTRED = make_rule(
    "reduce-split-partRed",
    "reduce(⊕, z) → reduce(⊕, z) ∘ join ∘ map(partRed(⊕, e) 1) ∘ split n   (e the identity of ⊕)",
    "liftkit helper (reduce-partRed + partRed-split-join with a constant chunk size)",
    _reduce_split_choices, _reduce_split_build, reshapes=True)


def _reduce_single_choices(site: Site) -> Options:
    red = reduction(site)
    if red is None or not is_identity(site.call.args[0], red[0]):
        return []
    return [{}] if prove_eq(red[1].length, cst(1)) else []


def _reduce_single_build(site: Site) -> Expr:
    return site.call.args[1]


REDUCE_SINGLE = make_rule(
    "reduce-single", "reduce(⊕, e) xs → xs   (xs of length 1, e the identity of ⊕)",
    "liftkit helper", _reduce_single_choices, _reduce_single_build, reshapes=True, opaque=False)



def _split_split_choices(site: Site) -> Options:
    return [{}] if isinstance(site.f, P.Split) and inner_call(site, 0, P.Split) else []


def _split_split_build(site: Site) -> Expr:
    m = site.f.n  # type: ignore[attr-defined]
    inner = site.call.args[0]
    assert isinstance(inner, FunCall)
    k = inner.f.n  # type: ignore[attr-defined]
    body = lam(1, lambda c: call(P.Split(k), c), ("chunk",))
    return call(P.Map(body), call(P.Split(k * m), inner.args[0]))


SPLIT_SPLIT = make_rule(
    "split-split", "split m ∘ split k → map(split k) ∘ split (k·m)", "liftkit helper (layout)",
    _split_split_choices, _split_split_build, reshapes=True, opaque=False)


def _reorder_intro_choices(site: Site) -> Options:
    ok = (isinstance(site.f, P.Split) and array_arg(site) is not None
          and inner_call(site, 0, (P.Reorder, P.ReorderStride)) is None)
    return [{}] if ok else []


def _reorder_intro_build(site: Site) -> Expr:
    return call(site.f, call(P.Reorder(), site.call.args[0]))


REORDER_INTRO = make_rule(
    "split-reorder", "split k → split k ∘ reorder   (reorder: some permutation; the interpreter's "
    "is the identity, and only reorder-reorderStride checks that the order is unobservable)",
    "liftkit helper (seed 002 Fig. 6d partRed-reorder, for the chunks of a split)",
    _reorder_intro_choices, _reorder_intro_build)



def _sjm_parts(site: Site) -> Optional[tuple[FunCall, FunCall, int]]:
    if not isinstance(site.f, P.Split):
        return None
    j = inner_call(site, 0, P.Join)
    if j is None or not (isinstance(j.args[0], FunCall) and isinstance(j.args[0].f, P.Map)):
        return None
    m = j.args[0]
    t = site.type_of(m)
    c = const(t.elem.length) if hasattr(t, "elem") and hasattr(t.elem, "length") else None
    n = const(site.f.n)  # type: ignore[attr-defined]
    if c is None or n is None or c < 1 or n % c:
        return None
    return j, m, n // c


def _sjm_choices(site: Site) -> Options:
    return [{}] if _sjm_parts(site) is not None else []


def _sjm_build(site: Site) -> Expr:
    parts = _sjm_parts(site)
    assert parts is not None
    _, m, q = parts
    body = lam(1, lambda g: call(P.Join(), call(m.f, g)), ("g",))
    return call(P.Map(body), call(P.Split(cst(q)), m.args[0]))


SPLIT_JOIN_MAP = make_rule(
    "split-join-map", "split (q·c) ∘ join ∘ map(f) → map(join ∘ map(f)) ∘ split q   "
    "(f yields arrays of constant length c)", "liftkit helper (layout)",
    _sjm_choices, _sjm_build, reshapes=True, opaque=False)


def _columns_choices(site: Site) -> Options:
    xs = array_arg(site, 1)
    if not isinstance(site.f, P.PartRed) or xs is None or const(site.f.m) != 1:
        return []
    op = assoc_comm(site.f.f)
    if op is None or not is_identity(site.call.args[0], op):
        return []
    out: Options = [{"L": L} for L in factor_choices(xs.length, trivial=False)]
    if inner_call(site, 1, P.Map) is not None:
        out += [{"L": o["L"], "map": 1} for o in out]
    return out


def _columns_build(site: Site, L: int, map: int = 0) -> Expr:  # noqa: A002 - the rule's word
    pr: P.PartRed = site.f  # type: ignore[assignment]
    z, xs = site.call.args
    f: Optional[P.Map] = None
    if map:
        inner = xs
        assert isinstance(inner, FunCall) and isinstance(inner.f, P.Map)
        f, xs = inner.f, inner.args[0]

    def column(c: Expr) -> Expr:
        c = call(fresh(f), c) if f is not None else c
        return call(P.PartRed(fresh(pr.f), cst(1)), fresh(z), c)

    cols = call(P.Transpose(), call(P.Split(cst(L)), xs))
    return call(pr, z, call(P.Join(), call(P.Map(lam(1, column, ("column",))), cols)))


PARTRED_COLUMNS = make_rule(
    "partRed-columns",
    "partRed(⊕, e) 1 [∘ map f] → partRed(⊕, e) 1 ∘ join ∘ map(partRed(⊕, e) 1 [∘ map f]) ∘ "
    "transpose ∘ split L   (e the identity of ⊕; L columns, each reduced on its own)",
    "liftkit helper (reduce-partRed with a strided partition)", _columns_choices, _columns_build,
    reshapes=True, opaque=False)


def _scalar(t: object) -> bool:
    return isinstance(t, ScalarType) and t != bool_


def _vec_zip_parts(site: Site) -> Optional[tuple[Any, FunCall]]:
    if not isinstance(site.f, ARRAY_MAPS):
        return None
    z = inner_call(site, 0, P.Zip)
    op = operator(site.f.f)
    if z is None or op is None or op.arity != len(z.args):
        return None
    if not (all(_scalar(t) for t in op.param_types) and _scalar(op.out_type)):
        return None
    for a in z.args:
        t = site.type_of(a)
        if not (isinstance(t, ArrayType) and _scalar(t.elem)):
            return None
    return op, z


def _vec_zip_choices(site: Site) -> Options:
    parts = _vec_zip_parts(site)
    xs = array_arg(site)
    if parts is None or xs is None:
        return []
    n = const(xs.length)
    if n is not None:
        return [{"w": w} for w in VECTOR_WIDTHS if n % w == 0]
    return [{"w": w} for w in VECTOR_WIDTHS if w in factor_choices(xs.length)]


def _vec_zip_build(site: Site, w: int) -> Expr:
    parts = _vec_zip_parts(site)
    assert parts is not None
    op, z = parts
    vop = op.vectorize(w)
    vecs = [call(P.AsVector(cst(w)), a) for a in z.args]
    body = lam(1, lambda q: call(vop, q), ("q",))
    return call(P.AsScalar(), call(site.f.with_functions([body]), call(z.f, *vecs)))  # type: ignore[attr-defined]


VECTORIZE_MAP_ZIP = make_rule(
    "vectorize-map-zip",
    "map(f) ∘ zip(a, b, …) → asScalar ∘ map(f<w>) ∘ zip(asVector w a, asVector w b, …)   "
    "(f a scalar user function of the zipped elements)",
    "seed 002 Fig. 7e through zip", _vec_zip_choices, _vec_zip_build, lowering=True, reshapes=True,
    opaque=False)


def _vec_partred_choices(site: Site) -> Options:
    xs = array_arg(site, 1)
    if not isinstance(site.f, P.PartRed) or xs is None or const(site.f.m) != 1 or not _scalar(xs.elem):
        return []
    if inner_call(site, 1, P.AsScalar) is not None:
        return []  # the outer partial reduction of an already vectorised one
    op = assoc_comm(site.f.f)
    if (op is None or op.arity != 2 or not all(_scalar(t) for t in op.param_types + (op.out_type,))
            or not is_identity(site.call.args[0], op)):
        return []
    out = []
    for w in VECTOR_WIDTHS:
        if w not in factor_choices(xs.length):
            continue
        vop = op.vectorize(w)
        if identity_literal(vop, vop.out_type) is not None:
            out.append({"w": w})
    return out


def _vec_partred_build(site: Site, w: int) -> Expr:
    z, xs = site.call.args
    op = assoc_comm(site.f.f)  # type: ignore[attr-defined]
    assert op is not None
    vop = op.vectorize(w)
    e = identity_literal(vop, vop.out_type)
    assert e is not None
    lanes = call(P.PartRed(lam(2, lambda a, b: call(vop, a, b), ("acc", "x")), cst(1)), e,
                 call(P.AsVector(cst(w)), xs))
    return call(site.f, z, call(P.AsScalar(), lanes))


VECTORIZE_PARTRED = make_rule(
    "vectorize-partRed",
    "partRed(⊕, e) 1 → partRed(⊕, e) 1 ∘ asScalar ∘ partRed(⊕<w>, e<w>) 1 ∘ asVector w   "
    "(e the identity of ⊕: lane-wise partial results, then their sum)",
    "partial-reduce vectorisation (seed 002 Fig. 7e for partRed)", _vec_partred_choices,
    _vec_partred_build, lowering=True, reshapes=True)


def _is_view(e: Expr) -> bool:
    """Parameters under data-layout patterns only: repeating it costs no computation."""
    from liftkit.ir.nodes import Param
    from liftkit.ir.typecheck import layout_only

    if isinstance(e, Param):
        return True
    return isinstance(e, FunCall) and layout_only(e.f) and all(_is_view(a) for a in e.args)


def _interchange_parts(site: Site) -> Optional[tuple[P.Reduce, Expr]]:
    if type(site.f) is not P.Map or not _is_view(site.call.args[0]):
        return None
    f = site.f.f
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)):
        return None
    red, args = f.body.f, f.body.args
    if not (type(red) is P.Reduce and len(args) == 2 and args[1] is f.params[0]):
        return None
    z = args[0]
    if not isinstance(z, Literal):
        return None
    rows = site.arg_types[0]
    if not (isinstance(rows, ArrayType) and isinstance(rows.elem, ArrayType)
            and _scalar(rows.elem.elem) and assoc_comm(red.f) is not None):
        return None
    return red, z


def _interchange_choices(site: Site) -> Options:
    return [{}] if _interchange_parts(site) is not None else []


def _interchange_build(site: Site) -> Expr:
    parts = _interchange_parts(site)
    assert parts is not None
    red, z = parts
    xs = site.call.args[0]
    op = red.f
    step = lam(2, lambda acc, col: call(P.Map(lam(1, lambda q: call(fresh(op), call(P.Get(cst(0)), q),
                                                                     call(P.Get(cst(1)), q)), ("q",))),
                                        call(P.Zip(2), acc, col)), ("acc", "col"))
    init = call(P.Map(lam(1, lambda _row: z, ("row",))), fresh(xs))
    return call(P.Transpose(), call(P.ReduceSeq(step), init, call(P.Transpose(), xs)))


MAP_REDUCE_INTERCHANGE = make_rule(
    "map-reduce-interchange",
    "map(reduce(⊕, z)) $ X → transpose ∘ reduceSeq(λ(acc, col). map(⊕) ∘ zip(acc, col), "
    "map(λrow. z) $ X) ∘ transpose $ X   (X a view: the rows are summed together, column by "
    "column, so consecutive threads of a later mapGlb over the rows read consecutive addresses)",
    "Lift's map-reduce interchange (seed 001's matrix-multiplication derivations)",
    _interchange_choices, _interchange_build, reshapes=True, opaque=False)


CHUNKING_RULES: tuple[Rule, ...] = (REDUCE_SPLIT_PARTRED, REDUCE_SINGLE, PARTRED_COLUMNS,
                                    SPLIT_JOIN_MAP, SPLIT_SPLIT, REORDER_INTRO, VECTORIZE_MAP_ZIP,
                                    VECTORIZE_PARTRED, MAP_REDUCE_INTERCHANGE)
