"""Padded GEMM operands and results moved by the derived pad2d/crop2d kernels (liftkit.blas
programs.pad2d / crop2d, the `glb` codelet) instead of the driver's 2-D copy: what CUDA does
where a pitch is not a multiple of 16 bytes (`gemm.copy_kernels`). On the CPU device the
kernels are forced (the 2-D copy is what OpenCL runs), every dtype, layout and path: the one
call, the repeated call's plan, α/β, a column-major C; against NumPy."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant

gm = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)

DTYPES = ("float32", "float64", "complex64", "complex128")
# tiles without a guarded form at these sizes: the plans pad (32-multiples)
TILES = {"float32": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
         "float64": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
         "complex64": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1),
         "complex128": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)}


def _mat(g: np.random.Generator, shape: tuple[int, int], dt: str) -> np.ndarray:
    x = g.standard_normal(shape)
    if dt.startswith("complex"):
        x = x + 1j * g.standard_normal(shape)
    return x.astype(dt)


def _wide(dt: str) -> type:
    return np.complex128 if dt.startswith("complex") else np.float64


@pytest.mark.parametrize("dt", DTYPES)
def test_pad2d_and_crop2d_kernels(session, dt) -> None:  # type: ignore[no-untyped-def]
    """pad2d writes X into the top-left of P×Q zeros (the margins written too); crop2d reads
    the block back; ragged, single-row/column and unpadded shapes."""
    g = np.random.default_rng(1)
    q = session.q
    for m, n, p, qq in ((5, 7, 8, 12), (1, 1, 1, 4), (13, 3, 13, 3), (1, 9, 32, 9)):
        x = _mat(g, (m, n), dt)
        at = {"M": m, "N": n, "P": p, "Q": qq}
        src = q.alloc(x.nbytes)
        q.upload(src, x)
        dst = q.alloc(p * qq * x.itemsize)
        q.upload(dst, np.full((p, qq), np.nan, dt))  # the margins must be written
        session.kernel(Kind("pad2d", dt), at).launch(q, {0: src}, {}, dst, at)
        y = np.empty((p, qq), dt)
        q.read(y, dst)
        want = np.zeros((p, qq), dt)
        want[:m, :n] = x
        np.testing.assert_array_equal(y, want)
        back = q.alloc(x.nbytes)
        session.kernel(Kind("crop2d", dt), at).launch(q, {0: dst}, {}, back, at)
        z = np.empty((m, n), dt)
        q.read(z, back)
        np.testing.assert_array_equal(z, x)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False), (True, True)],
                         ids=["NN", "NT", "TN", "TT"])
def test_padded_gemm_through_the_copy_kernels(session, monkeypatch, dt, trans) -> None:  # type: ignore[no-untyped-def]
    """The padded plan with the copy kernels: the pack steps are pad2d launches (no 2-D copy),
    the product's block comes out through crop2d; one call and repeated calls (call plans) with
    new operands, α = 1 / β = 0 and α, β with a column-major C."""
    monkeypatch.setattr(gm, "copy_kernels", lambda s, have, need, item: True)
    monkeypatch.setattr(gm, "edge_forms", lambda v: [])  # padded, not guarded
    choose = session.choose
    monkeypatch.setattr(session, "choose", lambda kind, sizes: TILES[kind.dtype] if (
        kind.op == "mm") else choose(kind, sizes))
    session.forget_choices()
    g = np.random.default_rng(9)
    m, n, k = 37, 29, 45
    ta, tb = trans
    plan = gm.plan_gemm(session, (k, m) if ta else (m, k), (n, k) if tb else (k, n), dt,
                        trans_a=ta, trans_b=tb, variant=TILES[dt])
    assert plan.padded != plan.sizes
    steps = plan._pack_steps("A") + plan._pack_steps("B")
    assert steps and all(st.built is not None for st in steps)
    assert any(st.built.kind.op == "pad2d" for st in steps)  # type: ignore[union-attr]
    tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
    try:
        _calls(session, g, dt, (m, n, k), trans, tol)
    finally:
        monkeypatch.undo()
        session.forget_choices()  # (the session is shared: no plan of these kernels stays)


def _calls(session, g, dt, mnk, trans, tol) -> None:  # type: ignore[no-untyped-def]
    m, n, k = mnk
    ta, tb = trans
    auto = gm.plan_gemm(session, (k, m) if ta else (m, k), (n, k) if tb else (k, n), dt,
                        trans_a=ta, trans_b=tb)
    assert any(st.built is not None and st.built.kind.op == "pad2d"
               for st in auto._pack_steps("A") + auto._pack_steps("B"))
    for seed in range(3):  # the general path, then the call plan
        a = _mat(g, (k, m) if ta else (m, k), dt)
        b = _mat(g, (n, k) if tb else (k, n), dt)
        want = (a.T if ta else a).astype(_wide(dt)) @ (b.T if tb else b)
        c = np.full((m, n), np.nan, dt)
        session.gemm(a, b, c, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(c, want, rtol=tol, atol=tol * k)
        cf = np.asfortranarray(_mat(g, (m, n), dt))
        w2 = 2.0 * want + 0.5 * cf
        session.gemm(a, b, cf, alpha=2.0, beta=0.5, trans_a=ta, trans_b=tb).result()
        np.testing.assert_allclose(cf, w2, rtol=tol, atol=tol * k)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("ta", [False, True], ids=["N", "T"])
def test_the_real_plan_through_the_copy_kernels(session, monkeypatch, dt, ta) -> None:  # type: ignore[no-untyped-def]
    """A complex GEMM as one real GEMM (codelet `real`): A (transposed first for T) and the
    cembed of B padded by pad2d, C's block out by crop2d."""
    monkeypatch.setattr(gm, "copy_kernels", lambda s, have, need, item: True)
    monkeypatch.setattr(gm, "edge_forms", lambda v: [])
    g = np.random.default_rng(4)
    m, n, k = 37, 29, 45
    a, b = _mat(g, (k, m) if ta else (m, k), dt), _mat(g, (k, n), dt)
    real = TILES["float32" if dt == "complex64" else "float64"]
    plan = gm.plan_gemm(session, a.shape, b.shape, dt, trans_a=ta, variant=Variant.of("real"),
                        real=real)
    ops = [st.built.kind.op for r in "AB" for st in plan._pack_steps(r)]  # type: ignore[union-attr]
    assert plan.embed is not None and ops.count("pad2d") == 2 and plan.crop_kernel() is not None
    ws = plan.workspace()
    c = np.full((m, n), np.nan, dt)
    plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c).result()
    tol = 1e-4 if dt == "complex64" else 1e-10
    np.testing.assert_allclose(c, (a.T if ta else a).astype(np.complex128) @ b, rtol=tol,
                               atol=tol * k)


