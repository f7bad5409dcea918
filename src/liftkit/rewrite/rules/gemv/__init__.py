"""Matrix-vector products (GEMV), one rule per kernel shape, all on the pieces of parts.py (the
dot-row shape they match, widths, row groups, local-memory trees):

* blocks.py, for CPUs (liftkit.blas codelets): `gemv-row-blocks` (r rows per work-item; in
  work-groups of L: `gemv-row-block-groups`) and `gemv-column-blocks` (k·w columns per
  work-item), private vector accumulators.
* groups.py, for GPUs, in work-groups reading A coalesced, in two directions, each as a bare
  product that the search rule set offers (`gemv-t-groups`, `gemv-row-groups`: CLBlast's ATAX and
  GESUMMV kernels; GEMV_GROUP_RULES) and in the BLAS form α·op(A)·x + β·y (`gemv-lane-columns`,
  `gemv-lane-rows`: liftkit.blas codelets `column-groups`, `row-groups`), and GEMV T in two
  passes over r row chunks (`gemv-lane-columns-split`, codelet `column-groups-split`) or in one
  with a tree over the row groups (`gemv-lane-columns-tree`, codelet `column-groups-tree`), or
  the two-pass form's work-groups in one kernel, the last of a column block's summing its
  partials (`gemv-lane-columns-last`, codelet `column-groups-last`: the lastWrg pattern).

`GEMV_RULES` holds the BLAS-form rules by name (the codelets' rule table).
"""

from liftkit.rewrite.core import Rule
from liftkit.rewrite.rules.gemv.blocks import (GEMV_COLUMN_BLOCKS, GEMV_ROW_BLOCK_GROUPS,
                                               GEMV_ROW_BLOCKS)
from liftkit.rewrite.rules.gemv.groups import (GEMV_GROUP_RULES, GEMV_LANE_COLUMNS,
                                               GEMV_LANE_COLUMNS_LAST, GEMV_LANE_COLUMNS_SPLIT,
                                               GEMV_LANE_COLUMNS_TREE, GEMV_LANE_ROWS,
                                               GEMV_ROW_GROUPS, GEMV_T_GROUPS)

GEMV_RULES: dict[str, Rule] = {r.name: r for r in (GEMV_ROW_BLOCKS, GEMV_ROW_BLOCK_GROUPS,
                                                   GEMV_COLUMN_BLOCKS, GEMV_LANE_ROWS,
                                                   GEMV_LANE_COLUMNS, GEMV_LANE_COLUMNS_SPLIT,
                                                   GEMV_LANE_COLUMNS_TREE, GEMV_LANE_COLUMNS_LAST)}

__all__ = ["GEMV_COLUMN_BLOCKS", "GEMV_GROUP_RULES", "GEMV_LANE_COLUMNS", "GEMV_LANE_COLUMNS_LAST",
           "GEMV_LANE_COLUMNS_SPLIT", "GEMV_LANE_COLUMNS_TREE", "GEMV_LANE_ROWS", "GEMV_ROW_BLOCKS", "GEMV_ROW_BLOCK_GROUPS",
           "GEMV_ROW_GROUPS", "GEMV_RULES", "GEMV_T_GROUPS"]
