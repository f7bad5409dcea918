"""Tokens of the printed Lift notation (see `liftkit.ir.printer`), for `liftkit.ir.parser`.

Kept separate from the parser so that positions (line, column) and the checks that need only
the characters (bad numeric literals, unbalanced brackets) are reported before any parsing, with
a caret under the offending character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from liftkit.types import LiftTypeError

LAMBDA = "λ"
COMPOSE = "∘"


class ParseError(LiftTypeError):
    """Text that is not a Lift program. `str(err)` is `line L, col C: message`; `caret()` shows
    the source line with a caret under the column (both 1-based, columns in characters)."""

    def __init__(self, message: str, text: str = "", offset: int = 0) -> None:
        self.message = message
        self.text = text
        self.offset = max(0, min(offset, len(text)))
        self.line, self.col = line_col(text, self.offset)
        super().__init__(f"line {self.line}, col {self.col}: {message}")

    def caret(self) -> str:
        """The source line and a `^` under the error column."""
        src = self.text.splitlines()[self.line - 1] if self.text.strip() else ""
        return f"{src}\n{' ' * (self.col - 1)}^"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


@dataclass(frozen=True)
class Token:
    kind: str  # "name", "num", "sym" (one character or λ / ∘), "eof"
    text: str
    pos: int  # character offset of the first character
    end: int  # offset just past the last character

    def __str__(self) -> str:
        return "end of input" if self.kind == "eof" else repr(self.text)


# a name is a Python identifier that does not contain λ (λ is a letter to Python)
_NAME = re.compile(r"(?:(?!λ)[^\W\d])(?:(?!λ)\w)*")
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fL]?")
_WORDCHAR = re.compile(r"\w")
_OPEN = {"(": ")", "[": "]"}
_CLOSE = {")": "(", "]": "["}


def tokenize(text: str) -> list[Token]:
    """Split `text` into tokens; whitespace (including newlines from `pretty`) only separates.

    `]_` (an array type's length marker) yields `]` and `_` so that `[float]_N` is not read as
    the name `_N`. Numbers followed directly by letters (`0.0x`, `3l`) are rejected here.
    """
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "_" and toks and toks[-1].text == "]" and toks[-1].end == i:
            toks.append(Token("sym", "_", i, i + 1))
            i += 1
            continue
        if ch.isdigit():
            m = _NUMBER.match(text, i)
            assert m is not None
            j = m.end()
            if j < n and _WORDCHAR.match(text[j]):
                k = j
                while k < n and (_WORDCHAR.match(text[k]) or text[k] == "."):
                    k += 1
                raise ParseError(f"bad literal {text[i:k]!r}", text, i)
            toks.append(Token("num", text[i:j], i, j))
            i = j
            continue
        m = _NAME.match(text, i)
        if m is not None:
            toks.append(Token("name", m.group(), i, m.end()))
            i = m.end()
            continue
        toks.append(Token("sym", ch, i, i + 1))
        i += 1
    toks.append(Token("eof", "", n, n))
    check_brackets(text, toks)
    return toks


def check_brackets(text: str, toks: list[Token]) -> None:
    """Report the first unmatched `)`/`]`, or the innermost `(`/`[` that is never closed."""
    stack: list[Token] = []
    for t in toks:
        if t.kind != "sym":
            continue
        if t.text in _OPEN:
            stack.append(t)
        elif t.text in _CLOSE:
            if not stack:
                raise ParseError(f"unbalanced parenthesis: {t.text!r} closes nothing", text, t.pos)
            if stack[-1].text != _CLOSE[t.text]:
                o = stack[-1]
                raise ParseError(f"unbalanced parenthesis: {t.text!r} does not match {o.text!r} "
                                 f"at col {line_col(text, o.pos)[1]}", text, t.pos)
            stack.pop()
    if stack:
        o = stack[-1]
        raise ParseError(f"unbalanced parenthesis: {o.text!r} is never closed", text, o.pos)


def matching(toks: list[Token], i: int) -> int:
    """Index of the token closing the bracket at `toks[i]` (brackets are known to balance)."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text if toks[j].kind == "sym" else ""
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1  # pragma: no cover - check_brackets rules this out


def group_end(toks: list[Token], i: int) -> int:
    """Index of the first `,` or closing bracket at depth 0 from `toks[i]` on (an arith body's end)."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text if toks[j].kind == "sym" else ""
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            if depth == 0:
                return j
            depth -= 1
        elif t == "," and depth == 0:
            return j
        elif toks[j].kind == "eof":
            return j
    return len(toks) - 1


def suggest(name: str, candidates: "list[str] | set[str]") -> Optional[str]:
    """The closest known name, for 'did you mean' hints."""
    import difflib

    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return close[0] if close else None
