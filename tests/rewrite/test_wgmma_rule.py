"""mm-wgmma, mm-wgmma-async and mm-wgmma-pair (rewrite/rules/cuda.py): sound in the interpreter
(bit for bit on integer-valued inputs, over the products a program rounds with toTF32 or
truncates with truncTF32, constant and symbolic sizes), offered only where the program itself
gives up the precision, and reachable from the search's rule set and as
`tensor_core_mm(…, wgmma=True, copy=None | "cp.async" | "pair")`; the pair only over an even
number of row tiles."""

from __future__ import annotations

import os
from typing import Callable

import numpy as np
import pytest

from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import RULES_BY_NAME, normal_form
from liftkit.rewrite.rules.corpus import Case, run
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, CUDA_SEARCH_RULES, tensor_core_mm
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

SEED = int(os.environ.get("LIFTKIT_SOUNDNESS_SEED", "20150"))
TARGET = int(os.environ.get("LIFTKIT_CUDA_RULE_APPS", "60"))
M, N, K = size("M"), size("N"), size("K")
SHAPES = [(64, 64, 32), (128, 64, 64), (64, 128, 32), (128, 128, 32)]
RULE = CUDA_RULES_BY_NAME["mm-wgmma"]
ASYNC = CUDA_RULES_BY_NAME["mm-wgmma-async"]
PAIR = CUDA_RULES_BY_NAME["mm-wgmma-pair"]
TMA, TMA_PAIR = CUDA_RULES_BY_NAME["mm-wgmma-tma"], CUDA_RULES_BY_NAME["mm-wgmma-tma-pair"]


def _mm(T, cast, sizes):  # type: ignore[no-untyped-def]
    m, n, k = sizes if sizes else (M, N, K)
    c = (lambda X: map(map(cast)) << X) if cast else (lambda X: X)
    add_, mult_ = (add, mult) if T == float32 else (DOUBLE.add, DOUBLE.mult)
    return fun([T[k][m], T[n][k]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(add_, lit(0.0, T)) << map(mult_) << zip(rowA, colB)) << transpose << c(B)) << c(A))


