"""Properties of the generated OpenCL text: simplified indices, control flow, barriers, switches."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CodegenError, CompileOptions, compile_program
from liftkit.dsl import *  # noqa: F403
from liftkit.programs import PROGRAMS

# ruff: noqa: F405
N = size("N")


def src(name: str, **opts) -> str:
    return compile_program(PROGRAMS[name].program, CompileOptions(**opts)).source


def test_transpose_reads_with_the_simplified_index():
    s = src("transpose")
    assert "x[l_id*N + wg_id]" in s
    raw = src("transpose", simplify_indices=False)
    read = re.search(r"id\(x\[(.*)\]\)", raw).group(1)
    assert "/" in read and "%" in read and len(read) > 40  # the unsimplified Fig. 6 form


def test_partial_dot_matches_figure_7_structure():
    s = src("partial_dot")
    assert "local float tmp[64];" in s
    assert "int l_id = get_local_id(0);" in s  # first mapLcl: exactly one element per thread
    assert "if (get_local_id(0) < size/2)" in s  # iterate's mapLcl: at most one
    assert "for (int wg_id = get_group_id(0); wg_id < N/128; wg_id += get_num_groups(0))" in s
    assert s.count("barrier(CLK_LOCAL_MEM_FENCE);") >= 2


def test_control_flow_simplification_switch():
    on, off = src("partial_dot"), src("partial_dot", simplify_control_flow=False)
    assert "if (get_local_id(0)" in on
    assert "if (get_local_id(0)" not in off
    assert off.count("for (") > on.count("for (")


def test_barrier_elimination_switch():
    prog = fun([float32[N]], lambda x: join << mapWrg(0)(
        mapLcl(0)(id) << toLocal(mapLcl(0)(id))) << split(64) << x)
    on = compile_program(prog).source
    off = compile_program(prog, CompileOptions(eliminate_barriers=False)).source
    assert on.count("barrier(") < off.count("barrier(")


def test_a_tile_copied_in_rounds_needs_one_barrier():
    """mapSeq(mapLcl(id)) copies a tile in rounds; no round reads another's writes, so one
    barrier after the loop suffices — and the threads then read each other's values correctly."""
    import numpy as np

    from liftkit.backends.opencl import list_devices, run_opencl
    from liftkit.semantics import interpret

    prog = fun([float32[N]], lambda x: join << mapWrg(0)(
        lambda chunk: join << mapLcl(0)(toGlobal(mapSeq(id)) << reduceSeq(add, 0.0))
        << split(4) << join << toLocal(mapSeq(mapLcl(0)(id))) << transpose << split(4) << chunk)
        << split(256) << x)
    on = compile_program(prog).source
    off = compile_program(prog, CompileOptions(eliminate_barriers=False)).source
    copy = re.compile(r"for \(int i = 0; i < 4; i \+= 1\) \{\n(.*?)\n    \}\n([^\n]*)\n", re.S)
    inside, after = copy.search(on).groups()
    assert "barrier" not in inside and after.strip() == "barrier(CLK_LOCAL_MEM_FENCE);", on
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in copy.search(off).group(1)
    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    x = np.random.default_rng(3).random(1024, dtype=np.float32)
    np.testing.assert_allclose(run_opencl(prog, x, device="cpu"), interpret(prog, x), rtol=1e-6)


def test_tiles_copied_side_by_side_share_one_barrier():
    """let(copy x tile, copy y tile): neither copy reads the other, so one barrier after both
    suffices; the threads then read each other's values of both tiles correctly."""
    import numpy as np

    from liftkit.backends.opencl import list_devices, run_opencl
    from liftkit.semantics import interpret

    def body(xs, ys):
        copy = toLocal(mapLcl(0)(id))
        return let(copy << xs, copy << ys, lambda lx, ly: toGlobal(mapLcl(0)(
            lambda p: add(p[0], p[1]))) << zip(reorderStride(8) << lx, ly))

    prog = fun([float32[N], float32[N]], lambda x, y: join << mapWrg(0)(
        lambda c: body(c[0], c[1])) << zip(split(64) << x, split(64) << y))
    on = compile_program(prog).source
    assert on.count("barrier(CLK_LOCAL_MEM_FENCE);") == 1, on
    off = compile_program(prog, CompileOptions(eliminate_barriers=False)).source
    assert off.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2
    assert on.index("tmp_2[") < on.index("barrier(CLK_LOCAL_MEM_FENCE);")  # after both copies
    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    x, y = (np.random.default_rng(k).random(256, dtype=np.float32) for k in (1, 2))
    np.testing.assert_allclose(run_opencl(prog, x, y, device="cpu"), interpret(prog, x, y), rtol=1e-6)


