"""The CPU device works on hosts PoCL's compiler does not know (AMD Zen 5 with PoCL's LLVM 14):
pip-installed runtimes are registered with the ICD loader and a CPU device that builds is chosen."""

from __future__ import annotations

from pathlib import Path

import pytest

from liftkit.backends.opencl import list_devices, select_device
from liftkit.backends.opencl.devices import build_problem
from liftkit.backends.opencl.icd import register_pip_runtimes, vendors_directory


def test_vendors_directory_holds_system_and_pip_runtimes(tmp_path: Path) -> None:
    system = tmp_path / "etc"
    system.mkdir()
    (system / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    lib = tmp_path / "lib" / "libintelocl.so"
    first = vendors_directory([lib], system=system, root=tmp_path / "icd")
    assert sorted(p.name for p in first.iterdir()) == ["liftkit-libintelocl.icd", "nvidia.icd"]
    assert (first / "liftkit-libintelocl.icd").read_text().strip() == str(lib)
    # same contents, same directory; other contents, another directory (never a stale one)
    assert vendors_directory([lib], system=system, root=tmp_path / "icd") == first
    (system / "other.icd").write_text("libother.so\n")
    assert vendors_directory([lib], system=system, root=tmp_path / "icd") != first


def test_a_users_icd_setting_is_kept() -> None:
    env = {"OCL_ICD_VENDORS": "/somewhere/of/mine"}
    assert register_pip_runtimes(env) is None
    assert env == {"OCL_ICD_VENDORS": "/somewhere/of/mine"}


@pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()), reason="no CPU OpenCL device")
def test_the_cpu_device_chosen_builds_kernels() -> None:
    device = select_device("cpu")
    assert build_problem(device) is None, device.label
    broken = [d for d in list_devices() if d.type == "cpu" and build_problem(d)]
    # a broken CPU runtime is never preferred over a working one
    assert device not in broken
