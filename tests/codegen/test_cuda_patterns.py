"""Patterns beyond OpenCL (ir/patterns/cuda.py, codegen/cuda_patterns.py): type rules, meaning
(against the high-level composition they stand for), printing, the CUDA C they become (NVRTC
compiles it to PTX without a GPU), OpenCL's refusal in the pattern's words, and with a GPU
(`gpu` marker) the kernels run against the interpreter."""

from __future__ import annotations

from typing import Any

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


def test_cuda_sources_compile_to_ptx(compile_cuda: Any) -> None:
    for p in (warp_sums(), warp_sums(max, float("-inf")), warp_reductions(reduction_gpu("dot")).final):
        for k in compile_program(p, CUDA).kernels:
            ptx = compile_cuda(k.source, "compute_90a", name=f"{k.name}.cu").ptx
            assert "shfl.sync.bfly.b32" in ptx


# ---------------------------------------------------------------------------------------------
# tensor cores: reduceMmaTF32 / reduceMmaBF16 / reduceMmaF64

M, K = size("M"), size("K")
MMA = {"tf32": (reduceMmaTF32, float32, toTF32), "bf16": (reduceMmaBF16, float32, toBF16),
       "f64": (reduceMmaF64, float64, None)}


def mm_high(kind: str):  # type: ignore[no-untyped-def]
    """The high-level product, with the operands rounded by the program where it says so."""
    _, T, cast = MMA[kind]
    c = (lambda X: map(map(cast)) << X) if cast else (lambda X: X)
    add_, mult_ = (add, mult) if T == float32 else (DOUBLE.add, DOUBLE.mult)
    return fun([T[K][M], T[N][K]], lambda A, B: map(lambda rowA: join << map(
        lambda colB: reduce(add_, lit(0.0, T)) << map(mult_) << zip(rowA, colB)) << transpose << c(B)) << c(A))


def mm_low(kind: str, tm: int = 32, tn: int = 16, tk: int = 16, warps: int = 2,
           staged: int = 1, lines: bool = False, layout: str = "NN") -> Any:
    """The tensor-core product; `layout` T letters: that operand is stored transposed (A as
    K×M, B as N×K) and read through a transpose, as liftkit.blas reads TN and NT."""
    from liftkit.ir.nodes import Lambda, Param
    from liftkit.ir import patterns as P
    from liftkit.rewrite.rules.cuda import mm_tensor_cores

    cls = {"tf32": P.ReduceMmaTF32, "bf16": P.ReduceMmaBF16, "f64": P.ReduceMmaF64}[kind]
    T = MMA[kind][1]
    ta, tb = layout[0] == "T", layout[1] == "T"
    A, B = Param("A", T[M][K] if ta else T[K][M]), Param("B", T[K][N] if tb else T[N][K])
    a, b = (transpose << A if ta else A), (transpose << B if tb else B)
    return Lambda((A, B), mm_tensor_cores(a, b, cls, tm, tn, tk, warps, staged, lines))


def test_casts_round_as_the_hardware_does() -> None:
    from liftkit.ir.patterns.cuda import round_bf16, round_tf32

    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -12, -(1 + 2 ** -11), 1 + 2 ** -8, 1 + 3 * 2 ** -8,
                  np.inf, 3e38], np.float32)
    np.testing.assert_array_equal(round_tf32(x)[:3], np.float32([1 + 2 ** -10, 1 + 2 ** -10, -(1 + 2 ** -10)]))
    np.testing.assert_array_equal(round_bf16(x)[3:5], np.float32([1, 1 + 4 * 2 ** -8]))  # ties to even
    assert np.isinf(round_tf32(x)[5]) and round_bf16(x[6:]).dtype == np.float32
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(interpret(fun([float32[N]], lambda v: map(toTF32) << v), r), round_tf32(r))


@pytest.mark.parametrize("kind", ["tf32", "bf16", "f64"])
@pytest.mark.parametrize("staged", [0, 1, 3])
def test_mma_means_the_product_of_the_rounded_operands(kind: str, staged: int) -> None:
    T = MMA[kind][1]
    rng = np.random.default_rng(5)
    A, B = rng.integers(-8, 9, (64, 48)).astype(T.dtype), rng.integers(-8, 9, (48, 32)).astype(T.dtype)
    got = interpret(mm_low(kind, staged=staged), A, B)
    assert got.dtype == T.dtype
    np.testing.assert_array_equal(got, A @ B)
    np.testing.assert_array_equal(got, interpret(mm_high(kind), A, B))
    p = mm_low(kind, staged=staged)
    assert show(parse_program(show(p))) == show(p)
    # non-integer data: the pattern rounds its operands exactly as the casts do
    A, B = rng.standard_normal((64, 48)).astype(T.dtype), rng.standard_normal((48, 32)).astype(T.dtype)
    want = interpret(mm_high(kind), A, B).astype(np.float64)
    np.testing.assert_allclose(interpret(mm_low(kind, staged=staged), A, B), want,
                               rtol=1e-5 if kind != "f64" else 1e-12, atol=1e-4 if kind != "f64" else 1e-12)


