"""liftkit.blas on the CUDA backend: GPU arrays of CuPy and PyTorch in and out without copies,
futures on CUDA events, the FP64 tensor-core derivation (`mma`), and one clear error for arrays
of the wrong library, dtype or shape. The random-shape property tests run on CUDA too
(test_properties.py, `cuda` parameter). Tests without `gpu` run everywhere: the refusals, and
NVRTC compiling the CUDA-only derivations to PTX."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import BlasError, Kind, Profile, Session, Variant
from liftkit.blas.codelets import edge_forms
from liftkit.blas.profile import Entry

MMA = Variant.of("mma", tm=64, tn=64, tk=16, warps=4, staged=2)
# the CUDA default (results/issue12/mma run 5): tiles copied over whole lines, cp.async 4 deep
MMA_LINES = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1)


class _FakeGPUArray:
    """An object that says it lives on a CUDA GPU (never dereferenced by these tests)."""

    __cuda_array_interface__ = {"shape": (4, 4), "typestr": "<f4", "data": (0, False),
                                "version": 3, "strides": None}


def test_gpu_array_on_an_opencl_session_is_one_error(session: Session) -> None:
    with pytest.raises(BlasError, match="is a GPU array .CUDA., but this session runs on"):
        session.gemm(_FakeGPUArray(), np.ones((4, 4), np.float32))


def test_cuda_backend_without_a_gpu_is_one_error() -> None:
    from liftkit.backends.cuda import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(BlasError, match="liftkit.blas on CUDA: no CUDA device"):
        Session("gpu", backend="cuda")


@pytest.mark.parametrize("kind,variant", [
    (Kind("mm", "float64", "NN"), MMA), (Kind("mm", "float64", "TN"), MMA),
    (Kind("mm", "float64", "NN"), MMA_LINES), (Kind("mm", "float64", "TN"), MMA_LINES),
    (Kind("mm", "float32", "NN"), Variant.of("tiles", tm=64, tn=64, tk=16, rm=8, rn=8))])
def test_cuda_derivations_compile_with_nvrtc(kind: Kind, variant: Variant, compile_cuda: Any) -> None:
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions
    compiled = compile_program(derive(kind, variant).final, CompileOptions(dialect="cuda"))
    for k in compiled.kernels:
        out = compile_cuda(k.source, "sm_90", k.build_options, name=f"{k.name}.cu")
        assert out is not None


def test_mma_is_a_cuda_float64_codelet() -> None:
    from liftkit.blas.codelets import CodeletError, derive, space

    assert MMA in space(Kind("mm", "float64", "NN"), "gpu", "cuda")
    assert space(Kind("mm", "float64", "NN"), "gpu", "cuda")[0] == MMA_LINES
    mma = {lay: [v for v in space(Kind("mm", "float64", lay), "gpu", "cuda") if v.codelet == "mma"]
           for lay in ("NN", "TN")}
    assert mma["TN"] == mma["NN"]  # TN: lines (and the m16n8k8 variants over them) too
    assert sum(v.kw.get("lines", 0) for v in mma["TN"] if not v.kw.get("ik")) == 4
    assert all(v.codelet != "mma" for v in space(Kind("mm", "float64", "NN"), "gpu", "opencl"))
    assert all(v.codelet != "mma" for v in space(Kind("mm", "float32", "NN"), "gpu", "cuda"))
    with pytest.raises(CodeletError, match="float64 only"):
        derive(Kind("mm", "float32", "NN"), MMA)


# -- on a CUDA GPU ------------------------------------------------------------------------------
def _cupy() -> Any:
    return pytest.importorskip("cupy")


@pytest.mark.gpu
def test_cupy_in_and_out_without_copies(cuda_session: Session) -> None:
    cp = _cupy()
    rng = np.random.default_rng(0)
    for order in ("C", "F"):
        A = np.asarray(rng.uniform(-1, 1, (70, 33)), np.float32, order=order)
        B = np.asarray(rng.uniform(-1, 1, (33, 45)), np.float32, order=order)
        dA, dB = cp.asarray(A, order=order), cp.asarray(B, order=order)
        dC = cp.full((70, 45), np.nan, np.float32, order=order)
        ptr = dC.data.ptr
        fut = cuda_session.gemm(dA, dB, dC, beta=0.0)
        got = fut.result()
        assert got is dC and dC.data.ptr == ptr  # written in place
        np.testing.assert_allclose(cp.asnumpy(dC), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
        new = cuda_session.gemm(dA, dB).result()
        assert isinstance(new, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(new), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    x = cp.asarray(rng.uniform(-1, 1, 33).astype(np.float32))
    y = cuda_session.gemv(dA, x).result()
    assert isinstance(y, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(y), np.asarray(A, np.float64) @ cp.asnumpy(x), rtol=1e-4,
                               atol=1e-4)
    T = cuda_session.transpose(dA).result()
    assert isinstance(T, cp.ndarray) and np.array_equal(cp.asnumpy(T), A.T)


@pytest.mark.gpu
def test_torch_in_and_out(cuda_session: Session) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (40, 24))
    B = rng.uniform(-1, 1, (24, 17))
    tA = torch.tensor(A, device="cuda")
    tB = torch.tensor(B, device="cuda")
    out = cuda_session.gemm(tA, tB, alpha=2.0).result()
    assert isinstance(out, torch.Tensor) and out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), 2 * A @ B, rtol=1e-12, atol=1e-12)
    out2 = cuda_session.gemm(2 * tA, tB, alpha=2.0).result()  # its call plan, new operands
    assert out2.data_ptr() != out.data_ptr()
    np.testing.assert_allclose(out2.cpu().numpy(), 4 * A @ B, rtol=1e-12, atol=1e-12)
    s = cuda_session.dot(tA[0].contiguous(), tA[1].contiguous()).result()
    assert abs(s - A[0] @ A[1]) < 1e-12


@pytest.mark.gpu
def test_repeat_calls_on_their_call_plans(cuda_session: Session) -> None:
    """Repeat calls (launched from their call plans, tests/blas/test_call_plans.py) give each
    call's own result, with new operands each time, futures read late after more calls than
    the ring of future events holds, GEMV and GEMM (epilogue) with α ≠ 1, β ≠ 0, sizes off
    the kernels' tiles, complex GEMM through one real GEMM, and NumPy operands."""
    cp = _cupy()
    rng = np.random.default_rng(21)
    futs: list[tuple[Any, Any, float]] = []
    for dt in (np.float32,):  # (float64 takes the same paths; its kernels take longer to build)
        tol = 1e-4
        for i in range(12):
            A, B = rng.uniform(-1, 1, (128, 64)), rng.uniform(-1, 1, (96, 64))
            x, y0 = rng.uniform(-1, 1, 128), rng.uniform(-1, 1, 64)
            dA, dB, dx = (cp.asarray(v.astype(dt)) for v in (A, B, x))
            dC, dy = cp.full((128, 96), np.nan, dt), cp.asarray(y0.astype(dt))
            futs.append((cuda_session.gemm(dA, dB, dC, trans_b=True), A @ B.T, tol))
            futs.append((cuda_session.gemv(dA, dx[:128], dy, alpha=2.0, beta=0.5, trans=True),
                         2 * A.T @ x + 0.5 * y0, tol))
            futs.append((cuda_session.transpose(dA), A.T, tol))
            C0 = rng.uniform(-1, 1, (128, 96))
            futs.append((cuda_session.gemm(dA, dB, cp.asarray(C0.astype(dt)), alpha=2.0, beta=0.5,
                                           trans_b=True), 2 * A @ B.T + 0.5 * C0, tol))
            futs.append((cuda_session.gemm(A.astype(dt), B.astype(dt).T), A @ B.T, tol))
            P, Q = rng.uniform(-1, 1, (100, 129)), rng.uniform(-1, 1, (129, 37))  # padded
            futs.append((cuda_session.gemm(cp.asarray(P.astype(dt)), cp.asarray(Q.astype(dt)),
                                           alpha=1.5), 1.5 * P @ Q, tol))
            v, w = rng.uniform(-1, 1, 129), rng.uniform(-1, 1, 100)
            dP = cp.asarray(P.astype(dt))
            futs.append((cuda_session.gemv(dP, cp.asarray(v.astype(dt))), P @ v, tol))
            futs.append((cuda_session.gemv(dP, cp.asarray(w.astype(dt)), trans=True), P.T @ w,
                         tol))
            futs.append((cuda_session.transpose(dP), P.T, tol))
            cdt = np.complex64
            Z = P[:31, :65] + 1j * rng.uniform(-1, 1, (31, 65))
            W, V = Q[:31, :17] - 1j * Q[:31, :17], rng.uniform(-1, 1, (65, 17)) + 0j
            futs.append((cuda_session.gemm(cp.asarray(Z.astype(cdt)), cp.asarray(W.astype(cdt)),
                                           cp.asarray(V.astype(cdt)), alpha=1j, beta=0.5,
                                           trans_a="C"), 1j * Z.conj().T @ W + 0.5 * V, tol))
            futs.append((cuda_session.gemv(A.astype(dt), x[:64].astype(dt)), A @ x[:64], tol))
            # padded to the SGEMM tiles (250 -> 256, 190 -> 192) with α = 1, β = 0: the
            # product's block copied into C; operands copied into padded buffers whose margins
            # were cleared once; TN through the nn plan (its transpose at sizes off its tiles)
            R, S = rng.uniform(-1, 1, (250, 250)), rng.uniform(-1, 1, (250, 190))
            dR, dS = cp.asarray(R.astype(dt)), cp.asarray(S.astype(dt))
            futs.append((cuda_session.gemm(dR, dS), R @ S, tol))
            futs.append((cuda_session.gemm(dR, dS, cp.full((250, 190), np.nan, dt),
                                           trans_a=True), R.T @ S, tol))
    assert len(futs) > 64
    for fut, want, tol in futs:
        got = fut.result()
        got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else got
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


