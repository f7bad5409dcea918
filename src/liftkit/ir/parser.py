"""Reading the papers' notation back into IR: the inverse of `liftkit.ir.printer.show`.

    parse("λ(x: [float]_N). (join ∘ mapSeq(abs) ∘ split 4)(x)")

`show(parse(show(p))) == show(p)` for every program, so derivations can be saved, edited and
diffed as text. The grammar is the printer's:

    program := 'λ' '(' name ':' type (',' name ':' type)* ')' '.' expr
    expr    := literal | name | chain '(' expr (',' expr)* ')'
    literal := number | vecN '(' ... ')' | '(' literal (',' literal)+ ')' | '[' literal (',' literal)* ']'
             | '[' literal ';' N ']'       -- N copies (a tile's zero accumulators)
    chain   := term ('∘' term)*          -- (f ∘ g)(x), or f ∘ g(x): the whole chain applied
    term    := pattern | userfun | '(' fun ')'
    fun     := 'λ' params '.' expr | chain
    pattern := NAME ('(' DIM ')')* (SIZE | BOUNDARY)* ['(' (fun | indexfun) (',' ...)* [',' literal] ')']

Every pattern's static parameters are read from its declared signature (`Pattern.signature()`),
so the parser, like the printer, needs no per-pattern code. Compositions become lambdas built as
`nodes.compose` builds them (left to right, as `f << g << h`), so the printer eta-reduces them
to the same text again; applied compositions go through `nodes.apply`, as in the DSL.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from liftkit.arith import ArithError, ArithExpr, Var, cst, index_var, parse_arith, size_var
from liftkit.ir.lexer import (
    COMPOSE,
    LAMBDA,
    ParseError,
    Token,
    group_end,
    matching,
    suggest,
    tokenize,
)
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun
from liftkit.ir.nodes import apply as beta_apply
from liftkit.ir.patterns import PATTERNS_BY_NAME, Boundary, IndexFun, Kind, Pattern
from liftkit.ir.userfuns import id_of, standard_user_funs
from liftkit.types import (
    SCALARS,
    ArrayType,
    LiftTypeError,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    bool_,
    float32,
    float64,
    int32,
    int64,
)

__all__ = ["ParseError", "parse", "parse_program", "parse_type"]

_VECTOR_NAME = re.compile(r"(bool|int|long|float|double)(\d+)$")
_SCALAR_WORDS = {"true", "false", "inf", "inff", "nan", "nanf"}
_COMPLEX_WORDS = {"cfloat", "cdouble"}
_BOUNDARIES = ("clamp", "wrap", "mirror", "constant")


@dataclass(frozen=True)
class _InlineInit:
    """`reduceSeq(add, 0.0f)` as read: applied to xs it is `reduceSeq(add)(0.0f, xs)`, used as a
    function it becomes `λxs. reduceSeq(add)(0.0f, xs)` (as the DSL's `_with_init` builds it)."""

    pattern: Pattern
    init: Literal


@dataclass(frozen=True)
class _Group:
    """A parenthesised function `(f ∘ g)`, `(split 128)` or `(λa. f(a))`: what follows decides
    whether it is applied, composed, or (a lone lambda) an eta-expansion."""

    terms: tuple["_Term", ...]


_Term = Union[FunDecl, _InlineInit, _Group]


@functools.cache
def _standard() -> Mapping[str, UserFun]:
    return dict(standard_user_funs())


class _WithIdentities(Mapping[str, UserFun]):
    """The caller's user functions plus the copying identities `id_float4`, `id_double2`, ...
    that the rules make on demand (`userfuns.id_of`): a derived program's text names them."""

    def __init__(self, funs: Mapping[str, UserFun]) -> None:
        self.funs = funs

    def _identity(self, name: str) -> Optional[UserFun]:
        if not name.startswith("id_"):
            return None
        try:
            t = parse_type(name[3:])
        except ParseError:
            return None
        return id_of(t) if isinstance(t, (ScalarType, VectorType)) else None

    def __getitem__(self, name: str) -> UserFun:
        if name in self.funs:
            return self.funs[name]
        f = self._identity(name)
        if f is None:
            raise KeyError(name)
        return f

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.funs or self._identity(name) is not None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.funs)

    def __len__(self) -> int:
        return len(self.funs)


