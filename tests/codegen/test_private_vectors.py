"""Vectors read from and written to private arrays (found by the mm search on the CPU device).

A private array whose every index is a constant becomes one register per element (`tmp_0,
tmp_1, ...`), which have no address: a vector read at a constant offset is built from the
registers and a vector write is spread over them lane by lane, where a vload/vstore through
`tmp + k` named an array that was never declared. An array that stays an array (some index is a
loop variable) keeps its vload/vstore. A field of an array of structs is never one vector (its
lanes are a struct apart): it is read lane by lane. Programs run on the CPU device and are
compared with the interpreter; the CUDA spelling of each is compiled to PTX where NVRTC is
installed.
"""

from __future__ import annotations

import os
import re
from typing import Any
from dataclasses import replace

import numpy as np
import pytest

from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.codegen import CompileOptions, compile_program
from liftkit.dsl import (INT, add, asScalar, asVector, float32, fn, fun, get, id, int32, join,
                         lit, map, mapGlb, mapSeq, mapSeqUnroll, mapVec, mult, reduceSeq, size,
                         slide, split, toGlobal, toPrivate, tuple_, zip)
from liftkit.semantics import interpret
from liftkit.testing import SWITCHES

N = size("N")
needs_cpu = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                               reason="no CPU OpenCL device (PoCL) installed")


@pytest.fixture(scope="module")
def runner() -> OpenCLRunner:
    """PoCL (or Intel's CPU runtime); LIFTKIT_TEST_DEVICE=gpu runs the same checks on a GPU."""
    return OpenCLRunner(os.environ.get("LIFTKIT_TEST_DEVICE", "cpu"), KernelCache(disk=False))


def _run(runner: OpenCLRunner, prog, x: np.ndarray, options: CompileOptions | None = None) -> str:
    """Run on the device, compare with the interpreter; the kernels' OpenCL C."""
    compiled = compile_program(prog, options)
    np.testing.assert_array_equal(np.asarray(runner.run(compiled, x)).reshape(-1),
                                  np.asarray(interpret(prog, x)).reshape(-1))
    return compiled.source


def _cuda_compiles(prog, compile_cuda: Any) -> None:
    for k in compile_program(prog, CompileOptions(dialect="cuda")).kernels:
        assert ".entry KERNEL" in compile_cuda(k.source, "compute_90a", name="k.cu").ptx


def _vectors_out_of_registers(w: int, seq=mapSeqUnroll):
    """Each work-item copies 2w scalars into a private array, then reads it as vectors."""
    return fun([float32[N]], lambda x: join << mapGlb(0)(
        lambda row: asScalar << seq(mapVec(id)) << asVector(w) << toPrivate(seq(id)) << row)
        << split(2 * w) << x)


def _vector_accumulator(w: int, t=float32, seq=mapSeqUnroll, seq_out=mapSeqUnroll):
    """A register block of 2w sums updated by vectorised adds (the mm search's shape): every
    step reads and writes the accumulator as vectors."""
    F = INT if t == int32 else None
    add_ = F.add if F else add
    vadd = add_.vectorize(w)
    zeros = lit(np.zeros(2 * w, t.dtype), t[2 * w])
    return fun([t[N]], lambda x: join << mapGlb(0)(
        lambda row: seq_out(F.id if F else id) << join << reduceSeq(
            lambda acc, v: asScalar << seq(vadd) << zip(asVector(w) << acc, asVector(w) << v),
            toPrivate(seq(F.id if F else id)) << zeros) << split(2 * w) << row)
        << split(8 * w) << x)


@needs_cpu
@pytest.mark.parametrize("w", [2, 4, 8])
def test_vectors_read_from_registers(runner: OpenCLRunner, w: int) -> None:
    src = _run(runner, _vectors_out_of_registers(w), np.arange(64 * w, dtype=np.float32))
    assert "float tmp_0, tmp_1" in src and "vload" not in src
    lanes = ", ".join(f"tmp_{k}" for k in range(w, 2 * w))
    assert f"(float{w})({lanes})" in src


@needs_cpu
@pytest.mark.parametrize("w,t", [(2, float32), (4, float32), (4, int32), (16, float32)])
def test_vectors_written_to_registers(runner: OpenCLRunner, w: int, t) -> None:
    x = (np.arange(64 * w) % 23).astype(t.dtype)
    src = _run(runner, _vector_accumulator(w, t), x)
    assert "vstore" not in src and "vload" not in src and not re.search(r"\btmp\[", src)
    assert "tmp_0 = vec.s0; tmp_1 = vec.s1;" in src


