"""ZGEMM for any M, N, K on the complex DMMA tiles without padded copies (`edge-zmma`, rule
mm-edge-complex-tensor-cores: zmma's kernel over padded views, results/issue15/odd26b): sound
bit for bit in the interpreter for every layout at sizes off the tiles; the CUDA C stages each
complex element by cp.async with its source size and guards the ragged edge's stores, NVRTC
compiles it for sm_90a without spills; an entry via "here" at a call's sizes runs it alone
(one launch, no pad2d/crop2d copies; stubbed CUDA queue), other sizes keep their plans; (gpu
marker) against NumPy, NaN-poisoned, every op pair, twice."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.blas.profile import Entry, Profile, size_class
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64, ReduceMmaZ64Ahead
from liftkit.semantics import interpret

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from test_cuda_zmma import operands  # noqa: E402

EZ = Variant.of("edge-zmma", tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1)


@pytest.mark.parametrize("layout, tiles, sizes", [
    ("NN", dict(tm=32, tn=16, tk=8, warps=1, staged=2), (37, 21, 19)),
    ("NN", dict(tm=32, tn=16, tk=4, warps=1, staged=3, ahead=1), (32, 17, 5)),
    ("TN", dict(tm=32, tn=16, tk=8, warps=1, staged=3, ahead=1), (33, 17, 9)),
    ("NT", dict(tm=32, tn=16, tk=4, warps=1, staged=2, ahead=1), (31, 15, 6)),
    ("CN", dict(tm=32, tn=16, tk=8, warps=1, staged=2, ahead=1), (40, 20, 13)),
    ("RC", dict(tm=32, tn=16, tk=8, warps=1, staged=2), (7, 3, 1))])
def test_edge_zmma_is_sound_off_its_tiles(layout: str, tiles: dict, sizes: tuple) -> None:
    kind = Kind("mm", "complex128", layout)
    v = Variant.of("edge-zmma", **tiles)
    assert multiples(kind, v) == {}
    final = derive(kind, v).final
    assert [type(n) for n in walk(final.body) if isinstance(n, P.ReduceMma)] == [
        ReduceMmaZ64Ahead if tiles.get("ahead") else ReduceMmaZ64]
    m, n, k = sizes
    A, B, want = operands(layout, m, n, k)
    got = interpret(final, A, B, sizes={"M": m, "N": n, "K": k})
    np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want)


def test_edge_zmma_stages_elements_with_source_sizes_and_compiles(compile_cuda: Any) -> None:
    from liftkit.codegen import CompileOptions, compile_program

    src = compile_program(derive(Kind("mm", "complex128", "NN"), EZ).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in src  # zero-filled past K
    assert "min(M - 1, " in src and "min(N - 1, " in src  # rows and columns clamped
    assert "m16n8k8.row.col.f64" in src and "cp.async.cg.shared.global [%0], [%1], 16;" not in src
    out = compile_cuda(src, "sm_90a", ["--ptxas-options=-v"], name="edge_zmma.cu")
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", out.log or "")]
    assert spills == [0]


def _here(fp: str, label: str, v: Variant, sizes: tuple[int, int, int]) -> Profile:
    prof = Profile(fp, label, "gpu")
    at = dict(zip("MNK", sizes))
    prof.add([Entry(Kind("mm", "complex128", "NN"), size_class("mm", at), at, v, 1e-5, 1e6,
                    via="here")])
    return prof


def test_an_entry_here_runs_edge_zmma_alone(blas_host: Any, stub_cuda: Any) -> None:
    """Via "here" at 1000³ (`gemm.measured_here`): one launch, no copies, first and repeated
    call; other layouts and sizes keep their plans."""
    s = stub_cuda
    shipped = list(s.profile.entries)
    s.profile = _here(s.device.fingerprint, s.device.label, EZ, (1000, 1000, 1000))
    s.profile.entries = shipped + s.profile.entries
    s.forget_choices()
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    plan = s.plan_gemm((1000, 1000), (1000, 1000), np.complex128)
    assert plan.built.variant == EZ and plan.padded == plan.sizes
    A, B, C = (blas_host.ndarray(sh, "complex128") for sh in ((1000, 1000),) * 3)
    for _ in range(2):
        got.clear()
        blas_host.COUNTS.clear()
        s.gemm(A, B, C)
        assert len(got) == 1 and blas_host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    # the entry is NN's at 1000³: another layout or size keeps its own plan
    assert s.plan_gemm((1000, 1000), (1000, 1000), np.complex128, trans_a=True).built.variant != EZ
    assert s.plan_gemm((1001, 1000), (1000, 1000), np.complex128).built.variant != EZ


def test_the_h100_profile_runs_zgemm_off_the_tiles_on_edge_zmma(blas_host: Any,
                                                                stub_cuda: Any) -> None:
    """results/issue15/odd26b run 1 (ship.py): ZGEMM NN 1000³ on edge-zmma 64×64×8 (8 warps,
    read ahead: 1.009x cuBLAS per call; 128×32×8 1.005x/1.006x; zmma on pad2d/crop2d copies
    0.803x/0.814x in the same run) and 1023×1025×999 on 128×32×8 (1.115x against 0.971x), one
    launch and no copies; 1024³ keeps zmma, another odd size the class's plan."""
    s = stub_cuda
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    want = {(1000, 1000, 1000): Variant.of("edge-zmma", tm=64, tn=64, tk=8, warps=8, staged=4,
                                           ahead=1),
            (1023, 1025, 999): EZ}
    for (m, n, k), v in want.items():
        plan = s.plan_gemm((m, k), (k, n), np.complex128)
        assert plan.built.variant == v and plan.padded == plan.sizes
        A, B, C = (blas_host.ndarray(sh, "complex128") for sh in ((m, k), (k, n), (m, n)))
        got.clear()
        blas_host.COUNTS.clear()
        s.gemm(A, B, C)
        assert len(got) == 1 and blas_host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    assert s.plan_gemm((1024, 1024), (1024, 1024), np.complex128).built.variant.codelet == "zmma"
    assert s.plan_gemm((999, 999), (999, 999), np.complex128).built.variant.codelet != "edge-zmma"