class _Parser:
    """Recursive descent over the token list; one instance per parse (it holds the size variables
    and the lexical scopes of parameters)."""

    def __init__(self, text: str, user_funs: Optional[Mapping[str, UserFun]], free: bool) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.user_funs: Mapping[str, UserFun] = _WithIdentities(
            _standard() if user_funs is None else user_funs)
        self.sizes: dict[str, Var] = {}
        self.scopes: list[dict[str, Param]] = []
        self.free: Optional[dict[str, Param]] = {} if free else None
        self.synth = _synthetic_name({t.text for t in self.toks if t.kind == "name"})

    # -- token helpers -----------------------------------------------------------------------
    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind in ("sym", "name") and t.text == text

    def next(self) -> Token:
        t = self.peek()
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            t = self.peek()
            raise self.error(f"expected {text!r}{' ' + what if what else ''}, found {t}", t)
        return self.next()

    def error(self, message: str, tok: Optional[Token] = None) -> ParseError:
        return ParseError(message, self.text, (tok or self.peek()).pos)

    def name(self, what: str) -> Token:
        t = self.peek()
        if t.kind != "name":
            raise self.error(f"expected {what}, found {t}", t)
        return self.next()

    # -- top level ---------------------------------------------------------------------------
    def top(self, program: bool) -> Node:
        if self.at(LAMBDA):
            node: Node = self.lambda_(require_types=program)
        elif program:
            raise self.error("a program starts with λ(x: type, ...). body")
        else:
            node = self.expr(allow_fun=True)
        if self.peek().kind != "eof":
            raise self.error(f"unexpected {self.peek()} after the end of the expression")
        return node

    def lambda_(self, require_types: bool = False) -> Lambda:
        self.expect(LAMBDA)
        params: list[Param] = []
        if self.at("("):
            self.next()
            while True:
                params.append(self.param(require_types))
                if not self.at(","):
                    break
                self.next()
            self.expect(")", "to close the parameter list")
        else:
            params.append(self.param(require_types))
        self.expect(".", "after the lambda's parameters")
        scope: dict[str, Param] = {}
        for p in params:
            if p.name in scope:
                raise self.error(f"parameter {p.name!r} is declared twice")
            scope[p.name] = p
        self.scopes.append(scope)
        try:
            body = self.expr()
        finally:
            self.scopes.pop()
        return Lambda(tuple(params), body)

    def param(self, require_type: bool) -> Param:
        tok = self.name("a parameter name")
        t: Optional[Type] = None
        if self.at(":"):
            self.next()
            t = self.type_()
        elif require_type:
            raise self.error(f"program parameter {tok.text!r} needs a type, e.g. "
                             f"λ({tok.text}: [float]_N). ...", tok)
        return Param(tok.text, t)

    def lookup(self, name: str) -> Optional[Param]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # -- expressions -------------------------------------------------------------------------
    def expr(self, allow_fun: bool = False) -> Any:
        """A value; with `allow_fun`, a function is accepted too (top-level `show` of a FunDecl)."""
        t = self.peek()
        if self.starts_literal(self.i):
            return self.literal()
        if t.kind == "sym" and t.text == LAMBDA:
            if allow_fun:
                return self.lambda_()
            raise self.error("a lambda is not a value: apply it, as in (λx. ...)(arg)", t)
        if t.kind == "name":
            applied = self.at("(", 1) or self.at(COMPOSE, 1)
            p = self.lookup(t.text)
            if p is not None and not applied:
                self.next()
                return p
            if t.text not in PATTERNS_BY_NAME and t.text not in self.user_funs and not applied:
                if self.free is not None:
                    self.next()
                    return self.free.setdefault(t.text, Param(t.text))
                hint = suggest(t.text, {n for s in self.scopes for n in s})
                raise self.error(f"unknown name {t.text!r}"
                                 + (f" (did you mean {hint}?)" if hint else ""), t)
        return self.application(allow_fun)

    def application(self, allow_fun: bool) -> Any:
        start = self.peek()
        chain = self.chain()
        if self.at("("):
            return self.apply_chain(chain, self.args())
        if allow_fun:
            return self.to_fun(chain)
        raise self.error(f"the function starting at {start} needs its arguments here, "
                         f"as in f(x)")

    def args(self) -> tuple[Expr, ...]:
        self.expect("(")
        out: list[Expr] = []
        if not self.at(")"):
            while True:
                out.append(self.expr())
                if not self.at(","):
                    break
                self.next()
        self.expect(")", "to close the argument list")
        return tuple(out)

    def apply_chain(self, chain: Sequence[_Term], args: tuple[Expr, ...]) -> Expr:
        """`(f ∘ g ∘ h)(x)` (or the older spelling `f ∘ g ∘ h(x)`) is read as the DSL's
        `f << g << h << x`: `nodes.apply` of the composition. The printer writes the flat call
        f(g(h(x))) the same way; the DSL's form makes DSL-built programs read back alpha-equal."""
        while len(chain) == 1 and isinstance(chain[0], _Group):
            chain = chain[0].terms
        if len(chain) == 1:
            return self.apply(chain[0], args)
        return beta_apply(self.to_fun(chain), args)

    def apply(self, term: _Term, args: tuple[Expr, ...]) -> Expr:
        if isinstance(term, _Group):
            return self.apply_chain(term.terms, args)
        if isinstance(term, _InlineInit):
            if len(args) == 1:  # nodes.apply's beta-reduction of λxs. reduce(f)(z, xs)
                return FunCall(term.pattern, (term.init, args[0]))
            return FunCall(self.term_fun(term), args)
        if isinstance(term, Pattern):
            counts = {n: len(args) for n, k in term.signature() if k is Kind.COUNT}
            if counts:  # zip/tuple: the arity is the number of arguments
                term = dataclasses.replace(term, **counts)
        return FunCall(term, args)  # an explicit lambda stays applied: (λa. f(a))(x)

    # -- functions ---------------------------------------------------------------------------
    def fun(self) -> list[_Term]:
        if self.at(LAMBDA):
            return [self.lambda_()]
        return self.chain()

    def chain(self) -> list[_Term]:
        terms = [self.term()]
        while self.at(COMPOSE):
            self.next()
            terms.append(self.term())
        return terms

    def term(self) -> _Term:
        t = self.peek()
        if self.at("("):
            self.next()
            terms = self.fun()
            self.expect(")", "to close the parenthesised function")
            return _Group(tuple(terms))
        if t.kind == "sym" and t.text == LAMBDA:
            raise self.error("a lambda inside a composition must be parenthesised: (λx. ...)", t)
        if t.kind != "name":
            raise self.error(f"expected a function, found {t}", t)
        if t.text in PATTERNS_BY_NAME:
            return self.pattern()
        if t.text in self.user_funs:
            self.next()
            return self.user_funs[t.text]
        if self.lookup(t.text) is not None:
            raise self.error(f"{t.text!r} is a parameter, not a function", t)
        hint = suggest(t.text, set(PATTERNS_BY_NAME) | set(self.user_funs))
        raise self.error(f"unknown function {t.text!r}" + (f" (did you mean {hint}?)" if hint else ""), t)

    def to_fun(self, terms: Sequence[_Term]) -> FunDecl:
        """A chain as one FunDecl: f ∘ g ∘ h is compose(compose(f, g), h), as `f << g << h`.

        A lone parenthesised lambda, `map((λa. f(a)))`, is how the printer writes the
        eta-expansion λp. (λa. f(a))(p), so that is what it reads as."""
        if (len(terms) == 1 and isinstance(terms[0], _Group) and len(terms[0].terms) == 1
                and isinstance(terms[0].terms[0], Lambda)):
            lam = terms[0].terms[0]
            params = tuple(Param(self.synth) for _ in range(lam.arity))
            return Lambda(params, FunCall(lam, params))
        out = self.term_fun(terms[0])
        for t in terms[1:]:
            out = self.compose(out, self.term_fun(t))
        return out

    def term_fun(self, t: _Term) -> FunDecl:
        if isinstance(t, _Group):
            return self.to_fun(t.terms)
        if isinstance(t, _InlineInit):
            xs = Param(self.synth)
            return Lambda((xs,), FunCall(t.pattern, (t.init, xs)))
        return t

    def compose(self, f: FunDecl, g: FunDecl) -> Lambda:
        """`nodes.compose`, with parameter names that cannot take a printed name (they are
        eta-reduced away, but the printer's name allocation still sees them)."""
        params = tuple(Param(self.synth) for _ in range(g.arity))
        return Lambda(params, beta_apply(f, [beta_apply(g, params)]))

    # -- patterns ----------------------------------------------------------------------------
    def pattern(self) -> Union[Pattern, _InlineInit]:
        tok = self.next()
        cls = PATTERNS_BY_NAME[tok.text]
        sig = cls.signature()
        kw: dict[str, Any] = {}
        for n, k in sig:
            if k is Kind.DIM:
                kw[n] = self.dim(cls.name)
        for n, k in sig:
            if k is Kind.SIZE:
                kw[n] = self.size(f"a size for {cls.name}")
            elif k is Kind.BOUNDARY:
                kw[n] = self.boundary()
        grouped = [(n, k) for n, k in sig if k in (Kind.FUN, Kind.INDEX)]
        init: Optional[Literal] = None
        if grouped:
            self.expect("(", f"and the function argument of {cls.name}")
            for j, (n, k) in enumerate(grouped):
                if j:
                    self.expect(",", f"before the next function argument of {cls.name}")
                kw[n] = self.index_fun() if k is Kind.INDEX else self.to_fun(self.fun())
            if cls.inline_init and self.at(","):
                self.next()
                init = self.literal()
            self.expect(")", f"to close the arguments of {cls.name}")
        try:
            p = cls(**kw)
        except (LiftTypeError, TypeError, ValueError) as err:
            raise self.error(f"{cls.name}: {err}", tok) from None
        return p if init is None else _InlineInit(p, init)

    def dim(self, name: str) -> int:
        self.expect("(", f"and the dimension of {name}, as in {name}(0)")
        t = self.peek()
        if t.kind != "num" or not t.text.isdigit():
            raise self.error(f"{name}: the dimension must be 0, 1 or 2, found {t}", t)
        self.next()
        self.expect(")", f"after the dimension of {name}")
        return int(t.text)

    def size(self, what: str) -> ArithExpr:
        t = self.peek()
        if t.kind == "num":
            if not t.text.isdigit():
                raise self.error(f"{what} must be an integer, found {t}", t)
            self.next()
            return cst(int(t.text))
        if t.kind == "name":
            self.next()
            return self.sizes.setdefault(t.text, size_var(t.text))
        if self.at("("):
            j = matching(self.toks, self.i)
            src = self.text[t.pos:self.toks[j].end]
            self.i = j + 1
            return self.arith(src, t.pos, {})
        raise self.error(f"expected {what} (a number, a name or a parenthesised expression), "
                         f"found {t}", t)

    def arith(self, src: str, offset: int, bound: Mapping[str, Var]) -> ArithExpr:
        try:
            e = parse_arith(src, {**self.sizes, **bound})
        except ArithError as err:
            raise ParseError(f"bad arithmetic expression {src.strip()!r}: {err}", self.text,
                             offset) from None
        for v in e.free_vars():
            if v.name not in bound:
                self.sizes.setdefault(v.name, v)
        return e

    def boundary(self) -> Boundary:
        t = self.peek()
        if t.kind != "name" or t.text not in _BOUNDARIES:
            raise self.error(f"expected a pad boundary (clamp, wrap, mirror or constant(v)), "
                             f"found {t}", t)
        self.next()
        if t.text != "constant":
            return Boundary(t.text)
        self.expect("(", "and the constant, as in constant(0.0f)")
        v = self.literal()
        self.expect(")", "after the boundary constant")
        return Boundary("constant", v)

    def index_fun(self) -> IndexFun:
        self.expect(LAMBDA, "of an index function, as in λ(i, n). n - 1 - i")
        self.expect("(")
        i = self.name("the index name").text
        self.expect(",")
        n = self.name("the length name").text
        self.expect(")")
        self.expect(".")
        start = self.i
        end = group_end(self.toks, start)
        if end == start:
            raise self.error("the index function has no body")
        src = self.text[self.toks[start].pos:self.toks[end - 1].end]
        nv = size_var(n)
        iv = index_var(i, nv)
        body = self.arith(src, self.toks[start].pos, {i: iv, n: nv})
        self.i = end
        return IndexFun(iv, nv, body)

    # -- literals ----------------------------------------------------------------------------
    def starts_literal(self, k: int) -> bool:
        """Whether a literal starts at token k: `(` starts one only when a literal follows it
        (else it opens a parenthesised function)."""
        t = self.toks[k]
        if t.kind == "num" or (t.kind == "sym" and t.text in "-["):
            return True
        if t.kind == "sym" and t.text == "(":
            return self.starts_literal(k + 1)
        if t.kind == "name" and self.lookup(t.text) is None:
            if t.text in _SCALAR_WORDS:
                return True
            nxt = self.toks[min(k + 1, len(self.toks) - 1)]
            return ((bool(_VECTOR_NAME.match(t.text)) or t.text in _COMPLEX_WORDS)
                    and nxt.text == "(" and t.text not in self.user_funs)
        return False

    def literal(self) -> Literal:
        t = self.peek()
        if self.at("("):
            self.next()
            elems = [self.literal()]
            while self.at(","):
                self.next()
                elems.append(self.literal())
            self.expect(")", "to close the tuple literal")
            if len(elems) < 2:
                raise self.error("a tuple literal needs at least two components", t)
            return Literal(tuple(e.value for e in elems), TupleType(tuple(e.type for e in elems)))
        if self.at("["):
            return self.array_literal()
        if t.kind == "name" and t.text in _COMPLEX_WORDS and self.at("(", 1):
            return self.complex_literal()
        if t.kind == "name" and _VECTOR_NAME.match(t.text) and self.at("(", 1):
            vt = self.vector_type(t)
            self.next()
            self.expect("(")
            lanes = [self.scalar()]
            while self.at(","):
                self.next()
                lanes.append(self.scalar())
            self.expect(")", "to close the vector literal")
            if any(x.type != vt.elem for x in lanes) or len(lanes) != vt.width:
                raise self.error(f"a {vt} literal needs {vt.width} {vt.elem} lanes", t)
            return Literal(tuple(x.value for x in lanes), vt)
        return self.scalar()

    def complex_literal(self) -> Literal:
        """`cfloat(1.0f, -2.0f)`: the real and imaginary parts, numbers of any real type."""
        t = self.next()
        ct = SCALARS[t.text]
        self.expect("(")
        parts = [self.scalar()]
        while self.at(","):
            self.next()
            parts.append(self.scalar())
        self.expect(")", "to close the complex literal")
        if len(parts) != 2 or any(p.type == bool_ or not isinstance(p.type, ScalarType)
                                  or p.type.is_complex for p in parts):
            raise self.error(f"a {ct} literal is {ct}(re, im): two real numbers", t)
        return Literal(complex(float(parts[0].value), float(parts[1].value)), ct)

    def array_literal(self) -> Literal:
        t = self.expect("[")
        if self.at("]"):
            raise self.error("an empty array literal has no element type", t)
        elems = [self.literal()]
        if self.at(";"):  # `[v; n]`: n copies of v
            self.next()
            n = self.next()
            if n.kind != "num" or not n.text.isdigit() or int(n.text) < 1:
                raise self.error(f"`[v; n]` repeats v n times: n must be a positive integer, "
                                 f"not {n}", n)
            elems = elems * int(n.text)
        else:
            while self.at(","):
                self.next()
                elems.append(self.literal())
        self.expect("]", "to close the array literal")
        et = elems[0].type
        if any(e.type != et for e in elems):
            raise self.error("the elements of an array literal must all have one type", t)
        if isinstance(et, TupleType):
            value: Any = tuple(e.value for e in elems)
        else:
            value = np.array([e.value for e in elems], dtype=_scalar_dtype(et))
        return Literal(value, ArrayType(et, cst(len(elems))))

    def scalar(self) -> Literal:
        start = self.peek()
        neg = self.at("-")
        if neg:
            self.next()
        t = self.next()
        s = t.text
        if t.kind == "num":
            if s.endswith("L"):
                if "." in s or "e" in s.lower():
                    raise self.error(f"bad literal {s!r}: a long has no fraction", t)
                return Literal(int(s[:-1]) * (-1 if neg else 1), int64)
            if s.endswith("f"):
                return Literal(float(("-" if neg else "") + s[:-1]), float32)
            if "." in s or "e" in s.lower():
                return Literal(float(("-" if neg else "") + s), float64)
            return Literal(int(s) * (-1 if neg else 1), int32)
        if t.kind == "name" and s in ("inf", "inff", "nan", "nanf"):
            v = float(("-" if neg else "") + s[:3])
            return Literal(v, float32 if s.endswith("f") else float64)
        if t.kind == "name" and s in ("true", "false") and not neg:
            return Literal(s == "true", bool_)
        raise self.error(f"bad literal: expected a number, true/false, inf or nan, found {t}",
                         start if neg else t)

    # -- types -------------------------------------------------------------------------------
    def type_(self) -> Type:
        t = self.peek()
        if self.at("("):
            self.next()
            elems = [self.type_()]
            while self.at(","):
                self.next()
                elems.append(self.type_())
            self.expect(")", "to close the tuple type")
            if len(elems) < 2:
                raise self.error("a tuple type needs at least two components", t)
            return TupleType(tuple(elems))
        if self.at("["):
            self.next()
            elem = self.type_()
            self.expect("]", "to close the array type")
            u = self.peek()
            if u.kind == "name" and u.text.startswith("_") and len(u.text) > 1:
                self.next()  # `] _N` written with a space: the name is N
                return ArrayType(elem, self.sizes.setdefault(u.text[1:], size_var(u.text[1:])))
            self.expect("_", "and the array length, as in [float]_N")
            return ArrayType(elem, self.size("an array length"))
        if t.kind == "name":
            if t.text in SCALARS:
                self.next()
                return SCALARS[t.text]
            if _VECTOR_NAME.match(t.text):
                vt = self.vector_type(t)
                self.next()
                return vt
            hint = suggest(t.text, set(SCALARS) | {"float4", "int4"})
            raise self.error(f"unknown type {t.text!r}" + (f" (did you mean {hint}?)" if hint else ""), t)
        raise self.error(f"expected a type, found {t}", t)

    def vector_type(self, t: Token) -> VectorType:
        m = _VECTOR_NAME.match(t.text)
        assert m is not None
        try:
            return VectorType(SCALARS[m.group(1)], int(m.group(2)))
        except LiftTypeError as err:
            raise self.error(str(err), t) from None


