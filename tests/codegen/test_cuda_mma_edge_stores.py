"""The guarded DMMA kernel's (mm-edge-tensor-cores, liftkit.blas `edge-mma`) accumulators
stored 16 bytes at a time on its ragged edge (codegen/cuda_mma `_guarded_pair`): where both
columns 2t, 2t+1 of a lane's row are inside C one double2 store writes them, else each is
stored under its own guard as before. With lines (N checked even before launch) the vector's
alignment is proved; without, it holds where N is even, so the vector store also asks N & 1 at
run time and an odd N takes the element stores (any M, N, K stay correct). NVRTC compiles both;
(gpu marker) the kernels against NumPy at sizes off the tiles, N odd and even."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.blas import programs as bp
from liftkit.codegen import CompileOptions, compile_program
from liftkit.rewrite.derivation import Derivation
from liftkit.rewrite.rules.cuda import CUDA_RULES_BY_NAME
from liftkit.rewrite.rules.mm_edges import EDGE_RULES, MM_EDGE_TENSOR_CORES
from liftkit.rewrite.strategies import rule

CUDA = CompileOptions(dialect="cuda")
RULES = {**EDGE_RULES, **CUDA_RULES_BY_NAME}
K8 = dict(lines=True, ik=8, ahead=2)


def _edge_mma(tiles: tuple[int, ...], **extra: Any) -> Derivation:
    tm, tn, tk, warps, staged = tiles
    return Derivation(bp.mm("float64", "NN"), name="edge-stores").then(
        rule(MM_EDGE_TENSOR_CORES, tm=tm, tn=tn, tk=tk, warps=warps, staged=staged, **extra),
        (0,), rules=RULES)


def _epilogue(tiles: tuple[int, ...], **extra: Any) -> tuple[str, str]:
    src = compile_program(_edge_mma(tiles, **extra).final, CUDA).kernels[0].source
    return src, src[src.index("cp.async.wait_group 0;"):]


VEC = r"if \(([^{]*)\) \{\s*double2 (acc2\w*); \2\.x = c\d_\d_[02]; \2\.y = c\d_\d_[13]; \(\(double2\*\)out\)\[([^]]*)\] = \2;"


def test_guarded_stores_with_lines_are_vectors_under_both_columns_guards(compile_cuda: Any) -> None:
    src, tail = _epilogue((128, 64, 16, 4, 4), **K8)
    vecs = re.findall(VEC, tail)
    assert len(vecs) == 32  # 4×4 fragments, 2 pairs each
    for cond, _, _ in vecs:  # both columns and the row inside C; no parity test (N is even)
        cols = re.findall(r"\(([^()]*) < N\)", cond)
        assert len(cols) == 2 and cols[0] != cols[1] and "< M" in cond
        assert "& 1" not in cond
    # the fallback: each element under its own guard where the pair is not wholly inside
    assert len(re.findall(r"if \(!\(", tail)) == 32 and len(re.findall(r"\bout\[", tail)) == 64
    assert "mma.sync.aligned" in compile_cuda(src, "compute_90a", name="edge-stores.cu").ptx


def test_guarded_stores_without_lines_ask_n_even_at_run_time(compile_cuda: Any) -> None:
    src, tail = _epilogue((64, 64, 8, 4, 4))
    vecs = re.findall(VEC, tail)
    assert vecs and all(c.startswith("((N & 1) == 0)") for c, _, _ in vecs)
    assert all(i.endswith(">> 1") for _, _, i in vecs)
    assert len(re.findall(r"\bout\[", tail)) == 2 * len(vecs)
    compile_cuda(src, "compute_90a", name="edge-stores-odd.cu")


@pytest.mark.gpu
def test_guarded_vector_stores_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    g = np.random.default_rng(7)
    for tiles, extra, sizes in [((128, 64, 16, 4, 4), K8, [(130, 66, 34), (5, 2, 2), (200, 100, 40)]),
                                ((64, 64, 8, 4, 4), {}, [(70, 33, 13), (70, 34, 14), (65, 1, 3)])]:
        prog = compile_program(_edge_mma(tiles, **extra).final, CUDA)
        for m, n, k in sizes:
            A = g.integers(-3, 4, (m, k)).astype(np.float64)
            B = g.integers(-3, 4, (k, n)).astype(np.float64)
            np.testing.assert_array_equal(runner.run(prog, A, B), A @ B)
