"""Helpers the rules share: building functions in rewrite normal form, fresh copies of functions,
size choices, the algebraic facts of operators, looking around a site, and type checks.

Rules build their replacements in rewrite normal form themselves (every pattern's function a
lambda taking as many parameters as the pattern passes), so the engine's re-normalisation has
nothing to eta-expand in what they produce.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Iterable, Optional, Sequence

from liftkit.arith import ArithExpr, cst, divides, parse_arith
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun, unwrap_eta
from liftkit.ir.typecheck import TypeChecker
from liftkit.rewrite.core import Path, Site, get, normalize, replace_at, retype
from liftkit.types import (
    ArrayType,
    LiftTypeError,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    bool_,
    same_type,
)

# the fixed set of split factors offered where a length is symbolic (the type checker accepts
# them; the interpreter and the generated host code check divisibility at run time)
SYMBOLIC_FACTORS = tuple(2 ** k for k in range(1, 13))  # 2 .. 4096
VECTOR_WIDTHS = (2, 4, 8, 16)
DIMS = (0, 1)  # OpenCL dimensions offered for parallel maps

# array maps: the patterns with the meaning of `map` on arrays (mapVec works on vector lanes)
ARRAY_MAPS = (P.Map, P.MapSeq, P.MapSeqUnroll, P.MapGlb, P.MapWrg, P.MapLcl)
SEQUENTIAL_REDUCES = (P.ReduceSeq, P.ReduceSeqUnroll)


# ---------------------------------------------------------------------------------------------
# building functions


def lam(n: int, body: Callable[..., Expr], names: Sequence[str] = ()) -> Lambda:
    """λ(p1..pn). body(p1..pn) with fresh parameters."""
    ps = tuple(Param(names[k] if k < len(names) else ("x" if n == 1 else f"x{k}")) for k in range(n))
    return Lambda(ps, body(*ps))


def call(f: FunDecl, *args: Expr) -> FunCall:
    return FunCall(f, tuple(args))


def normal_form(node: Node) -> Node:
    """Rewrite normal form (the engine's `normalize`: every pattern's function a lambda of as many
    parameters as the pattern passes). Kept as the rule package's entry point for callers."""
    return normalize(node)


def fresh(node: Any) -> Any:
    """A copy of a function or expression with every parameter bound inside it renamed (new
    Param objects), so a rule that duplicates a function never shares binders between copies."""
    mapping: dict[Param, Param] = {}

    def go(n: Any) -> Any:
        if isinstance(n, Param):
            return mapping.get(n, n)
        if isinstance(n, Lambda):
            for p in n.params:
                mapping[p] = Param(p.name, p.type)
            return Lambda(tuple(mapping[p] for p in n.params), go(n.body))
        if isinstance(n, FunCall):
            return FunCall(go(n.f), tuple(go(a) for a in n.args))
        if isinstance(n, P.Pattern):
            fs = n.functions()
            return n.with_functions([go(f) for f in fs]) if fs else n
        return n

    return go(node)


# ---------------------------------------------------------------------------------------------
# sizes


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def const(e: ArithExpr) -> Optional[int]:
    return e.value if e.is_constant else None


def size_param(n: int | str) -> ArithExpr:
    """A size parameter of a choice: a number, or a symbolic size in its printed form ("N/4")."""
    return cst(n) if isinstance(n, int) else parse_arith(n)


def consumer_split(site: Site) -> Optional[ArithExpr]:
    """s when the site's result is split directly: split s (site)."""
    if len(site.path) < 2:
        return None
    parent = get(site.program, site.path[:-1])
    if isinstance(parent, FunCall) and isinstance(parent.f, P.Split) and site.path[-1] == 1:
        return parent.f.n
    return None


def factor_choices(length: ArithExpr, *, trivial: bool = True) -> list[int]:
    """Split factors for an array of this length: every divisor of a constant length (without 1
    and the length itself when `trivial` is false), the powers of two 2..4096 the type checker
    does not refute for a symbolic one."""
    n = const(length)
    if n is not None:
        ds = divisors(n) if n > 0 else []
        return ds if trivial else [d for d in ds if 1 < d < n]
    return [f for f in SYMBOLIC_FACTORS if divides(cst(f), length) is not False]


# ---------------------------------------------------------------------------------------------
# operators and their facts


def operator(f: FunDecl) -> Optional[UserFun]:
    """The user function behind a (normal-form) pattern function, if it is one."""
    g = unwrap_eta(f)
    return g if isinstance(g, UserFun) else None


def assoc_comm(f: FunDecl) -> Optional[UserFun]:
    op = operator(f)
    return op if op is not None and op.associative and op.commutative else None


def reduction(site: Site) -> Optional[tuple[UserFun, ArrayType]]:
    """(⊕, the input's array type) when the site is reduce(⊕, z) xs with ⊕ declared associative
    and commutative: what the reduce rules need before they may reorder or split."""
    if not isinstance(site.f, P.Reduce):
        return None
    xs = array_arg(site, 1)
    op = assoc_comm(site.f.f)
    return (op, xs) if xs is not None and op is not None else None


def identity_literal(op: UserFun, t: Type) -> Optional[Literal]:
    """The declared identity element of op as a literal of type t (None where op declares none
    or it cannot be written at that type)."""
    e = op.identity
    if e is None:
        return None
    try:
        if isinstance(t, ScalarType) and t != bool_ and not isinstance(e, (tuple, list)):
            return Literal(e, t)
        if isinstance(t, VectorType) and not isinstance(e, (tuple, list)):
            return Literal(tuple([e] * t.width), t)
        if isinstance(t, TupleType) and isinstance(e, tuple) and len(e) == len(t.elems):
            return Literal(e, t)
    except (LiftTypeError, TypeError, ValueError):
        return None
    return None