def _scalar_dtype(t: Type) -> Optional[np.dtype]:
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType):
        return t.elem.dtype
    return t.dtype if isinstance(t, ScalarType) else None


def _synthetic_name(names: set[str]) -> str:
    """A parameter name for compositions and inline inits that no printed name can clash with:
    the printer numbers clashing names `p`, `p_1`, ..., so avoid every name of that family."""
    k = 0
    while True:
        base = "p" if k == 0 else f"p{k}"
        fam = re.compile(re.escape(base) + r"(_\d+)?$")
        if not any(fam.match(n) for n in names):
            return base
        k += 1


# ---------------------------------------------------------------------------------------------
# entry points


def parse(text: str, user_funs: Optional[Mapping[str, UserFun]] = None, *,
          free: bool = False) -> Node:
    """Read a program, expression or function printed by `show` or `pretty`.

    `user_funs` maps names to user functions (default: `standard_user_funs()`; pass a merged
    dict to add your own). With `free=True` unbound names in value position become free
    parameters (for printed sub-expressions); otherwise they are errors.
    """
    return _Parser(text, user_funs, free).top(program=False)


def parse_program(text: str, user_funs: Optional[Mapping[str, UserFun]] = None) -> Lambda:
    """Read a whole program: `λ(x: type, ...). body`, every parameter typed."""
    node = _Parser(text, user_funs, False).top(program=True)
    assert isinstance(node, Lambda)
    return node


def parse_type(text: str) -> Type:
    """Read a type as printed: `float`, `float4`, `(float, int)`, `[[float]_M]_(N/4)`."""
    p = _Parser(text, None, False)
    t = p.type_()
    if p.peek().kind != "eof":
        raise p.error(f"unexpected {p.peek()} after the type")
    return t
