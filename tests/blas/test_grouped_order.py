"""liftkit.blas and the grouped block order (`mma(group=g)`, rule wrg-row-groups): its grid takes
whole groups of row tiles, so a size that the groups would pad beyond the tiles runs the same
kernel in row order instead; DGEMM NT's own DMMA kernel, which has no guarded form, gives way to
the nn plan where it would pad (`codelets.fit_choice`, applied to the profile's choice)."""

from __future__ import annotations

import pytest

from liftkit.blas.codelets import Kind, Variant, fit_choice, multiples
from liftkit.blas.profile import Entry, Profile

DGEMM = Kind("mm", "float64", "NN")
GROUPED = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2, group=4)
PLAIN = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)


def _cube(n: int, m: int = 0) -> dict[str, int]:
    return {"M": m or n, "N": n, "K": n}


def test_fit_choice_drops_the_order_or_nt_kernel_only_where_they_pad() -> None:
    assert multiples(DGEMM, GROUPED)["M"] == 512 and multiples(DGEMM, PLAIN)["M"] == 128
    assert fit_choice(DGEMM, GROUPED, _cube(4096)) == GROUPED
    assert fit_choice(DGEMM, GROUPED, _cube(4096, 8192)) == GROUPED
    assert fit_choice(DGEMM, GROUPED, _cube(4095, 4097)) == PLAIN  # 4224 rows, not 4608
    assert fit_choice(DGEMM, GROUPED, _cube(4096, 1152)) == PLAIN  # 9 row tiles
    assert fit_choice(DGEMM, PLAIN, _cube(4095, 4097)) == PLAIN
    nt = Kind("mm", "float64", "NT")
    assert fit_choice(nt, GROUPED, _cube(4096)) == GROUPED
    assert fit_choice(nt, GROUPED, _cube(4095, 4097)) == Variant.of("nn")  # no guarded NT form
    assert fit_choice(nt, PLAIN, _cube(1000)) == Variant.of("nn")


def test_a_session_runs_the_grouped_choice_in_row_order_where_groups_pad() -> None:
    from liftkit.blas import Session

    try:
        s = Session("cpu", warn=False)
    except Exception as err:  # noqa: BLE001 - no CPU OpenCL device here
        pytest.skip(f"no CPU session: {err}")
    nt = Kind("mm", "float64", "NT")
    s.profile = Profile("test", "test", "cpu", [Entry(DGEMM, "huge", _cube(4096), GROUPED, 1.0, 1e5),
                                                Entry(nt, "huge", _cube(4096), GROUPED, 1.0, 1e5)])
    s.forget_choices()
    assert s.choose(DGEMM, _cube(4096)) == GROUPED
    assert s.choose(DGEMM, _cube(4095, 4097)) == PLAIN
    assert s.choose(nt, _cube(4096)) == GROUPED and s.choose(nt, _cube(4095, 4097)) == Variant.of("nn")


def test_the_h100_profile_runs_dgemm_on_its_own_dmma_derivations() -> None:
    """results/issue15/dmma23: NN, TN and NT each on a DMMA kernel of their own layout (NT no
    longer through the transpose pass), the grouped block order at 4096 and 8192 (NN at 1024:
    128×64 on 8 warps with B in blocks of 4 rows, ungrouped, results/issue15/fp64-26)."""
    from liftkit.blas.profile import SHIPPED, file_name

    prof = Profile.load(SHIPPED / file_name("cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"))
    for lay in ("NN", "TN", "NT"):
        for n in (1024, 4096, 8192):
            v = prof.choose(Kind("mm", "float64", lay), _cube(n), multiples)
            assert v is not None and v.codelet == "mma" and v.kw["ik"] == 8 and v.kw["ahead"] == 2
            assert bool(v.kw.get("group")) == (n > 1024), (lay, n, v)