@pytest.mark.gpu
def test_futures_are_cuda_events(cuda_session: Session) -> None:
    cp = _cupy()
    A = cp.asarray(np.random.default_rng(2).uniform(-1, 1, (512, 512)).astype(np.float32))
    futs = [cuda_session.gemm(A, A) for _ in range(4)]
    assert all(f.event is not None for f in futs)
    futs[-1].result()
    assert all(f.done() for f in futs)  # one stream: the last done means all done


@pytest.mark.gpu
def test_wrong_arrays_are_one_error(cuda_session: Session) -> None:
    cp = _cupy()
    with pytest.raises(BlasError, match="dtype int32"):
        cuda_session.gemm(cp.ones((4, 4), cp.int32), cp.ones((4, 4), cp.int32))
    with pytest.raises(BlasError, match="inner dimensions"):
        cuda_session.gemm(cp.ones((4, 5), cp.float32), cp.ones((4, 4), cp.float32))
    with pytest.raises(BlasError, match="strided GPU array"):
        cuda_session.gemm(cp.ones((8, 8), cp.float32)[:, ::2], cp.ones((4, 4), cp.float32))
    with pytest.raises(BlasError, match="float64 but the other operands are float32"):
        cuda_session.gemm(cp.ones((4, 4), cp.float32), cp.ones((4, 4), cp.float64))


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [MMA, MMA_LINES])
def test_dgemm_on_the_tensor_cores_at_any_size(cuda_session: Session, variant: Variant) -> None:
    """The FP64 tensor-core derivation (NN and TN, and TT through NN) padded to its tiles, on
    sizes that are not multiples of them (lines=1: TN's A copied along its stored rows)."""
    prof = Profile(cuda_session.device.fingerprint, cuda_session.device.label, "gpu")
    prof.add(Entry(Kind("mm", "float64", lay), cls, {"N": 1}, variant, 1.0, 1e9)
             for lay in ("NN", "TN") for cls in ("small", "medium", "large"))
    s = Session(cuda_session.device, profile=prof)
    import liftkit.blas.profile as pm

    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    rng = np.random.default_rng(5)
    for m, n, k, ta, tb in ((1, 1, 1, False, False), (100, 37, 129, False, False),
                            (65, 130, 17, True, False), (200, 64, 64, True, True)):
        A = rng.uniform(-1, 1, (k, m) if ta else (m, k))
        B = rng.uniform(-1, 1, (n, k) if tb else (k, n))
        got = s.gemm(A, B, trans_a=ta, trans_b=tb).result()
        want = (A.T if ta else A) @ (B.T if tb else B)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * k)
    chosen = s.plan_gemm((64, 64), (64, 64), np.float64).variant  # off its tiles: guarded
    assert chosen == variant or chosen in edge_forms(variant)