def test_a_reduction_can_carry_a_tuple_of_arrays() -> None:
    """reduceSeq with a tuple of private arrays as accumulator (a register block and a
    prefetched tile, as in mm_nvidia(prefetch=True)): each component is updated in place."""
    import numpy as np

    from liftkit.backends.opencl import list_devices, run_opencl
    from liftkit.semantics import interpret

    def step(acc, x):
        return tuple_(mapSeqUnroll(lambda a: add(a, x)) << acc[0],
                      mapSeqUnroll(lambda a: mult(a, 2.0)) << acc[1])

    def body(chunk):
        ones, zeros = (lit(np.full(2, v, np.float32), float32[2]) for v in (1.0, 0.0))
        init = tuple_(toPrivate(mapSeqUnroll(id)) << zeros, toPrivate(mapSeqUnroll(id)) << ones)
        return let(at(reduceSeq(step, init) << chunk, 0), lambda r: toGlobal(
            mapSeqUnroll(lambda p: add(p[0], p[1]))) << zip(r[0], r[1]))

    prog = fun([float32[N]], lambda xs: join << mapGlb(0)(body) << split(8) << xs)
    src = compile_program(prog).source
    assert src.count("for (int i") == 1 and "tmp_0 = add(tmp_0, xs[" in src
    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    x = np.random.default_rng(4).random(64, dtype=np.float32)
    np.testing.assert_allclose(run_opencl(prog, x, device="cpu"), interpret(prog, x), rtol=1e-6)


def test_a_tuple_accumulator_must_live_in_memory() -> None:
    lits = tuple_(lit(np.zeros(2, np.float32), float32[2]), lit(np.ones(2, np.float32), float32[2]))

    def body(chunk):
        reduced = reduceSeq(lambda acc, x: tuple_(mapSeq(lambda a: add(a, x)) << acc[0], acc[1]),
                            lits) << chunk
        return let(at(reduced, 0), lambda r: toGlobal(mapSeq(id)) << r[0])

    prog = fun([float32[N]], lambda xs: join << mapGlb(0)(body) << split(8) << xs)
    with pytest.raises(CodegenError, match=r"every component must be an array computed into memory"):
        compile_program(prog)


def test_the_kernel_structure_check_names_a_race_without_generating_code() -> None:
    from liftkit.codegen.compiler import kernel_structure_error

    racy = fun([float32[N]], lambda x: mapGlb(0)(
        lambda row: toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << mapGlb(1)(id) << row)
        << split(4) << x)
    assert "mapGlb(1)'s result is read by reduceSeq" in (kernel_structure_error(racy) or "")
    fine = fun([float32[N]], lambda x: mapGlb(0)(
        lambda row: toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << row) << split(4) << x)
    assert kernel_structure_error(fine) is None


def test_vector_loads_and_stores():
    s = src("vector_scal")
    assert "((global int4*)out)[l_id + 256*wg_id] = mul3_v4(((const global int4*)x)[l_id + 256*wg_id]);" in s
    assert "int4 mul3_v4(int4 x)" in s


def test_two_kernel_reduction_and_unrolling():
    c = compile_program(PROGRAMS["asum_nvidia"].program)
    assert len(c.kernels) == 2 and c.kernels[1].ndrange.local_size == (1,)
    prog = fun([float32[N]], lambda x: mapGlb(0)(lambda r: reduceSeqUnroll(add, 0.0) << r) << split(4) << x)
    s = compile_program(prog).source
    assert "for (int i" not in s and s.count("acc = add(acc") == 4
    s2 = compile_program(prog, CompileOptions(unroll=False)).source
    assert "for (int i" in s2


def test_private_array_with_constant_indices_becomes_scalars():
    prog = fun([float32[N]], lambda x: join << mapGlb(0)(
        lambda r: mapSeqUnroll(id) << toPrivate(mapSeqUnroll(id)) << r) << split(4) << x)
    s = compile_program(prog).source
    assert "tmp_0" in s and "tmp[" not in s


