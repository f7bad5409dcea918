"""The ZGEMM codelet on the FP64 tensor cores without the real embedding's packing pass
(`zmma`): the rule mm-complex-tensor-cores (rewrite.rules.cuda_complex) applied to the
high-level complex128 product, the complex tiles staged as they are by cp.async and the
embedding's signs made at the fragment reads (reduceMmaZ64, codegen/cuda_zmma.py), then, with
`group`, the blocks started `group` row tiles at a time (wrg-row-groups).

Sizes its tiles do not divide: a profile's choice of it is fitted to them as the complex FFMA
tiles' is, the `real` plan (`mm_codelets.fit_choice`), unless the profile measured the guarded
form (`edge-zmma`: the same kernel over padded views, rule mm-edge-complex-tensor-cores; no
pad2d/crop2d copies, which cost ZGEMM 1000³ about a fifth of its call, results/issue15/odd26b)
or zmma on padded copies at the call's very sizes (`gemm.measured_here`).
"""

from __future__ import annotations

from typing import Any, Mapping

from liftkit.blas.variants import Codelet, Kind, Variant
from liftkit.rewrite.strategies import Strategy, rule, seq, topdown

# complex tilings (tm, tn, tk, warps, staged, ahead) the tuner tries, in complex units: the
# shipped real kernel's 128×64×16 over reals (128×32×8 complex, 4 warps, 4 stages), read ahead
# and not; cuBLAS's ZGEMM 64×64 tiles on 8 warps (results/issue15/fp64-24 run1: 32 deep, 3
# stages; 16 deep here); then others. On the H100 at 1024 (results/issue15/zgemm25 run2) the
# first read ahead ran 1.00x/0.98x/0.95x cuBLAS per call (NN/NT/TN; in groups of 2: 1.00/1.01/
# 0.95), 64×64×8 on 8 warps 0.99/0.98/0.93, not read ahead 0.89/0.89/0.78. NVRTC 13 for sm_90a:
# 143-255 registers, TN's first spills 8-12 bytes
ZMMA_SPACE = ((128, 32, 8, 4, 4, 1), (128, 32, 8, 4, 4, 0), (64, 64, 16, 8, 3, 1),
              (64, 64, 32, 8, 3, 1), (128, 32, 16, 8, 3, 1), (64, 32, 16, 4, 3, 1),
              (64, 64, 8, 8, 4, 1), (64, 64, 16, 8, 4, 1), (128, 64, 8, 8, 3, 0),
              (64, 64, 16, 8, 3, 0), (128, 32, 16, 8, 3, 0))
# then the first ones with their blocks started in groups of row tiles
ZMMA_GROUPS = (2,)
ZMMA_NAMES = ("tm", "tn", "tk", "warps", "staged", "ahead")


def _params(p: tuple[int, ...]) -> dict[str, int]:
    out = dict(zip(ZMMA_NAMES, p))
    return out if out["ahead"] else {k: v for k, v in out.items() if k != "ahead"}


def zmma_space(dev: str) -> list[dict[str, int]]:
    if dev != "gpu":
        return []
    plain = [_params(p) for p in ZMMA_SPACE]
    return plain + [{**v, "group": g} for g in ZMMA_GROUPS for v in plain[:3]]


def _mm_zmma(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int, ahead: int = 0,
             group: int = 0) -> Strategy:
    from liftkit.rewrite.rules.cuda_complex import MM_COMPLEX_TENSOR_CORES
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS

    tiles = rule(MM_COMPLEX_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                 **({"ahead": 1} if ahead else {}))
    return seq(tiles, topdown(rule(WRG_ROW_GROUPS, g=group))) if group else tiles


def _zmma_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.cuda_complex import MM_COMPLEX_TENSOR_CORES
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS

    return {**CUDA_RULES_BY_NAME, MM_COMPLEX_TENSOR_CORES.name: MM_COMPLEX_TENSOR_CORES,
            WRG_ROW_GROUPS.name: WRG_ROW_GROUPS}


def _mm_edge_zmma(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int,
                  ahead: int = 0) -> Strategy:
    from liftkit.rewrite.rules.cuda_complex import MM_EDGE_COMPLEX_TENSOR_CORES

    return rule(MM_EDGE_COMPLEX_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                **({"ahead": 1} if ahead else {}))


def _edge_rules() -> Mapping[str, Any]:
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.cuda_complex import MM_EDGE_COMPLEX_TENSOR_CORES

    return {**CUDA_RULES_BY_NAME, MM_EDGE_COMPLEX_TENSOR_CORES.name: MM_EDGE_COMPLEX_TENSOR_CORES}


def _edge_multiples(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int,
                    ahead: int = 0) -> dict[str, int]:
    from liftkit.blas.mm_codelets import _tiled_multiples

    v = Variant.of("edge-zmma", tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                   **({"ahead": ahead} if ahead else {}))
    return _tiled_multiples(kind, v, {})


def edge_zmma(variant: Variant) -> Variant:
    """The guarded form of a zmma variant: the same tiles, without the grouped block order
    (whose grid takes whole groups of row tiles)."""
    return Variant("edge-zmma", tuple(p for p in variant.params if p[0] != "group"))


def _multiples(kind: Kind, tm: int, tn: int, tk: int, warps: int, staged: int, ahead: int = 0,
               group: int = 0) -> dict[str, int]:
    from liftkit.blas.mm_codelets import _tiled_multiples

    v = Variant.of("zmma", tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                   **({"ahead": ahead} if ahead else {}), **({"group": group} if group else {}))
    return _tiled_multiples(kind, v, {"M": tm * max(group, 1), "N": tn, "K": tk})


ZMMA_CODELET = Codelet(
    "zmma", ("mm",), "complex128 tiles on the FP64 tensor cores (DMMA m16n8k8): tm×tn×tk complex "
    "tiles staged as they are by cp.async `staged` deep into rotated rows, the real embedding's "
    "signs made at the fragment reads (the mm-complex-tensor-cores rule, rewrite.rules."
    "cuda_complex; ahead=1: fragments read a k-step ahead across tiles; group: blocks started "
    "that many row tiles at a time); no cembed packing kernel, no transpose for TN; CUDA only, "
    "complex128, every layout",
    _mm_zmma, zmma_space, _multiples, backends=("cuda",), dtypes=("complex128",),
    rules=_zmma_rules)

EDGE_ZMMA_CODELET = Codelet(
    "edge-zmma", ("mm",), "zmma for any M, N, K: the complex DMMA tiles over padded views of A "
    "and B (the mm-edge-complex-tensor-cores rule, rewrite.rules.cuda_complex: each 16-byte "
    "complex element staged by cp.async with its source size, zero-filled past K, M and N "
    "clamped), the ragged edge's stores guarded; no pad2d/crop2d copies at any size; CUDA only, "
    "complex128, every layout; liftkit.blas runs it where the device profile measured it at the "
    "call's very sizes (`gemm.measured_here`)",
    _mm_edge_zmma, lambda dev: [], _edge_multiples, backends=("cuda",), dtypes=("complex128",),
    rules=_edge_rules)
