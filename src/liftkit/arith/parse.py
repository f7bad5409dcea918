"""Parser for the textual form printed by ``str`` (and by ``to_c``).

Grammar (C precedence, unary minus binds tighter than ``*``)::

    expr    := term (('+' | '-') term)*
    term    := unary (('*' | '/' | '%') unary)*
    unary   := '-' unary | '+' unary | primary
    primary := INT | NAME | NAME '(' expr ',' expr ')'
             | '(' expr [CMP expr] ['?' expr ':' expr] ')' | '(' expr ('^' expr)+ ')'

``pow``/``lift_pow``, ``log``/``lift_log``, ``min`` and ``max`` are the
functions; ``(a < b ? x : y)`` and ``((a < b) ? x : y)`` are conditionals;
``(a ^ b)`` is a bitwise xor (always printed in parentheses).
The result is built through the smart constructors, i.e. simplified.
"""

from __future__ import annotations

import re
from typing import Mapping

from . import simplify as S
from .errors import ArithError
from .nodes import ArithExpr, Cond, Var

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(<=|>=|==|!=|[-+*/%(),?:<>^]))")
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_FUNCS = {
    "pow": S.pow_,
    "lift_pow": S.pow_,
    "log": S.log,
    "lift_log": S.log,
    "min": S.min_,
    "max": S.max_,
}


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    toks: list[tuple[str, str, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ArithError(f"cannot parse {text!r}: unexpected character at position {pos}")
        kind = "int" if m.group(1) else "name" if m.group(2) else "op"
        toks.append((kind, m.group(m.lastindex or 0), m.start(m.lastindex or 0)))
        pos = m.end()
    return toks


class _Parser:
    def __init__(self, text: str, variables: Mapping[str, Var]) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.vars = variables

    # -- helpers -------------------------------------------------------------
    def _peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def _fail(self, what: str) -> ArithError:
        where = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        return ArithError(f"cannot parse {self.text!r}: {what} at position {where}")

    def _expect(self, tok: str) -> None:
        if self._peek() != tok:
            raise self._fail(f"expected {tok!r}")
        self.i += 1

    def _arith(self, x: object) -> ArithExpr:
        if isinstance(x, Cond):
            raise self._fail("comparison used as a number")
        return x  # type: ignore[return-value]

    # -- grammar -------------------------------------------------------------
    def parse(self) -> ArithExpr:
        if not self.toks:
            raise ArithError("cannot parse an empty expression")
        e = self._arith(self.expr())
        if self.i != len(self.toks):
            raise self._fail("unexpected token")
        return e

    def expr(self) -> ArithExpr | Cond:
        left = self.term()
        while self._peek() in ("+", "-"):
            op = self.toks[self.i][1]
            self.i += 1
            right = self._arith(self.term())
            left = S.add(self._arith(left), right) if op == "+" else S.sub(self._arith(left), right)
        return left

    def term(self) -> ArithExpr | Cond:
        left = self.unary()
        while self._peek() in ("*", "/", "%"):
            op = self.toks[self.i][1]
            self.i += 1
            a, b = self._arith(left), self._arith(self.unary())
            left = S.mul(a, b) if op == "*" else S.intdiv(a, b) if op == "/" else S.mod(a, b)
        return left

    def unary(self) -> ArithExpr | Cond:
        tok = self._peek()
        if tok == "-":
            self.i += 1
            return S.neg(self._arith(self.unary()))
        if tok == "+":
            self.i += 1
            return self._arith(self.unary())
        return self.primary()

    def primary(self) -> ArithExpr | Cond:
        if self.i >= len(self.toks):
            raise self._fail("unexpected end")
        kind, tok, _ = self.toks[self.i]
        self.i += 1
        if kind == "int":
            return S.cst(int(tok))
        if kind == "name":
            if self._peek() == "(":
                fn = _FUNCS.get(tok)
                if fn is None:
                    self.i -= 1
                    raise self._fail(f"unknown function {tok!r}")
                self.i += 1
                a = self._arith(self.expr())
                self._expect(",")
                b = self._arith(self.expr())
                self._expect(")")
                return fn(a, b)
            v = self.vars.get(tok)
            return v if v is not None else Var(tok, 1, None)
        if tok != "(":
            self.i -= 1
            raise self._fail(f"unexpected {tok!r}")
        inner = self.expr()
        if self._peek() == "^":
            while self._peek() == "^":
                self.i += 1
                inner = S.xor(self._arith(inner), self._arith(self.expr()))
            self._expect(")")
            return inner
        if self._peek() in _CMP:
            op = self.toks[self.i][1]
            self.i += 1
            inner = S._cmp(op, self._arith(inner), self._arith(self.expr()))
        if self._peek() == "?":
            if not isinstance(inner, Cond):
                raise self._fail("'?' needs a comparison")
            self.i += 1
            a = self._arith(self.expr())
            self._expect(":")
            b = self._arith(self.expr())
            self._expect(")")
            return S.if_then_else(inner, a, b)
        self._expect(")")
        return inner


def parse_arith(text: str, variables: Mapping[str, Var] | None = None) -> ArithExpr:
    """Parse the ``str``/``to_c`` form of an expression.  Unknown identifiers
    become size variables (range [1, inf)) unless given in ``variables``."""
    return _Parser(text, variables or {}).parse()
