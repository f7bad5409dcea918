"""A CPU-device session shared by the liftkit.blas tests (kernels are built once per variant),
and a GPU-device one for the tests marked `gpu` (skipped where no OpenCL GPU exists)."""

from __future__ import annotations

import pytest

def _cpu_available() -> bool:
    try:
        from liftkit.backends.opencl.devices import select_device

        select_device("cpu")
        return True
    except Exception:  # noqa: BLE001 - no CPU device: the tests skip
        return False


@pytest.fixture(scope="session")
def _shared_session():  # type: ignore[no-untyped-def]
    if not _cpu_available():
        pytest.skip("needs a CPU OpenCL device")
    from liftkit.blas import Profile, Session

    # an empty profile: default derivations, no warning
    from liftkit.backends.opencl.devices import select_device

    dev = select_device("cpu")
    return Session(dev, profile=Profile(dev.fingerprint, dev.label, "cpu"))


@pytest.fixture
def session(_shared_session):  # type: ignore[no-untyped-def]
    """The shared CPU session (its built kernels kept across tests) with its profile put back
    after each test: `tune(session, ...)` leaves the profile it tuned on the session, and a
    later test must still see the empty one."""
    profile = _shared_session.profile
    yield _shared_session
    _shared_session.profile = profile


@pytest.fixture(scope="session")
def gpu_session():  # type: ignore[no-untyped-def]
    from liftkit.backends.opencl.devices import select_device

    try:
        dev = select_device("gpu")
    except Exception:  # noqa: BLE001 - no GPU: the tests skip
        pytest.skip("needs an OpenCL GPU")
    from liftkit.blas import Profile, Session

    return Session(dev, profile=Profile(dev.fingerprint, dev.label, "gpu"))


@pytest.fixture(scope="session")
def cuda_session():  # type: ignore[no-untyped-def]
    """liftkit.blas on the CUDA backend (skipped where no CUDA GPU and driver exist)."""
    from liftkit.backends.cuda import cuda_available

    if not cuda_available():
        pytest.skip("needs a CUDA GPU")
    from liftkit.backends.cuda import select_device as cuda_device
    from liftkit.blas import Profile, Session

    dev = cuda_device("gpu")
    return Session(dev, profile=Profile(dev.fingerprint, dev.label, "gpu"))


@pytest.fixture(scope="session")
def blas_host():  # type: ignore[no-untyped-def]
    """benchmarks/blas_host.py (the stubbed CUDA driver, runner and arrays) as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "blas_host.py"
    spec = importlib.util.spec_from_file_location("blas_host", path)
    host = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(host)  # type: ignore[union-attr]
    return host


@pytest.fixture
def stub_cuda(blas_host, monkeypatch):  # type: ignore[no-untyped-def]
    """A liftkit.blas session on the stubbed CUDA queue (no GPU: launches recorded, not run),
    with the shipped H100 profile; the stub's modules in sys.modules for the test."""
    import sys

    modules: dict = {}
    s = blas_host.stub_session(patch=monkeypatch.setattr, modules=modules)
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return s
