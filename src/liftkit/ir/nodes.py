"""The Lift IR (seed 000 §4): `Expr = Literal | Param | FunCall`, `FunDecl = Lambda | Pattern | UserFun`.

Nodes are immutable. Parameters compare by identity (two `x`s bound by different lambdas are
different variables); everything else compares structurally. Passes build new trees.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from liftkit.types import (
    ArrayType,
    LiftTypeError,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    bool_,
    complex64,
    float32,
    int32,
)


class Node:
    """Common base so passes can walk Exprs and FunDecls uniformly."""


class Expr(Node):
    """A value: literal, parameter or function call. `e[i]` is `get i` of a tuple."""

    def __getitem__(self, i: int) -> "FunCall":
        from liftkit.ir.patterns.layout import Get
        from liftkit.arith import cst

        return FunCall(Get(cst(i)), (self,))


class FunDecl(Node):
    """Something callable: a lambda, a built-in pattern or a user function.

    Calling a FunDecl on expressions builds a `FunCall`; `f << g` composes (f after g), and
    `f << expr` applies, so `join << mapWrg(0)(f) << split(128) << zip(x, y)` reads as the papers.
    """

    arity: int = 1

    def __call__(self, *args: Any) -> "Expr":
        return apply(self, [as_expr(a) for a in args])

    def __lshift__(self, other: Any) -> "FunDecl | Expr":
        if isinstance(other, FunDecl):
            return compose(self, other)
        return self(other)


_param_ids = itertools.count()


@dataclass(frozen=True, eq=False)
class Param(Expr):
    """A lambda parameter. `type` is given for a program's inputs and inferred elsewhere."""

    name: str = "p"
    type: Optional[Type] = None
    uid: int = field(default_factory=lambda: next(_param_ids))

    def __repr__(self) -> str:
        return f"Param({self.name}#{self.uid})"


@dataclass(frozen=True)
class Literal(Expr):
    """A compile-time constant: scalar, vector (tuple of lane values), tuple, or array (ndarray)."""

    value: Any
    type: Type
    # written as a bare number without a type (`0.0`, `lit(1)`): `settle_literals` may give it
    # the type its use asks for (`reduce(add_double, 0.0)` makes the 0.0 a double)
    inferred: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        check_literal(self.value, self.type)

    def __hash__(self) -> int:
        return hash((literal_key(self.value), self.type))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Literal)
            and self.type == other.type
            and literal_key(self.value) == literal_key(other.value)
        )


@dataclass(frozen=True)
class FunCall(Expr):
    f: FunDecl
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.f, FunDecl):
            raise LiftTypeError(f"cannot call {self.f!r}: it is not a function")
        for a in self.args:
            if not isinstance(a, Expr):
                raise LiftTypeError(f"argument {a!r} is not a Lift expression")


@dataclass(frozen=True)
class Lambda(FunDecl):
    params: tuple[Param, ...]
    body: Expr

    @property
    def arity(self) -> int:  # type: ignore[override]
        return len(self.params)

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Lambda) and alpha_equal(self, other)
        )

    def __hash__(self) -> int:
        return hash(("lambda", len(self.params)))


@dataclass(frozen=True, eq=False)
class UserFun(FunDecl):
    """A scalar function written in OpenCL C, with a NumPy twin for the interpreter.

    `impl` receives NumPy arrays whose leading axes are batch axes (the interpreter vectorises
    maps); with `vectorized=False` it receives one element at a time. The declared algebraic facts
    are what rewrite rules rely on (reduce needs associative + commutative, partial reductions an
    identity element).
    """

    name: str
    param_names: tuple[str, ...]
    param_types: tuple[Type, ...]
    out_type: Type
    body: str
    impl: Callable[..., Any]
    associative: bool = False
    commutative: bool = False
    identity: Any = None
    vectorized: bool = True
    ufunc: Optional[np.ufunc] = None
    # the OpenCL body of the vector forms when the scalar body does not carry over; `{T}` is the
    # vector type (int abs returns an unsigned type: "return convert_{T}(abs(x));")
    vector_body: Optional[str] = None

    def __post_init__(self) -> None:
        if len(self.param_names) != len(self.param_types):
            raise LiftTypeError(f"user function {self.name}: {len(self.param_names)} names, "
                                f"{len(self.param_types)} types")
        if not self.name.isidentifier():
            raise LiftTypeError(f"user function name {self.name!r} is not a C identifier")

    @property
    def arity(self) -> int:  # type: ignore[override]
        return len(self.param_types)

    def _key(self) -> tuple:
        return (self.name, self.param_types, self.out_type, self.body)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserFun) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"UserFun({self.name})"

    def vectorize(self, width: int) -> "UserFun":
        """The OpenCL vector form (seed 004 `vectorize-4(f)`): same body, vector types.

        OpenCL's arithmetic operators and most built-ins are overloaded on vector types, and the
        NumPy implementation broadcasts over the trailing lane axis, so body and impl carry over.
        """
        def vec(t: Type) -> Type:
            if isinstance(t, ScalarType):
                return VectorType(t, width)
            if isinstance(t, TupleType):
                return TupleType(tuple(vec(e) for e in t.elems))
            raise LiftTypeError(f"cannot vectorize user function {self.name}: {t} is not scalar")

        return UserFun(
            name=f"{self.name}{width}" if not self.name[-1].isdigit() else f"{self.name}_v{width}",
            param_names=self.param_names,
            param_types=tuple(vec(t) for t in self.param_types),
            out_type=vec(self.out_type),
            body=self.vector_body.replace("{T}", str(vec(self.out_type))) if self.vector_body else self.body,
            impl=self.impl,
            associative=self.associative,
            commutative=self.commutative,
            identity=self.identity,
            vectorized=self.vectorized,
            ufunc=self.ufunc,
        )