def cases(last: tuple[int, int, int], label: str) -> Callable[[int], Case]:
    """The harness's programs: TF32-rounded and -truncated products over SHAPES and `last`,
    constant and symbolic sizes, integer-valued inputs (so every product is exact)."""
    made: dict[int, Case] = {}
    shapes = SHAPES + [last]

    def case(i: int) -> Case:
        if i not in made:
            cast = (toTF32, truncTF32)[i % 2]
            shape = shapes[(i // 2) % len(shapes)]
            symbolic = (i // 10) % 2 == 1
            prog = normal_form(_mm(float32, cast, None if symbolic else shape))
            rng = np.random.default_rng(SEED + i)
            m, n, k = shape
            xs = [rng.integers(-8, 9, (m, k)).astype(np.float32), rng.integers(-8, 9, (k, n)).astype(np.float32)]
            sizes = {"M": m, "N": n, "K": k} if symbolic else {}
            made[i] = Case(prog, xs, run(prog, xs, sizes), SEED + i, f"{label} {i}", sizes)
        return made[i]

    return case


def harness(last: tuple[int, int, int], label: str) -> Soundness:
    return Soundness({**RULES_BY_NAME, **CUDA_RULES_BY_NAME}, cases(last, label), lambda r: [],
                     lambda r, rng: [], SEED, per_step=3, walk=1, max_bases=200, patience=1)


HARNESS = harness((128, 256, 64), "mm-wgmma")
ASYNC_HARNESS = harness((256, 128, 64), "mm-wgmma-async")

def test_mm_wgmma_is_sound() -> None:
    try:
        stats = HARNESS.exercise(RULE, TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= TARGET


def test_mm_wgmma_only_where_the_program_gives_up_the_precision() -> None:
    """No warpgroup product for an FP32 program, one rounding one operand or the two
    differently, a BF16 or a double product; both TF32 casts are offered, constant sizes only
    with tiles dividing them."""
    shape = (128, 128, 64)
    assert not enumerate_choices(normal_form(_mm(float32, None, shape)), [RULE])
    assert not enumerate_choices(normal_form(_mm(float32, toBF16, shape)), [RULE])
    assert not enumerate_choices(normal_form(_mm(float64, None, shape)), [RULE])
    mixed = fun([float32[K][M], float32[N][K]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(add, 0.0) << map(mult) << zip(rowA, colB)) << transpose
        << map(map(truncTF32)) << B) << map(map(toTF32)) << A)
    assert not enumerate_choices(normal_form(mixed), [RULE])
    for cast in (toTF32, truncTF32):
        offered = [c.params for c in enumerate_choices(normal_form(_mm(float32, cast, shape)), [RULE])]
        assert {"tm": 128, "tn": 128, "tk": 32, "warps": 8, "stages": 3} in offered
        assert all(128 % c["tm"] == 0 and 128 % c["tn"] == 0 and 64 % c["tk"] == 0 for c in offered)
    # the mma.sync rule leaves truncation alone (its products round to nearest)
    assert not enumerate_choices(normal_form(_mm(float32, truncTF32, shape)), [CUDA_RULES_BY_NAME["mm-tensor-cores"]])


def test_the_derivation_and_the_search_reach_it() -> None:
    from liftkit.ir.printer import show

    d = tensor_core_mm("tf32z", 128, 256, 32, 8, 3, wgmma=True)
    assert "reduceWgmmaTF32Z 8 3 (λ" in show(d.final) and "truncTF32" not in show(d.final)
    assert RULE in CUDA_SEARCH_RULES
    with pytest.raises(ValueError, match="wgmma"):
        tensor_core_mm("f64", 128, 128, 32, 8, 3, wgmma=True)
    with pytest.raises(ValueError, match="wgmma"):
        tensor_core_mm("tf32z", 128, 128, 32, 8, 3)


@pytest.mark.parametrize("rule", [ASYNC, PAIR, TMA], ids=["mm-wgmma-async", "mm-wgmma-pair", "mm-wgmma-tma"])
def test_mm_wgmma_async_is_sound(rule) -> None:  # type: ignore[no-untyped-def]
    try:
        stats = ASYNC_HARNESS.exercise(rule, TARGET)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= TARGET


def test_mm_wgmma_tma_pair_is_sound() -> None:
    """Half the harness's programs truncate and half of those have an even number of row tiles:
    half the applications of the other rules."""
    try:
        stats = ASYNC_HARNESS.exercise(TMA_PAIR, TARGET // 2)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= TARGET // 2


def test_mm_wgmma_async_only_where_the_program_gives_up_the_precision() -> None:
    shape = (256, 128, 64)
    assert not enumerate_choices(normal_form(_mm(float32, None, shape)), [ASYNC])
    assert not enumerate_choices(normal_form(_mm(float32, toBF16, shape)), [ASYNC])
    assert not enumerate_choices(normal_form(_mm(float64, None, shape)), [ASYNC])
    mixed = fun([float32[K][M], float32[N][K]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(add, 0.0) << map(mult) << zip(rowA, colB)) << transpose
        << map(map(truncTF32)) << B) << map(map(toTF32)) << A)
    assert not enumerate_choices(normal_form(mixed), [ASYNC])
    for cast in (toTF32, truncTF32):
        offered = [c.params for c in enumerate_choices(normal_form(_mm(float32, cast, shape)), [ASYNC])]
        assert {"tm": 256, "tn": 128, "tk": 32, "warps": 8, "stages": 4} in offered
        assert all(256 % c["tm"] == 0 and 128 % c["tn"] == 0 and 64 % c["tk"] == 0 for c in offered)
        pairs = [c.params for c in enumerate_choices(normal_form(_mm(float32, cast, shape)), [PAIR])]
        assert pairs and all(256 // c["tm"] % 2 == 0 for c in pairs)  # row tiles in pairs
        assert {"tm": 128, "tn": 128, "tk": 32, "warps": 8, "stages": 4} in pairs
        assert all(c["tm"] <= 128 for c in pairs)  # 256-row pairs failed to launch on the H100


def test_the_async_derivations_and_the_search_reach_them() -> None:
    from liftkit.ir.printer import show

    d = tensor_core_mm("tf32", 256, 128, 32, 8, 4, wgmma=True, copy="cp.async")
    assert "reduceWgmmaAsyncTF32 8 4 (λ" in show(d.final) and "toTF32" not in show(d.final)
    assert d.name == "mm-tf32-wgmma-async" and PAIR in CUDA_SEARCH_RULES
    assert ASYNC not in CUDA_SEARCH_RULES  # its kernel is refused (wrong on the H100 for some tilings)
    assert "reduceWgmmaPairTF32Z 8 3" in show(tensor_core_mm("tf32z", 128, 256, 32, 8, 3, wgmma=True, copy="pair").final)
    with pytest.raises(ValueError, match="cp.async"):
        tensor_core_mm("tf32", 128, 128, 32, 4, 3, copy="cp.async")
    from liftkit.rewrite.core import RewriteError

    with pytest.raises(RewriteError, match="applies nowhere"):  # four 64-row blocks per warpgroup
        tensor_core_mm("tf32z", 128, 512, 32, 8, 4, wgmma=True, copy="cp.async")