@needs_cpu
@pytest.mark.parametrize("switch", SWITCHES)
def test_vectors_in_registers_with_each_optimisation_off(runner: OpenCLRunner, switch: str) -> None:
    """Without unrolling the accumulator is an array read through its address; without index
    simplification the constant offsets arrive as unfolded expressions."""
    options = replace(CompileOptions(), **{switch: False})
    for prog in (_vectors_out_of_registers(4), _vector_accumulator(4)):
        _run(runner, prog, np.arange(256, dtype=np.float32), options)


@needs_cpu
def test_an_array_indexed_by_a_loop_keeps_vload_and_vstore(runner: OpenCLRunner) -> None:
    """Constant offsets into an array that another access indexes by a loop variable: the
    array is declared as one, and its vectors are read and written through its address."""
    src = _run(runner, _vector_accumulator(2, seq_out=mapSeq), np.arange(128, dtype=np.float32))
    assert "float tmp[4];" in src
    assert "vstore2(add2(vload2(0, (tmp + 0)), " in src and ", 0, (tmp + 2));" in src
    loop = _run(runner, _vector_accumulator(2, seq=mapSeq, seq_out=mapSeq),
                np.arange(128, dtype=np.float32))
    assert "vload2(0, (tmp + 2*i" in loop


@needs_cpu
def test_lanes_of_private_vectors(runner: OpenCLRunner) -> None:
    for seq, want in ((mapSeqUnroll, "tmp_1.s1"), (mapSeq, "((private float*)&tmp[i/2])[i % 2]")):
        prog = fun([float32[N]], lambda x: join << mapGlb(0)(
            lambda row: seq(id) << asScalar << toPrivate(mapSeqUnroll(mapVec(id))) << asVector(2)
            << row) << split(4) << x)
        assert want in _run(runner, prog, np.arange(32, dtype=np.float32))


_pair = fn(lambda a: tuple_(a, mult(a, a)))


@needs_cpu
def test_a_field_of_private_structs_is_read_lane_by_lane(runner: OpenCLRunner) -> None:
    prog = fun([float32[N]], lambda x: join << mapGlb(0)(
        lambda row: asScalar << mapSeqUnroll(mapVec(id)) << asVector(2) << map(get(1))
        << toPrivate(mapSeqUnroll(_pair)) << row) << split(4) << x)
    assert "(float2)(tmp_0._1, tmp_1._1)" in _run(runner, prog, np.arange(32, dtype=np.float32))


@needs_cpu
def test_a_field_of_global_structs_is_read_lane_by_lane(runner: OpenCLRunner) -> None:
    """Aligned (a float2 pointer to structs named a type that does not exist) and at any
    offset (vload2 of a struct pointer)."""
    aligned = fun([float32[N]], lambda x: asScalar << mapGlb(0)(mapVec(id)) << asVector(2)
                  << map(get(1)) << toGlobal(mapGlb(0)(_pair)) << x)
    windows = fun([float32[N]], lambda x: join << mapGlb(0)(
        lambda w: asScalar << mapSeq(mapVec(id)) << asVector(2) << w)
        << slide(4, 1) << map(get(1)) << toGlobal(mapGlb(0)(_pair)) << x)
    for prog in (aligned, windows):
        src = _run(runner, prog, np.arange(34, dtype=np.float32))
        assert "vload" not in src and "Tuple2_float_float2" not in src


@pytest.mark.parametrize("prog", [_vectors_out_of_registers(4), _vector_accumulator(4),
                                  _vector_accumulator(2, seq_out=mapSeq)])
def test_cuda_spelling_compiles(prog, compile_cuda: Any) -> None:
    _cuda_compiles(prog, compile_cuda)


def test_the_default_window_covers_vectors_in_registers() -> None:
    """The random-program generator produces both shapes (every one of them failed to build
    before the fix) in its default window."""
    from liftkit.testing.random_programs import generate

    descriptions = [generate(seed).description for seed in range(20240, 20440)]
    reads = sum("registers-as-vectors" in d for d in descriptions)
    sums = sum("vector-sums-in-registers" in d for d in descriptions)
    assert reads >= 2 and sums >= 2, (reads, sums)
