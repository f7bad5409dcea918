"""Private copies of a work-item's own values (seed 002 §5's copy rules, the MRI-Q/N-Body shape).

A lowered map's body often reads components of its element (a pixel's coordinates, a body's
position) inside a loop of its own — a reduceSeq or mapSeq over other data. Read there, each
iteration loads them again from global memory; Parboil's ComputeQ and the hand-written
`mriq_low` load them once into private memory (registers) before the loop:

    mapX(λp. … f(get i p) …) → mapX(λp. (λ(s…). … f(s) …)(toPrivate(id)(get i p)…))

The rule copies, in one let, every scalar or vector component of the map's parameter (or the
parameter itself, if it is a scalar or vector) that the body reads inside a nested function;
`id` only copies, so the meaning is unchanged (soundness-tested in tests/rewrite/
test_extra_rules.py like every extra rule).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Param, walk
from liftkit.ir.userfuns import id_of
from liftkit.rewrite.core import Rule, Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import call, lam
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType

Options = list[dict[str, Any]]
SOURCE = "liftkit extension (seed 002 §5 copy rules; Parboil ComputeQ)"

# the lowered maps whose bodies run once per element in one work-item (a mapWrg's body is a
# whole work-group: a private copy there would be per work-item of the group, not once)
_PER_ITEM_MAPS = (P.MapGlb, P.MapSeq, P.MapLcl)


def _map_param(site: Site) -> Optional[tuple[Lambda, Param, Type]]:
    if type(site.f) not in _PER_ITEM_MAPS or len(site.call.args) != 1:
        return None
    f = site.f.f  # type: ignore[attr-defined]
    t = site.arg_types[0]
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(t, ArrayType)):
        return None
    return f, f.params[0], t.elem


def _component(n: Any, p: Param) -> Optional[int]:
    """-1 for p itself, i for `get i p`, None otherwise."""
    if n is p:
        return -1
    if isinstance(n, FunCall) and type(n.f) is P.Get and len(n.args) == 1 and n.args[0] is p \
            and n.f.i.is_constant:
        return int(n.f.i.value)
    return None


def _value_type(t: Type, k: int) -> Optional[Type]:
    if k == -1:
        return t if isinstance(t, (ScalarType, VectorType)) else None
    if isinstance(t, TupleType) and k < len(t.elems) and isinstance(t.elems[k], (ScalarType, VectorType)):
        return t.elems[k]
    return None


def _read_in_loops(body: Expr, p: Param, elem: Type) -> list[int]:
    """The components of p (scalars or vectors) read inside a function nested in body."""
    found: list[int] = []
    for n in walk(body):
        if not isinstance(n, Lambda):
            continue
        for m in walk(n.body):
            k = _component(m, p)
            if k is not None and k not in found and _value_type(elem, k) is not None:
                found.append(k)
    if -1 in found and len(found) > 1:
        found.remove(-1)  # p itself as a scalar never coexists with get i p
    return sorted(found)


def _choices(site: Site) -> Options:
    parts = _map_param(site)
    if parts is None:
        return []
    f, p, elem = parts
    return [{}] if _read_in_loops(f.body, p, elem) else []


def _replace(n: Any, p: Param, subst: dict[int, Param]) -> Any:
    k = _component(n, p)
    if k is not None and k in subst:
        return subst[k]
    if isinstance(n, FunCall):
        return FunCall(_replace(n.f, p, subst), tuple(_replace(a, p, subst) for a in n.args))
    if isinstance(n, Lambda):
        return Lambda(n.params, _replace(n.body, p, subst))
    if isinstance(n, P.Pattern):
        fs = n.functions()
        return n.with_functions([_replace(g, p, subst) for g in fs]) if fs else n
    return n


def _build(site: Site) -> Expr:
    parts = _map_param(site)
    assert parts is not None
    f, p, elem = parts
    ks = _read_in_loops(f.body, p, elem)
    values = []
    for k in ks:
        t = _value_type(elem, k)
        assert t is not None
        read = p if k == -1 else call(P.Get(cst(k)), p)
        values.append(call(P.ToPrivate(lam(1, lambda x, idf=id_of(t): call(idf, x))), read))
    subst = {k: Param("s" if k == -1 else f"s{k}") for k in ks}
    body = call(Lambda(tuple(subst[k] for k in ks), _replace(f.body, p, subst)), *values)
    return call(site.f.with_functions([Lambda((p,), body)]), *site.call.args)  # type: ignore[attr-defined]


PRIVATE_COPY = make_rule(
    "private-copy", "mapX(λp. … g(get i p) …) → mapX(λp. (λs. … g(s) …)(toPrivate(id)(get i p)))   "
    "(the components of p read inside a nested loop, copied to private memory once)",
    SOURCE, _choices, _build)

PRIVATE_RULES: tuple[Rule, ...] = (PRIVATE_COPY,)