def test_high_level_program_is_rejected_with_a_clear_error():
    with pytest.raises(CodegenError, match="map is a high-level pattern"):
        compile_program(PROGRAMS["scal"].program)


def test_user_function_names_avoid_opencl_builtins():
    prog = fun([float32[N]], lambda x: mapGlb(0)(abs) << x)
    s = compile_program(prog).source
    assert "float abs_uf(float x)" in s and "abs_uf(x[" in s


def test_as_vector_over_a_permutation_reads_lanes_one_by_one():
    import numpy as np

    from liftkit.backends.opencl import run_opencl
    from liftkit.semantics import interpret

    p = fun([float32[N]], lambda x: asScalar << mapGlb(0)(mapVec(abs)) << asVector(2) << reorderStride(8) << x)
    s = compile_program(p).source
    assert "vload2" not in s and "(float2)(" in s
    x = np.arange(32, dtype=np.float32) - 16
    assert np.array_equal(run_opencl(p, x, device="cpu"), interpret(p, x))
    contiguous = compile_program(fun([float32[N]], lambda x: asScalar << mapGlb(0)(mapVec(abs)) << asVector(2) << x)).source
    assert "((const global float2*)x)[gl_id]" in contiguous


def test_iterate_written_into_a_destination_is_copied_out():
    import numpy as np

    from liftkit.backends.opencl import run_opencl
    from liftkit.semantics import interpret

    p = fun([float32[N]], lambda x: join << mapWrg(0)(
        iterate(3, join << mapLcl(0)(reduceSeq(add, 0.0)) << split(2))
        << join << toLocal(mapLcl(0)(mapSeq(id))) << split(1)) << split(8) << x)
    x = np.arange(64, dtype=np.float32)
    assert np.array_equal(run_opencl(p, x, device="cpu"), interpret(p, x))


def test_iterate_per_thread_in_global_memory():
    import numpy as np

    from liftkit.backends.opencl import run_opencl
    from liftkit.semantics import interpret

    p = fun([float32[N]], lambda x: join << mapGlb(0)(
        iterate(3, join << mapSeq(reduceSeq(add, 0.0)) << split(2))) << split(16) << x)
    x = np.arange(128, dtype=np.float32)
    assert np.array_equal(run_opencl(p, x, device="cpu"), interpret(p, x))
    assert "gl_id" in compile_program(p).source


def test_a_nested_parallel_maps_result_read_in_the_same_kernel_is_refused() -> None:
    """Found by the exploration (a wrong-result candidate): a reduceSeq over a nested mapGlb's
    results reads what other work-groups write, with no possible barrier. Refused in words; the
    same map whose result flows out of the function compiles."""
    M = size("M")
    racy = fun([float32[M][N], float32[M]], lambda A, x: join << mapGlb(1)(
        lambda row: toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << join
        << mapGlb(0)(reduceSeq(multAndSumUp, 0.0)) << split(64) << zip(row, x)) << A)
    with pytest.raises(CodegenError, match=r"mapGlb\(0\)'s result is read by reduceSeq in the same kernel"):
        compile_program(racy)
    fine = fun([float32[M][N], float32[M]], lambda A, x: mapGlb(1)(
        lambda row: join << mapGlb(0)(reduceSeq(multAndSumUp, 0.0)) << split(64) << zip(row, x)) << A)
    compile_program(fine)


@pytest.mark.parametrize("name", ["mm_amd", "mm_nvidia"])
def test_register_blocks_compile_without_index_simplification(name: str) -> None:
    """Registers need constant indices: with index simplification off, the raw trees of
    unrolled loops ((2*4 + 1) % 4) are still folded for private memory (the ablation of seed 000
    Fig. 8 reported 'compile failed' for both MM programs before)."""
    import numpy as np

    from liftkit.backends.opencl import OpenCLRunner

    spec = PROGRAMS[name]
    off = CompileOptions(simplify_indices=False, eliminate_barriers=False, simplify_control_flow=False)
    compiled = compile_program(spec.program, off)
    assert not re.findall(r"(?<!local )float4? \w+\[\d+\];", compiled.source)  # no private arrays
    inputs = spec.inputs(None, 0)
    got = OpenCLRunner("cpu").run(compiled, *inputs)
    np.testing.assert_allclose(got, spec.reference(*inputs), rtol=1e-3, atol=1e-3)


