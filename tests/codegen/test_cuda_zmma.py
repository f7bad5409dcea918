"""reduceMmaZ64 (mm-complex-tensor-cores): the complex128 product on the FP64 tensor cores, the
complex tiles staged as they are and the real embedding's signs made at the fragment reads.
Same meaning as the high-level product for every layout (conjugations too; interpreter, bit for
bit on integer-valued complex operands), printed and parsed; offered only for complex128; the
CUDA C issues m16n8k8 only on complex tiles (no embedded operand anywhere), NVRTC compiles it
for Hopper (no spills) and older GPUs; OpenCL refuses it in words; liftkit.blas's `zmma`
codelet (tests/blas/test_zmma.py); (gpu marker) the kernel against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.codegen.views import CodegenError
from liftkit.ir import patterns as P
from liftkit.ir.nodes import UserFun, walk
from liftkit.ir.parser import parse_program
from liftkit.ir.printer import show
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64, ReduceMmaZ64Ahead
from liftkit.rewrite import enumerate_choices
from liftkit.rewrite.rules import normal_form
from liftkit.rewrite.rules.cuda_complex import MM_COMPLEX_TENSOR_CORES, zgemm_tensor_cores
from liftkit.semantics import interpret

CUDA = CompileOptions(dialect="cuda")


def cints(shape: tuple[int, int], seed: int) -> np.ndarray:
    """Small Gaussian integers: every product and sum exact, so results compare bit for bit."""
    r = np.random.default_rng(seed)
    return (r.integers(-8, 9, shape) + 1j * r.integers(-8, 9, shape)).astype(np.complex128)


def operands(layout: str, m: int, n: int, k: int, seed: int = 1) -> tuple[np.ndarray, ...]:
    """(A, B as stored, op(A)·op(B)) for a complex layout (T/C transposed, R/C conjugated)."""
    A = cints((k, m) if layout[0] in "TC" else (m, k), seed)
    B = cints((n, k) if layout[1] in "TC" else (k, n), seed + 1)
    opa, opb = (A.T if layout[0] in "TC" else A), (B.T if layout[1] in "TC" else B)
    opa = opa.conj() if layout[0] in "RC" else opa
    opb = opb.conj() if layout[1] in "RC" else opb
    return A, B, opa @ opb


@pytest.mark.parametrize("layout, tiles", [
    ("NN", (32, 16, 8, 1, 2, 0)), ("NN", (32, 16, 4, 1, 3, 1)), ("NT", (32, 16, 8, 1, 2, 1)),
    ("TN", (32, 16, 8, 1, 3, 0)), ("TN", (32, 16, 4, 1, 2, 1)), ("CN", (32, 16, 8, 1, 2, 1)),
    ("NC", (32, 16, 8, 1, 2, 0)), ("RR", (32, 16, 8, 1, 2, 1)), ("RT", (32, 16, 4, 1, 2, 0))])
def test_complex_product_is_sound_and_round_trips(layout: str, tiles: tuple[int, ...]) -> None:
    tm, tn, tk, warps, staged, ahead = tiles
    d = zgemm_tensor_cores(layout, tm, tn, tk, warps, staged, ahead)
    mma = [n for n in walk(d.final.body) if isinstance(n, P.ReduceMma)]
    assert [type(n) for n in mma] == [ReduceMmaZ64Ahead if ahead else ReduceMmaZ64]
    conj = (1 if layout[0] in "RC" else 0) | (2 if layout[1] in "RC" else 0)
    assert mma[0].conj.value == conj
    m, n, k = 2 * tm, 2 * tn, 3 * tk
    A, B, want = operands(layout, m, n, k)
    got = interpret(d.final, A, B, sizes={"M": m, "N": n, "K": k})
    np.testing.assert_array_equal(np.asarray(got), want)
    funs = {u.name: u for u in walk(d.final.body) if isinstance(u, UserFun)}
    assert show(parse_program(show(d.final), funs)) == show(d.final)


def test_the_rule_offers_complex128_only_read_ahead_after() -> None:
    from liftkit.blas.programs import mm

    offers = [c.params for c in enumerate_choices(normal_form(mm("complex128", "NN")),
                                                  [MM_COMPLEX_TENSOR_CORES])]
    plain = [o for o in offers if not o.get("ahead")]
    assert plain and offers == plain + [{**o, "ahead": 1} for o in plain]
    assert {"tm": 128, "tn": 32, "tk": 8, "warps": 4, "staged": 4} in plain
    for dtype in ("complex64", "float64"):
        assert not list(enumerate_choices(normal_form(mm(dtype, "NN")), [MM_COMPLEX_TENSOR_CORES]))
    with pytest.raises(ValueError, match="do not fit"):
        from liftkit.rewrite.rules.cuda_complex import mm_complex_tensor_cores
        from liftkit import dsl as D

        mm_complex_tensor_cores(D.size("A"), D.size("B"), 0, 128, 32, 8, 4, 1)  # one stage


def _compile(layout: str, tiles: tuple[int, ...]) -> str:
    return compile_program(zgemm_tensor_cores(layout, *tiles).final, CUDA).kernels[0].source


@pytest.mark.parametrize("layout, tiles", [("NN", (128, 32, 8, 4, 4, 1)), ("NT", (128, 32, 8, 4, 4, 1)),
                                           ("TN", (64, 64, 16, 8, 3, 1))])
def test_cuda_issues_dmma_on_complex_tiles_and_compiles(layout: str, tiles: tuple[int, ...]) -> None:
    src = _compile(layout, tiles)
    loop = src[src.index("for (int i"):src.index("cp.async.wait_group 0;")]
    hopper = [part.split("#else")[0] for part in loop.split("#if __CUDA_ARCH__ >= 900")[1:]]
    # 4×4 fragments of 16×4 complex per warp, 2 k-steps of 4 complex per 8-deep tile (64×64×16
    # on 8 warps: 2×4 fragments, 4 k-steps)
    assert sum(h.count("m16n8k8.row.col.f64") for h in hopper) == 32
    assert "m16n8k16" not in src and loop.count("__syncthreads();") == 1
    # 8-byte parts read as the lane's k-slots ask, b's signs flipped by lane constants
    assert "((const double*)&" in loop and "[lk_p ^ lk_cj ^ 1]" in loop and "__hiloint2double" in loop
    assert "? " not in loop  # no selects on the data
    assert "cp.async.cg.shared.global" in loop and ", 16;" in loop  # complex elements, raw
    nvrtc = pytest.importorskip("liftkit.backends.cuda.nvrtc")
    for arch in ("sm_90a", "sm_80"):
        try:
            out = nvrtc.compile_cuda(src, arch, ["--ptxas-options=-v"], name="zmma.cu")
        except nvrtc.CUDAError as e:  # pragma: no cover - cuda-python without its NVRTC library
            if isinstance(e, nvrtc.NVRTCError):
                raise
            pytest.skip(str(e))
        assert "mma.sync.aligned" in out.ptx
        regs = [int(r) for r in re.findall(r"Used (\d+) registers", out.log or "")]
        spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", out.log or "")]
        assert arch != "sm_90a" or (spills == [0] and regs and regs[0] <= 255)


def test_opencl_refuses_in_words() -> None:
    d = zgemm_tensor_cores("NN", 32, 16, 8, 1, 2, 0)
    with pytest.raises(CodegenError, match="needs the CUDA backend"):
        compile_program(d.final, CompileOptions())


@pytest.mark.gpu
def test_complex_product_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for layout, tiles in [("NN", (128, 32, 8, 4, 4, 1)), ("NT", (64, 64, 16, 8, 3, 1)),
                          ("TN", (128, 32, 8, 4, 4, 0)), ("CN", (64, 32, 16, 4, 3, 1))]:
        A, B, want = operands(layout, 256, 128, 96)
        got = runner.run(compile_program(zgemm_tensor_cores(layout, *tiles).final, CUDA), A, B)
        np.testing.assert_array_equal(got, want)
