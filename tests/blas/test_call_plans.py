"""CUDA call plans (`liftkit.blas.calls`) with the driver stubbed (no GPU needed): a repeat
call launches exactly what the general path launched for the first call of its kind, with
the new call's pointers; kinds that pad or pack keep the general path; a new profile makes
new plans. The GPU tests (tests/blas/test_cuda.py) check the results on a device."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

@pytest.fixture()
def host(blas_host: Any) -> Any:
    return blas_host


@pytest.fixture()
def session(stub_cuda: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    s = stub_cuda
    # the padded tests count the driver's 2-D copies: kept at odd pitches here (the derived
    # pad2d/crop2d kernels that CUDA runs there instead: tests/blas/test_pad_kernels.py)
    monkeypatch.setattr(importlib.import_module("liftkit.blas.gemm"), "copy_kernels",
                        lambda *a: False)
    return s


def _record(s: Any) -> list[tuple[Any, ...]]:
    got: list[tuple[Any, ...]] = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append((config, kernel, args))
    return got


def _same(first: list[tuple[Any, ...]], again: list[tuple[Any, ...]], exact: bool = True
          ) -> None:
    """The same launches; `exact`: the same arguments too (else pointers, Python ints, may
    differ: NumPy operands get fresh device buffers per call)."""
    assert len(first) == len(again) > 0
    for (c1, k1, a1), (c2, k2, a2) in zip(first, again):
        assert c1 == c2 and k1 is k2 and len(a1) == len(a2)
        assert [type(v) for v in a1] == [type(v) for v in a2]
        if exact:  # the same arrays: the same pointers, sizes and scalars
            assert list(a1) == list(a2)
        else:
            assert [v for v in a1 if type(v) is not int] == [v for v in a2 if type(v) is not int]


CASES = {
    "gemm float32 NN": lambda h, s: (None, lambda A=h.ndarray((256, 128), "float32"),
                                     B=h.ndarray((128, 64), "float32"),
                                     C=h.ndarray((256, 64), "float32"): s.gemm(A, B, C)),
    "gemm float64 NT (nn plan)": lambda h, s: (None, lambda A=h.ndarray((256, 128), "float64"),
                                               B=h.ndarray((64, 128), "float64"),
                                               C=h.ndarray((256, 64), "float64"):
                                               s.gemm(A, B, C, trans_b=True)),
    "gemm float32 TN padded (nn plan)": lambda h, s: (
        None, lambda A=h.ndarray((999, 1000), "float32"), B=h.ndarray((999, 1001), "float32"),
        C=h.ndarray((1000, 1001), "float32"): s.gemm(A, B, C, trans_a=True)),
    "gemm complex64 TN padded (real, transpose)": lambda h, s: (
        None, lambda A=h.ndarray((999, 1000), "complex64"), B=h.ndarray((999, 1001), "complex64"),
        C=h.ndarray((1000, 1001), "complex64"): s.gemm(A, B, C, trans_a=True)),
    "gemm float32 epilogue": lambda h, s: (None, lambda A=h.ndarray((256, 128), "float32"),
                                           B=h.ndarray((128, 64), "float32"),
                                           C=h.ndarray((256, 64), "float32"):
                                           s.gemm(A, B, C, alpha=2.0, beta=0.5)),
    "gemm float64 TT alpha": lambda h, s: (None, lambda A=h.ndarray((128, 256), "float64"),
                                           B=h.ndarray((64, 128), "float64"),
                                           C=h.ndarray((256, 64), "float64"):
                                           s.gemm(A, B, C, alpha=3.0, trans_a=True,
                                                  trans_b=True)),
    "gemm complex64 NN (real)": lambda h, s: (None, lambda A=h.ndarray((64, 32), "complex64"),
                                              B=h.ndarray((32, 48), "complex64"),
                                              C=h.ndarray((64, 48), "complex64"): s.gemm(A, B, C)),
    "gemm complex128 CN padded (real)": lambda h, s: (
        None, lambda A=h.ndarray((31, 65), "complex128"), B=h.ndarray((31, 17), "complex128"),
        C=h.ndarray((65, 17), "complex128"): s.gemm(A, B, C, alpha=1j, beta=0.5,
                                                     trans_a="C")),
    "gemv float32 N": lambda h, s: (None, lambda A=h.ndarray((512, 256), "float32"),
                                    x=h.ndarray((256,), "float32"),
                                    y=h.ndarray((512,), "float32"): s.gemv(A, x, y)),
    "gemv float64 T beta": lambda h, s: (None, lambda A=h.ndarray((512, 256), "float64"),
                                         x=h.ndarray((512,), "float64"),
                                         y=h.ndarray((256,), "float64"):
                                         s.gemv(A, x, y, alpha=2.0, beta=0.5, trans=True)),
    "gemv float32 N padded": lambda h, s: (None, lambda A=h.ndarray((1001, 999), "float32"),
                                           x=h.ndarray((999,), "float32"),
                                           y=h.ndarray((1001,), "float32"):
                                           s.gemv(A, x, y, beta=2.0)),
    "gemv float64 T padded": lambda h, s: (None, lambda A=h.ndarray((1001, 999), "float64"),
                                           x=h.ndarray((1001,), "float64"),
                                           y=h.ndarray((999,), "float64"):
                                           s.gemv(A, x, y, trans=True)),
    "transpose float64 padded": lambda h, s: (None, lambda A=h.ndarray((1001, 999), "float64"),
                                              O=h.ndarray((999, 1001), "float64"):
                                              s.transpose(A, O)),
    "transpose float32": lambda h, s: (None, lambda A=h.ndarray((256, 512), "float32"),
                                       O=h.ndarray((512, 256), "float32"): s.transpose(A, O)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_repeat_call_launches_what_the_first_did(host: Any, session: Any, case: str) -> None:
    got = _record(session)
    _, call = CASES[case](host, session)
    call()
    first = list(got)
    got.clear()
    call()
    _same(first, got)
    assert any(v for v in session.calls._plans.values()), "no call plan was made"


def test_a_plan_takes_each_calls_pointers_and_scalars(host: Any, session: Any) -> None:
    got = _record(session)
    A, x, y = (host.ndarray(s, "float32") for s in ((512, 256), (256,), (512,)))
    session.gemv(A, x, y)
    A2, x2, y2 = (host.ndarray(s, "float32") for s in ((512, 256), (256,), (512,)))
    got.clear()
    session.gemv(A2, x2, y2, alpha=3.0)
    args = [a for _, _, aa in got for a in aa]
    for arr in (A2, x2, y2):
        assert arr.data.ptr in args
    assert A.data.ptr not in args and np.float32(3.0) in args


def test_numpy_operands_are_uploaded_per_call(host: Any, session: Any) -> None:
    got = _record(session)
    rng = np.random.default_rng(1)
    A = np.asfortranarray(rng.random((256, 128), np.float32))
    B = rng.random((128, 64)).astype(np.float32)
    first = session.gemm(A, B)
    calls = list(got)
    got.clear()
    again = session.gemm(A, B)
    _same(calls, got, exact=False)
    r1, r2 = first.result(), again.result()  # the stub copies nothing back: shapes, orders
    assert r1.shape == r2.shape == (256, 64) and r2.flags.c_contiguous


@pytest.mark.parametrize("alpha,beta,launches", [(1.0, 0.0, 1), (2.0, 0.5, 2)])
def test_padded_sizes_are_planned_as_the_general_path_runs_them(
        host: Any, session: Any, alpha: float, beta: float, launches: int) -> None:
    """Sizes off the kernel's tiles: operands copied into padded workspace buffers, the product's
    block copied out (α = 1, β = 0: into C, no epilogue) — the same launches and copies on the
    repeat call. The padded buffers' margins are cleared once, by the first call, not again.
    (Sizes with K and N not multiples of 4 and M·N·K above gemm.EDGE_LOSSY_VOLUME: below it, or
    with 4 | K, N, a guarded kernel runs on the operands themselves, tests/blas/test_edges.py.)"""
    got = _record(session)
    A, B, C = (host.ndarray(s, "float32") for s in ((2048, 2047), (2047, 2049), (2048, 2049)))
    host.COUNTS.clear()
    session.gemm(A, B, C, alpha=alpha, beta=beta)
    first, general = list(got), dict(host.COUNTS)
    # the margins of A's and B's padded copies, and the kernel's zero-filled temporaries: the
    # H100 profile's SGEMM here (tiles-async, its tail split: mm-split-tail) has its flags
    flags = sum(b.zeroed for b in session.plan_gemm(A.shape, B.shape, np.float32).built.compiled.buffers)
    assert flags == 1 and general["cuMemsetD8Async"] == 2 + flags
    got.clear()
    host.COUNTS.clear()
    session.gemm(A, B, C, alpha=alpha, beta=beta)
    _same(first, got)
    assert len(got) == launches
    assert host.COUNTS["cuMemcpy2DAsync"] == general["cuMemcpy2DAsync"] == 3
    assert host.COUNTS.get("cuMemsetD8Async", 0) == 0
    assert any(v for v in session.calls._plans.values())


def test_a_padded_buffer_is_cleared_again_for_another_shape(host: Any, session: Any) -> None:
    """Two shapes padded to the same buffer write different regions of it: each change of
    shape clears its margins again (stale values there would enter the product)."""
    shapes = [((2048, 2047), (2047, 2049)), ((2040, 2030), (2030, 2049))]  # (as above)
    # the first call also zero-fills the split kernel's flags (once per session workspace)
    for (sa, sb), clears in zip(shapes + shapes[:1], (3, 2, 2)):
        A, B = host.ndarray(sa, "float32"), host.ndarray(sb, "float32")
        C = host.ndarray((sa[0], sb[1]), "float32")
        host.COUNTS.clear()
        session.gemm(A, B, C)
        assert host.COUNTS["cuMemsetD8Async"] == clears
        host.COUNTS.clear()
        session.gemm(A, B, C)  # the same shape again: its plan, no clear
        assert host.COUNTS.get("cuMemsetD8Async", 0) == 0


def test_bad_input_is_checked_before_a_plan_exists(host: Any, session: Any) -> None:
    from liftkit.blas import BlasError

    A, B = host.ndarray((64, 32), "float32"), host.ndarray((31, 16), "float32")
    for _ in range(2):
        with pytest.raises(BlasError, match="inner dimensions"):
            session.gemm(A, B)
    assert not session.calls._plans


def test_a_new_profile_makes_new_plans(host: Any, session: Any) -> None:
    A, B, C = (host.ndarray(s, "float32") for s in ((256, 128), (128, 64), (256, 64)))
    session.gemm(A, B, C)
    assert session.calls._plans
    session.profile = None
    session.gemm(A, B, C)  # the general path again, under the new choices
    assert len(session.calls._plans) == 1


def test_an_epilogue_plan_clears_c_when_beta_is_zero(host: Any, session: Any) -> None:
    """α·P + 0·C reads C: the plan clears it first, as the general path does (C may hold NaN);
    with β ≠ 0 it does not."""
    A, B, C = (host.ndarray(s, "float32") for s in ((256, 128), (128, 64), (256, 64)))
    for beta, clears in ((0.0, 1), (0.5, 0)):
        session.gemm(A, B, C, alpha=2.0, beta=beta)
        host.COUNTS.clear()
        session.gemm(A, B, C, alpha=2.0, beta=beta)
        assert host.COUNTS["cuMemsetD8Async"] == clears
        assert host.COUNTS["cuda.core launch"] == 2  # the product, the epilogue


def test_padding_copies_reuse_one_descriptor_with_each_calls_pointers(
        host: Any, session: Any) -> None:
    """The 2-D copies of a padded GEMM: one driver descriptor per geometry, made once, filled
    with each call's addresses (the driver reads it during the call)."""
    drv = session.q._drv()
    seen: list[tuple[Any, ...]] = []
    original = drv.cuMemcpy2DAsync
    drv.cuMemcpy2DAsync = lambda p, stream: (seen.append(
        (id(p), p.srcDevice, p.dstDevice, p.Height, p.WidthInBytes, p.srcPitch, p.dstPitch)),
        original(p, stream))[1]
    try:
        calls = []
        for _ in range(3):
            A, B, C = (host.ndarray(s, "float32") for s in ((2048, 2047), (2047, 2049),
                                                             (2048, 2049)))  # padded: as above
            seen.clear()
            session.gemm(A, B, C)
            calls.append((list(seen), A, C))
    finally:
        drv.cuMemcpy2DAsync = original
    for copies, A, C in calls:
        assert len(copies) == 3  # A and B padded, the product's block into C
        assert copies[0][1] == A.data.ptr and copies[0][3:] == (2048, 2047 * 4, 2047 * 4, 2048 * 4)
        assert copies[-1][2] == C.data.ptr and copies[-1][3:5] == (2048, 2049 * 4)
    assert [c[0] for c in calls[1][0]] == [c[0] for c in calls[2][0]]  # the same descriptors
