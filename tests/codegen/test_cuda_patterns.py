"""Patterns beyond OpenCL (ir/patterns/cuda.py, codegen/cuda_patterns.py): type rules, meaning
(against the high-level composition they stand for), printing, the CUDA C they become (NVRTC
compiles it to PTX without a GPU), OpenCL's refusal in the pattern's words, and with a GPU
(`gpu` marker) the kernels run against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.views import CodegenError
from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.ir.parser import parse_program
from liftkit.ir.printer import show
from liftkit.programs.gpu import reduction_gpu
from liftkit.rewrite.rules.cuda import warp_reductions
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError

CUDA = CompileOptions(dialect="cuda")
N = size("N")


def warp_sums(op=add, z=0.0, group=256):  # type: ignore[no-untyped-def]
    """Per work-group: copy to local memory, one result per 32 elements by warp shuffles."""
    return fun([float32[N]], lambda x: join << mapWrg(0)(reduceWarp(op, z) << toLocal(mapLcl(0)(id)))
               << split(group) << x)


def chunk_sums(op=add, z=0.0):  # type: ignore[no-untyped-def]
    return fun([float32[N]], lambda x: join << map(reduce(op, z)) << split(32) << x)


def _ints(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, n).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# type rule, meaning, printing


@pytest.mark.parametrize("op,z", [(add, 0.0), (max, float("-inf")), (add, 3.0)])
def test_reduce_warp_means_a_reduction_of_each_run_of_32(op, z) -> None:  # type: ignore[no-untyped-def]
    x = _ints(1024, 1)
    got = interpret(warp_sums(op, z), x)
    assert got.shape == (32,) and got.dtype == np.float32
    np.testing.assert_array_equal(got, interpret(chunk_sums(op, z), x))


def test_reduce_warp_combines_in_the_butterfly_order() -> None:
    """Floats that round differently in another order: the interpreter follows the lanes'
    xor-butterfly (lane 0 ends with ((x0+x16)+(x8+x24))+…), as the generated code does."""
    x = (np.float32(1e8) * (np.arange(256) % 3 - 1) + np.arange(256)).astype(np.float32)
    lanes = x.reshape(-1, 32).astype(np.float32)
    for off in (16, 8, 4, 2, 1):
        lanes = lanes + lanes[:, np.arange(32) ^ off]
    np.testing.assert_array_equal(interpret(warp_sums(), x), lanes[:, 0])


def test_reduce_warp_type_and_text() -> None:
    p = warp_sums()
    assert "reduceWarp(add, 0.0f)" in show(p)
    assert show(parse_program(show(p))) == show(p)
    t = fun([float32[N]], lambda x: join << mapWrg(0)(reduceWarp(add, 0.0) << toLocal(mapLcl(0)(id)))
            << split(96) << x)
    assert "[float]_" in show(t)


@pytest.mark.parametrize("body,message", [
    (lambda x: join << mapWrg(0)(reduceWarp(add, 0.0) << toLocal(mapLcl(0)(id))) << split(48) << x,
     "a warp reduces 32 elements, which does not divide the length 48"),
    (lambda x: reduceWarp(add, 0.0) << x, "use it inside a mapWrg"),
    (lambda x: join << mapWrg(0)(join << mapLcl(0)(reduceWarp(add, 0.0)) << split(64)) << split(128) << x,
     "cannot be nested inside mapLcl"),
    (lambda x: join << mapWrg(0)(reduceWarp(sub, 0.0)) << split(64) << x,
     "declared associative and commutative"),
])
def test_reduce_warp_type_errors_in_words(body, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LiftTypeError, match=message):
        _check(fun([float32[N]], body))


def _check(p):  # type: ignore[no-untyped-def]
    from liftkit.ir.typecheck import check_program

    return check_program(p)


def test_reduce_warp_refuses_vectors() -> None:
    with pytest.raises(LiftTypeError, match="shuffles move int, long, float or double"):
        _check(fun([float4[N]], lambda x: join << mapWrg(0)(reduceWarp(add4, lit((0.0,) * 4, float4))
                                                            << toLocal(mapLcl(0)(id4))) << split(64) << x))


# ---------------------------------------------------------------------------------------------
# code: CUDA C, and OpenCL's refusal


def test_cuda_code_shuffles_and_lane_zero_writes() -> None:
    src = compile_program(warp_sums(), CUDA).source
    for off in (16, 8, 4, 2, 1):
        assert f"__shfl_xor_sync(0xffffffffu, lane, {off})" in src
    assert "& 31) == 0)" in src and "warp_sum" not in src.split("__shfl")[0].split("KERNEL(")[0]


def test_opencl_refuses_in_the_patterns_words() -> None:
    with pytest.raises(CodegenError, match=r"^reduceWarp needs the CUDA backend \(warp shuffles"):
        compile_program(warp_sums())


def test_work_groups_that_are_not_whole_warps_are_refused() -> None:
    with pytest.raises(CodegenError, match="runs on whole warps, but the work-group has 48 threads"):
        compile_program(warp_sums(), CompileOptions(dialect="cuda", local_size=(48,)))


def test_warp_derivation_of_asum_and_dot_is_sound_and_shuffles() -> None:
    for kind in ("asum", "dot"):
        low = reduction_gpu(kind, per_thread=1)
        d = warp_reductions(low)
        assert [s.choice.rule for s in d.steps] == ["tree-chunks-32"] * 2 + ["reduceWarp"] * 2
        n = 4 * 256 * 256
        xs = [_ints(n, 2), _ints(n, 3)][:1 if kind == "asum" else 2]
        np.testing.assert_array_equal(interpret(d.final, *xs), interpret(low, *xs))
        src = compile_program(d.final, CUDA).source
        assert src.count("__shfl_xor_sync") == 10  # five per kernel
        assert "iterate" not in src


def test_cuda_sources_compile_to_ptx() -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    from liftkit.backends.cuda import compile_cuda

    for p in (warp_sums(), warp_sums(max, float("-inf")), warp_reductions(reduction_gpu("dot")).final):
        for k in compile_program(p, CUDA).kernels:
            ptx = compile_cuda(k.source, "compute_90a", name=f"{k.name}.cu").ptx
            assert "shfl.sync.bfly.b32" in ptx


# ---------------------------------------------------------------------------------------------
# on a GPU


@pytest.mark.gpu
def test_warp_reductions_on_the_gpu_match_the_interpreter() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    x = _ints(1 << 16, 4)
    for p in (warp_sums(), warp_sums(max, float("-inf"))):
        np.testing.assert_array_equal(runner.run(compile_program(p, CUDA), x), interpret(p, x))
    for kind in ("asum", "dot"):
        p = warp_reductions(reduction_gpu(kind)).final
        n = 4 * 256 * 256 * 64
        xs = [np.random.default_rng(k).uniform(-1, 1, n).astype(np.float32) for k in range(2)]
        xs = xs[:1 if kind == "asum" else 2]
        ref = interpret(reduction_gpu(kind), *xs)
        np.testing.assert_allclose(runner.run(compile_program(p, CUDA), *xs), ref, rtol=1e-4)
