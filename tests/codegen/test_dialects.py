"""One emitter, two dialects: the same statements spelled as OpenCL C or CUDA C."""

from __future__ import annotations

import re

import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.dialect import CUDA, OPENCL, dialect_named
from liftkit.programs import PROGRAMS

LOW = [s.name for s in PROGRAMS if s.level == "low"]
# OpenCL spellings that must not survive into CUDA C (outside user functions' bodies, which the
# prelude makes valid CUDA C)
OPENCL_ONLY = re.compile(r"\bget_(global|local|group)_id\b|\bget_num_groups\b|\bbarrier\(|"
                         r"\bkernel void\b|\b(global|local|private) \w+\*|CLK_\w+_FENCE|#pragma OPENCL")


def both(name: str) -> tuple[str, str]:
    prog = PROGRAMS[name].program
    return (compile_program(prog).source,
            compile_program(prog, CompileOptions(dialect="cuda")).source)


@pytest.mark.parametrize("name", LOW)
def test_every_bundled_low_level_program_compiles_to_both_dialects(name: str) -> None:
    prog = PROGRAMS[name].program
    cl = compile_program(prog).kernels
    cu = compile_program(prog, CompileOptions(dialect="cuda")).kernels
    assert [k.name for k in cl] == [k.name for k in cu]
    assert [k.ndrange for k in cl] == [k.ndrange for k in cu]
    for a, b in zip(cl, cu):
        assert not OPENCL_ONLY.search(b.source), OPENCL_ONLY.search(b.source).group(0)  # type: ignore[union-attr]
        # the same statements: the kernels' bodies have as many loops, branches and barriers
        body_cl = a.source[a.source.index("kernel void"):]
        body_cu = b.source[b.source.index('extern "C" __global__ void'):]
        for cl_word, cu_word in (("for (", "for ("), ("if (", "if ("), ("barrier(", "__syncthreads();")):
            assert body_cl.count(cl_word) == body_cu.count(cu_word), cl_word


def test_cuda_spellings() -> None:
    _, cu = both("partial_dot")
    assert 'extern "C" __global__ void KERNEL(' in cu
    assert "const float* __restrict__ x" in cu
    assert "__shared__ float tmp[64];" in cu
    assert "int l_id = (int)threadIdx.x;" in cu
    assert "for (int wg_id = (int)blockIdx.x; wg_id < N/128; wg_id += (int)gridDim.x)" in cu
    assert "__syncthreads();" in cu
    assert "__device__ inline float" in cu  # user functions are device functions


def test_vector_programs_get_the_vector_prelude_and_constructor_literals() -> None:
    cl, cu = both("nbody_nvidia")
    assert "lk_vec" not in cl and "#define float4 lk_float4" in cu
    _, plain = both("partial_dot")
    assert "lk_vec" not in plain  # kernels without vectors get only the small core


def test_user_function_vector_literals_become_constructors() -> None:
    body = "return fma((float4)(a), b, (float2)( x, y ).x + (int)(z));"
    assert CUDA.user_body(body) == "return fma(float4(a), b, float2( x, y ).x + (int)(z));"
    assert OPENCL.user_body(body) == body


def test_pointers_and_literals_by_dialect() -> None:
    assert OPENCL.pointer("local", "float") == "local float*"
    assert OPENCL.input_pointer("int") == "const global int* restrict"
    assert CUDA.pointer("local", "float") == "float*"
    assert CUDA.input_pointer("int") == "const int* __restrict__"
    assert OPENCL.vector_literal("float2", ["a", "b"]) == "(float2)(a, b)"
    assert CUDA.vector_literal("float2", ["a", "b"]) == "float2(a, b)"
    assert CUDA.tuple_literal("T2", ["a", "b"]) == "T2{a, b}"


def test_unknown_dialect_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown C dialect 'metal': choose one of opencl, cuda"):
        CompileOptions(dialect="metal")
    with pytest.raises(ValueError, match="unknown C dialect"):
        dialect_named("hip")


def test_options_key_keeps_opencl_keys_and_tells_cuda_apart() -> None:
    assert "dialect" not in CompileOptions().key()
    assert CompileOptions(dialect="cuda").key() == CompileOptions().key() + ",dialect=cuda"