@pytest.mark.parametrize("tiles,message", [
    ((24, 16, 16, 2, 0), "do not fit the 16×8×8 instruction"),
    ((32, 16, 12, 2, 0), "do not fit"),
])
def test_mma_type_errors_in_words(tiles, message) -> None:  # type: ignore[no-untyped-def]
    from liftkit.ir import patterns as P
    from liftkit.ir.nodes import Lambda, Param

    tm, tn, tk, w, _ = tiles
    A, B = Param("A", float32[K][M]), Param("B", float32[N][K])
    tiles_of = lambda t: compose(map(compose(transpose, map(split(tk)))), split(t))  # noqa: E731
    body = join << mapWrg(1)(lambda ar: map(join) << transpose << mapWrg(0)(
        lambda bc: join << reduceMmaTF32(w, lambda p: p, 0.0) << zip(ar, bc)) << tiles_of(tn) << transpose << B) \
        << tiles_of(tm) << A
    with pytest.raises(LiftTypeError, match=message):
        _check(Lambda((A, B), body))
    assert P.ReduceMmaTF32.shape == (16, 8, 8)


def test_mma_cuda_code_and_ptx(compile_cuda: Any) -> None:
    for kind, instr in (("tf32", "m16n8k8.row.col.f32.tf32.tf32.f32"), ("bf16", "m16n8k16.row.col.f32.bf16.bf16.f32"),
                        ("f64", "m8n8k4.row.col.f64.f64.f64.f64")):
        for staged in (0, 1):
            src = compile_program(mm_low(kind, 64, 32, 16, 2, staged), CUDA).source
            assert f"mma.sync.aligned.{instr}" in src
            assert ("cvt.rna.tf32.f32" in src) == (kind == "tf32")
            assert ("__shared__" in src) == bool(staged)

    for kind in MMA:
        for staged in (1, 2):
            for k in compile_program(mm_low(kind, 64, 64, 16, 4, staged), CUDA).kernels:
                ptx = compile_cuda(k.source, "compute_90a", name=f"{k.name}.cu").ptx
                assert "mma.sync.aligned" in ptx and ("cp.async" in ptx) == (staged > 1)


def test_fp64_takes_hoppers_shapes_with_amperes_fallback_and_vector_reads() -> None:
    """FP64 on 16-row fragments: m16n8k{16,8,4} by the tile's k under `__CUDA_ARCH__ >= 900`,
    m8n8k4 on the same accumulators otherwise; 8-row warp tiles only m8n8k4. The staged layouts
    make each lane's fragment elements 16-byte vectors (double2/float4 reads of local memory)."""
    for tk, k in ((16, 16), (8, 8)):
        src = compile_program(mm_low("f64", 64, 64, tk, 4, 2), CUDA).source
        hopper = src[src.index("#if __CUDA_ARCH__ >= 900"):src.index("#else")]
        ampere = src[src.index("#else"):src.index("#endif", src.index("#else"))]
        assert f"m16n8k{k}.row.col.f64" in hopper and "m8n8k4" not in hopper
        assert "m8n8k4.row.col.f64" in ampere and "m16n8" not in ampere
        assert "double2 frag" in hopper and "__shared__ __align__(16) double stage" in src
    src = compile_program(mm_low("f64", 8, 8, 4, 1, 1), CUDA).source
    assert "m8n8k4.row.col.f64" in src and "m16n8" not in src and "#if __CUDA_ARCH__" not in src
    src = compile_program(mm_low("tf32", 64, 64, 16, 4, 3), CUDA).source
    assert "float4 frag" in src
    src = compile_program(mm_low("tf32", 64, 64, 16, 4, 0), CUDA).source  # in place: element reads
    assert "frag" not in src


