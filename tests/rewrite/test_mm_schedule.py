"""The rule `mm-split-tail` and the pattern `reduceSplitTail` (rewrite/rules/mm_schedule.py,
ir/patterns/cuda_schedule.py, codegen/cuda_schedule.py): soundness in the interpreter (bit for
bit on integer-valued inputs, float4 and double2 tiles, every offered schedule), where the rule
must not apply, the meaning (parts folded from zero and added in order), the CUDA C (the grid's
third dimension, the tail test, the ordered fix-up; NVRTC compiles it without a GPU), OpenCL's
refusal, and (gpu marker) split and unsplit tiles against NumPy on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.arith import cst
from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.views import CodegenError
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.cuda_schedule import ReduceSplitTail
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME, TILES_ASYNC
from liftkit.rewrite.rules.mm import MM_LOCAL_TILES
from liftkit.rewrite.rules.mm_schedule import MM_SPLIT_TAIL, SCHEDULES, sgemm_schedule_derivation
from liftkit.rewrite.strategies import rule, topdown
from liftkit.semantics import interpret
from liftkit.types import float32, float64

CUDA = CompileOptions(dialect="cuda")
RULES = {**CUDA_RULES_BY_NAME, MM_LOCAL_TILES.name: MM_LOCAL_TILES, MM_SPLIT_TAIL.name: MM_SPLIT_TAIL}


def _mm(T, zero: float = 0.0):  # type: ignore[no-untyped-def]
    M, N, K = D.size("M"), D.size("N"), D.size("K")
    add_, mult_ = (D.add, D.mult) if T == float32 else (D.DOUBLE.add, D.DOUBLE.mult)
    return D.fun([T[K][M], T[N][K]], lambda A, B: D.map(lambda rowA: D.join << D.map(
        lambda colB: D.reduce(add_, D.lit(zero, T)) << D.map(mult_) << D.zip(rowA, colB))
        << D.transpose << B) << A)


def _ints(shape: tuple[int, int], T, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(T.dtype)


def _async(T, tiles, stages: int = 2):  # type: ignore[no-untyped-def]
    tm, tn, tk, rm, rn, w = tiles
    low = topdown(rule(MM_LOCAL_TILES, tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, unroll=1, w=w)).derive(
        _mm(T), rules=RULES).final
    return normal_form(topdown(rule(TILES_ASYNC, stages=stages)).derive(normal_form(low), rules=RULES).final)


CASES = [(float32, 64, 96, 80, (32, 32, 16, 4, 4, 4)), (float64, 32, 64, 48, (32, 32, 16, 4, 4, 2))]


@pytest.mark.parametrize("case", CASES, ids=["float4", "double2"])
def test_split_tail_is_sound(case) -> None:  # type: ignore[no-untyped-def]
    """Every offered schedule, at the one tile loop it applies to, computes A·B bit for bit on
    integer-valued inputs (K/tk = 5 or 3 tiles: parts of unequal length, some empty)."""
    T, m, n, k, tiles = case
    low = _async(T, tiles)
    offers = enumerate_choices(low, [MM_SPLIT_TAIL])
    assert [tuple(c.params.values()) for c in offers] == list(SCHEDULES)
    assert len({c.path for c in offers}) == 1
    A, B = _ints((m, k), T, 1), _ints((k, n), T, 2)
    for c in offers:
        new = topdown(rule(MM_SPLIT_TAIL, **c.params)).derive(low, rules=RULES).final
        assert sum(isinstance(x, ReduceSplitTail) for x in walk(new.body)) == 1
        np.testing.assert_array_equal(interpret(new, A, B), A @ B)


def test_split_tail_keeps_off_what_it_must_not_touch() -> None:
    """Not before tiles-async (no cp.async loop), not twice, not where the sum starts from a
    non-zero value (each part would add it again)."""
    plain = normal_form(topdown(rule(MM_LOCAL_TILES, tm=32, tn=32, tk=16, rm=4, rn=4, unroll=1, w=4))
                        .derive(_mm(float32), rules=RULES).final)
    assert not enumerate_choices(plain, [MM_SPLIT_TAIL])
    once = normal_form(topdown(rule(MM_SPLIT_TAIL, parts=4, slots=396, bound=0)).derive(
        _async(float32, (32, 32, 16, 4, 4, 4)), rules=RULES).final)
    assert not enumerate_choices(once, [MM_SPLIT_TAIL])
    low = _async(float32, (32, 32, 16, 4, 4, 4))
    zeros = [x for x in walk(low.body) if getattr(x, "value", None) is not None
             and np.ndim(x.value) == 5]
    assert len(zeros) == 1  # the register blocks' zeros; a non-zero start is refused
    from liftkit.ir.nodes import Literal

    ones = Literal(np.ones_like(np.asarray(zeros[0].value)), zeros[0].type)
    shifted = _replace(low, zeros[0], ones)
    assert not enumerate_choices(normal_form(shifted), [MM_SPLIT_TAIL])


def _replace(node, old, new):  # type: ignore[no-untyped-def]
    from liftkit.ir.nodes import FunCall, Lambda
    from liftkit.ir.patterns.base import Pattern

    if node is old:
        return new
    if isinstance(node, FunCall):
        return FunCall(_replace(node.f, old, new), tuple(_replace(a, old, new) for a in node.args))
    if isinstance(node, Lambda):
        return Lambda(node.params, _replace(node.body, old, new))
    if isinstance(node, Pattern) and node.functions():
        return node.with_functions([_replace(f, old, new) for f in node.functions()])
    return node


def test_the_meaning_adds_the_parts_in_order() -> None:
    """On floats the parts' sums, each folded from zero, are added in part order: the result is
    that reassociation, not the sequential fold (which differs in the last bits)."""
    low = _async(float32, (32, 32, 16, 4, 4, 4))
    new = topdown(rule(MM_SPLIT_TAIL, parts=3, slots=396, bound=0)).derive(low, rules=RULES).final
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (32, 96)).astype(np.float32)
    B = rng.uniform(-1, 1, (96, 32)).astype(np.float32)
    got = interpret(new, A, B)
    parts = [interpret(low, np.ascontiguousarray(A[:, q * 32:(q + 1) * 32]),
                       np.ascontiguousarray(B[q * 32:(q + 1) * 32])) for q in range(3)]
    np.testing.assert_array_equal(got, (parts[0] + parts[1]) + parts[2])
    assert not np.array_equal(interpret(low, A, B), got)


def test_the_schedule_in_cuda(compile_cuda: Any) -> None:
    """Parts along the grid's z; the tail test against the slots; each part's range of the
    loop; the ordered fix-up through flags and a workspace; the bound as __launch_bounds__;
    NVRTC compiles it."""
    d = sgemm_schedule_derivation(4096, 4096, 4096, 128, 64, 32, 8, 8, 2, 4, 396)
    prog = compile_program(d.final, CUDA)
    k = prog.kernels[0]
    assert k.ndrange.global_size[2] == cst(4) and k.ndrange.local_size == (8, 16, 1)
    src = k.source
    assert "sk_tiles % 396" in src and "if (!sk_split && sk_part > 0) return;" in src
    assert "for (int i = sk_k0; i < sk_k1; i += 1)" in src and "if (i + 1 < sk_k1)" in src
    # flags and workspace are kernel parameters (temporaries the host allocates: the flags
    # zero-filled), never static arrays two overlapping launches would share
    assert "static unsigned" not in src and "int* sk_flags,\n    float* sk_ws," in src
    args = [(a.kind, a.name, a.ctype) for a in k.args]
    assert args[3:5] == [("buffer", "sk_flags", "int*"), ("buffer", "sk_ws", "float*")]
    temps = {b.name: b for b in prog.buffers if b.role == "temporary"}
    flags, ws = temps[k.args[3].buffer], temps[k.args[4].buffer]
    assert flags.zeroed and flags.nbytes == cst(396 * 4) and not ws.zeroed and ws.nbytes == cst(396 * 64 * 128 * 4)
    assert not any(b.zeroed for b in prog.buffers if b.role != "temporary")
    assert "while (atomicAdd(&sk_flags[sk_slot], 0) != sk_part)" in src and "__trap();" in src
    assert src.index("atomicExch(&sk_flags[sk_slot], sk_part + 1);") \
        < src.index("atomicExch(&sk_flags[sk_slot], 0);") < src.index("((float4*)out)[")
    assert "__launch_bounds__" not in src
    bound = compile_program(sgemm_schedule_derivation(4096, 4096, 4096, 128, 64, 32, 8, 8, 2, 1, 528, 4).final,
                            CUDA).kernels[0]
    assert "__launch_bounds__(128, 4)" in bound.source and len(bound.ndrange.global_size) == 2
    assert "sk_" not in bound.source and not any(b.role == "temporary" for b in
                                                 compile_program(sgemm_schedule_derivation(
                                                     4096, 4096, 4096, 128, 64, 32, 8, 8, 2, 1, 528, 4).final, CUDA).buffers)

    ptx = compile_cuda(src, "compute_90a", name="sgemm_tail.cu").ptx
    assert "cp.async.cg.shared.global" in ptx and "atom.global" in ptx


def test_opencl_refuses_the_schedule_in_words() -> None:
    d = sgemm_schedule_derivation(4096, 4096, 4096, 128, 64, 32, 8, 8, 2, 4, 396)
    with pytest.raises(CodegenError, match=r"^reduceSplitTail needs the CUDA backend"):
        compile_program(d.final)


@pytest.mark.gpu
def test_split_and_whole_tiles_on_the_gpu() -> None:
    """4096×4096 of 128×64 tiles = 2048 tiles: 396 slots leave a tail of 68 tiles split 3 or 4
    ways (K = 128: 4 tiles of 32, some parts of one tile, some empty), the others whole;
    256×384: 12 tiles, all split; twice each (each launch its own zero-filled flags)."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for (m, n, k), (parts, slots, bound) in [((4096, 4096, 128), (4, 396, 0)), ((4096, 4096, 128), (3, 396, 0)),
                                             ((256, 384, 512), (3, 396, 0)), ((256, 384, 512), (4, 528, 4))]:
        d = sgemm_schedule_derivation(m, n, k, 128, 64, 32, 8, 8, 2, parts, slots, bound)
        prog = compile_program(d.final, CUDA)
        for seed in (3, 4):
            A, B = _ints((m, k), float32, seed), _ints((k, n), float32, seed + 1)
            np.testing.assert_array_equal(runner.run(prog, A, B), A @ B)


