"""The H100 profile's DGEMM entries of results/issue15/fp64-26 (ship.py): TN at every size class and
NN above 2048 run the DMMA kernels whose k-row operands keep their 128-byte segments rotated
(mma lines=3), NN 1024 the 8-warp 128×64 kernel with B in blocks of 4 rows (lines=2); sizes off
the tiles take those kernels' guarded forms on rotated rows (lines=1), and NT keeps its own."""

from __future__ import annotations

import pytest

from liftkit.blas.codelets import Kind, Variant, multiples
from liftkit.blas.mm_codelets import edge_forms, fit_choice
from liftkit.blas.profile import SHIPPED, Profile


def _mma(tm: int, w: int, lines: int, group: int = 0) -> Variant:
    more = {"group": group} if group else {}
    return Variant.of("mma", tm=tm, tn=64, tk=16, warps=w, staged=4, lines=lines, ik=8, ahead=2, **more)


def _choice(layout: str, n: int) -> Variant:
    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")
    kind = Kind("mm", "float64", layout)
    sizes = {"M": n, "N": n, "K": n}
    v = prof.choose(kind, sizes, multiples)
    assert v is not None
    return fit_choice(kind, v, sizes)


@pytest.mark.parametrize("layout, n, want", [
    ("TN", 1024, _mma(64, 4, 3)), ("TN", 2048, _mma(64, 4, 3)), ("TN", 4096, _mma(128, 4, 3, 8)),
    ("TN", 8192, _mma(128, 4, 3, 8)), ("NN", 1024, _mma(128, 8, 2)), ("NN", 4096, _mma(128, 4, 3, 4)),
    ("NN", 8192, _mma(128, 4, 3, 4))])
def test_the_profile_runs_the_k_row_layouts(layout: str, n: int, want: Variant) -> None:
    assert _choice(layout, n) == want


def test_nt_keeps_its_kernels_and_guarded_forms_take_rotated_rows() -> None:
    assert _choice("NT", 1024).kw.get("lines") == 1
    for v in (_mma(64, 4, 3), _mma(128, 8, 2)):
        assert edge_forms(v)[0] == Variant("edge-mma", tuple(
            ("lines", 1) if p[0] == "lines" else p for p in v.params))
