"""mm-edge-tiles / mm-edge-tiles-async (rewrite.rules.mm_edges): tiled products for any sizes,
checked in the interpreter against NumPy (integer-valued operands: exact), their guards in the
generated code, and the CUDA form through NVRTC."""

from __future__ import annotations

import re

import numpy as np
import pytest

from liftkit.blas import programs as bp
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompileOptions
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.rewrite.derivation import Derivation
from liftkit.rewrite.rules.corpus import run
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES, MM_EDGE_TILES_ASYNC, EDGE_RULES
from liftkit.rewrite.strategies import rule

RULES = {**EDGE_RULES, **CUDA_RULES_BY_NAME}
W = {"float32": 4, "float64": 2, "complex64": 1, "complex128": 1}


def _operands(dt: str, layout: str, m: int, n: int, k: int, seed: int) -> list[np.ndarray]:
    g = np.random.default_rng(seed)

    def mat(shape: tuple[int, int]) -> np.ndarray:
        x = g.integers(-3, 4, shape).astype(dt)
        return (x + 1j * g.integers(-3, 4, shape)).astype(dt) if dt.startswith("complex") else x

    a = mat((k, m) if layout[0] in "TC" else (m, k))
    b = mat((n, k) if layout[1] in "TC" else (k, n))
    return [a, b]


def _expected(dt: str, layout: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = a.T if layout[0] in "TC" else a
    y = b.T if layout[1] in "TC" else b
    return (np.conj(x) if layout[0] in "CR" else x) @ (np.conj(y) if layout[1] in "CR" else y)


def _edge(dt: str, layout: str, tiles: tuple[int, ...], w: int, elems: bool = False) -> Derivation:
    tm, tn, tk, rm, rn = tiles
    extra = {"elems": 1} if elems else {}
    return Derivation(bp.mm(dt, layout), name="edges").then(
        rule(MM_EDGE_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=w, **extra), (0,),
        rules=RULES)


# (dtype, layout, tiles, w, sizes M, N, K): N and K multiples of w, M anything; every tile's
# edge ragged, sizes below one tile, exactly one tile
CASES = [("float32", "NN", (32, 32, 16, 4, 4), 4, (13, 12, 20)),
         ("float32", "NN", (64, 64, 16, 8, 8), 4, (65, 4, 4)),
         ("float32", "NT", (32, 32, 16, 4, 4), 4, (33, 8, 36)),
         ("float32", "TN", (32, 32, 16, 4, 4), 4, (1, 16, 16)),
         ("float32", "NN", (16, 16, 16, 1, 1), 1, (13, 7, 5)),
         ("float64", "NN", (32, 32, 16, 4, 4), 2, (33, 6, 18)),
         ("float64", "TN", (32, 32, 16, 4, 4), 2, (31, 34, 2)),
         ("complex64", "NN", (32, 32, 16, 2, 2), 1, (5, 3, 7)),
         ("complex64", "CR", (32, 32, 16, 2, 2), 1, (9, 33, 17)),
         ("complex128", "NR", (16, 16, 16, 1, 1), 1, (17, 9, 33))]


@pytest.mark.parametrize("dt,layout,tiles,w,sizes", CASES,
                         ids=[f"{c[0]}-{c[1]}-w{c[3]}-{'x'.join(map(str, c[4]))}" for c in CASES])
def test_edge_tiles_compute_the_product_at_any_size(dt, layout, tiles, w, sizes) -> None:  # type: ignore[no-untyped-def]
    """The rule over symbolic sizes, run at sizes none of whose tiles divide them: exactly the
    product (integer values, every sum order exact)."""
    d = _edge(dt, layout, tiles, w)
    m, n, k = sizes
    for seed, (mm, nn, kk) in enumerate((sizes, (m + tiles[0], n, k))):
        a, b = _operands(dt, layout, mm, nn, kk, seed)
        got = np.asarray(run(d.final, [a, b], {"M": mm, "N": nn, "K": kk}))
        np.testing.assert_array_equal(got, _expected(dt, layout, a, b))


@pytest.mark.parametrize("dt,layout,w,sizes", [("float32", "NN", 4, (37, 13, 23)),
                                               ("float32", "NT", 4, (5, 3, 1)),
                                               ("float64", "TN", 2, (33, 31, 17))])
def test_vector_tiles_padded_element_by_element(dt, layout, w, sizes) -> None:  # type: ignore[no-untyped-def]
    """elems=1: any N and K with tiles of vectors (copied element by element)."""
    d = _edge(dt, layout, (32, 32, 16, 4, 4), w, elems=True)
    m, n, k = sizes
    a, b = _operands(dt, layout, m, n, k, 9)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k}))
    np.testing.assert_array_equal(got, _expected(dt, layout, a, b))


