"""k-permuted DMMA fragment reads (`pairs` of mm-tensor-cores, rules/cuda.py): the k of a tile
pair permuted the same way in both operands' views, after the staging, so that a lane's fragment
elements of a k-step lie next to each other where a tile is stored along k (one 16-byte read
instead of two 8-byte ones). The sum over k is the same (exact on the integer-valued inputs of
the soundness tests, reassociated rounding on floats)."""

from __future__ import annotations

from typing import Any

from liftkit.ir import patterns as P

# k of a tile pair permuted in blocks of 16, the same way in both operands, for 16-byte fragment
# reads (`pairs`): slot q of a block reads k = 4(q mod 4) + q/4 (a 4×4 transpose). An m16n8k8
# lane (t = lane mod 4) reads slots t + 4j of each 8-deep step s (q = 8s + 4j + t): k = 4t + 2s + j,
# its two k of a step next to each other (one 16-byte read instead of two 8-byte ones); on
# m16n8k16 (q = 4j + t) its four k are 4t … 4t+3. The sum over k is the same.
PAIR_BLOCK = 16


def pair_k(tk: int) -> Any:
    """The view of a rows×tk operand tile with k permuted by PAIR_BLOCK-blocks (see above)."""
    from liftkit import dsl as D

    block = D.compose(D.join, D.transpose, D.split(4))  # out[q] = in[4(q % 4) + q / 4]
    return D.map(D.compose(D.join, D.map(block), D.split(PAIR_BLOCK)))


def pairs_ok(cls: type, tk: int, lines: bool) -> bool:
    """Whether the k-permuted reads (`pairs`) apply: a DMMA class of m16n8k8/k16 (one double per
    register), tiles in whole 16-blocks of k, staged in `lines`."""
    return lines and tk % PAIR_BLOCK == 0 and issubclass(cls, P.ReduceMmaF64K8)
