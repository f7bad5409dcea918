"""The rule `mma-split-tail` and the pattern `reduceMmaF64K8AheadSplit` (rules/mm_schedule.py,
ir/patterns/cuda_schedule.py, codegen/cuda_mma.py + cuda_schedule.py): the DMMA tile loop read
ahead, its last partial wave's tiles split along K into parts whose sums are added in order.
Sound in the interpreter (bit for bit on integers) for NN, TN and NT through liftkit.blas's
`mma(kparts, kslots)`; printed and parsed; offered only on the read-ahead loop from zero; not
with the grouped order (both take the grid's third dimension); the CUDA C has the third grid
dimension and the ordered fix-up and compiles with NVRTC; (gpu) against NumPy, launches repeated."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import CodeletError, Kind, Variant, derive, edge_forms
from liftkit.codegen import CompileOptions, compile_program
from liftkit.ir.nodes import UserFun, walk
from liftkit.ir.parser import parse_program
from liftkit.ir.patterns.cuda_schedule import ReduceMmaSplit
from liftkit.ir.printer import show
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda import tensor_core_mm
from liftkit.rewrite.rules.mm_schedule import MMA_SCHEDULES, MMA_SPLIT_TAIL
from liftkit.semantics import interpret

CUDA = CompileOptions(dialect="cuda")
K8S = dict(tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)


def _ints(shape: tuple[int, int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float64)


def _operands(lay: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = _ints((m, k) if lay[0] == "N" else (k, m), 1)
    Y = _ints((k, n) if lay[1] == "N" else (n, k), 2)
    return X, Y, (X if lay[0] == "N" else X.T) @ (Y if lay[1] == "N" else Y.T)


@pytest.mark.parametrize("lay", ["NN", "TN", "NT"])
def test_split_dmma_is_sound(lay: str) -> None:
    """Parts of unequal length (5 tiles of 16 in 2 and 3 parts) add up bit for bit."""
    kind = Kind("mm", "float64", lay)
    X, Y, want = _operands(lay, 256, 192, 80)
    for parts, slots in MMA_SCHEDULES:
        d = derive(kind, Variant.of("mma", **K8S, kparts=parts, kslots=slots)).final
        assert sum(isinstance(n, ReduceMmaSplit) for n in walk(d.body)) == 1
        np.testing.assert_array_equal(interpret(d, X, Y), want)
    funs = {u.name: u for u in walk(d.body) if isinstance(u, UserFun)}
    assert show(parse_program(show(d), funs)) == show(d)


def test_split_is_offered_only_on_the_read_ahead_loop() -> None:
    ahead = normal_form(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=2).final)
    assert [tuple(c.params.values()) for c in enumerate_choices(ahead, [MMA_SPLIT_TAIL])] == list(MMA_SCHEDULES)
    for plain in (tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8),
                  tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=1)):
        assert not enumerate_choices(normal_form(plain.final), [MMA_SPLIT_TAIL])
    with pytest.raises(CodeletError, match="no group"):
        derive(Kind("mm", "float64", "NN"), Variant.of("mma", **K8S, kparts=2, kslots=264, group=4))
    assert all("kparts" not in e.kw for e in edge_forms(Variant.of("mma", **K8S, kparts=2, kslots=264)))


def test_split_dmma_cuda_source_and_nvrtc(compile_cuda: Any) -> None:
    d = derive(Kind("mm", "float64", "NN"), Variant.of("mma", **K8S, kparts=2, kslots=264)).final
    (k,) = compile_program(d, CUDA).kernels
    assert [str(x) for x in k.ndrange.global_size][2] == "2"
    src = k.source
    assert "(int)blockIdx.z" in src and "sk_flags" in src and "__ldcg(" in src and "__stcg(" in src
    assert src.count("return;  // the tile's last part stores it") == 1

    compile_cuda(src, "sm_90a", list(k.build_options))


@pytest.mark.gpu
def test_split_dmma_on_the_gpu() -> None:
    """NN, TN, NT split 2 and 3 ways (all 6 tiles in the tail), three launches each (the flags
    are back at zero after every launch)."""
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for lay in ("NN", "TN", "NT"):
        X, Y, want = _operands(lay, 256, 192, 80)
        for parts, slots in MMA_SCHEDULES[:2]:
            v = Variant.of("mma", **K8S, kparts=parts, kslots=slots)
            compiled = compile_program(derive(Kind("mm", "float64", lay), v).final, CUDA)
            for _ in range(3):
                np.testing.assert_array_equal(runner.run(compiled, X, Y), want)
