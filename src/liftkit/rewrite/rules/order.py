"""When does the order of an array not matter? The side condition of `reorder → reorderStride s`.

`reorder` means "any permutation" (seed 002 §3.1); the interpreter picks the identity, and
`reorder → id` is always sound. `reorder → reorderStride s` picks a *specific* permutation, which
is sound only where whatever consumes the reordered array cannot tell the difference. This module
decides that conservatively by following the value upwards through the program, tracking how the
change introduced at the bottom can still be seen:

* PERM: the value is a permutation (along its outer axis) of what it was;
* MULTISET: the multiset of its leaves (non-array elements) is unchanged;
* SUM(⊕): the ⊕-total of its leaves is unchanged (⊕ associative and commutative).

The change is invisible once it reaches a full reduction whose operator is associative and
commutative (directly, as reduce(⊕)/reduceSeq(⊕), or fused as λ(acc, x). acc ⊕ g(x)) — or, for
SUM(⊕), a reduction by that same ⊕. Maps carry a permutation through; split/join/transpose keep
the multiset; partial reductions and total-preserving functions (join ∘ map(reduceSeq(⊕, e)) ∘
split 2 inside an iterate, copies, layout) keep the total. Anything else (zip, the program's
result, user functions) is treated as order-sensitive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node, Param, UserFun, walk
from liftkit.rewrite.core import Path, Site, get, positions, typed_sites
from liftkit.rewrite.rules.common import ARRAY_MAPS, SEQUENTIAL_REDUCES, assoc_comm, is_copy, is_identity
from liftkit.types import ArrayType


@dataclass(frozen=True)
class Sum:
    op: UserFun


PERM, MULTISET = "perm", "multiset"
State = Union[str, Sum]


class _Any:
    """total_op result: preserves the total for every operator (pure data layout)."""


ANY = _Any()
TotalOp = Union[UserFun, _Any, None]

_LAYOUT = (P.Split, P.Join, P.Reorder, P.ReorderStride, P.Id, P.Transpose)
_REDUCES = (P.Reduce, P.PartRed) + SEQUENTIAL_REDUCES


def order_insensitive(program: Lambda, path: Path) -> bool:
    """Whether replacing the array value computed at `path` by any permutation of it leaves the
    program's result unchanged (conservative: False when in doubt)."""
    return _Walk(program).up(path, PERM, 0)


# ---------------------------------------------------------------------------------------------
# operators


def reduction_op(f: FunDecl) -> tuple[Optional[UserFun], bool]:
    """(⊕, plain) for a reduction operator that is ⊕ itself (plain) or λ(acc, x). acc ⊕ g(x)
    (fused, g not using acc), ⊕ associative and commutative; (None, False) otherwise."""
    op = assoc_comm(f)
    if op is not None:
        return op, True
    if isinstance(f, Lambda) and len(f.params) == 2 and isinstance(f.body, FunCall):
        acc, x = f.params
        body = f.body
        inner = assoc_comm(body.f) if isinstance(body.f, (UserFun, Lambda)) else None
        if inner is not None and len(body.args) == 2:
            a, b = body.args
            for mine, other in ((a, b), (b, a)):
                if mine is acc and acc not in _params(other):
                    return inner, False
    return None, False


def _params(n: Node) -> set[Param]:
    return {m for m in walk(n) if isinstance(m, Param)}


def _combine(a: TotalOp, b: TotalOp) -> TotalOp:
    if a is None or b is None:
        return None
    if a is ANY:
        return b
    if b is ANY:
        return a
    return a if a == b else None


def total_op(f: FunDecl) -> TotalOp:
    """ANY if f preserves the total of its input's leaves for every operator (data layout), ⊕ if
    for ⊕ only (it contains ⊕-reductions starting from ⊕'s identity), None if not known to."""
    if isinstance(f, UserFun):
        return ANY if is_copy(f) else None
    if isinstance(f, P.Pattern):
        return _pattern_total(f, None)
    if not (isinstance(f, Lambda) and len(f.params) == 1):
        return None
    return _chain_total(f.body, f.params[0])


def _pattern_total(f: P.Pattern, z: Optional[Expr]) -> TotalOp:
    if isinstance(f, _LAYOUT):
        return ANY
    if isinstance(f, ARRAY_MAPS + (P.AddressSpaceWrapper, P.Iterate)):
        return total_op(f.f)  # type: ignore[attr-defined]
    if isinstance(f, _REDUCES):
        op, plain = reduction_op(f.f)
        if op is not None and plain and z is not None and is_identity(z, op):
            return op
    return None


def _chain_total(e: Expr, p: Param) -> TotalOp:
    if e is p:
        return ANY
    if not isinstance(e, FunCall):
        return None
    f = e.f
    if isinstance(f, _REDUCES) and len(e.args) == 2:
        return _combine(_pattern_total(f, e.args[0]), _chain_total(e.args[1], p))
    if len(e.args) != 1:
        return None
    if isinstance(f, P.Pattern):
        return _combine(_pattern_total(f, None), _chain_total(e.args[0], p))
    return _combine(total_op(f), _chain_total(e.args[0], p))