@pytest.mark.parametrize("kind", ["tf32", "f64"])
def test_line_staging_means_the_tiles_and_copies_16_bytes(kind: str) -> None:
    """`lines`: the tiles copied in 16-byte chunks (cp.async.cg) into rotated rows; the same
    product in the interpreter (exactly, on integers), fragment reads of single elements."""
    T = MMA[kind][1]
    rng = np.random.default_rng(11)
    A, B = rng.integers(-8, 9, (128, 32)).astype(T.dtype), rng.integers(-8, 9, (32, 128)).astype(T.dtype)
    for tk in (16, 8):
        p = mm_low(kind, 64, 64, tk, 4, 2, lines=True)
        np.testing.assert_array_equal(interpret(p, A, B), A @ B)
        src = compile_program(p, CUDA).source
        assert "cp.async.cg.shared.global [%0], [%1], 16;" in src and "cp.async.ca" not in src
        assert "frag" not in src  # rotated rows: the lanes' elements are not adjacent
    from liftkit.rewrite.rules.cuda import line_layout
    from liftkit.ir import patterns as P

    assert line_layout(P.ReduceMmaF64, 64, 16, 128, False) == (2, 8, 1)  # rows of one line
    assert line_layout(P.ReduceMmaF64, 64, 8, 128, True) == (2, 32, 1)  # B: k rows of 64 doubles
    assert line_layout(P.ReduceMmaBF16, 64, 16, 128, False) is None


@pytest.mark.parametrize("layout", ["TN", "NT", "TT"])
def test_line_staging_copies_transposed_operands_along_their_memory_rows(layout: str,
                                                                        compile_cuda: Any) -> None:
    """A transposed operand's tile (A of TN, B of NT) is copied in 16-byte chunks of its stored
    rows (each cp.async reads one 16-byte vector of the array, never a vector built from
    separate loads, which cp.async cannot take) and means the same product; NVRTC compiles it."""
    import re

    rng = np.random.default_rng(12)
    for kind, tiles in (("f64", (128, 64, 16, 4, 4)), ("f64", (64, 64, 8, 4, 2)), ("tf32", (64, 64, 16, 4, 3))):
        T = MMA[kind][1]
        A, B = rng.integers(-8, 9, (128, 32)).astype(T.dtype), rng.integers(-8, 9, (32, 128)).astype(T.dtype)
        xs = (A.T.copy() if layout[0] == "T" else A, B.T.copy() if layout[1] == "T" else B)
        p = mm_low(kind, *tiles, lines=True, layout=layout)
        np.testing.assert_array_equal(interpret(p, *xs), A @ B)
        kernels = compile_program(p, CUDA).kernels
        for k in kernels:
            copies = re.findall(r'cp\.async\.(\w+)\.shared\.global .*?"l"\(&(.*?)\)\);', k.source)
            vec = "double2" if kind == "f64" else "float4"
            assert copies and all(level == "cg" and src.startswith(f"((const {vec}*)") for level, src in copies)

    for k in kernels:
        assert "cp.async.cg" in compile_cuda(k.source, "sm_90", k.build_options, name=f"{k.name}.cu").ptx


def test_local_memory_beyond_48_kb_comes_from_the_launch(compile_cuda: Any) -> None:
    """A block declares at most 48 KB of shared memory statically: a deeper pipeline's buffers
    are carved from dynamic shared memory (16-byte aligned), whose size the kernel carries for
    its launch; up to 48 KB nothing changes."""
    k = compile_program(mm_low("f64", 128, 64, 16, 4, 4), CUDA).kernels[0]
    assert k.dynamic_shared == 4 * (128 + 64) * 16 * 8
    assert "extern __shared__ __align__(16) unsigned char lk_dynamic_shared[];" in k.source
    assert "double* stage = (double*)(lk_dynamic_shared + 0);" in k.source
    assert f"double* stage_2 = (double*)(lk_dynamic_shared + {4 * 128 * 16 * 8});" in k.source
    small = compile_program(mm_low("f64", 128, 64, 16, 4, 2), CUDA).kernels[0]
    assert small.dynamic_shared == 0 and "__shared__ __align__(16) double stage[" in small.source

    assert "mma.sync" in compile_cuda(k.source, "compute_90a", name="dyn.cu").ptx


