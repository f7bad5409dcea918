"""liftkit.blas's `zmma` codelet (ZGEMM on the FP64 tensor cores over complex tiles, blas/mm_zmma.py):
in the CUDA tuning space for complex128, its multiples and derivation for every layout, sizes off
its tiles fitted to the `real` plan; (gpu marker) gemm calls on it against NumPy, forced through a
profile, for NN/NT/TN, TT and conjugate transposes, on and off the tiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Session
from liftkit.blas.codelets import CODELETS, Kind, Variant, derive, fit_choice, lookup_variant, multiples
from liftkit.blas.profile import Entry, Profile
from liftkit.ir import patterns as P
from liftkit.ir.nodes import walk
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64Ahead

ZV = Variant.of("zmma", tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1, group=2)


def test_zmma_is_a_cuda_complex128_codelet_in_the_tuning_space() -> None:
    space = CODELETS["zmma"].space("gpu")
    assert space[0] == {"tm": 128, "tn": 32, "tk": 8, "warps": 4, "staged": 4, "ahead": 1}
    assert {**space[0], "group": 2} in space and CODELETS["zmma"].space("cpu") == []
    assert CODELETS["zmma"].dtypes == ("complex128",) and CODELETS["zmma"].backends == ("cuda",)
    for layout in ("NN", "NT", "TN", "CN"):
        kind = Kind("mm", "complex128", layout)
        v = lookup_variant(kind, str(ZV))
        assert v == ZV and multiples(kind, v) == {"M": 256, "N": 32, "K": 8}
        mma = [n for n in walk(derive(kind, v).final.body) if isinstance(n, P.ReduceMma)]
        assert [type(n) for n in mma] == [ReduceMmaZ64Ahead]
        assert fit_choice(kind, v, {"M": 1024, "N": 1024, "K": 1024}) == v
        assert fit_choice(kind, v, {"M": 1000, "N": 1024, "K": 1024}) == Variant.of("real")


def _profiled(session: Session, v: Variant) -> None:
    """A profile whose choice for complex128 GEMMs of every layout and class is `v`."""
    prof = Profile(session.device.fingerprint, session.device.label, "gpu")
    prof.add(Entry(Kind("mm", "complex128", lay), c, {"M": 1024, "N": 1024, "K": 1024}, v,
                   1e-3, 1.0, "GFLOP/s")
             for lay in ("NN", "NT", "TN", "CN", "NC") for c in ("small", "medium", "large", "huge"))
    session.profile = prof
    session.forget_choices()


@pytest.mark.gpu
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False),
                                             ("C", False), (False, "C"), (True, True)])
def test_blas_runs_zgemm_on_zmma(cuda_session: Session, trans_a: Any, trans_b: Any) -> None:
    """CuPy operands in and out; every op pair (TT through NN, Aᴴ through CN's kernel), on the
    tiles and off them (the real plan), within rounding of complex128."""
    cp = pytest.importorskip("cupy")
    _profiled(cuda_session, ZV)
    rng = np.random.default_rng(1)
    for m, n, k in ((512, 96, 64), (100, 70, 50)):
        shape_a = (k, m) if trans_a else (m, k)
        shape_b = (n, k) if trans_b else (k, n)
        A = rng.uniform(-1, 1, shape_a) + 1j * rng.uniform(-1, 1, shape_a)
        B = rng.uniform(-1, 1, shape_b) + 1j * rng.uniform(-1, 1, shape_b)
        op = {False: lambda x: x, True: lambda x: x.T, "C": lambda x: np.conj(x.T)}
        want = op[trans_a](A) @ op[trans_b](B)
        got = cp.asnumpy(cuda_session.gemm(cp.asarray(A), cp.asarray(B), trans_a=trans_a,
                                           trans_b=trans_b).result())
        assert np.abs(got - want).max() <= 1e-13 * k * np.abs(want).max()
    assert cuda_session.choose(Kind("mm", "complex128", "TN"), {"M": 512, "N": 96, "K": 64}) == ZV


def test_the_h100_profile_runs_zgemm_on_zmma_where_it_won() -> None:
    """results/issue15/zgemm25 (ship.py): ZGEMM NN/NT/TN at 1024 and 2048 (class large) on the
    complex DMMA kernel (run 2: 1.00x, 1.01x, 0.95x cuBLAS per call at 1024), conjugating
    layouts through their plain ones; results/issue15/zgemm26 (ship.py): NN and NT at 4096 and
    8192 on zmma too (groups of 8 and 2; 0.969x / 0.989x at 4096), TN there keeps the real plan;
    a size off the tiles (1000) the real plan too, and below the class (512) the default."""
    from liftkit.blas.profile import SHIPPED
    from liftkit.blas.session import _tuned_kinds

    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")

    def choice(lay: str, n: int) -> Any:
        sizes = {"M": n, "N": n, "K": n}
        for k in _tuned_kinds(Kind("mm", "complex128", lay)):
            v = prof.choose(k, sizes, multiples)
            if v is not None:
                return fit_choice(k, v, sizes)
        return None

    for lay in ("NN", "NT", "TN", "CN", "NC"):
        for n in (1024, 2048):
            assert choice(lay, n) == ZV
        big = {"NN": Variant.of("zmma", **{**ZV.kw, "group": 8}), "NT": ZV, "NC": ZV}.get(
            lay, Variant.of("real"))
        assert choice(lay, 4096) == choice(lay, 8192) == big
        assert choice(lay, 1000) == Variant.of("real") and choice(lay, 512) is None
