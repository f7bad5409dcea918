"""The `streamed` load hint (a kernel input read once: CUDA's evict-first `ld.global.cs`,
nothing on OpenCL) and the GPU GEMV codelets' h = 1 that derives it on A: the pattern and the
`streamed-input` rule are sound in the interpreter (random programs; GEMV derivations on
integer inputs), OpenCL sources are those of h = 0, CUDA sources read A (only A) through the
hint, NVRTC compiles every helper, the CPU device runs h = 1 at random shapes, and the GPU
test (NVIDIA OpenCL and CUDA) checks h = 1 against NumPy."""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.codegen.compiler import CompileOptions, compile_program
from liftkit.rewrite.rules import PAPER_RULES, RULES_BY_NAME
from liftkit.rewrite.rules.corpus import random_case, run, same_result
from liftkit.rewrite.rules.hints import STREAMED_INPUT
from liftkit.rewrite.rules.soundness import Soundness, SoundnessError

from .test_gemv_split import check_gemv_t_at_random_shapes
from .test_gemv_tree import check_gemv_t_in_the_interpreter

TREE = Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=4, k=1, f=8, p=1)
HINTED = [TREE, Variant.of("column-groups-last", lanes=32, g=8, w=4, r=16),
          Variant.of("group-rows", L=256, w=4), Variant.of("group-rows", L=128, w=2)]


def _with_h(v: Variant, h: int = 1) -> Variant:
    return Variant.of(v.codelet, **dict(v.params, h=h))


def _sources(dt: str, layout: str, v: Variant, dialect: str) -> list[str]:
    c = compile_program(derive(Kind("gemv", dt, layout), v).final, CompileOptions(dialect=dialect))
    return [k.source for k in c.kernels]


def _layout(v: Variant) -> str:
    return "N" if v.codelet == "group-rows" else "T"


def test_streamed_input_is_sound_on_random_programs() -> None:
    """The rule on random programs (those with a matrix input), walked by the paper's rules."""
    def walk_order(rule: Any, rng: random.Random) -> list[Any]:
        return rng.sample(list(PAPER_RULES), 8)

    harness = Soundness(RULES_BY_NAME, lambda i: random_case(7919 * 100_003 + i), lambda r: [],
                        walk_order, 7919, per_step=2, walk=4, max_bases=600, patience=2)
    try:
        stats = harness.exercise(STREAMED_INPUT, 20)
    except SoundnessError as err:
        pytest.fail(str(err), pytrace=False)
    assert stats["applications"] >= 20


def test_streamed_is_the_identity_and_prints_and_parses() -> None:
    from liftkit.ir.parser import parse
    from liftkit.ir.printer import show
    from liftkit.semantics import interpret

    M, N = D.sizes("M N")
    p = D.fun([D.float32[N][M]], lambda a: D.mapGlb(0)(D.mapGlb(1)(D.id_of(D.float32)))
              << D.streamed << a)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(np.asarray(interpret(p, a)), a)
    assert "streamed" in show(p) and show(parse(show(p))) == show(p)


@pytest.mark.parametrize("dt,variant", [
    ("complex64", _with_h(Variant.of("column-groups-tree", lanes=8, g=64, w=1, k=1, f=8, p=1))),
])
def test_hinted_gemv_t_is_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    check_gemv_t_in_the_interpreter(dt, variant, 31)


def test_hinted_gemv_n_is_sound_in_the_interpreter() -> None:
    kind = Kind("gemv", "complex64", "N")
    d = derive(kind, Variant.of("group-rows", L=16, w=1, h=1))
    assert d.replay() and "streamed" in str(d.steps[-1])
    rng = np.random.default_rng(31)

    def ints(shape: tuple[int, ...]) -> np.ndarray:
        return (rng.integers(-4, 5, shape) + 1j * rng.integers(-4, 5, shape)).astype("complex64")

    m, n = 20, 32
    xs = [ints((m, n)), ints((n,)), ints((m,)), np.array(3.0, "complex64"),
          np.array(-2.0, "complex64")]
    assert same_result(run(d.final, xs, {"M": m, "N": n}), run(kind.program(), xs, {"M": m, "N": n}))


