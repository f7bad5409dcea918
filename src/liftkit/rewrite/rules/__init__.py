"""The rewrite rules of seed 002 (Figures 6 and 7), each a small named `Rule`.

    from liftkit.rewrite.rules import ALL_RULES, RULES_BY_NAME, normal_form
    from liftkit.rewrite import enumerate_choices, apply_choice

    prog = normal_form(asum())
    for choice in enumerate_choices(prog, ALL_RULES):
        print(choice)
    prog = apply_choice(prog, choice, RULES_BY_NAME)

`ALGORITHMIC_RULES` are Fig. 6 (iterate decomposition, reorder commutativity, split-join, the
reduce rules, cancellation, fusion); `LOWERING_RULES` Fig. 7 (map and reduce lowering, reorder
to a stride or the identity, local/global memory, vectorisation). Each rule's `fact` is its
equation in the papers' notation and `source` the figure it comes from.

`normal_form` is the engine's rewrite normal form (every pattern's function a lambda).
"""

from liftkit.rewrite.core import Rule
from liftkit.rewrite.rules.algorithmic import ALGORITHMIC_RULES
from liftkit.rewrite.rules.common import normal_form
from liftkit.rewrite.rules.lowering import LOWERING_RULES
from liftkit.rewrite.rules.order import order_insensitive

ALL_RULES: tuple[Rule, ...] = ALGORITHMIC_RULES + LOWERING_RULES
RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in ALL_RULES}
assert len(RULES_BY_NAME) == len(ALL_RULES), "rule names must be unique"

__all__ = ["ALGORITHMIC_RULES", "LOWERING_RULES", "ALL_RULES", "RULES_BY_NAME", "normal_form",
           "order_insensitive"]
