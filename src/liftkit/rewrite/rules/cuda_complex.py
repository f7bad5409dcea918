"""The complex128 matrix product on the FP64 tensor cores (issue 15: ZGEMM without the real
embedding's packing kernel).

- `mm-complex-tensor-cores` (tm, tn, tk, warps, staged, ahead): the high-level product over
  complex128 (`map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘
  transpose $ B) $ A`, `mult` the complex product or one with conjugated factors)
  → tm×tn complex tiles of C per work-group (`mapWrg(1) ∘ mapWrg(0)`), the K loop split by tk
  into tile pairs reduced by `reduceMmaZ64 warps c` (c: the product's conjugations), each pair
  copied as it is (16-byte complex elements) by cp.async `staged` deep into local memory whose
  rows are rotated so that the fragment reads spread over the banks: a tile is copied along the
  direction its memory is contiguous in (as `mm-tensor-cores`' `lines`: rows along k for A of
  NN and B of NT, k rows for B of NN and A of TN), chunk c of stored row r at position
  (c + s(r)) mod C, s(r) = 2r for A's rows along k and B's k rows, 4r for A's k rows and B's
  rows along k (`ROTATION`: a half warp's 8-byte reads of 16 elements' parts then hit 16
  distinct words of a line). `ahead` = 1: `reduceMmaZ64Ahead`,
  the fragments read a k-step ahead across tiles, the next copies among the last products.
- `mm-edge-complex-tensor-cores` (the same parameters): that kernel for any M, N, K, over padded
  views of the operands (each along its stored rows: K zero-filled, element by element, by
  cp.async's source size; A's rows past M and B's columns past N clamped), the result cropped
  (the ragged edge's stores guarded): no pad2d/crop2d copies (ZGEMM 1000³, results/issue15/
  odd26b).

It changes the order of the reduction as every reduce rule (exact on the integer-valued complex
operands of the soundness tests). The fragments' real embedding (the 4M form's B block
[[br, bi], [-bi, br]]) is made by the pattern's code at its reads (`codegen.cuda_zmma`).
"""

from __future__ import annotations

from typing import Any, Optional

from liftkit.arith import cst
from liftkit.ir.nodes import Expr
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64, ReduceMmaZ64Ahead
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.algorithmic import make_rule
from liftkit.rewrite.rules.common import const, fresh
from liftkit.types import complex128

Options = list[dict[str, Any]]

# complex tiles (tm, tn, tk) offered, largest first: 128×32×8 is the shipped real kernel's
# 128×64×16 over reals; 64×64×32 cuBLAS's ZGEMM shape on the H100 (results/issue15/fp64-24)
ZMMA_TILES = ((128, 64, 8), (128, 32, 16), (128, 32, 8), (64, 64, 32), (64, 64, 16),
              (64, 64, 8), (64, 32, 16), (64, 32, 8), (32, 32, 8), (32, 16, 8), (32, 16, 4))
ZMMA_WARPS = (8, 4, 2, 1)
ZMMA_STAGES = (4, 3, 2)
# local memory of the staged tiles: beyond 48 KB a CUDA block gets it at launch (an H100 up to
# 227 KB, an A100 163 KB)
ZMMA_LOCAL_BYTES = 200 * 1024
ZMMA_MAX_FRAGS = 16  # accumulator fragments per warp (4 doubles each: 128 registers)
ELEM_BYTES = 16
# the rotation step s(r) = step·r of each operand's stored rows (`stage_rotated`), by operand and
# copy direction (across: k rows): the half warps' 8-byte fragment reads (codegen/cuda_zmma.py)
# then hit 16 distinct 8-byte words of a 128-byte line
ROTATION = {("a", False): 2, ("a", True): 4, ("b", False): 4, ("b", True): 2}


def zmma_nest(site: Site) -> Optional[tuple[Expr, Expr, int]]:
    """(A, B, c) when the site is the high-level complex128 product of A: [[T]_K]_M and
    B: [[T]_N]_K (B may be the transpose of a stored N×K array) whose product is the complex
    `mult` or one with conjugated factors (c: bit 0 A's, bit 1 B's), outside every other map."""
    from liftkit.rewrite.rules.mm_match import _conjugations, mm_parts

    if site.enclosing:
        return None
    parts = mm_parts(site)
    if parts is None or parts.elem.t != complex128:
        return None
    signs = _conjugations(parts.elem.mult, complex128)
    if signs is None:
        return None
    return parts.a, parts.b, (1 if signs[0] else 0) | (2 if signs[1] else 0)