def _multiset_total(g: FunDecl) -> TotalOp:
    """⊕ when the ⊕-total of g's result depends only on the multiset of its input's leaves: g is
    a (plain or fused) ⊕-reduction of its input, or preserves the ⊕-total."""
    t = total_op(g)
    if t is not None:
        return t
    if isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall):
        b = g.body
        if isinstance(b.f, _REDUCES) and len(b.args) == 2 and b.args[1] is g.params[0]:
            op, _plain = reduction_op(b.f.f)
            return op
    return None


# ---------------------------------------------------------------------------------------------
# following a value upwards


def _through_total(state: State, t: TotalOp) -> Optional[State]:
    """The state after a function that preserves totals as `t` says."""
    if t is None:
        return None
    if t is ANY:
        return MULTISET if state == PERM else state
    assert isinstance(t, UserFun)
    if isinstance(state, Sum):
        return state if state.op == t else None
    return Sum(t)


class _Walk:
    """Follows a value upwards through one program (with its typed sites for array shapes)."""

    def __init__(self, program: Lambda) -> None:
        self.program = program
        self.sites: dict[Path, Site] = {s.path: s for s in typed_sites(program)}

    def up(self, path: Path, state: State, depth: int) -> bool:
        if depth > 400 or len(path) == 0:
            return False
        parent = get(self.program, path[:-1])
        if isinstance(parent, Lambda):
            return self.from_body(path[:-1], state, depth)
        if not isinstance(parent, FunCall) or path[-1] == 0:
            return False
        k = path[-1] - 1
        cp = path[:-1]
        f = parent.f
        if isinstance(f, Lambda):
            return self.through_param(cp + (0,), f, k, state, depth)
        if isinstance(f, P.AddressSpaceWrapper) and isinstance(f.f, Lambda):
            return self.through_param(cp + (0, 0), f.f, k, state, depth)
        if not isinstance(f, P.Pattern):
            return False
        nxt = self.through_pattern(f, k, state, cp)
        if nxt is True:
            return True
        if nxt is None:
            return False
        return self.up(cp, nxt, depth + 1)

    def through_param(self, lam_path: Path, f: Lambda, k: int, state: State, depth: int) -> bool:
        if k >= len(f.params):
            return False
        p = f.params[k]
        uses = [q for q, n in positions(f.body, lam_path + (0,)) if n is p]
        return all(self.up(u, state, depth + 1) for u in uses)

    def through_pattern(self, f: P.Pattern, k: int, state: State, call_path: Path) -> "State | bool | None":
        """State at the call's result given the state of its k-th argument; True: invisible."""
        if isinstance(f, _REDUCES):
            if k != 1:
                return None
            op, plain = reduction_op(f.f)
            if op is None:
                return None
            if isinstance(state, Sum) and (not plain or state.op != op):
                return None
            if isinstance(f, P.PartRed):
                return Sum(op) if plain else None
            if not plain and not (state == PERM or self.flat_arg(call_path, 1)):
                return None  # acc ⊕ g(row): rows must stay whole
            return True
        if k != 0:
            return None
        if isinstance(f, ARRAY_MAPS):
            if state == PERM:
                return PERM
            if state == MULTISET:
                if self.flat_arg(call_path, 0):  # a 1-D array: the change is a permutation
                    return MULTISET
                return _through_total(MULTISET, _multiset_total(f.f))
            return _through_total(state, total_op(f.f))
        if isinstance(f, (P.Reorder, P.ReorderStride, P.Id, P.Join)):
            return state
        if isinstance(f, (P.Split, P.Transpose)):
            return MULTISET if state == PERM else state
        if isinstance(f, P.Iterate):
            return _through_total(state, total_op(f.f))
        return None

    def flat_arg(self, call_path: Path, k: int) -> bool:
        """Whether the call's k-th argument is an array of leaves (not of arrays)."""
        site = self.sites.get(call_path)
        if site is None or len(site.arg_types) <= k:
            return False
        xs = site.arg_types[k]
        return isinstance(xs, ArrayType) and not isinstance(xs.elem, ArrayType)

    def from_body(self, lam_path: Path, state: State, depth: int) -> bool:
        """The value is the body of the lambda at lam_path."""
        if len(lam_path) == 0:
            return False  # the program's result: order matters
        holder = get(self.program, lam_path[:-1])
        if isinstance(holder, FunCall):  # a let: the call's value is the body's
            return self.up(lam_path[:-1], state, depth + 1)
        if not isinstance(holder, P.Pattern) or len(lam_path) < 2:
            return False
        call_path = lam_path[:-2]
        if isinstance(holder, P.AddressSpaceWrapper):
            return self.up(call_path, state, depth + 1)
        if isinstance(holder, ARRAY_MAPS):
            # one element of the map's result changes: its leaves keep their multiset / total
            return self.up(call_path, state if isinstance(state, Sum) else MULTISET, depth + 1)
        if isinstance(holder, P.Iterate):
            nxt = _through_total(state, total_op(holder.f))
            return nxt is not None and self.up(call_path, nxt, depth + 1)
        return False
