"""The FP64 tensor-core tests' shared pieces (test_cuda_mma_k8.py, test_cuda_mma_ahead.py): integer
operands, the check that a derived product keeps its meaning and prints back, and what
mm-tensor-cores offers for the FP64 product."""

from __future__ import annotations

from typing import Any

import numpy as np

from liftkit import dsl as D
from liftkit.ir.nodes import UserFun, walk
from liftkit.ir.parser import parse_program
from liftkit.ir.printer import show
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import MM_TENSOR_CORES
from liftkit.semantics import interpret
from liftkit.types import float64


def ints(shape: tuple[int, int], seed: int) -> np.ndarray:
    """Small integers as doubles: every product and sum exact, so results compare bit for bit."""
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float64)


def assert_sound_and_round_trips(final: Any, tm: int, tn: int, tk: int) -> None:
    """`final` computes A·B exactly (three k-tiles deep) and prints and parses back to itself."""
    A, B = ints((tm, 3 * tk), 1), ints((3 * tk, tn), 2)
    np.testing.assert_array_equal(interpret(final, A, B), A @ B)
    funs = {u.name: u for u in walk(final.body) if isinstance(u, UserFun)}  # id_double2, ...
    assert show(parse_program(show(final), funs)) == show(final)


def tensor_core_offers(pairs: bool = False, blocked: bool = False) -> list[dict[str, Any]]:
    """mm-tensor-cores' choices for the FP64 product (A stored k×m, B n×k), in order (with
    `pairs`, also the k-permuted reads: test_cuda_mma_pairs; with `blocked`, also the k rows in
    blocks of 4 (lines=2, 3) it offers after them: test_cuda_mma_blocked)."""
    M, N, K = D.size("M"), D.size("N"), D.size("K")
    p = D.fun([float64[K][M], float64[N][K]], lambda A, B: D.map(lambda rowA: D.join << D.map(
        lambda colB: D.reduce(D.DOUBLE.add, D.lit(0.0, float64)) << D.map(D.DOUBLE.mult)
        << D.zip(rowA, colB)) << D.transpose << B) << A)
    return [c.params for c in enumerate_choices(normal_form(p), [MM_TENSOR_CORES])
            if (pairs or not c.params.get("pairs")) and (blocked or c.params.get("lines") not in (2, 3))]


def deep(o: dict[str, Any]) -> bool:
    """An offer whose cp.async stages pass 128 KB (offered last, to the read-ahead loops only)."""
    return (o["tm"] + o["tn"]) * o["tk"] * 8 * max(o["staged"], 1) > 128 * 1024
