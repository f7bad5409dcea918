"""Immutable expression nodes of :mod:`liftkit.arith`.

Nodes are plain data: structure, cached hashes, sort keys, evaluation and the
Python operators.  All simplification lives in :mod:`.simplify`; raw
(unsimplified) trees built by :mod:`.raw` use the very same classes and are
only distinguished by ``_canon = False``.

Canonical form (what the smart constructors return):

* ``Sum``: >= 2 terms, no nested sums, like terms combined, terms sorted by
  their monomial, the constant (if any) last.
* ``Prod``: >= 2 factors; an optional leading ``Cst`` coefficient (not 0/1)
  followed by atoms sorted by key (repeated atoms encode powers).
* every other node is an *atom* (``Var``, ``IntDiv``, ``Mod``, ``Pow``,
  ``Log``, ``Min``, ``Max``, ``Xor``, ``IfThenElse``).
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping

from .errors import ArithError

_CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


def _ilog(base: int, x: int) -> int:
    """floor(log_base(x)) computed exactly on integers (base >= 2, x >= 1)."""
    r, p = 0, base
    while p <= x:
        p *= base
        r += 1
    return r


class ArithExpr:
    """Abstract base of symbolic integer expressions (immutable, hashable).

    Operators (``+ - * // % ** ^``, unary ``-``, reflected forms with ints)
    return already simplified expressions.  ``==`` is *structural* equality
    (``Cst(3) == 3`` holds); use :func:`lt`, :func:`eq`, ... for comparison
    objects and :func:`prove_eq` for semantic equality.
    """

    # _cb / _sb: lazily cached numeric / symbolic bounds (pure functions of
    # this immutable node, so caching on the node is safe)
    __slots__ = ("_f", "_h", "_k", "_canon", "_bnd", "_cb", "_sb")
    _rank = -1
    # make numpy scalars defer to our reflected operators
    __array_ufunc__ = None

    def __init__(self, fields: tuple, canon: bool) -> None:
        self._f = fields
        self._h = hash((self._rank, fields))
        self._k: tuple | None = None
        self._canon = canon
        self._cb = None
        self._sb = None
        # does the tree mention a bounded (index) variable?
        bnd = False
        for c in fields:
            if c._bnd:
                bnd = True
                break
        self._bnd = bnd

    # -- structure -----------------------------------------------------------
    def _kids(self) -> tuple:
        return self._f

    def _init_args(self) -> tuple:
        return self._f + (self._canon,)

    def __reduce__(self) -> tuple:
        # rebuild through __init__: cached string hashes differ between processes
        return (type(self), self._init_args())

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            if isinstance(other, numbers.Integral) and type(self) is Cst:
                return self.v == other  # type: ignore[attr-defined]
            return False
        return self._h == other._h and self._f == other._f  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def _key(self) -> tuple:
        """Total order used for canonical sorting (deterministic printing)."""
        k = self._k
        if k is None:
            k = (self._rank,) + tuple(c._key() for c in self._kids())
            self._k = k
        return k

    def free_vars(self) -> frozenset["Var"]:
        """Variables occurring in the expression (not those only in ranges)."""
        out: set[Var] = set()
        stack: list = [self]
        seen: set[int] = set()
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if type(e) is Var:
                out.add(e)
            else:
                stack.extend(e._kids())
        return frozenset(out)

    @property
    def is_constant(self) -> bool:
        return False

    @property
    def value(self) -> int:
        raise ArithError(f"expression {self} is not a constant")

    def __int__(self) -> int:
        return self.value

    # -- evaluation ----------------------------------------------------------
    def eval(self, env: Mapping[str, int]) -> int:
        """Evaluate with Python ints (floor division/modulo, as C for
        non-negative operands).  Raises ArithError on an unbound variable
        or a division by zero."""
        return self._ev(env)

    def _ev(self, env: Mapping[str, int]) -> int:  # pragma: no cover - every node class overrides
        raise ArithError(f"{type(self).__name__} has no evaluation rule")

    def eval_numpy(self, env: Mapping[str, Any]) -> Any:
        """Vectorised evaluation (np.floor_divide, np.mod, ...); ints in, int out."""
        from .evalnp import eval_numpy

        return eval_numpy(self, env)

    def substitute(self, mapping: Mapping[Any, Any]) -> "ArithExpr":
        """Replace variables (keys: names or Vars) and re-simplify."""
        return _S.substitute(self, mapping)

    # -- bounds --------------------------------------------------------------
    def lower_bound(self) -> "ArithExpr | None":
        """Inclusive symbolic lower bound over the unbounded (size) variables."""
        return _R.lower_bound(self)

    def upper_bound(self) -> "ArithExpr | None":
        """Inclusive symbolic upper bound over the unbounded (size) variables."""
        return _R.upper_bound(self)

    def int_bounds(self) -> tuple[int | None, int | None]:
        """Inclusive numeric bounds (None = unbounded), size variables >= their lo."""
        return _R.const_bounds(_S.to_expr(self))

    # -- printing ------------------------------------------------------------
    def __str__(self) -> str:
        return _P.to_str(self)

    def to_c(self) -> str:
        """OpenCL C expression with minimal parentheses."""
        return _P.to_c(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {_P.to_str(self)}>"

    # -- operators -----------------------------------------------------------
    def __add__(self, o: Any) -> "ArithExpr":
        return _S.add(self, o) if _ok(o) else NotImplemented

    def __radd__(self, o: Any) -> "ArithExpr":
        return _S.add(o, self) if _ok(o) else NotImplemented

    def __sub__(self, o: Any) -> "ArithExpr":
        return _S.sub(self, o) if _ok(o) else NotImplemented

    def __rsub__(self, o: Any) -> "ArithExpr":
        return _S.sub(o, self) if _ok(o) else NotImplemented

    def __mul__(self, o: Any) -> "ArithExpr":
        return _S.mul(self, o) if _ok(o) else NotImplemented

    def __rmul__(self, o: Any) -> "ArithExpr":
        return _S.mul(o, self) if _ok(o) else NotImplemented

    def __floordiv__(self, o: Any) -> "ArithExpr":
        return _S.intdiv(self, o) if _ok(o) else NotImplemented

    def __rfloordiv__(self, o: Any) -> "ArithExpr":
        return _S.intdiv(o, self) if _ok(o) else NotImplemented

    def __mod__(self, o: Any) -> "ArithExpr":
        return _S.mod(self, o) if _ok(o) else NotImplemented

    def __rmod__(self, o: Any) -> "ArithExpr":
        return _S.mod(o, self) if _ok(o) else NotImplemented

    def __pow__(self, o: Any) -> "ArithExpr":
        return _S.pow_(self, o) if _ok(o) else NotImplemented

    def __rpow__(self, o: Any) -> "ArithExpr":
        return _S.pow_(o, self) if _ok(o) else NotImplemented

    def __xor__(self, o: Any) -> "ArithExpr":
        return _S.xor(self, o) if _ok(o) else NotImplemented

    def __rxor__(self, o: Any) -> "ArithExpr":
        return _S.xor(o, self) if _ok(o) else NotImplemented

    def __neg__(self) -> "ArithExpr":
        return _S.neg(self)

    def __pos__(self) -> "ArithExpr":
        return _S.to_expr(self)


def _ok(o: Any) -> bool:
    t = type(o)
    if t is int or isinstance(o, ArithExpr):
        return True
    return isinstance(o, numbers.Integral) and t is not bool


class Cst(ArithExpr):
    """Integer constant."""

    __slots__ = ("v",)
    _rank = 0

    def __init__(self, value: int) -> None:
        if type(value) is not int:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"Cst needs an integer, got {value!r}")
            value = int(value)
        self.v = value
        self._f = (value,)
        self._h = hash(value)
        self._k = (0, value)
        self._canon = True
        self._bnd = False
        self._cb = (value, value)
        self._sb = None

    def _kids(self) -> tuple:
        return ()

    def _init_args(self) -> tuple:
        return (self.v,)

    @property
    def is_constant(self) -> bool:
        return True

    @property
    def value(self) -> int:
        return self.v

    def _ev(self, env: Mapping[str, int]) -> int:
        return self.v


class Var(ArithExpr):
    """Integer variable with value range [lo, hi) (hi None = unbounded).

    Equality and hashing use the name only: the range is metadata used by the
    simplifier.  Variables with ``hi is None`` (size variables) stay symbolic
    in bounds; bounded ones (index variables) are replaced by their range.
    """

    __slots__ = ("name", "lo", "hi")
    _rank = 1

    def __init__(self, name: str, lo: "ArithExpr | int" = 0, hi: "ArithExpr | int | None" = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"variable name must be a non-empty string, got {name!r}")
        self.name = name
        self.lo = _S.to_expr(lo)
        self.hi = None if hi is None else _S.to_expr(hi)
        for bound in (self.lo, self.hi):
            if bound is not None and any(v.name == name for v in bound.free_vars()):
                raise ArithError(f"the range of variable {name} mentions {name} itself")
        self._f = (name,)
        self._h = hash((1, name))
        self._k = (1, name.lower(), name)
        self._canon = True
        self._bnd = self.hi is not None
        self._cb = None
        self._sb = None

    def _kids(self) -> tuple:
        return ()

    def _init_args(self) -> tuple:
        return (self.name, self.lo, self.hi)

    @property
    def kind(self) -> str:
        return "size" if self.hi is None else "index"

    def _ev(self, env: Mapping[str, int]) -> int:
        try:
            return int(env[self.name])
        except KeyError:
            raise ArithError(f"unbound {self.kind} variable {self.name}") from None


class Sum(ArithExpr):
    """n-ary sum.  Canonical sums cache their (monomial, coefficient) list."""

    __slots__ = ("_tl",)
    _rank = 3

    def __init__(self, terms: tuple, canon: bool = False, tl: tuple | None = None) -> None:
        super().__init__(tuple(terms), canon)
        self._tl = tl

    def _init_args(self) -> tuple:
        return (self._f, self._canon, self._tl)

    @property
    def terms(self) -> tuple:
        return self._f

    def _ev(self, env: Mapping[str, int]) -> int:
        return sum(t._ev(env) for t in self._f)


class Prod(ArithExpr):
    """n-ary product."""

    __slots__ = ()
    _rank = 2

    def __init__(self, factors: tuple, canon: bool = False) -> None:
        super().__init__(tuple(factors), canon)

    def _init_args(self) -> tuple:
        return (self._f, self._canon)

    @property
    def factors(self) -> tuple:
        return self._f

    def _ev(self, env: Mapping[str, int]) -> int:
        r = 1
        for f in self._f:
            r *= f._ev(env)
        return r


class _Binary(ArithExpr):
    __slots__ = ("a", "b")

    def __init__(self, a: ArithExpr, b: ArithExpr, canon: bool = False) -> None:
        super().__init__((a, b), canon)
        self.a = a
        self.b = b


class IntDiv(_Binary):
    """Integer division num/den (C semantics for non-negative operands)."""

    __slots__ = ()
    _rank = 4
    num = property(lambda self: self.a)
    den = property(lambda self: self.b)

    def _ev(self, env: Mapping[str, int]) -> int:
        d = self.b._ev(env)
        if d == 0:
            raise ArithError(f"division by zero in {self}")
        return self.a._ev(env) // d


class Mod(_Binary):
    """Modulo num % den (C semantics for non-negative operands)."""

    __slots__ = ()
    _rank = 5
    num = property(lambda self: self.a)
    den = property(lambda self: self.b)

    def _ev(self, env: Mapping[str, int]) -> int:
        d = self.b._ev(env)
        if d == 0:
            raise ArithError(f"division by zero in {self}")
        return self.a._ev(env) % d


class Pow(_Binary):
    """base ** exp for exp >= 0."""

    __slots__ = ()
    _rank = 6
    base = property(lambda self: self.a)
    exp = property(lambda self: self.b)

    def _ev(self, env: Mapping[str, int]) -> int:
        e = self.b._ev(env)
        if e < 0:
            raise ArithError(f"negative exponent in {self}")
        return self.a._ev(env) ** e


class Log(_Binary):
    """floor(log_base(arg)) for base >= 2, arg >= 1."""

    __slots__ = ()
    _rank = 7
    base = property(lambda self: self.a)
    arg = property(lambda self: self.b)

    def _ev(self, env: Mapping[str, int]) -> int:
        b, x = self.a._ev(env), self.b._ev(env)
        if b < 2 or x < 1:
            raise ArithError(f"logarithm undefined in {self} (base {b}, argument {x})")
        return _ilog(b, x)


class Min(_Binary):
    __slots__ = ()
    _rank = 8

    def _ev(self, env: Mapping[str, int]) -> int:
        return min(self.a._ev(env), self.b._ev(env))


class Max(_Binary):
    __slots__ = ()
    _rank = 9

    def _ev(self, env: Mapping[str, int]) -> int:
        return max(self.a._ev(env), self.b._ev(env))


class Xor(_Binary):
    """Bitwise exclusive or a ^ b of non-negative operands (index swizzles: a row's chunks
    permuted by `chunk xor row`, its own inverse). Python's ^ on ints is C's on the
    non-negative domain, the only one simplification and ranges assume."""

    __slots__ = ()
    _rank = 11

    def _ev(self, env: Mapping[str, int]) -> int:
        return self.a._ev(env) ^ self.b._ev(env)


class Cond:
    """A comparison ``lhs op rhs`` (op in < <= > >= == !=); not an ArithExpr."""

    __slots__ = ("op", "lhs", "rhs", "_h", "_k", "_canon", "_bnd", "_f")

    def __init__(self, op: str, lhs: ArithExpr, rhs: ArithExpr, canon: bool = False) -> None:
        if op not in _CMP_OPS:
            raise ArithError(f"unknown comparison operator {op!r}")
        self.op, self.lhs, self.rhs = op, lhs, rhs
        self._f = (op, lhs, rhs)
        self._h = hash(("cond", op, lhs, rhs))
        self._k: tuple | None = None
        self._canon = canon
        self._bnd = lhs._bnd or rhs._bnd

    def _kids(self) -> tuple:
        return (self.lhs, self.rhs)

    def __reduce__(self) -> tuple:
        return (Cond, (self.op, self.lhs, self.rhs, self._canon))

    def _key(self) -> tuple:
        if self._k is None:
            self._k = (_CMP_OPS.index(self.op), self.lhs._key(), self.rhs._key())
        return self._k

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is Cond and self._h == other._h and self._f == other._f)

    def eval(self, env: Mapping[str, int]) -> bool:
        return _compare(self.op, self.lhs._ev(env), self.rhs._ev(env))

    def decide(self) -> bool | None:
        """True/False when provable for every in-range valuation, else None."""
        return _S.decide(self)

    def free_vars(self) -> frozenset[Var]:
        return self.lhs.free_vars() | self.rhs.free_vars()

    def substitute(self, mapping: Mapping[Any, Any]) -> "Cond":
        return Cond(self.op, self.lhs.substitute(mapping), self.rhs.substitute(mapping), True)

    def __str__(self) -> str:
        return _P.cond_str(self, False)

    def to_c(self) -> str:
        return _P.cond_str(self, True)

    def __repr__(self) -> str:
        return f"<Cond {self}>"


def _compare(op: str, x: Any, y: Any) -> Any:
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    if op == ">=":
        return x >= y
    if op == "==":
        return x == y
    return x != y


class IfThenElse(ArithExpr):
    """``cond ? then : els`` (only the chosen branch is evaluated)."""

    __slots__ = ("cond", "then", "els")
    _rank = 10

    def __init__(self, cond: Cond, then: ArithExpr, els: ArithExpr, canon: bool = False) -> None:
        super().__init__((cond, then, els), canon)
        self.cond, self.then, self.els = cond, then, els

    def _ev(self, env: Mapping[str, int]) -> int:
        return self.then._ev(env) if self.cond.eval(env) else self.els._ev(env)


ZERO = Cst(0)
ONE = Cst(1)
MINUS_ONE = Cst(-1)

# late imports: these modules import the node classes defined above
from . import printer as _P  # noqa: E402
from . import ranges as _R  # noqa: E402
from . import simplify as _S  # noqa: E402