@pytest.mark.gpu
def test_split_tiles_on_two_streams_at_once() -> None:
    """The same split kernel (liftkit.blas's tiles-async with the tail split: every one of
    1024×1024's 128 tiles split 4 ways) called through two sessions, each on its own stream,
    their calls interleaved and none waited on until all are issued: each session's workspace
    holds its own flags and partial sums, so both results are exact (integer-valued inputs),
    and a session's later calls reuse its flags (left at zero by every launch)."""
    from liftkit.backends.cuda import cuda_available
    from liftkit.blas import Session
    from liftkit.blas.codelets import Variant

    if not cuda_available():
        pytest.skip("no CUDA GPU")
    v = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, split=4, slots=396,
                   bound=3)
    sessions = [Session("gpu", backend="cuda", warn=False) for _ in range(2)]
    for s in sessions:
        s.choose = lambda kind, sizes: v  # type: ignore[method-assign]
    ins = [(_ints((1024, 4096), float32, 2 * i), _ints((4096, 1024), float32, 2 * i + 1)) for i in range(2)]
    futures = [(i, s.gemm(*ins[i])) for _ in range(3) for i, s in enumerate(sessions)]
    for i, f in futures:
        A, B = ins[i]
        np.testing.assert_array_equal(f.result(), A @ B)
