"""A minimal C statement tree, so that generation decides structure and printing decides
layout. Expressions stay strings: the index simplifier has already made them short."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union


@dataclass
class Line:
    text: str


@dataclass
class Block:
    stmts: list["Stmt"] = field(default_factory=list)

    def add(self, s: "Stmt") -> "Stmt":
        self.stmts.append(s)
        return s


@dataclass
class For:
    var: str
    start: str
    cond: str
    step: str
    body: Block


@dataclass
class If:
    cond: str
    body: Block


@dataclass
class Barrier:
    """A work-group barrier with its memory fences (kept as a statement so that barrier
    elimination can merge adjacent ones)."""

    fences: frozenset[str]  # OpenCL's names (CLK_LOCAL_MEM_FENCE, ...); the dialect spells them


@dataclass
class Deferred:
    """A line whose text is known only at the end (e.g. a private array that turned into
    scalars because every access used a constant index)."""

    render: Callable[[], str]


Stmt = Union[Line, Block, For, If, Deferred, Barrier]


def render(stmts: list[Stmt], barrier: Callable[[frozenset[str]], str], indent: int = 1,
           fix: Callable[[str], str] = lambda s: s) -> list[str]:
    """Print statements; `barrier` spells a barrier in the kernel's dialect, `fix` post-processes
    each line (resolving deferred memory accesses)."""
    pad = "  " * indent
    out: list[str] = []
    for s in stmts:
        if isinstance(s, Line):
            out.append(pad + fix(s.text))
        elif isinstance(s, Barrier):
            out.append(pad + barrier(s.fences))
        elif isinstance(s, Deferred):
            text = s.render()
            if text:
                out.append(pad + fix(text))
        elif isinstance(s, Block):
            if s.stmts:
                out.append(pad + "{")
                out += render(s.stmts, barrier, indent + 1, fix)
                out.append(pad + "}")
        elif isinstance(s, For):
            out.append(f"{pad}for (int {s.var} = {fix(s.start)}; {fix(s.cond)}; {fix(s.step)}) {{")
            out += render(s.body.stmts, barrier, indent + 1, fix)
            out.append(pad + "}")
        elif isinstance(s, If):
            out.append(f"{pad}if ({fix(s.cond)}) {{")
            out += render(s.body.stmts, barrier, indent + 1, fix)
            out.append(pad + "}")
    return out