def test_sizes_the_tiles_divide_get_no_pads_crops_or_guards() -> None:
    """Constant sizes that the tiles divide: every pad and crop is provably empty and left out,
    so the kernel has no guard; symbolic sizes get the pads, the crops and the guards."""
    from liftkit import dsl as D
    from liftkit.ir.userfuns import FLOAT

    def prog(m, n, k):  # type: ignore[no-untyped-def]
        return D.fun([D.float32[k][m], D.float32[n][k]], lambda A, B: D.map(lambda r: D.join << D.map(
            lambda c: D.reduce(FLOAT.add, 0.0) << D.map(FLOAT.mult) << D.zip(r, c))
            << D.transpose << B) << A)

    step = rule(MM_EDGE_TILES, tm=32, tn=32, tk=16, rm=4, rn=4, unroll=1, w=4)
    fixed = Derivation(prog(64, 96, 32), name="fixed").then(step, (0,), rules=RULES).final
    assert not [n for n in walk(fixed) if isinstance(n, (P.Pad, P.Crop))]
    src = compile_program(fixed).kernels[0].source
    assert " ? " not in src and not re.search(r"if \(.*< (64|96)\)", src)
    odd = Derivation(prog(D.size("M"), D.size("N"), D.size("K")), name="odd").then(
        step, (0,), rules=RULES).final
    assert len([n for n in walk(odd) if isinstance(n, P.Crop)]) == 2
    src = compile_program(odd).kernels[0].source
    assert re.search(r"if \([^)]*< M\)", src) and re.search(r"if \([^)]*< N\)", src)
    assert re.search(r"< K/4\) \? ", src)  # A's vectors past K read as zeros


def _async_source(tiles: tuple[int, ...], stages: int, elems: bool = False) -> str:
    tm, tn, tk, rm, rn = tiles
    extra = {"elems": 1} if elems else {}
    d = Derivation(bp.mm("float32", "NN"), name="edges-async").then(
        rule(MM_EDGE_TILES_ASYNC, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **extra),
        (0,), rules=RULES)
    return compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source


def test_the_async_form_zero_fills_with_the_source_size_operand() -> None:
    """Every tile copy is one 16-byte cp.async whose source size is 16 inside the operand and
    0 past it (the zero fill), the result's stores guarded by M and N."""
    src = _async_source((64, 64, 16, 8, 8), 2)
    copies = re.findall(r'cp\.async\.cg\.shared\.global \[%0\], \[%1\], 16(, %2)?;', src)
    assert copies and all(c == ", %2" for c in copies)
    assert re.search(r"\? 16 : 0\)", src)
    assert re.search(r"if \([^)]*< M\)", src) and re.search(r"if \([^)]*< N\)", src)


def test_the_async_form_padded_element_by_element_copies_4_bytes_and_reads_float4() -> None:
    src = _async_source((64, 64, 16, 8, 8), 2, elems=True)
    copies = re.findall(r'cp\.async\.c[ag]\.shared\.global \[%0\], \[%1\], (\d+)(, %2)?;', src)
    # 4-byte copies, with a source size wherever the element may lie past K (B's row 0 of
    # the first tile does not: K >= 1)
    assert {c[0] for c in copies} == {"4"} and ("4", ", %2") in copies
    assert re.search(r"= id4\(\(\(float4\*\)stage", src)  # the tiles read as float4


@pytest.mark.parametrize("elems", [False, True])
def test_the_async_form_builds_with_nvrtc(elems) -> None:  # type: ignore[no-untyped-def]
    from liftkit.backends.cuda import compile_cuda

    try:
        out = compile_cuda(_async_source((128, 64, 32, 8, 8), 2, elems), "compute_90a",
                           name="edges.cu")
    except Exception as err:  # noqa: BLE001 - no NVRTC here
        if "NVRTC" in type(err).__name__ or "nvrtc" in str(err).lower():
            raise
        pytest.skip(f"NVRTC unavailable: {err}")
    assert ("cp.async.ca.shared.global" if elems else "cp.async.cg.shared.global") in out.ptx


def _edge_mma(tiles: tuple[int, ...], layout: str = "NN", lines: bool = False) -> Derivation:
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TENSOR_CORES

    tm, tn, tk, warps, staged = tiles
    extra = {"lines": True} if lines else {}
    return Derivation(bp.mm("float64", layout), name="edges-mma").then(
        rule(MM_EDGE_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, **extra),
        (0,), rules=RULES)


@pytest.mark.parametrize("layout,sizes,lines", [
    ("NN", (70, 33, 13), False), ("NN", (5, 3, 1), False), ("NN", (64, 64, 9), False),
    ("TN", (65, 31, 17), False), ("NN", (70, 34, 14), True), ("NN", (5, 2, 2), True),
    ("TN", (70, 34, 13), True), ("TN", (6, 2, 3), True)])