@pytest.mark.parametrize("variant", HINTED, ids=str)
def test_opencl_source_unchanged_and_cuda_reads_only_a_through_the_hint(variant: Variant) -> None:
    """OpenCL has no cache hint: h = 1's source is h = 0's, byte for byte. CUDA: every read of
    A goes through `lk_ldcs` (as many as h = 0's plain reads of A), x and y are read plainly,
    the rest of the source is h = 0's; the helpers only where used."""
    lay = _layout(variant)
    for dt in ("float32", "float64"):
        assert _sources(dt, lay, _with_h(variant), "opencl") == _sources(dt, lay, variant, "opencl")
        plain = _sources(dt, lay, variant, "cuda")
        hinted = _sources(dt, lay, _with_h(variant), "cuda")
        assert all("lk_ldcs" not in s for s in plain)
        main = [(p, h) for p, h in zip(plain, hinted) if "A" in p.split("__global__")[1][:400]]
        assert main
        for p, h in main:
            reads = re.findall(r"\(\(const \w+\*\)A\)\[|\bA\[", p)
            assert reads and h.count("lk_ldcs(((const") + h.count("lk_ldcs(A") == len(reads)
            assert not re.findall(r"\(\(const \w+\*\)A\)\[|\bA\[", h)
            body = h[h.index('extern "C"'):]
            assert re.sub(r"lk_ldcs\(\(\((const \w+\*)\)A\) \+ \((.*?)\)\)", r"((\1)A)[\2]",
                          body) == p[p.index('extern "C"'):]
            assert "ld.global.cs" in h


def test_the_helpers_compile_for_every_type(compile_cuda: Any) -> None:
    """Every (scalar, width) the dialect offers: inline PTX NVRTC accepts, in a kernel that
    reads each through its helper."""
    from liftkit.codegen.cuda_prelude import prelude
    from liftkit.codegen.dialect import CUDA

    types = [(s, w) for s in ("float", "double") for w in (0, 2, 4, 8, 16)]
    reads = []
    for k, (s, w) in enumerate(types):
        vt = f"{s}{w}" if w else s
        lane = ".s0" if w else ""
        reads.append(f"  out[{k}] = (float)(lk_ldcs((const {vt}*)(p + {k * 128})){lane});")
    src = "\n".join([prelude(True), CUDA.streamed_helpers(types),
                     'extern "C" __global__ void k(const char* __restrict__ p, float* out) {',
                     *reads, "}"])
    assert CUDA.streamed_load("A + i", "int", 0) is None and CUDA.streamed_load("A", "float", 3) is None
    compile_cuda(src, "compute_90", [])


@pytest.mark.parametrize("variant", [
    _with_h(Variant.of("column-groups-tree", lanes=2, g=16, w=4, u=2, f=4, p=1))])
def test_hinted_gemv_t_at_any_size_on_the_cpu_device(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 31)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["gpu_session", "cuda_session"])
def test_hinted_gemv_on_the_gpu(backend: str, request: pytest.FixtureRequest) -> None:
    """h = 1 of the H100 profile's GEMV forms on a real GPU (NVIDIA OpenCL: no hint; CUDA:
    A read evict-first) at 4096² and odd shapes, α and β ≠ 0, against NumPy."""
    from .test_gpu_codelets import _forced
    from .test_properties import _mat

    session = request.getfixturevalue(backend)
    rng = np.random.default_rng(31)
    for v in HINTED:
        trans = _layout(v) == "T"
        s = _forced(session, [Kind("gemv", dt, _layout(v)) for dt in ("float32", "float64")],
                    _with_h(v))
        for case, shape in enumerate(((4096, 4096), (3001, 1999), (517, 4099))):
            dt = (np.float32, np.float64)[case % 2]
            A = _mat(rng, shape, dt)
            tol = 1e-4 if dt == np.float32 else 1e-12
            xn, yn = (shape[0], shape[1]) if trans else (shape[1], shape[0])
            x, y = _mat(rng, (xn,), dt), _mat(rng, (yn,), dt)
            a64 = A.astype(np.float64)
            want = 0.75 * ((a64.T if trans else a64) @ x) - 1.25 * y
            got = s.gemv(A, x, y.copy(), alpha=0.75, beta=-1.25, trans=trans).result()
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10,
                                       err_msg=f"{backend} {v} h=1 {shape}")


def test_the_shipped_h100_profile_streams_a_for_real_gemv() -> None:
    """The H100 profile's float32/float64 GEMV N and T at 2048-16384² read A evict-first (h = 1,
    results/issue15/gemv26c run 1: per call in alternating rounds beside cuBLAS, h = 0 → h = 1:
    float32 T 4096² 1.010 → 1.042x, float64 T 4096² 1.031 → 1.059x, float32 N 4096² 1.099 →
    1.144x, float64 N 4096² 1.002 → 1.023x, 8192²: float32 T 1.014 → 1.024x, float64 T 1.021 →
    1.030x, float32 N 1.228 → 1.245x, float64 N 0.999 → 1.008x); complex types unchanged."""
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import SHIPPED, Profile

    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")
    for dt in ("float32", "float64", "complex64"):
        for lay in ("N", "T"):
            for n in (2048, 4096, 8192, 16384):
                got = prof.choose(Kind("gemv", dt, lay), {"M": n, "N": n}, multiples)
                assert got is not None and got.kw.get("h", 0) == (dt != "complex64"), (dt, lay, n)
                if n in (4096, 8192) and dt != "complex64":
                    assert any("ld.global.cs" in src for src in _sources(dt, lay, got, "cuda"))
