"""VRIR nodes (seed 003 ch. 4): an immutable, typed, procedural AST.

Every expression carries its type; statements carry the source line they came from so run-time
errors (out-of-bounds indexing) name the user's line. Names refer to entries of the function's
symbol table. Library operators (``LibCall``) cover array allocation, element-wise math,
reductions and ``dot``; ``ParFor`` is the parallel loop over a domain with shared variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .types import BOOL, INT64, DomainType, ScalarType, TupleType, Type


# ----------------------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Const:
    """A scalar constant."""
    value: Union[bool, int, float, complex]
    type: ScalarType


@dataclass(frozen=True)
class Name:
    """A use of a symbol of the enclosing function."""
    name: str
    type: Type


@dataclass(frozen=True)
class BinOp:
    """Arithmetic: add sub mul div floordiv mod pow bitand bitor bitxor lshift rshift.
    Scalar when ``type`` is scalar, element-wise with broadcasting when it is an array."""
    op: str
    left: "Expr"
    right: "Expr"
    type: Type


@dataclass(frozen=True)
class UnOp:
    """neg, not, invert (element-wise on arrays)."""
    op: str
    operand: "Expr"
    type: Type


@dataclass(frozen=True)
class Compare:
    """lt le gt ge eq ne (element-wise on arrays, giving bool arrays)."""
    op: str
    left: "Expr"
    right: "Expr"
    type: Type


@dataclass(frozen=True)
class Logical:
    """Short-circuit ``and``/``or`` on booleans."""
    op: str
    left: "Expr"
    right: "Expr"
    type: Type = BOOL


@dataclass(frozen=True)
class Cast:
    """Conversion of a scalar (or element-wise of an array) to ``type``."""
    operand: "Expr"
    type: Type


@dataclass(frozen=True)
class Select:
    """``a if cond else b`` on scalars."""
    cond: "Expr"
    a: "Expr"
    b: "Expr"
    type: Type


@dataclass(frozen=True)
class Check:
    """The three per-dimension checks of an index (§5.6): wrap negatives, lower, upper bound."""
    negative: bool = True
    lower: bool = True
    upper: bool = True


NO_CHECK = Check(False, False, False)
FULL_CHECK = Check(True, True, True)


@dataclass(frozen=True)
class Slice:
    """``start:stop:step`` in one dimension; None parts take Python's defaults."""
    start: "Expr | None"
    stop: "Expr | None"
    step: "Expr | None"


@dataclass(frozen=True)
class Index:
    """``array[i, j:k, ...]``: an element when all indices are scalars, else a view."""
    array: "Expr"
    indices: tuple["Expr | Slice", ...]
    checks: tuple[Check, ...]
    type: Type


@dataclass(frozen=True)
class Dim:
    """``array.shape[axis]`` (int64)."""
    array: "Expr"
    axis: int
    type: Type = INT64


@dataclass(frozen=True)
class LibCall:
    """A library operator: zeros ones empty arange copy full, sqrt exp log sin cos abs floor
    ceil minimum maximum where, sum min max (``axis`` attribute, -1 for all), dot."""
    fn: str
    args: tuple["Expr", ...]
    axis: int
    type: Type


@dataclass(frozen=True)
class Call:
    """A call of another function of the module (inlined by the inlining pass)."""
    fn: str
    args: tuple["Expr", ...]
    type: Type


@dataclass(frozen=True)
class TupleExpr:
    items: tuple["Expr", ...]
    type: TupleType


@dataclass(frozen=True)
class TupleGet:
    """Constant-index access to a tuple."""
    tuple: "Expr"
    index: int
    type: Type


@dataclass(frozen=True)
class DomainExpr:
    """An n-dimensional domain: (start, stop, step) per dimension."""
    starts: tuple["Expr", ...]
    stops: tuple["Expr", ...]
    steps: tuple["Expr", ...]
    type: DomainType


Expr = Union[Const, Name, BinOp, UnOp, Compare, Logical, Cast, Select, Index, Dim, LibCall,
             Call, TupleExpr, TupleGet, DomainExpr]


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Assign:
    """``target = value``; target is a Name or an Index (element or slice store)."""
    target: "Name | Index"
    value: Expr
    line: int


@dataclass(frozen=True)
class ExprStmt:
    value: Expr
    line: int


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...]
    line: int


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)``: bounds evaluated once, before the loop."""
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple["Stmt", ...]
    line: int


@dataclass(frozen=True)
class ParFor:
    """A parallel loop over a domain; iterations are independent. ``shared`` arrays are
    written through by all iterations, other variables are private to an iteration."""
    vars: tuple[str, ...]
    domain: DomainExpr
    shared: tuple[str, ...]
    body: tuple["Stmt", ...]
    line: int


@dataclass(frozen=True)
class While:
    cond: Expr
    body: tuple["Stmt", ...]
    line: int


@dataclass(frozen=True)
class Break:
    line: int


@dataclass(frozen=True)
class Continue:
    line: int


@dataclass(frozen=True)
class Return:
    value: "Expr | None"
    line: int


@dataclass(frozen=True)
class Raise:
    """Raise ``kind`` (e.g. "AssertionError") with a message when reached."""
    kind: str
    message: str
    line: int


@dataclass(frozen=True)
class GpuSection:
    """An accelerated section (§4.5.4): its parallel loops and element-wise array statements
    run as kernels on the GPU through the task runtime; everything else runs on the host."""
    body: tuple["Stmt", ...]
    line: int


Stmt = Union[Assign, ExprStmt, If, For, ParFor, While, Break, Continue, Return, Raise, GpuSection]


# ----------------------------------------------------------------------------- top level
@dataclass(frozen=True)
class Sym:
    name: str
    type: Type


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[str, ...]
    symbols: tuple[Sym, ...]
    result: Type
    body: tuple[Stmt, ...]
    line: int

    def symtab(self) -> dict[str, Type]:
        return {s.name: s.type for s in self.symbols}


@dataclass(frozen=True)
class Module:
    """A set of functions; Python modules index from 0 and ranges exclude their stop."""
    name: str
    zero_index: bool
    exclusive_ranges: bool
    functions: tuple[Function, ...]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)


NODE_CLASSES = (Const, Name, BinOp, UnOp, Compare, Logical, Cast, Select, Check, Slice, Index,
                Dim, LibCall, Call, TupleExpr, TupleGet, DomainExpr, Assign, ExprStmt, If, For,
                ParFor, While, Break, Continue, Return, Raise, GpuSection, Sym, Function, Module)

STMT_CLASSES = (Assign, ExprStmt, If, For, ParFor, While, Break, Continue, Return, Raise,
                GpuSection)