def spread_tuples(f: UserFun, args: Sequence[Any]) -> Sequence[Any]:
    """Arguments as the user function receives them: when the count differs from its arity,
    tuple arguments are spread over its parameters (so `map(mult)` works on zipped pairs, as
    in the papers). Works on types and on interpreter values alike."""
    if len(args) == f.arity:
        return args
    flat: list[Any] = []
    for a in args:
        if isinstance(a, (TupleType, tuple)):
            flat.extend(a.elems if isinstance(a, TupleType) else a)
        else:
            flat.append(a)
    return flat


def user_fun(
    name: str,
    params: Sequence[tuple[str, Type]],
    out: Type,
    body: str,
    impl: Callable[..., Any],
    **facts: Any,
) -> UserFun:
    """Declare a user function: `user_fun("add", [("x", float32), ("y", float32)], float32,
    "return x + y;", lambda x, y: x + y, associative=True, commutative=True, identity=0.0)`."""
    return UserFun(name, tuple(p[0] for p in params), tuple(p[1] for p in params), out, body,
                   impl, **facts)


# ---------------------------------------------------------------------------------------------
# literals


def check_literal(value: Any, t: Type) -> None:
    if isinstance(t, ScalarType):
        if isinstance(value, (tuple, list, np.ndarray)) and np.ndim(value) != 0:
            raise LiftTypeError(f"literal {value!r} is not a scalar of type {t}")
        if t == bool_ and not isinstance(value, (bool, np.bool_)):
            raise LiftTypeError(f"literal {value!r} is not a bool")
    elif isinstance(t, VectorType):
        if len(tuple(value)) != t.width:
            raise LiftTypeError(f"vector literal needs {t.width} lanes, got {value!r}")
    elif isinstance(t, TupleType):
        if not isinstance(value, tuple) or len(value) != len(t.elems):
            raise LiftTypeError(f"tuple literal {value!r} does not match {t}")
        for v, et in zip(value, t.elems):
            check_literal(v, et)
    elif isinstance(t, ArrayType):
        arr = np.asarray(value)
        if not t.length.is_constant or arr.shape[:1] != (t.length.value,):
            raise LiftTypeError(f"array literal of shape {arr.shape} does not match {t}")


def literal_key(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("arr", value.shape, value.tobytes())
    if isinstance(value, tuple):
        return tuple(literal_key(v) for v in value)
    return value


def lit(value: Any, t: Optional[Type] = None) -> Literal:
    """A literal; Python floats default to float (as in the papers' `0.0f`), ints to int,
    unless their use asks for another type (see `liftkit.ir.literals`)."""
    if t is None:
        if isinstance(value, (bool, np.bool_)):
            t = bool_
        elif isinstance(value, (int, np.integer)):
            t = int32
        elif isinstance(value, (float, np.floating)):
            t = float32
        elif isinstance(value, (complex, np.complexfloating)):
            t = complex64
        else:
            raise LiftTypeError(f"cannot infer the type of literal {value!r}; give it explicitly")
        return Literal(value, t, inferred=True)
    return Literal(value, t)


def as_expr(x: Any) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, FunDecl):
        raise LiftTypeError(f"a function was given where a value was expected: {x!r}")
    return lit(x)


# ---------------------------------------------------------------------------------------------
# composition and traversal helpers