def zmma_ok(tm: int, tn: int, tk: int, warps: int, staged: int,
            across: tuple[bool, bool] = (False, True)) -> bool:
    """The tiling fits: whole fragments shared by the warps, at most ZMMA_MAX_FRAGS per warp,
    the copy rounds whole, the staged tiles within ZMMA_LOCAL_BYTES; rotated rows (C ≥ 8 chunks
    per row, or none with C = 4) for both operands' copy directions."""
    from liftkit.codegen.cuda_zmma import zmma_grid

    im, in_, ik = ReduceMmaZ64.shape
    if tm % im or tn % in_ or tk % ik or staged < 2:
        return False
    if not zmma_grid(tm, tn, warps)[0] or (tm // im) * (tn // in_) // warps > ZMMA_MAX_FRAGS:
        return False
    threads = 32 * warps
    if (tm * tk) % threads or (tn * tk) % threads:
        return False
    for rows, flip in ((tm, across[0]), (tn, across[1])):
        chunks = rows if flip else tk
        if chunks % 8 and chunks != 4:
            return False
    return (tm + tn) * tk * ELEM_BYTES * staged <= ZMMA_LOCAL_BYTES


def _across(a: Expr, b: Expr) -> tuple[bool, bool]:
    from liftkit.rewrite.rules.cuda import _copied_across

    return _copied_across(a, b)


def _choices(site: Site) -> Options:
    found = zmma_nest(site)
    if found is None:
        return []
    from liftkit.rewrite.rules.mm_match import mm_parts

    a, b, _ = found
    across = _across(a, b)
    mp = mm_parts(site)
    cm, cn, ck = const(mp.m), const(mp.n), const(mp.k)  # type: ignore[union-attr]
    out = []
    for tm, tn, tk in ZMMA_TILES:
        if not all(c is None or c % t == 0 for c, t in ((cm, tm), (cn, tn), (ck, tk))):
            continue
        for warps in ZMMA_WARPS:
            for staged in ZMMA_STAGES:
                if zmma_ok(tm, tn, tk, warps, staged, across):
                    out.append({"tm": tm, "tn": tn, "tk": tk, "warps": warps, "staged": staged})
    return out + [{**o, "ahead": 1} for o in out]


def stage_rotated(rows: int, cols: int, threads: int, across: bool, staged: int, step: int) -> Any:
    """A rows×cols complex tile (cols along k) copied by cp.async `staged` deep, 16-byte
    elements in rounds of `threads`, along the direction its memory is contiguous in (`across`:
    as its cols×rows k rows), into rows rotated by s(r) (module docstring): stored chunk c of
    row r at position (c + s(r)) mod C. It means the tile."""
    from liftkit import dsl as D

    c_n = rows if across else cols
    rot = c_n >= 8

    def shift(r: Any) -> Any:
        return (r * step) % c_n

    rounds = D.mapSeqUnroll(D.mapLcl(0)(D.id_of(complex128)))
    copy = D.toLocalAsync(staged, rounds)
    forward = [D.transpose] if across else []
    backward: list[Any] = []
    if rot:
        to_pos = D.gather(lambda p, n: (p // c_n) * c_n + ((p % c_n) + c_n - shift(p // c_n)) % c_n)
        to_chunk = D.gather(lambda i, n: (i // c_n) * c_n + ((i % c_n) + shift(i // c_n)) % c_n)
        forward += [D.join, to_pos, D.split(threads)]
        backward += [D.join, to_chunk, D.split(c_n)]
    else:
        forward += [D.join, D.split(threads)]
        backward += [D.join, D.split(c_n)]
    backward += [D.transpose] if across else []
    return D.compose(*reversed(forward + [copy] + backward))


def mm_complex_tensor_cores(a: Expr, b: Expr, conj: int, tm: int, tn: int, tk: int, warps: int,
                            staged: int, ahead: int = 0) -> Expr:
    """C = A·B (complex128; conj: the product's conjugations) with reduceMmaZ64 over tm×tn×tk
    complex tiles staged as `stage_rotated` (see the module docstring)."""
    from liftkit import dsl as D
    from liftkit.ir.nodes import FunCall
    from liftkit.ir.nodes import Literal as Lit

    across = _across(a, b)
    if not zmma_ok(tm, tn, tk, warps, staged, across):
        raise ValueError(f"reduceMmaZ64: complex tiles {tm}×{tn}×{tk} with {warps} warps, "
                         f"{staged} stages do not fit")
    tiles = lambda t: D.compose(D.map(D.compose(D.transpose, D.map(D.split(tk)))), D.split(t))  # noqa: E731
    threads = 32 * warps
    sa = stage_rotated(tm, tk, threads, across[0], staged, ROTATION["a", across[0]])
    sb = stage_rotated(tn, tk, threads, across[1], staged, ROTATION["b", across[1]])
    op: Any = lambda pair: D.tuple_(sa << D.get(0) << pair, sb << D.get(1) << pair)  # noqa: E731
    cls = ReduceMmaZ64Ahead if ahead else ReduceMmaZ64
    mma = cls(warps=cst(warps), conj=cst(conj), f=D.fn(op))
    zero = Lit(0.0, complex128)
    return (D.join << D.mapWrg(1)(lambda a_row: D.map(D.join) << D.transpose << D.mapWrg(0)(
        lambda b_col: D.join << FunCall(mma, (zero, D.zip(a_row, b_col))))
        << tiles(tn) << D.transpose << b) << tiles(tm) << a)


def _build(site: Site, tm: int, tn: int, tk: int, warps: int, staged: int, ahead: int = 0) -> Expr:
    a, b, conj = zmma_nest(site)  # type: ignore[misc]
    return mm_complex_tensor_cores(fresh(a), fresh(b), conj, tm, tn, tk, warps, staged, ahead)


MM_COMPLEX_TENSOR_CORES = make_rule(
    "mm-complex-tensor-cores",
    "map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A "
    "→ join ∘ mapWrg(1)(λaRow. map(join) ∘ transpose ∘ mapWrg(0)(λbCol. join ∘ reduceMmaZ64 w c "
    "(stage, 0) $ zip(aRow, bCol)) ∘ tiles(tn, tk) ∘ transpose $ B) ∘ tiles(tm, tk) $ A   "
    "(complex128; c: mult's conjugated factors; the tiles staged raw by cp.async into rotated rows)",
    "issue 15 (ZGEMM on the FP64 tensor cores)", _choices, _build, lowering=True, reshapes=True,
    opaque=False)

# ---------------------------------------------------------------------------------------------
# the same kernel for any M, N, K: over padded views of the operands, cropped


def _edge_choices(site: Site) -> Options:
    """mm-complex-tensor-cores' tilings whatever the sizes: a complex element is 16 bytes, so
    every row of any pitch is staged by whole elements (cp.async, source size 0 past K)."""
    found = zmma_nest(site)
    if found is None:
        return []
    a, b, _ = found
    across = _across(a, b)
    out = [{"tm": tm, "tn": tn, "tk": tk, "warps": warps, "staged": staged}
           for tm, tn, tk in ZMMA_TILES for warps in ZMMA_WARPS for staged in ZMMA_STAGES
           if zmma_ok(tm, tn, tk, warps, staged, across)]
    return out + [{**o, "ahead": 1} for o in out]


def edge_complex_tensor_cores(a: Expr, b: Expr, m: Any, n: Any, k: Any, conj: int, tm: int,
                              tn: int, tk: int, warps: int, staged: int, ahead: int = 0) -> Expr:
    """C = A·B as `mm_complex_tensor_cores` over padded views (pX = ⌈X/tX⌉·tX): A's rows past
    M and B's columns past N clamped (what they compute is cropped), K padded with complex zeros
    (a zero term adds nothing), each along the operand's stored rows, element by element; the
    result cropped to M×N (the ragged edge's stores guarded). Pads and crops that are provably
    empty are left out."""
    from liftkit import dsl as D
    from liftkit.rewrite.rules.cuda import _transposed_view
    from liftkit.rewrite.rules.mm_edges import _apply, _crop, _rows_padded, padded

    pm, pn, pk = padded(m, tm), padded(n, tn), padded(k, tk)
    zero = D.lit(0.0, complex128)
    if _transposed_view(a):  # TN: A stored K×M
        a_p = D.transpose << _rows_padded(a.args[0], k, m, pk, pm, zero, "clamp", 1)  # type: ignore[attr-defined]
    else:
        a_p = _rows_padded(a, m, k, pm, pk, "clamp", zero, 1)
    if _transposed_view(b):  # NT: B stored N×K
        b_p = D.transpose << _rows_padded(b.args[0], n, k, pn, pk, "clamp", zero, 1)  # type: ignore[attr-defined]
    else:
        b_p = _rows_padded(b, k, n, pk, pn, zero, "clamp", 1)
    kernel = mm_complex_tensor_cores(a_p, b_p, conj, tm, tn, tk, warps, staged, ahead)
    return _apply((*_crop(pm - m), *(D.map(c) for c in _crop(pn - n))), kernel)


def _edge_build(site: Site, tm: int, tn: int, tk: int, warps: int, staged: int,
                ahead: int = 0) -> Expr:
    from liftkit.rewrite.rules.mm_match import mm_parts

    a, b, conj = zmma_nest(site)  # type: ignore[misc]
    mp = mm_parts(site)
    assert mp is not None
    return edge_complex_tensor_cores(fresh(a), fresh(b), mp.m, mp.n, mp.k, conj, tm, tn, tk,
                                     warps, staged, ahead)


MM_EDGE_COMPLEX_TENSOR_CORES = make_rule(
    "mm-edge-complex-tensor-cores",
    "the complex128 matrix product → crop 0 (pM-M) ∘ map(crop 0 (pN-N)) $ "
    "mm-complex-tensor-cores(pad 0 (pM-M) clamp ∘ map(pad 0 (pK-K) 0) $ A, transpose ∘ "
    "map(pad 0 (pK-K) 0) ∘ transpose ∘ map(pad 0 (pN-N) clamp) $ B)   (pX = ⌈X/tX⌉·tX: any "
    "sizes, the staged tiles' elements past K zero-filled by cp.async, M and N clamped, the "
    "ragged edge's stores guarded; each operand padded along its stored rows)",
    "issue 15 (ZGEMM on the FP64 tensor cores; edge tiles without padded copies)",
    _edge_choices, _edge_build, lowering=True, reshapes=True, opaque=False)


COMPLEX_MMA_RULES = (MM_COMPLEX_TENSOR_CORES, MM_EDGE_COMPLEX_TENSOR_CORES)


def zgemm_tensor_cores(layout: str, tm: int, tn: int, tk: int, warps: int, staged: int,
                       ahead: int = 0, group: int = 0) -> Any:
    """The replayable derivation of complex128 C = op(A)·op(B) (`layout`, as liftkit.blas's mm
    programs: NN, NT, TN, with R/C for conjugated factors) on the FP64 tensor cores from the
    high-level product: one application of mm-complex-tensor-cores (then wrg-row-groups g)."""
    from liftkit.blas.programs import mm
    from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
    from liftkit.rewrite.rules.grid_order import WRG_ROW_GROUPS
    from liftkit.rewrite.strategies import rule, seq, topdown

    step = topdown(rule(MM_COMPLEX_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged,
                        **({"ahead": 1} if ahead else {})))
    if group:
        step = seq(step, topdown(rule(WRG_ROW_GROUPS, g=group)))
    rules = {**CUDA_RULES_BY_NAME, MM_COMPLEX_TENSOR_CORES.name: MM_COMPLEX_TENSOR_CORES,
             WRG_ROW_GROUPS.name: WRG_ROW_GROUPS}
    return step.derive(mm("complex128", layout), rules=rules, name=f"zgemm-{layout}-tensor-cores")


__all__ = ["COMPLEX_MMA_RULES", "MM_COMPLEX_TENSOR_CORES", "MM_EDGE_COMPLEX_TENSOR_CORES",
           "ZMMA_TILES", "edge_complex_tensor_cores", "mm_complex_tensor_cores",
           "stage_rotated", "zgemm_tensor_cores", "zmma_nest", "zmma_ok"]
