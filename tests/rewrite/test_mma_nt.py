"""DGEMM NT on the FP64 tensor cores without the transpose pass: mm-tensor-cores takes B's
columns stored as the rows of an N×K array (rules/cuda.py `mm_nest`: B is then a transposed
view, whose tiles the `lines` staging copies along k, as NN's A). Sound in the interpreter (bit for
bit on integers) for liftkit.blas's `mma` variants of mm float64 NT, the grouped block order
too; FP32 NT products stay off the tensor cores; NVRTC compiles them; (gpu) against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import programs as bp
from liftkit.blas.codelets import Kind, Variant, derive
from liftkit.codegen import CompileOptions, compile_program
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import CUDA_RULES
from liftkit.semantics import interpret

NT = Kind("mm", "float64", "NT")
K8S = dict(tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)
VARIANTS = [Variant.of("mma", **K8S), Variant.of("mma", **K8S, group=2),
            Variant.of("mma", tm=64, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2),
            Variant.of("mma", tm=64, tn=64, tk=16, warps=4, staged=2)]


def _ints(shape: tuple[int, int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float64)


@pytest.mark.parametrize("v", VARIANTS, ids=str)
def test_dmma_nt_is_sound(v: Variant) -> None:
    X, Y = _ints((256, 48), 1), _ints((192, 48), 2)  # M×K, N×K
    np.testing.assert_array_equal(interpret(derive(NT, v).final, X, Y), X @ Y.T)


def test_fp32_nt_stays_off_the_tensor_cores() -> None:
    rules = [r for r in CUDA_RULES if r.name.startswith("mm-wgmma") or r.name == "mm-tensor-cores"]
    assert not enumerate_choices(normal_form(bp.mm("float32", "NT")), rules)
    assert enumerate_choices(normal_form(bp.mm("float64", "NT")), rules)


def test_dmma_nt_compiles(compile_cuda: Any) -> None:
    for v in VARIANTS[:2]:
        (k,) = compile_program(derive(NT, v).final, CompileOptions(dialect="cuda")).kernels
        compile_cuda(k.source, "sm_90a", list(k.build_options))


@pytest.mark.gpu
def test_dmma_nt_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    X, Y = _ints((512, 80), 3), _ints((192, 80), 4)
    for v in VARIANTS:
        compiled = compile_program(derive(NT, v).final, CompileOptions(dialect="cuda"))
        np.testing.assert_array_equal(runner.run(compiled, X, Y), X @ Y.T)