def is_identity(z: Expr, op: UserFun) -> bool:
    """z is a literal equal to op's declared identity element."""
    if not isinstance(z, Literal) or op.identity is None:
        return False
    want = identity_literal(op, z.type)
    return want is not None and want == z


def is_copy(f: FunDecl) -> bool:
    """f is a copying identity user function (id, id4, id_float2, ...)."""
    g = operator(f)
    return (g is not None and g.arity == 1 and g.param_types[0] == g.out_type
            and g.body.replace(" ", "") == f"return{g.param_names[0]};")


# ---------------------------------------------------------------------------------------------
# looking around a site


def parent_path(path: Path) -> Path:
    return path[:-1]


def wrapped_by(site: Site) -> Optional[P.AddressSpaceWrapper]:
    """The address-space wrapper whose function's body is this call (toLocal(λx. site)), if any."""
    path = site.path
    if len(path) < 3:
        return None
    lam_ = get(site.program, path[:-1])
    pat = get(site.program, path[:-2])
    if isinstance(lam_, Lambda) and isinstance(pat, P.AddressSpaceWrapper):
        return pat
    return None


def contains(f: Node, pred: Callable[[Node], bool]) -> bool:
    from liftkit.ir.nodes import walk

    return any(pred(n) for n in walk(f))


def inside_iterate(site: Site) -> bool:
    return any(isinstance(p, P.Iterate) for p in site.enclosing)


def type_checks(site: Site, new: Expr) -> bool:
    """Whether the program with the site replaced by `new` still type-checks.

    Inside an iterate (whose body is checked once per iteration while a site records only the
    last visit) the outermost enclosing iterate call is re-checked and must keep its type;
    elsewhere the whole program is checked."""
    scope = _outer_iterate(site)
    try:
        if scope is not None:
            path, enclosing = scope
            old = get(site.program, path)
            sub = replace_at(old, site.path[len(path):], new)
            t = TypeChecker().expr(sub, dict(site.param_types), enclosing)  # type: ignore[arg-type]
            return same_type(t, TypeChecker().expr(old, dict(site.param_types), enclosing))  # type: ignore[arg-type]
        retype(site, new)  # rules build in normal form already
    except LiftTypeError:
        return False
    return True


def _outer_iterate(site: Site) -> Optional[tuple[Path, tuple[P.Pattern, ...]]]:
    """(path of the outermost iterate call around the site, the patterns enclosing that call)."""
    for k in range(1, len(site.path)):
        node = get(site.program, site.path[:k])
        if isinstance(node, FunCall) and isinstance(node.f, P.Iterate):
            depth = next((i for i, p in enumerate(site.enclosing) if p is node.f), None)
            if depth is not None:
                return site.path[:k], site.enclosing[:depth]
    return None


def checked(site: Site, build: Callable[..., Expr], options: Iterable[dict[str, Any]],
            reshapes: bool = False, opaque: bool = True) -> list[dict[str, Any]]:
    """The options whose result is known to type-check.

    Inside an iterate every option gets a trial type check (a site there records only the last
    iteration's types). A rule that `reshapes` (splits, vectorises) is accepted when its
    replacement provably has the site's type, and otherwise checked as a whole: with symbolic
    lengths `join ∘ split 2` has length 2*(N/2), which the arithmetic cannot prove equal to N,
    so a zip with the original length would no longer type-check (and cancelling `join ∘ split
    8` next to another one leaves N beside 8*(N/8)). `opaque`: the rule's build treats the
    site's arguments as opaque, so the local check may type it on typed stand-ins."""
    opts = list(options)
    if not opts or not (reshapes or inside_iterate(site)):
        return opts
    # the local check types the replacement with the site's arguments as typed stand-ins (the
    # rules that reshape treat their arguments as opaque), so it costs nothing per argument size
    stub = replace(site, call=FunCall(site.call.f, tuple(
        Param(f"arg{k}", t) for k, t in enumerate(site.arg_types)))) if opaque else site
    out = []
    for o in opts:
        if not inside_iterate(site):
            try:
                if same_type(stub.type_of(build(stub, **o)), site.type):
                    out.append(o)
                    continue
            except LiftTypeError:
                continue
        if type_checks(site, build(site, **o)):
            out.append(o)
    return out


def array_arg(site: Site, k: int = 0) -> Optional[ArrayType]:
    if k < len(site.arg_types) and isinstance(site.arg_types[k], ArrayType):
        return site.arg_types[k]  # type: ignore[return-value]
    return None


def inner_call(site: Site, k: int, kind: type | tuple[type, ...]) -> Optional[FunCall]:
    """The site's k-th argument when it is a call of a pattern of the given kind."""
    if k < len(site.call.args):
        a = site.call.args[k]
        if isinstance(a, FunCall) and isinstance(a.f, kind):
            return a
    return None


def same_len(a: ArithExpr, b: ArithExpr) -> bool:
    from liftkit.types import int32

    return same_type(ArrayType(int32, a), ArrayType(int32, b))


# patterns a new work-group map or a matched nest is never placed inside (a thread or a
# work-group already runs them: the nest would be lowered already); the stencil and MM rules
NOT_AROUND = (P.ParallelMap, P.MapSeq, P.MapSeqUnroll, P.AbstractReduce, P.MapVec, P.Iterate)
