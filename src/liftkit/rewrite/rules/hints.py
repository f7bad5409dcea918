"""Cache hints as rewrites: `streamed` (the identity; a hint that a kernel input is read once)
put in front of a matrix the program reads, so the code generator reads it with the dialect's
evict-first load (CUDA `__ldcs`; OpenCL C has none: the same source). Sound everywhere (the
identity on values); whether it pays is a tuning choice (liftkit.blas's GPU GEMV codelets
offer it as h = 1), so the search rule set leaves it out.
"""

from __future__ import annotations

from typing import Any

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Param
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.types import ArrayType, Type

SOURCE = "liftkit extension (a load hint: issue 15's GEMV, results/issue15/gemv26b-c)"


def _matrix(t: Type) -> bool:
    return isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)


def _choices(site: Site) -> list[dict[str, Any]]:
    if isinstance(site.f, P.Streamed):
        return []
    inputs = site.program.params
    return [{"i": i} for i, a in enumerate(site.call.args)
            if isinstance(a, Param) and any(a is p for p in inputs) and _matrix(site.arg_types[i])]


def _build(site: Site, i: int) -> Expr:
    args = list(site.call.args)
    args[i] = FunCall(P.Streamed(), (args[i],))
    return FunCall(site.call.f, tuple(args))


STREAMED_INPUT = make_rule(
    "streamed-input", "f(…, A, …) → f(…, streamed $ A, …) for a kernel input A (a matrix)",
    SOURCE, _choices, _build, lowering=True)

HINT_RULES = (STREAMED_INPUT,)
