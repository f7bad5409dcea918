"""Every OpenCL-level bundled program runs under the Oclgrind simulator with zero reports
(out-of-bounds accesses, data races with OCLGRIND_DATA_RACES=1, barrier divergence) and matches
the interpreter."""

from __future__ import annotations

import pytest

from liftkit.backends.opencl import list_devices
from liftkit.programs import PROGRAMS
from liftkit.testing.oclgrind import SMALL_SIZES as _BASE_SIZES
from liftkit.testing.oclgrind import check

# seed 000 Table 1 benchmark programs (rodinia, parboil, clblast, blackscholes_low)
TABLE1_SMALL_SIZES = {
    "kmeans_low": {"P": 64, "F": 5, "C": 3}, "nn_low": {"N": 100}, "mriq_low": {"X": 64, "K": 16},
    "atax_low": {"M": 64, "N": 512}, "gesummv_low": {"M": 3, "N": 512},
    "blackscholes_low": {"N": 64},
    "nbody_nvidia": {"N": 256}, "mm_amd": {"M": 128, "K": 4, "N": 128},
    "mm_nvidia": {"M": 64, "K": 16, "N": 64},
}
SMALL_SIZES = _BASE_SIZES | TABLE1_SMALL_SIZES

pytestmark = [pytest.mark.oclgrind,
              pytest.mark.skipif(not any("Oclgrind" in d.platform for d in list_devices()),
                                 reason="Oclgrind is not installed (pip install 'pyopencl[oclgrind]')")]


def test_every_low_level_program_has_small_sizes():
    low = {s.name for s in PROGRAMS if s.level == "low"} - {"asum_gpu", "dot_gpu"}
    assert low <= set(SMALL_SIZES)


@pytest.mark.parametrize("name", sorted(SMALL_SIZES))
def test_clean_under_oclgrind(name):
    status, report, output = check(name, SMALL_SIZES[name])
    assert report == "", f"Oclgrind reported for {name}:\n{report}"
    assert status == 0, output


def test_the_check_finds_a_missing_barrier(monkeypatch):
    monkeypatch.setenv("LIFTKIT_TEST_DROP_BARRIERS", "1")
    status, report, _ = check("partial_dot", SMALL_SIZES["partial_dot"])
    assert "data race" in report


def test_the_simulator_is_chosen_only_by_name():
    from liftkit.backends.opencl import select_device

    assert "Oclgrind" not in select_device(None).label
    assert "Oclgrind" not in select_device("cpu").label
    assert "Oclgrind" in select_device("oclgrind").label