def test_copy_kernels_only_on_cuda_where_a_pitch_is_off_16_bytes(session) -> None:  # type: ignore[no-untyped-def]
    """OpenCL keeps the 2-D copy; on CUDA, 16-byte pitches keep it too."""
    assert not gm.copy_kernels(session, (1023, 999), (1024, 1008), 4)

    class Cuda:
        backend = "cuda"

    assert gm.copy_kernels(Cuda(), (1023, 999), (1024, 1008), 4)  # type: ignore[arg-type]
    assert gm.copy_kernels(Cuda(), (1023, 1008), (1023, 1025), 4)  # type: ignore[arg-type]
    assert not gm.copy_kernels(Cuda(), (1000, 1000), (1024, 1024), 4)  # type: ignore[arg-type]


@pytest.mark.gpu
def test_padded_gemm_through_the_copy_kernels_on_a_cuda_gpu(cuda_session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Odd pitches on CUDA: the tiled variants padded (their guarded forms set aside), the
    copies the derived kernels, not the 2-D copy; CuPy operands, against NumPy."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setattr(gm, "edge_forms", lambda v: [])
    g = np.random.default_rng(13)
    s32 = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    s64 = Variant.of("mma", tm=64, tn=64, tk=8, warps=4, staged=4, lines=1)
    for dt, v, real in (("float32", s32, None), ("float64", s64, None),
                        ("complex64", Variant.of("real"), s32),
                        ("complex128", Variant.of("real"), s64)):
        m, n, k = 67, 45, 33
        plan = gm.plan_gemm(cuda_session, (m, k), (k, n), dt, variant=v, real=real)
        steps = plan._pack_steps("A") + plan._pack_steps("B")
        kernels = plan.crop_kernel() is not None and any(
            st.built is not None and st.built.kind.op == "pad2d" for st in steps)
        assert kernels == (dt != "complex128"), dt  # (16-byte elements: 16-byte pitches)
        ws = plan.workspace()
        for seed in range(2):
            a, b = _mat(g, (m, k), dt), _mat(g, (k, n), dt)
            c = cp.full((m, n), np.nan, dt)
            plan.run(plan.pack("A", cp.asarray(a), ws), plan.pack("B", cp.asarray(b), ws),
                     c).result()
            tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
            np.testing.assert_allclose(cp.asnumpy(c), a.astype(_wide(dt)) @ b, rtol=tol,
                                       atol=tol * k)


def test_padded_plans_launch_the_copy_kernels_on_cuda(blas_host, stub_cuda) -> None:  # type: ignore[no-untyped-def]
    """The CUDA queue stubbed (benchmarks/blas_host.py): SGEMM 2048×2049×2047 pads A and B by
    pad2d and takes C's block out by crop2d, four launches and no 2-D copy, the same on the
    repeated call (its call plan); with α, β the epilogue is a fifth launch."""
    host, s = blas_host, stub_cuda
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    A, B, C = (host.ndarray(sh, "float32") for sh in ((2048, 2047), (2047, 2049), (2048, 2049)))
    plan = s.plan_gemm(A.shape, B.shape, np.float32)
    assert plan.padded != plan.sizes and plan.crop_kernel() is not None
    for alpha, beta, launches in ((1.0, 0.0, 4), (1.0, 0.0, 4), (2.0, 0.5, 5), (2.0, 0.5, 5)):
        got.clear()
        host.COUNTS.clear()
        s.gemm(A, B, C, alpha=alpha, beta=beta)
        assert len(got) == launches and host.COUNTS.get("cuMemcpy2DAsync", 0) == 0


def test_a_complex_entry_measured_at_the_very_sizes_is_the_real_kernel() -> None:
    """The `real` plan's kernel: a via-real entry measured at the complex GEMM's very sizes is
    the choice there even where it pads (CGEMM 1023×1025×999: 64×64 tiles padded); elsewhere
    the class's entries that need no padding at the real product's sizes, else None."""
    from types import SimpleNamespace

    from liftkit.blas.profile import Entry, Profile

    kind = Kind("mm", "complex64", "NN")
    t64 = Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    t128 = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2)
    p = Profile("dev", "dev", "gpu")
    p.add([Entry(kind, "large", {"M": 1024, "N": 1024, "K": 1024}, t128, 1.0, 41000, via="real"),
           Entry(kind, "large", {"M": 1023, "N": 1025, "K": 999}, t64, 1.0, 35000, via="real")])
    s = SimpleNamespace(profile=p)

    def choice(m: int, n: int, k: int) -> Any:
        return gm.real_choice(s, kind, {"M": m, "N": n, "K": k},  # type: ignore[arg-type]
                              {"M": m, "N": 2 * n, "K": 2 * k})

    assert choice(1023, 1025, 999) == t64  # measured there: padded
    assert choice(1024, 1024, 1024) == t128  # the class's fastest, no padding
    assert choice(1000, 1000, 1000) is None  # both would pad: the real dtype's own choice
    assert gm.real_choice(s, Kind("mm", "complex64", "RN"), {"M": 1023, "N": 1025, "K": 999},  # type: ignore[arg-type]
                          {"M": 1023, "N": 2050, "K": 1998}) == t64  # (from NN's entries)