def _per_thread_accumulators(read_back: Any) -> Any:
    """Each of 16 work-items keeps two private sums across a reduceSeq over 8 rows."""
    import numpy as np

    L = 16
    zeros = lit(np.zeros((L, 2), np.float32), float32[2][L])
    init = toPrivate(mapLcl(0)(mapSeqUnroll(id))) << zeros

    def step(acc: Any, row: Any) -> Any:
        return mapLcl(0)(lambda q: mapSeqUnroll(lambda a: add(a, q[1])) << q[0]) << zip(acc, row)

    return fun([float32[L][N]], lambda A: join << mapWrg(0)(
        lambda rows: read_back(join << reduceSeq(step, init) << rows)) << split(8) << A)


def test_private_memory_under_mapLcl_is_per_work_item() -> None:
    """A mapLcl's private result is one block per work-item (registers), not the whole group's
    array indexed by the thread id, so it can live across a loop the whole group runs (the
    register blocks of matrix multiplication)."""
    import numpy as np

    from liftkit.backends.opencl import run_opencl
    from liftkit.semantics import interpret

    p = _per_thread_accumulators(lambda acc: toGlobal(mapLcl(0)(mapSeqUnroll(id))) << acc)
    src = compile_program(p).source
    assert "float tmp_0, tmp_1;" in src and "tmp_0 = add(tmp_0, A[" in src
    A = np.random.default_rng(0).integers(-3, 4, (64, 16)).astype(np.float32)
    assert np.array_equal(np.asarray(run_opencl(p, A, device="cpu")), np.asarray(interpret(p, A)))


def test_reading_another_work_items_private_memory_is_refused() -> None:
    p = _per_thread_accumulators(lambda acc: toGlobal(mapSeq(mapSeq(id))) << acc)
    with pytest.raises(CodegenError, match=r"a work-item can only read its own private memory"):
        compile_program(p)


def test_a_huge_private_array_is_refused_in_words() -> None:
    """A mapLcl longer than the local size keeps every iteration's private result per
    work-item: 32·1024 floats here, which PoCL cannot hold (it crashed) and NVIDIA spills."""
    p = fun([float32[N]], lambda x: join << mapWrg(0)(
        lambda rows: toGlobal(mapLcl(0)(mapSeq(id))) << toPrivate(mapLcl(0)(mapSeq(id)))
        << split(1024) << rows) << split(32 * 1024) << x)
    with pytest.raises(CodegenError, match=r"private memory: 131072 bytes per work-item"):
        compile_program(p, CompileOptions(local_size=(16,)))


def test_a_loop_over_the_lanes_of_a_private_vector() -> None:
    """reduceSeq over asScalar of a private float8 (the lanes of a vectorised row sum, one
    work-item per row) reads lane i of a register: through the vector's address, as C allows."""
    import numpy as np

    from liftkit.backends.opencl import run_opencl

    M = size("M")
    p = fun([float32[M][N]], lambda A: join << mapGlb(0)(
        lambda row: toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << asScalar
        << reduceSeq(add.vectorize(8), lit((0.0,) * 8, float8)) << asVector(8) << row) << A)
    src = compile_program(p).source
    assert re.search(r"\(\(private float\*\)&acc\w*\)\[i\w*\]", src)
    A = (np.arange(6 * 16, dtype=np.float32) % 7).reshape(6, 16)
    assert np.array_equal(np.ravel(run_opencl(p, A, device="cpu")), A.sum(axis=1))


def test_float4_loads_use_the_sizes_the_runtime_checks() -> None:
    """asVector 4 of a row of M floats makes the runtime check 4 | M, so the row offset M·r is
    a multiple of 4 and the load is ((const global float4*)A)[i + r·M/4] — one 16-byte load
    (vload4 only assumes a float's alignment: NVIDIA's compiler made four loads of it)."""
    M = size("M")
    rows = fun([float32[M][N]], lambda A: mapGlb(0)(
        lambda row: toGlobal(mapSeq(id)) << reduceSeq(add, 0.0) << asScalar
        << reduceSeq(add.vectorize(4), lit((0.0,) * 4, float4)) << asVector(4) << row) << A)
    src = compile_program(rows).source
    assert "vload4" not in src and re.search(r"\(\(const global float4\*\)A\)\[[^]]*M/4", src)
    mm = compile_program(PROGRAMS["mm_nvidia"].program).source
    assert "vload4" not in mm and "vstore4" not in mm
    assert "local float tmp_2[1024] __attribute__((aligned(16)));" in mm
