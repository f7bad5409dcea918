"""The rewrite rules of seed 002 (Figures 6 and 7), each a small named `Rule`.

    from liftkit.rewrite.rules import ALL_RULES, RULES_BY_NAME, normal_form
    from liftkit.rewrite import enumerate_choices, apply_choice

    prog = normal_form(asum())
    for choice in enumerate_choices(prog, ALL_RULES):
        print(choice)
    prog = apply_choice(prog, choice, RULES_BY_NAME)

`EXTRA_RULES` are those needed beyond the figures: rules/extra.py (fission, fusion through zip,
interchange, movement and cancellation, copy insertion, slide tiling) and rules/chunking.py
(reductions and maps cut into constant-size chunks or strided columns, vectorisation through
zip) rules/iterate.py (`iterate 0 f → id`, `iterate 1 f → f`), rules/stencil.py (stencils tiled
into local memory) and rules/private.py (a work-item's values read in its loops copied to
private memory once); `MM_RULES` (rules/mm.py, the composites, and rules/mm_steps.py,
mm-tiles-lower in small steps) tile and block matrix multiplication (they apply to
the one MM nest only, so they are soundness-tested on MM programs: tests/rewrite/test_mm_rules.py);
`NBODY_RULES` (rules/nbody_tiles.py) tile an all-pairs reduction through local memory (the
N-Body shape; tests/rewrite/test_nbody_tiles.py); `GEMV_GROUP_RULES` (rules/gemv/groups.py) build
CLBlast's GPU GEMV kernels, a work-group per row or per block of columns (ATAX, GESUMMV;
tests/rewrite/test_gemv_groups.py);
`SEARCH_RULES` is what the exploration uses by default.

`ALGORITHMIC_RULES` are Fig. 6 (iterate decomposition, reorder commutativity, split-join, the
reduce rules, cancellation, fusion); `LOWERING_RULES` Fig. 7 (map and reduce lowering, reorder
to a stride or the identity, local/global memory, vectorisation). Each rule's `fact` is its
equation in the papers' notation and `source` the figure it comes from.

`normal_form` is the engine's rewrite normal form (every pattern's function a lambda).
"""

from liftkit.rewrite.core import Rule
from liftkit.rewrite.rules.algorithmic import ALGORITHMIC_RULES
from liftkit.rewrite.rules.common import normal_form
from liftkit.rewrite.rules.chunking import CHUNKING_RULES
from liftkit.rewrite.rules.extra import EXTRA_RULES as _EXTRA
from liftkit.rewrite.rules.gemv import GEMV_GROUP_RULES
from liftkit.rewrite.rules.hints import HINT_RULES
from liftkit.rewrite.rules.iterate import ITERATE_RULES
from liftkit.rewrite.rules.private import PRIVATE_RULES
from liftkit.rewrite.rules.stencil import STENCIL_RULES
from liftkit.rewrite.rules.lowering import LOWERING_RULES
from liftkit.rewrite.rules.mm import MM_LOCAL_TILES, MM_TILE_2D, MM_TILES_LOWER
from liftkit.rewrite.rules.mm_blocks import MM_PRIVATE_BLOCKS
from liftkit.rewrite.rules.mm_steps import MM_STEP_RULES
from liftkit.rewrite.rules.nbody_tiles import NBODY_RULES
from liftkit.rewrite.rules.order import order_insensitive

# the composites (rules/mm.py) with the small steps of mm-tiles-lower (rules/mm_steps.py) between
MM_RULES: tuple[Rule, ...] = (MM_LOCAL_TILES, MM_TILE_2D, MM_TILES_LOWER) + MM_STEP_RULES + (MM_PRIVATE_BLOCKS,)
PAPER_RULES: tuple[Rule, ...] = ALGORITHMIC_RULES + LOWERING_RULES  # seed 002 Fig. 6 and 7
EXTRA_RULES: tuple[Rule, ...] = _EXTRA + CHUNKING_RULES + ITERATE_RULES + STENCIL_RULES + PRIVATE_RULES
ALL_RULES: tuple[Rule, ...] = PAPER_RULES + EXTRA_RULES + MM_RULES + NBODY_RULES + GEMV_GROUP_RULES \
    + HINT_RULES
# what the exploration searches by default: copy-insertion applies almost everywhere and
# map-fission undoes map-fusion, so both are left to explicit strategies and macro rules, as
# are the load hints (rules/hints.py: they change no value, only a tuned choice picks them)
SEARCH_RULES: tuple[Rule, ...] = PAPER_RULES + tuple(
    r for r in EXTRA_RULES if r.name not in ("copy-insertion", "map-fission")) + MM_RULES + NBODY_RULES \
    + GEMV_GROUP_RULES
RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in ALL_RULES}
assert len(RULES_BY_NAME) == len(ALL_RULES), "rule names must be unique"

__all__ = ["CHUNKING_RULES", "GEMV_GROUP_RULES", "HINT_RULES", "MM_RULES", "NBODY_RULES", "ALGORITHMIC_RULES", "LOWERING_RULES", "EXTRA_RULES", "PAPER_RULES", "ALL_RULES",
           "SEARCH_RULES", "RULES_BY_NAME", "normal_form", "order_insensitive"]