def test_the_dmma_form_computes_the_product_at_any_size(layout, sizes, lines) -> None:  # type: ignore[no-untyped-def]
    """mm-edge-tensor-cores (the DMMA kernel over padded views) in the interpreter: exact;
    with lines (16-byte chunks), 2 dividing the chunks' dimensions (NN: K, N; TN: M, N)."""
    d = _edge_mma((64, 64, 8, 4, 4), layout, lines)
    m, n, k = sizes
    a, b = _operands("float64", layout, m, n, k, 5)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k}))
    np.testing.assert_array_equal(got, _expected("float64", layout, a, b))


@pytest.mark.parametrize("layout,lines", [("NN", False), ("NN", True), ("TN", True)])
def test_the_dmma_form_stages_with_source_sizes_and_builds_with_nvrtc(layout, lines) -> None:  # type: ignore[no-untyped-def]
    """Element by element: 8-byte cp.async each with its source size; with lines: 16-byte
    chunks (two doubles), each all inside or all zero-filled."""
    from liftkit.backends.cuda import compile_cuda

    src = compile_program(_edge_mma((128, 64, 16, 4, 4), layout, lines).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    size = 16 if lines else 8
    copies = re.findall(r'cp\.async\.c[ag]\.shared\.global \[%0\], \[%1\], (\d+)(, %2)?;', src)
    assert copies and {c[0] for c in copies} == {str(size)} and ("16" if lines else "8", ", %2") in copies
    assert re.search(rf"\? {size} : 0\)", src)
    assert re.search(r"if \([^)]*< M\)", src) and re.search(r"if \([^)]*< N\)", src)
    try:
        out = compile_cuda(src, "compute_90a", name="edges-mma.cu")
    except Exception as err:  # noqa: BLE001 - no NVRTC here
        if "NVRTC" in type(err).__name__ or "nvrtc" in str(err).lower():
            raise
        pytest.skip(f"NVRTC unavailable: {err}")
    assert "mma.sync.aligned.m8n8k4" in out.ptx or "mma.sync" in out.ptx


@pytest.mark.parametrize("layout,sizes,tiles,ahead", [
    ("NN", (70, 34, 14), (64, 64, 16, 4, 4), 0), ("NN", (130, 66, 34), (128, 64, 16, 4, 4), 2),
    ("TN", (70, 34, 18), (64, 64, 16, 4, 4), 1), ("NN", (5, 2, 2), (128, 64, 16, 4, 4), 2)])
def test_the_dmma_form_on_m16n8k8_reading_ahead_computes_the_product(layout, sizes, tiles, ahead) -> None:  # type: ignore[no-untyped-def]
    """mm-edge-tensor-cores with lines on m16n8k8 (ik=8), fragments read `ahead` k-steps early:
    the padded K steps are zeros in shared memory whatever instruction reads them; exact in
    the interpreter, and its CUDA source issues m16n8k8."""
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TENSOR_CORES

    tm, tn, tk, warps, staged = tiles
    d = Derivation(bp.mm("float64", layout), name="edges-k8").then(
        rule(MM_EDGE_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, lines=True,
             ik=8, **({"ahead": ahead} if ahead else {})), (0,), rules=RULES)
    m, n, k = sizes
    a, b = _operands("float64", layout, m, n, k, 5)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k}))
    np.testing.assert_array_equal(got, _expected("float64", layout, a, b))
    src = compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source
    assert "m16n8k8" in src and re.search(r"if \([^)]*< N\)", src)


@pytest.mark.parametrize("elems,sizes", [(0, (70, 36, 52)), (0, (5, 4, 4)), (1, (70, 37, 51)),
                                         (1, (33, 41, 99))])
def test_the_async_form_with_its_tail_split_along_k_computes_the_product(elems, sizes) -> None:  # type: ignore[no-untyped-def]
    """mm-split-tail applies to the guarded tile loop (slots 396: every tile of these small
    grids in the partial wave, split in 2 along K, the zero-filled K tiles included): exact."""
    from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL
    from liftkit.rewrite.strategies import topdown

    rules = {**RULES, MM_EDGE_TILES_ASYNC.name: MM_EDGE_TILES_ASYNC,
             MM_SPLIT_TAIL.name: MM_SPLIT_TAIL}
    d = Derivation(bp.mm("float32", "NN"), name="edges-split").then(
        rule(MM_EDGE_TILES_ASYNC, tm=32, tn=32, tk=16, rm=4, rn=4, stages=2,
             **({"elems": 1} if elems else {})), (0,), rules=rules)
    d = d.then(topdown(rule(MM_SPLIT_TAIL, parts=2, slots=396, bound=0)), (), rules=rules)
    m, n, k = sizes
    a, b = _operands("float32", "NN", m, n, k, 3)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k}))
    np.testing.assert_array_equal(got, _expected("float32", "NN", a, b))