# ---------------------------------------------------------------------------------------------
# toLocalAsync: cp.async pipelines


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_async_pipeline_code(stages: int) -> None:
    """s-1 tiles issued before the loop; in it, wait_group s-2 (tile k landed), one barrier,
    then tile k+s-1 issued (guarded) into the buffer tile k-1 used, one commit per tile, then
    the products; s buffers per operand; every copy drained after the loop."""
    src = compile_program(mm_low("tf32", 32, 16, 16, 2, stages), CUDA).source
    loop = src[src.index("for (int i = 0;"):]
    before = src[:src.index("for (int i = 0;")]
    assert before.count("cp.async.commit_group") == stages - 1
    assert f"if (i + {stages - 1} < K/16)" in loop
    assert loop.count("cp.async.commit_group") == 1
    wait, bar = loop.index(f"cp.async.wait_group {stages - 2};"), loop.index("__syncthreads();")
    assert wait < bar < loop.index(f"if (i + {stages - 1} < K/16)") < loop.index("mma.sync")
    assert loop[:loop.rindex("cp.async.wait_group 0;")].count("__syncthreads();") == 1
    assert f"__shared__ __align__(16) float stage[{32 * 16 * stages}];" in src
    assert "cp.async.ca.shared.global [%0], [%1], 4;" in src


def test_async_copies_in_words() -> None:
    from liftkit.ir.patterns.cuda import ToLocalAsync

    with pytest.raises(LiftTypeError, match="use it in the staging function of a reduceMma"):
        _check(fun([float32[N]], lambda x: join << mapWrg(0)(toLocalAsync(2, mapLcl(0)(id))) << split(64) << x))
    with pytest.raises(LiftTypeError, match="the pipeline depth must be a constant from 2 to 8"):
        _check(mm_low("tf32", staged=9))
    with pytest.raises(CodegenError, match="^reduceMmaTF32 needs the CUDA backend"):
        compile_program(mm_low("tf32", staged=2))
    assert ToLocalAsync.refusal.startswith("toLocalAsync needs the CUDA backend (cp.async); OpenCL C "
                                           "has no asynchronous copy into local memory")


def test_mma_refused_on_opencl_and_for_wrong_work_groups() -> None:
    with pytest.raises(CodegenError, match=r"^reduceMmaTF32 needs the CUDA backend \(tensor cores"):
        compile_program(mm_low("tf32"))
    with pytest.raises(CodegenError, match="runs on 2 warps \\(64 threads\\), but the work-group has 128"):
        compile_program(mm_low("tf32"), CompileOptions(dialect="cuda", local_size=(128,)))


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


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["tf32", "bf16", "f64"])
def test_mma_on_the_gpu_matches_the_interpreter(kind: str) -> None:
    """Integer-valued inputs: every precision is exact, so the kernel must match bit for bit;
    then random normal data within the precision's tolerance of float64 NumPy."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    T = MMA[kind][1]
    rng = np.random.default_rng(7)
    # in place, local, cp.async 3 and 2 deep; k-steps of 8 (FP64: m16n8k8); 8-row warp tiles
    # (FP64: m8n8k4)
    tilings = [(64, 64, 16, 4, 0), (64, 64, 16, 4, 1), (64, 64, 16, 4, 3), (32, 64, 16, 4, 4)]
    if kind != "bf16":
        tilings.append((64, 64, 8, 4, 2))
    if kind == "f64":
        tilings += [(8, 8, 4, 1, 1), (128, 64, 16, 4, 4)]  # the last: 96 KB of dynamic shared memory
    if kind == "tf32":
        tilings.append((128, 64, 32, 4, 3))  # 72 KB of dynamic shared memory
    if kind != "bf16":  # 16-byte copies over whole lines into rotated rows
        tilings += [(64, 64, 16, 4, 2, True), (64, 64, 8, 4, 3, True), (64, 64, 16, 4, 2, True, "TN"),
                    (64, 64, 16, 4, 3, True, "NT")]  # transposed operands copied along their rows
    for tiles in tilings:
        p = mm_low(kind, *tiles)
        lay = tiles[6] if len(tiles) > 6 else "NN"
        stored = lambda A, B: (A.T.copy() if lay[0] == "T" else A, B.T.copy() if lay[1] == "T" else B)  # noqa: E731
        A, B = rng.integers(-8, 9, (128, 96)).astype(T.dtype), rng.integers(-8, 9, (96, 192)).astype(T.dtype)
        np.testing.assert_array_equal(runner.run(compile_program(p, CUDA), *stored(A, B)), A @ B)
        A, B = rng.standard_normal((128, 96)).astype(T.dtype), rng.standard_normal((96, 192)).astype(T.dtype)
        got = runner.run(compile_program(p, CUDA), *stored(A, B)).astype(np.float64)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = {"tf32": 2e-3, "bf16": 1e-2, "f64": 1e-13}[kind]
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < tol
