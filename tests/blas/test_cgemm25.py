"""Session 25's complex FFMA tiles (results/issue15/cgemm25): rows swizzled in local memory
(rot=2: chunk j of row r at j xor s(r), `rules/mm.rotated_rows`; rot=3: A's rows in 16-byte
units, so a pair of K steps stays one LDS.128) and the 128×64 8×4 tiles 32 deep (tk=32). The
swizzle is a permutation that is its own inverse and spreads a warp's rows over the banks; every derivation equals op(A)·op(B) bit for bit in the interpreter; NVRTC compiles
NT's swizzled kernel to one xor per K step in 128 registers without a cap."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.blas import Kind, Variant
from liftkit.blas.codelets import derive, multiples, space
from liftkit.rewrite.rules.mm import FLOAT32, local_tiles, rotated_rows
from liftkit.semantics import interpret
from liftkit.types import float32

from .test_ctiles_async import _operands


@pytest.mark.parametrize("c,vec_bytes,rot", [(16, 8, 2), (4, 16, 2), (8, 16, 2), (2, 16, 2),
                                             (16, 8, 3), (4, 8, 3)])
def test_the_swizzle_is_its_own_inverse_and_spreads_rows_over_banks(c: int, vec_bytes: int,
                                                                    rot: int) -> None:
    """rot=2's two gathers are one (xor undoes itself): in the interpreter, a permutation of
    each row that is its own inverse; c line-groups of rows read at one chunk land at c
    different positions (banks) of their lines, as rot=1's rotation does; rot=3 in 16-byte units
    (c/2 of them for 8-byte vectors), each pair of vectors kept whole, in order."""
    to_pos, to_chunk = rotated_rows(c, vec_bytes, rot)
    assert to_pos is to_chunk
    rows = 64
    perm = [int(v) for v in np.asarray(interpret(
        D.fun([float32[rows * c]], lambda x: to_pos << x), np.arange(rows * c, dtype=np.float32)))]
    assert sorted(perm) == list(range(rows * c))
    assert all(perm[perm[p]] == p for p in range(rows * c))
    assert all(perm[p] // c == p // c for p in range(rows * c))  # stays in its row
    lines, u = max(1, 128 // (c * vec_bytes)), (16 // vec_bytes if rot == 3 else 1)
    for j in range(c):  # c / u consecutive line-groups of rows at chunk j: distinct positions
        slots = {perm[(r * lines) * c + j] % c for r in range(c // u)}
        assert len(slots) == c // u
    if u > 1:  # pairs whole: vectors 2q and 2q + 1 of a row at 2q' and 2q' + 1
        assert all(perm[p + 1] == perm[p] + 1 and perm[p] % 2 == 0 for p in range(0, len(perm), 2))


CASES = [("NT", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, kt=1, rot=2)),
         ("NT", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, kt=1, rot=3)),
         ("NN", dict(tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, rot=3)),
         ("CR", dict(tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, rot=3)),
         ("NN", dict(tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, pair=1)),
         ("NN", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, rot=3, pair=1)),
         ("TN", dict(tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, kt=1, pair=1)),
         ("CN", dict(tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, kt=1, pair=1)),
         ("RR", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, pair=1)),
         ("NC", dict(tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, kt=1, rot=2)),
         ("NN", dict(tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, rot=2)),
         ("NN", dict(tm=128, tn=64, tk=32, rm=8, rn=4, stages=2)),
         ("TN", dict(tm=128, tn=64, tk=32, rm=8, rn=4, stages=2, kt=1)),
         ("NT", dict(tm=128, tn=64, tk=32, rm=8, rn=4, stages=3, kt=1, rot=2))]


@pytest.mark.parametrize("layout,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_swizzled_and_deep_complex_tiles_are_sound(layout: str, kw: dict) -> None:
    """NT's (and NC's) Bᵀ rows swizzled (with A's rows, rot=3), NN's and CR's A rows swizzled,
    the 32-deep tiles, K-outer operands owned in pairs (pair=1: NN's and RR's B, TN's and CN's
    Aᵀ and B): op(A)·op(B) bit for bit on integer-valued operands, the tiles' multiples as
    declared."""
    k, v = Kind("mm", "complex64", layout), Variant.of("ctiles-async", **kw)
    assert multiples(k, v) == {"M": kw["tm"], "N": kw["tn"], "K": kw["tk"]}
    want, X, Y = _operands(layout, kw["tm"], 2 * kw["tn"], 2 * kw["tk"], 5)
    np.testing.assert_array_equal(np.asarray(interpret(derive(k, v).final, X, Y)), want)


def test_float4_rows_swizzled_are_sound() -> None:
    """rot=2 for SGEMM's float4 tiles (A's rows, 4 vectors of 16 bytes a row) too."""
    m, n, k = 128, 64, 32
    prog = D.fun([float32[k][m], float32[n][k]], lambda X, Y: local_tiles(  # (M×K, K×N)
        X, Y, 128, 64, 16, 8, 8, 0, 4, FLOAT32, rot=2))
    rng = np.random.default_rng(3)
    A = rng.integers(-8, 9, (m, k)).astype(np.float32)
    B = rng.integers(-8, 9, (k, n)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(interpret(prog, A, B)), A @ B)


def test_the_tuning_space_offers_what_won_and_the_rule_the_rest() -> None:
    """The CUDA space tries A's rows swizzled in 16-byte units (rot=3: NN; NT with kt, Bᵀ too)
    beside the plain and rotated forms; the forms the H100 ran slower (rot=2, pair=1, tk=32;
    results/issue15/cgemm25 run 1) stay derivations mm-local-tiles offers, out of the space."""
    from liftkit.blas import programs as bp
    from liftkit.rewrite import enumerate_choices
    from liftkit.rewrite.rules import normal_form
    from liftkit.rewrite.rules.mm import MM_LOCAL_TILES

    big = {"tm": 128, "tn": 64, "tk": 16, "rm": 8, "rn": 4, "stages": 2}
    nn = space(Kind("mm", "complex64", "NN"), "gpu", "cuda")
    nt = space(Kind("mm", "complex64", "NT"), "gpu", "cuda")
    assert Variant.of("ctiles-async", **big, rot=3) in nn
    assert Variant.of("ctiles-async", **big, kt=1, rot=3) in nt
    for got in (nn, nt, space(Kind("mm", "complex64", "TN"), "gpu", "cuda")):
        assert not any(v.kw.get("pair") or v.kw.get("rot") == 2
                       or (v.kw.get("tk") == 32 and v.kw.get("rn") == 4) for v in got)
    for lay in ("NN", "NT", "TN"):
        offers = [c.params for c in enumerate_choices(normal_form(bp.mm("complex64", lay)),
                                                      [MM_LOCAL_TILES])]
        assert any(o["tk"] == 32 and o["rn"] == 4 for o in offers)
        assert any(o.get("pair") for o in offers) == (lay != "NT")
        assert any(o.get("rot") == 2 for o in offers)  # (A's rows; with kt NT's Bᵀ)
        assert any(o.get("rot") == 2 and o.get("kt") for o in offers) == (lay == "NT")


def test_nt_swizzled_is_one_xor_per_k_step_in_128_registers(compile_cuda: Any) -> None:
    """NVRTC (sm_90a, ptxas -v): NT's kt kernel with Bᵀ swizzled takes ≤ 128 registers with no
    cap and no spill (rotated: 150, one block per SM where two fit); its reads of Bᵀ are
    `base + (x ^ j)` for the 16 K steps j of a tile, four rows (immediate offsets) each."""
    from liftkit.codegen import CompileOptions, compile_program

    v = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, kt=1, rot=2)
    src = compile_program(derive(Kind("mm", "complex64", "NT"), v).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    reads = set(re.findall(r"stage_2\[[^\]]*\^ (\d+)\)[^\]]*\]", src))
    assert reads == {str(j) for j in range(1, 16)}, reads
    log = compile_cuda(src, "sm_90a", ["--ptxas-options=-v"], name="cgemm_swizzle.cu").log
    regs = re.search(r"Used (\d+) registers", log)
    assert regs and int(regs.group(1)) <= 128, log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log


def test_a_rows_swizzled_in_16_byte_units_read_pairs_at_adjacent_addresses() -> None:
    """NN rot=3: A's reads are `row + (2·s xor 2p)` and `row + (2·s xor 2p) + 1` for the K steps
    2p and 2p + 1 (the simplifier moves the odd step's low bit out of the xor), which ptxas
    merges into one 16-byte LDS.128 as it does without the swizzle."""
    from liftkit.codegen import CompileOptions, compile_program

    v = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, rot=3)
    src = compile_program(derive(Kind("mm", "complex64", "NN"), v).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    xors = re.findall(r"stage\[[^\]]*\(2\*\(l_id_\d+ % 8\) \^ (\d+)\)( \+ 1)?[^\]]*\]", src)
    assert {int(c) for c, _ in xors} == set(range(2, 16, 2))  # (2p = 0: no xor)
    assert {odd for _, odd in xors} == {"", " + 1"}


def test_nt_swizzled_in_16_byte_units_reads_both_operands_in_pairs_of_k_steps() -> None:
    """NT kt rot=3: A's and Bᵀ's reads of the K steps 2p and 2p + 1 are at adjacent addresses
    (`(… ^ 2p)` and `(… ^ 2p) + 1`), for both tiles: what lets ptxas read each pair as one
    LDS.128 (sm_90a: 96 LDS.128 per tile step where rot=1 takes 64 LDS.128 + 64 LDS.64)."""
    from liftkit.codegen import CompileOptions, compile_program

    v = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, kt=1, rot=3)
    src = compile_program(derive(Kind("mm", "complex64", "NT"), v).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    for tile in ("stage", "stage_2"):
        xors = re.findall(tile + r"\[[^\]]*\(2\*\(l_id_\d+ % 8\) \^ (\d+)\)( \+ 1)?[^\]]*\]", src)
        assert {int(c) for c, _ in xors} == set(range(2, 16, 2)), tile
        assert {odd for _, odd in xors} == {"", " + 1"}, tile


@pytest.mark.parametrize("layout,kw", [
    ("NN", dict(stages=2, rot=3)), ("NT", dict(stages=3, kt=1, rot=3)),
    ("NT", dict(stages=2, kt=1, rot=3))], ids=["NN", "NT-s3", "NT-s2"])
def test_the_shipped_capped_swizzled_kernels_fit_128_registers(layout: str, kw: dict,
                                                               compile_cuda: Any) -> None:
    """The capped forms the H100 profile ships at 4096 and 8192 (bound=2: two blocks per SM):
    NVRTC keeps them at ≤ 128 registers without spilling (uncapped: 138-160)."""
    from liftkit.codegen import CompileOptions, compile_program

    v = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, bound=2, slots=264, **kw)
    src = compile_program(derive(Kind("mm", "complex64", layout), v).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    log = compile_cuda(src, "sm_90a", ["--ptxas-options=-v"], name="cgemm_capped.cu").log
    regs = re.search(r"Used (\d+) registers", log)
    assert regs and int(regs.group(1)) <= 128, log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log


def test_a_swizzled_gather_prints_and_parses_back() -> None:
    """The IR's text form carries the xor (`(a ^ b)`): a swizzle printed and parsed back is
    the same program, gathering the same elements."""
    from liftkit.ir.parser import parse_program
    from liftkit.ir.printer import show

    swizzle, _ = rotated_rows(16, 8, 3)
    prog = D.fun([float32[256]], lambda x: swizzle << x)
    text = show(prog)
    assert "^" in text
    again = parse_program(text)
    assert show(again) == text
    x = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(interpret(again, x)), np.asarray(interpret(prog, x)))


@pytest.mark.parametrize("layout,kw", [("NN", dict(rot=3)), ("NT", dict(kt=1, rot=3)),
                                       ("NT", dict(kt=1, rot=2)), ("TN", dict(kt=1, pair=1))],
                         ids=["NN-rot3", "NT-rot3", "NT-rot2", "TN-pair"])
def test_the_opencl_form_runs_on_the_cpu_device(layout: str, kw: dict, tmp_path: Path) -> None:
    """mm-local-tiles over complex scalars swizzled (its C for OpenCL: the xor as `(a ^ b)`)
    or in pairs, compiled and run on the CPU OpenCL device: op(A)·op(B) exactly."""
    pytest.importorskip("pyopencl")
    from liftkit.backends.opencl import OpenCLRunner, list_devices
    from liftkit.backends.opencl.cache import KernelCache
    from liftkit.blas import programs as bp
    from liftkit.codegen import compile_program
    from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
    from liftkit.rewrite.strategies import rule, topdown

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    low = topdown(rule(MM_LOCAL_TILES, tm=64, tn=32, tk=16, rm=8, rn=4, unroll=1, w=1,
                       **kw)).derive(bp.mm("complex64", layout),
                                     rules={MM_LOCAL_TILES.name: MM_LOCAL_TILES}).final
    kernel = compile_program(low)
    assert ("^" in kernel.kernels[0].source) == bool(kw.get("rot"))
    want, X, Y = _operands(layout, 128, 64, 48, 9)
    got = OpenCLRunner("cpu", KernelCache(tmp_path)).run(kernel, X, Y,
                                                          sizes={"M": 128, "N": 64, "K": 48})
    np.testing.assert_array_equal(np.asarray(got).reshape(128, 64), want)


@pytest.mark.parametrize("layout", ["NN", "NR", "RN", "RR", "NT", "NC", "RT", "RC"])
def test_what_the_h100_profile_ships_is_sound_for_every_layout_it_serves(layout: str) -> None:
    """The swizzled ctiles-async the H100 profile ships for NN and NT (notes.cgemm25) serves
    the conjugating layouts too (R, C take N's and T's choice, session._tuned_kinds): each of
    its variants equals op(A)·op(B) bit for bit in the interpreter for each of them."""
    from liftkit.blas.profile import SHIPPED, Profile, file_name

    prof = Profile.load(SHIPPED / file_name("cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"))
    plain = layout.replace("R", "N").replace("C", "T")
    won = {Variant.from_json(w["variant"]) for key, w in prof.notes["cgemm25"]["won"].items()
           if key.split("|")[0] == plain}
    assert won
    for v in won:
        want, X, Y = _operands(layout, 128, 128, 32, 13)
        got = interpret(derive(Kind("mm", "complex64", layout), v).final, X, Y)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(v))