def compose(f: FunDecl, g: FunDecl) -> Lambda:
    """f ∘ g as an explicit lambda (seed 000 §4.3: composition is sugar for λp. f(g(p)))."""
    params = tuple(Param("p") for _ in range(g.arity))
    return Lambda(params, apply(f, [apply(g, params)]))


def apply(f: FunDecl, args: Sequence[Expr]) -> Expr:
    """Call f; a lambda is beta-reduced when that changes neither how often nor where its
    arguments are computed: each parameter is used at most once, in the lambda's own data flow
    (not inside a pattern's function, where substitution would move the computation into a
    map's body). So `(f ∘ g)(x)` becomes f(g(x)), while a let stays a let."""
    if isinstance(f, Lambda) and len(f.params) == len(args):
        uses = [n for n in walk(f.body) if isinstance(n, Param)]
        flow = list(_data_flow_params(f.body))
        if all(uses.count(p) <= 1 and (uses.count(p) == 0 or p in flow) for p in f.params):
            return substitute(f.body, dict(zip(f.params, args)))
    return FunCall(f, tuple(args))


def _data_flow_params(e: Expr) -> Iterator[Param]:
    """Parameters used as (transitive) arguments of calls, not inside called functions."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Param):
            yield n
        elif isinstance(n, FunCall):
            stack.extend(n.args)


def substitute(node: Any, mapping: dict[Param, Expr]) -> Any:
    """Replace parameters by expressions (capture is impossible: parameters are unique objects)."""
    if not mapping:
        return node
    if isinstance(node, Param):
        return mapping.get(node, node)
    if isinstance(node, FunCall):
        return FunCall(substitute(node.f, mapping), tuple(substitute(a, mapping) for a in node.args))
    if isinstance(node, Lambda):
        return Lambda(node.params, substitute(node.body, mapping))
    if isinstance(node, FunDecl) and hasattr(node, "with_functions"):
        fs = node.functions()  # type: ignore[attr-defined]
        if not fs:
            return node
        return node.with_functions([substitute(f, mapping) for f in fs])  # type: ignore[attr-defined]
    return node


def unwrap_eta(f: FunDecl) -> FunDecl:
    """g for λ(x1..xk). g(x1..xk) (the rewrite normal form of a function argument), else f."""
    while (isinstance(f, Lambda) and isinstance(f.body, FunCall) and f.body.args == f.params
           and not any(isinstance(n, Param) and n in f.params for n in walk(f.body.f))):
        f = f.body.f
    return f


def children(node: Node) -> Iterator[Node]:
    """Direct sub-nodes: a FunCall's function and arguments, a lambda's body, a pattern's functions."""
    if isinstance(node, FunCall):
        yield node.f
        yield from node.args
    elif isinstance(node, Lambda):
        yield node.body
    elif isinstance(node, FunDecl) and hasattr(node, "functions"):
        yield from node.functions()  # type: ignore[attr-defined]


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of every node."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))


def free_params(node: Node) -> set[Param]:
    """Parameters used under `node` but not bound inside it."""
    used: set[Param] = set()
    bound: set[Param] = set()
    for n in walk(node):
        if isinstance(n, Param):
            used.add(n)
        elif isinstance(n, Lambda):
            bound.update(n.params)
    return used - bound


def alpha_equal(a: Node, b: Node, env: Optional[dict[int, int]] = None) -> bool:
    """Structural equality up to renaming of bound parameters."""
    env = {} if env is None else env
    if isinstance(a, Param) and isinstance(b, Param):
        return env.get(a.uid, a.uid) == b.uid
    if type(a) is not type(b):
        return False
    if isinstance(a, Lambda):
        assert isinstance(b, Lambda)
        if len(a.params) != len(b.params):
            return False
        env2 = dict(env)
        env2.update({p.uid: q.uid for p, q in zip(a.params, b.params)})
        return alpha_equal(a.body, b.body, env2)
    if isinstance(a, FunCall):
        assert isinstance(b, FunCall)
        return (len(a.args) == len(b.args) and alpha_equal(a.f, b.f, env)
                and all(alpha_equal(x, y, env) for x, y in zip(a.args, b.args)))
    if isinstance(a, FunDecl) and hasattr(a, "functions"):
        fa, fb = a.functions(), b.functions()  # type: ignore[attr-defined]
        return (a.static_params() == b.static_params()  # type: ignore[attr-defined]
                and len(fa) == len(fb) and all(alpha_equal(x, y, env) for x, y in zip(fa, fb)))
    return a == b
