"""SGEMM NT and TN on their own cp.async derivations (tiles-async with the transposed operand
tiled as stored, rules/mm_layouts.py) through liftkit.blas on a CUDA GPU: plain, with the tail
split along K (small grids: every tile split), grouped block order, at sizes on and off the
tiles (padded), TT through NN with swapped operands; checked against float64 NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

T64 = dict(tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
VARIANTS = [Variant.of("tiles-async", **T64),
            Variant.of("tiles-async", **T64, split=3, slots=924),
            Variant.of("tiles-async", **T64, rot=1),
            Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, group=2)]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", VARIANTS, ids=[str(v) for v in VARIANTS])
def test_nt_and_tn_on_tiles_async(cuda_session: Session, variant: Variant) -> None:
    prof = Profile(cuda_session.device.fingerprint, cuda_session.device.label, "gpu")
    lays = ("NN", "NT") if variant.kw.get("rot") else ("NN", "NT", "TN")  # rot: not for TN
    prof.add(Entry(Kind("mm", "float32", lay), cls, {"N": 1}, variant, 1.0, 1e9)
             for lay in lays for cls in ("small", "medium", "large"))
    s = Session(cuda_session.device, profile=prof)
    import liftkit.blas.profile as pm

    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    rng = np.random.default_rng(7)
    for m, n, k, ta, tb in ((256, 128, 96, False, True), (256, 192, 160, True, False),
                            (100, 70, 33, False, True), (130, 64, 48, True, False),
                            (256, 128, 64, True, True)):
        if (ta and "TN" not in lays):
            continue
        A = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
        B = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
        got = s.gemm(A, B, trans_a=ta, trans_b=tb).result()
        want = (A.T if ta else A).astype(np.float64) @ (B.T if tb else B).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * k,
                                   err_msg=f"{variant} {m}x{n}x{k} ta={ta} tb={tb}")
        plan = s.plan_gemm(A.shape, B.shape, np.dtype(np.float32), trans_a=ta, trans_b=tb)
        assert plan.embed is None and plan.variant.codelet == "tiles-async"