def test_the_tuner_times_edge_zmma_against_the_real_plan() -> None:
    """`tune --edges` follow-ups of a complex128 class whose choice is zmma: the real plan as a
    call at the odd size (what the choice becomes there), then the guarded forms of the class's
    two fastest zmma tilings (without the grouped order); none where its tiles divide the odd
    size or no zmma leads."""
    from liftkit.blas.followups import Task, edge_tasks

    kind = Kind("mm", "complex128", "NN")
    at = {"M": 1024, "N": 1024, "K": 1024}
    grouped = Variant.of("zmma", tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1, group=2)
    square = Variant.of("zmma", tm=64, tn=64, tk=8, warps=8, staged=4, ahead=1)
    p = Profile("dev", "dev", "gpu")
    p.add([Entry(kind, "large", at, v, 1.0, r) for v, r in
           ((grouped, 5.5e4), (square, 5.4e4), (Variant.of("real"), 4.1e4))])
    odd = {"M": 1000, "N": 1000, "K": 1000}
    assert edge_tasks(p, kind, "large", "gpu") == [
        Task(Variant.of("real"), odd, "plan"), Task(EZ, odd),
        Task(Variant.of("edge-zmma", **square.kw), odd)]
    p.entries = [e for e in p.entries if e.variant.codelet == "real"]
    assert edge_tasks(p, kind, "large", "gpu") == []


@pytest.mark.gpu
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             ("C", False)])
def test_edge_zmma_on_a_cuda_gpu(cuda_session: Any, trans_a: Any, trans_b: Any) -> None:
    """Entries via "here" at 1000³ and 257×129×67 (each layout's), CuPy operands, C
    NaN-poisoned, against NumPy, twice (the repeated call's plan)."""
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(7)
    for m, n, k in ((1000, 1000, 1000), (257, 129, 67)):
        layout = {False: "N", True: "T", "C": "C"}[trans_a] + {False: "N", True: "T"}[trans_b]
        prof = Profile(cuda_session.device.fingerprint, cuda_session.device.label, "gpu")
        at = {"M": m, "N": n, "K": k}
        prof.add([Entry(Kind("mm", "complex128", layout), size_class("mm", at), at, EZ, 1e-4,
                        5e4, via="here")])
        cuda_session.profile = prof
        cuda_session.forget_choices()
        sa = (k, m) if trans_a else (m, k)
        sb = (n, k) if trans_b else (k, n)
        A = rng.uniform(-1, 1, sa) + 1j * rng.uniform(-1, 1, sa)
        B = rng.uniform(-1, 1, sb) + 1j * rng.uniform(-1, 1, sb)
        op = {False: lambda x: x, True: lambda x: x.T, "C": lambda x: np.conj(x.T)}
        want = op[trans_a](A) @ op[trans_b](B)
        plan = cuda_session.plan_gemm(A.shape, B.shape, "complex128", trans_a=trans_a,
                                      trans_b=trans_b)
        assert plan.built.variant == EZ and plan.padded == plan.sizes
        dA, dB = cp.asarray(A), cp.asarray(B)
        for _ in range(2):
            C = cp.full((m, n), np.nan, np.complex128)
            cuda_session.gemm(dA, dB, C, trans_a=trans_a, trans_b=trans_b).result()
            assert np.abs(cp.asnumpy(C) - want).max() <= 1e-13 * k * np.abs(want).max()
