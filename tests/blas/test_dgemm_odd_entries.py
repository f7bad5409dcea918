"""The H100 profile's DGEMM odd-size entries of results/issue15/fp64-25b (ship.py): NN 1000³ runs
the guarded DMMA kernel of 128×64 tiles on 8 warps (measured there), 1023×1025×999 the split plan
whose interior (1023×1024×1024) runs the same kernel (an entry via "here": those sizes alone), and
the 8-warp form is what the class's other odd sizes fall back to; 1024 keeps its own kernel."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from liftkit.blas.codelets import Kind, Variant
from liftkit.blas.gemm import measured_here, profiled_edge
from liftkit.blas.profile import SHIPPED, Profile

W8 = Variant.of("edge-mma", tm=128, tn=64, tk=16, warps=8, staged=4, lines=1, ik=8, ahead=2)
NN = Kind("mm", "float64", "NN")


def _session() -> Any:
    return SimpleNamespace(profile=Profile.load(SHIPPED / "profile-397cb6df054d2a73.json"))


def _cube(n: int) -> dict[str, int]:
    return {"M": n, "N": n, "K": n}


def test_dgemm_1000_and_the_split_interior_run_the_8_warp_guarded_kernel() -> None:
    s = _session()
    assert profiled_edge(s, NN, _cube(1000)) == W8
    assert measured_here(s, NN, {"M": 1023, "N": 1025, "K": 999})[0].variant == Variant.of(
        "split", w=64)  # (faster there than the guarded entry: the split plan runs)
    assert profiled_edge(s, NN, {"M": 1023, "N": 1024, "K": 1024}) == W8
    assert [e.variant for e in s.profile.at_sizes(NN, {"M": 1023, "N": 1024, "K": 1024}, "here")] == [W8]


def test_other_odd_sizes_fall_back_to_the_nearest_measured_form() -> None:
    s = _session()
    assert profiled_edge(s, NN, _cube(1500)) == W8  # lines fit (N, K even): the nearest shape
    assert profiled_edge(s, NN, _cube(1999)) == Variant.of(  # measured there (K odd)
        "edge-mma", tm=64, tn=64, tk=8, warps=2, staged=4)
