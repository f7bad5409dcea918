"""The H100 profile's ZGEMM entries of results/issue15/zgemm26 (ship.py): NN and NT at 4096 and
8192 run the complex DMMA kernel zmma (128×32×8, 4 warps, 4 stages, read ahead; NN in groups of
8, NT of 2), TN 4096 the real plan on the DGEMM kernel whose k-row segments are rotated (mma
lines=3, a `via` "real" entry of the TN kind), TN 8192 the real plan on NN's real kernel as before."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from liftkit.blas.codelets import Kind, Variant, multiples
from liftkit.blas.gemm_choice import measured_here, real_choice
from liftkit.blas.mm_codelets import fit_choice
from liftkit.blas.profile import SHIPPED, Profile


def _zmma(group: int) -> Variant:
    return Variant.of("zmma", tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1, group=group)


def _mma(lines: int) -> Variant:
    return Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=lines, ik=8, ahead=2,
                      group=4)


def _plan(layout: str, n: int) -> tuple[Variant, Any]:
    """(the plain choice, the real kernel) as plan_gemm makes them from the shipped profile."""
    s: Any = SimpleNamespace(profile=Profile.load(SHIPPED / "profile-397cb6df054d2a73.json"))
    kind = Kind("mm", "complex128", layout)
    sizes = {"M": n, "N": n, "K": n}
    here = measured_here(s, kind, sizes)
    if here and here[0].via == "real":
        return Variant.of("real"), here[0].variant
    v = s.profile.choose(kind, sizes, multiples)
    assert v is not None
    v = fit_choice(kind, v, sizes)
    real = real_choice(s, kind, sizes, {"M": n, "N": 2 * n, "K": 2 * n}) if v.codelet == "real" else None
    return v, real


@pytest.mark.parametrize("layout, n, want, real", [
    ("NN", 4096, _zmma(8), None), ("NT", 4096, _zmma(2), None), ("NN", 8192, _zmma(8), None),
    ("NT", 8192, _zmma(2), None), ("TN", 4096, Variant.of("real"), _mma(3)),
    ("TN", 8192, Variant.of("real"), _mma(1))])
def test_the_profile_runs_zgemm_26s_choices(layout: str, n: int, want: Variant, real: Any) -> None:
    assert _plan(layout, n) == (want, real)
