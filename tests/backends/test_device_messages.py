"""Device choice and its messages (issue 11, defect 6): a simulator that calls itself a GPU
(Oclgrind) is never picked as `gpu` or by default, and the errors say only what is true, on one
line."""

from __future__ import annotations

import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import devices as devs  # noqa: E402
from liftkit.backends.opencl.devices import Device, OpenCLError, select_device  # noqa: E402

OCLGRIND = Device("Oclgrind", "Oclgrind Simulator", "Oclgrind 21.10", "gpu", 1024, 32768)
CPU = Device("Portable Computing Language", "pthread-cpu", "3.0", "cpu", 4096, 1 << 20)


@pytest.fixture()
def only_oclgrind_and_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devs, "list_devices", lambda: [OCLGRIND, CPU])


def test_a_simulator_is_not_a_gpu(only_oclgrind_and_cpu: None) -> None:
    with pytest.raises(OpenCLError) as err:
        select_device("gpu")
    text = str(err.value)
    assert len(text.splitlines()) == 1
    assert text.startswith("no GPU device (Oclgrind / Oclgrind Simulator is a simulator, chosen "
                           "only by name: --device oclgrind)")
    assert "Oclgrind / Oclgrind Simulator (simulator)" in text and "(gpu" not in text
    assert "size rule" not in text
    assert select_device() is CPU
    assert select_device("oclgrind") is OCLGRIND


def test_no_match_lists_devices_on_one_line(only_oclgrind_and_cpu: None) -> None:
    with pytest.raises(OpenCLError) as err:
        select_device("h100")
    assert str(err.value) == ("no device matches 'h100'; available devices: Oclgrind / Oclgrind "
                              "Simulator (simulator), Portable Computing Language / pthread-cpu "
                              "(cpu)")
