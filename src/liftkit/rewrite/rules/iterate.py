"""Iterations that are not loops: `iterate 0 f` is the identity and `iterate 1 f` is f.

The iterate decomposition (seed 002 Fig. 6a) produces `iterate 1` pieces, and users write
`iterate(0, f)` / `iterate(1, f)` with a count parameter set to 0 or 1; left in place, such an
iterate keeps a program high-level (its function is typed once per iteration, none for 0), so
the search could not lower it. These rules remove them, and `simplify_iterations` applies them
everywhere (the exploration's start programs go through it).
"""

from __future__ import annotations

from typing import Any

from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, Lambda, apply
from liftkit.rewrite.core import Rule, Site, apply_choice, enumerate_choices
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh

SOURCE = "liftkit extension (iterate's definition, seed 002 §3)"


def _count_is(k: int) -> Any:
    def choices(site: Site) -> list[dict[str, Any]]:
        return [{}] if isinstance(site.f, P.Iterate) and const(site.f.n) == k else []

    choices.__name__ = f"_iterate_{k}_choices"
    return choices


def _zero_build(site: Site) -> Expr:
    return site.call.args[0]


def _one_build(site: Site) -> Expr:
    return apply(fresh(site.f.f), [site.call.args[0]])  # type: ignore[attr-defined]


ITERATE_ZERO = make_rule("iterate-zero", "iterate 0 f → id", SOURCE, _count_is(0), _zero_build,
                         reshapes=True, opaque=False)
ITERATE_ONE = make_rule("iterate-one", "iterate 1 f → f", SOURCE, _count_is(1), _one_build,
                        reshapes=True, opaque=False)
ITERATE_RULES: tuple[Rule, ...] = (ITERATE_ZERO, ITERATE_ONE)


def simplify_iterations(program: Lambda) -> Lambda:
    """`program` with every `iterate 0 f` and `iterate 1 f` removed (innermost first is not
    needed: each application removes one iterate, so this ends)."""
    rules = {r.name: r for r in ITERATE_RULES}
    while True:
        found = enumerate_choices(program, ITERATE_RULES)
        if not found:
            return program
        program = apply_choice(program, found[0], rules)