@pytest.mark.gpu
def test_numpy_results_read_late_are_their_own(cuda_session: Session) -> None:
    """NumPy results come back at result(); calls enqueued before then share the session's
    scratch workspace and must not overwrite them (reductions, padded GEMMs)."""
    rng = np.random.default_rng(13)
    xs = [rng.uniform(-1, 1, 999) for _ in range(3)]
    mats = [rng.uniform(-1, 1, (65, 31)) for _ in range(3)]
    futs = [cuda_session.asum(x) for x in xs]
    gf = [cuda_session.gemm(a, a.T) for a in mats]
    for f, x in zip(futs, xs):
        assert abs(f.result() - np.abs(x).sum()) < 1e-9
    for f, a in zip(gf, mats):
        np.testing.assert_allclose(f.result(), a @ a.T, rtol=1e-12, atol=1e-12)


def test_cuda_defaults() -> None:
    """Untuned CUDA sessions run the derivations the H100 ran fastest where their tiles fit
    with little padding, `glb` otherwise; OpenCL keeps its own defaults."""
    from liftkit.blas.codelets import default_variant

    big = {"M": 1024, "N": 1024, "K": 1024}
    assert default_variant(Kind("mm", "float64", "NN"), "gpu", big, "cuda") == MMA_LINES
    assert default_variant(Kind("mm", "float64", "TN"), "gpu", big, "cuda") == MMA_LINES
    assert default_variant(Kind("transpose", "float32"), "gpu", big, "cuda") == Variant.of(
        "tiles-t", r=32, k=8)
    assert default_variant(Kind("gemv", "float64", "T"), "gpu", big, "cuda").codelet == \
        "column-groups-tree"
    assert default_variant(Kind("gemv", "float32", "T"), "gpu", big, "cuda").codelet == \
        "column-groups-last"  # one kernel, the last work-group of a column block sums it
    assert default_variant(Kind("mm", "float32", "NN"), "gpu", big, "cuda").codelet == "tiles-async"
    assert default_variant(Kind("mm", "float64", "NT"), "gpu", big, "cuda") == Variant.of("nn")
    assert default_variant(Kind("mm", "complex64", "CN"), "gpu", big, "cuda") == Variant.of("real")
    assert default_variant(Kind("mm", "float64", "NN"), "gpu", {"M": 5, "N": 7, "K": 3},
                           "cuda") == Variant.of("glb")
    assert default_variant(Kind("mm", "float64", "NN"), "gpu", big, "opencl") == Variant.of("glb")
