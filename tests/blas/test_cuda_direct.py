"""The CUDA queue's ctypes driver calls (`DirectCalls`) with the driver stubbed (no GPU): a
planned call launches through `cuLaunchKernel` with exactly the arguments, grid and block
cuda.core's launch gets on the other path, each call's pointers and scalars set in the packed
slots; futures' events and library waits are the same records and waits. The GPU run
(results/issue15/gemv23) checks results and times both paths on a device."""

from __future__ import annotations

import ctypes
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from liftkit.blas.queues import PackedLaunch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def host() -> Any:
    spec = importlib.util.spec_from_file_location("blas_host", ROOT / "benchmarks" / "blas_host.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


class _Direct:
    """DirectCalls' three entry points, recording what they were given (a launch: the values
    its parameter array points at, read back through the packed slots)."""

    def __init__(self, q: Any) -> None:
        self.q = q
        self.calls: list[tuple[Any, ...]] = []

    def record(self, event: int, stream: int) -> int:
        self.calls.append(("record", event, stream))
        return 0

    def wait(self, stream: int, event: int, flags: int) -> int:
        self.calls.append(("wait", stream, event, flags))
        return 0

    def launch(self, func: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
               shmem: int, stream: int, params: int, extra: Any) -> int:
        pk = next(p for p in self.q._packed.values() if p is not None and p.params == params)
        addrs = (ctypes.c_void_p * len(pk.slots)).from_address(params)
        assert [a for a in addrs] == [ctypes.addressof(s) for s in pk.slots]
        self.calls.append(("launch", func, (gx, gy, gz), (bx, by, bz), shmem,
                           [s.value for s in pk.slots]))
        return 0


@pytest.fixture()
def session(host: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    modules: dict[str, Any] = {}
    s = host.stub_session(patch=monkeypatch.setattr, modules=modules)
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    # cuda.core's configuration as the real one keeps it (grid and block by name), and a
    # kernel handle the driver takes as a function
    s.q._core.LaunchConfig = lambda **kw: types.SimpleNamespace(**kw)
    monkeypatch.setattr(host._Kernel, "_handle", 0x5EED, raising=False)
    s.q._drv().CUkernel = type("CUkernel", (), {})
    return s


def _gemv_calls(host: Any, s: Any, dt: str, trans: bool) -> list[Any]:
    n = 256
    A, A2 = host.ndarray((n, n), dt), host.ndarray((n, n), dt)
    x, y = host.ndarray((n,), dt), host.ndarray((n,), dt)
    return [lambda: s.gemv(A, x, y, trans=trans), lambda: s.gemv(A, x, y, alpha=2.0, trans=trans),
            lambda: s.gemv(A2, x, y, alpha=3.0, beta=0.5, trans=trans),
            lambda: s.gemv(A2, x, y, alpha=3.0, beta=0.5, trans=trans)]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("trans", [False, True])
def test_packed_launches_carry_what_cuda_core_would(host: Any, session: Any, dt: str,
                                                    trans: bool) -> None:
    s = session
    ref: list[tuple[Any, ...]] = []
    s.q._core.launch = lambda stream, config, kernel, *args: ref.append((config, args))
    for call in _gemv_calls(host, s, dt, trans):  # cuda.core's path: the reference
        call()
    s.calls.clear()
    direct = _Direct(s.q)
    s.q.direct = direct
    s.q._core.launch = lambda stream, config, kernel, *args: direct.calls.append(
        ("core", config, args))
    for call in _gemv_calls(host, s, dt, trans):  # a kind's first call: the general path
        call()
    got = [c for c in direct.calls if c[0] in ("core", "launch")]
    assert [c[0] for c in got] == ["core", "launch", "core", "launch"]
    for (config, args), c in zip(ref, got):
        if c[0] == "core":
            continue
        _, func, grid, block, shmem, vals = c
        assert func == 0x5EED and shmem == 0
        assert grid == tuple(config.grid) + (1,) * (3 - len(config.grid))
        assert block == tuple(config.block) + (1,) * (3 - len(config.block))
        assert len(vals) == len(args)
        for v, a in zip(vals, args):  # pointers (ints) may differ: operands made per call
            assert isinstance(v, int) if isinstance(a, int) else v == pytest.approx(float(a))
    scalars = [[v for v in c[5] if isinstance(v, float)][:2] for c in got if c[0] == "launch"]
    assert scalars == [[2.0, 0.0], [3.0, 0.5]]


def test_each_call_sets_its_own_pointers(host: Any, session: Any) -> None:
    s = session
    s.q.direct = direct = _Direct(s.q)
    A, B = host.ndarray((128, 128), "float32"), host.ndarray((128, 128), "float32")
    x, y = host.ndarray((128,), "float32"), host.ndarray((128,), "float32")
    s.gemv(A, x, y)  # makes the plan
    for M in (A, B, A):
        s.gemv(M, x, y)
    ptrs = [c[5][0] for c in direct.calls if c[0] == "launch"]
    assert ptrs == [A.data.ptr, B.data.ptr, A.data.ptr]


def test_events_and_library_waits_go_through_the_direct_calls(host: Any, session: Any) -> None:
    s = session
    s.q.direct = direct = _Direct(s.q)
    A, x, y = host.ndarray((64, 64), "float64"), host.ndarray((64,), "float64"), \
        host.ndarray((64,), "float64")
    s.gemv(A, x, y)
    direct.calls.clear()
    f = s.gemv(A, x, y)
    kinds = [c[0] for c in direct.calls]
    # the library stream's work recorded, our stream made to wait, the launch, the future's event
    assert kinds == ["record", "wait", "launch", "record"]
    assert direct.calls[1][3] == 0 and direct.calls[0][1] == direct.calls[1][2]
    assert f.event is not None


def test_a_complex_scalar_keeps_cuda_cores_launch(host: Any, session: Any) -> None:
    """Arguments without a fixed C type here are not packed: cuda.core launches them."""
    ln = types.SimpleNamespace(args=(None, np.int32(4)), slots=((0, 0),), handle=host._Kernel(),
                               config=types.SimpleNamespace(grid=(1,), block=(32,)), name="k")
    from liftkit.blas.queues import _packed_launch

    drv = session.q._drv()
    assert _packed_launch(drv, ln, [np.complex64(1 + 2j)]) is None
    pk = _packed_launch(drv, ln, [np.float32(1.5)])
    assert isinstance(pk, PackedLaunch) and pk.dims == (1, 1, 1, 32, 1, 1, 0)
    assert [s.value for s in pk.slots] == [1.5, 4]


# -- on a GPU -------------------------------------------------------------------------------------
@pytest.fixture()
def direct_session(cuda_session: Any) -> Any:
    if not cuda_session.q.use_direct_calls(True):
        pytest.skip("ctypes cannot open libcuda here")
    yield cuda_session
    cuda_session.q.use_direct_calls(False)


@pytest.mark.gpu
def test_repeat_calls_through_direct_driver_calls(direct_session: Any) -> None:
    """test_cuda.py's repeat calls (GEMM, GEMV, transposes, padding, epilogues, complex through
    one real GEMM, NumPy operands, futures read late) with the direct calls on."""
    spec = importlib.util.spec_from_file_location("blas_test_cuda", Path(__file__).with_name(
        "test_cuda.py"))
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    mod.test_repeat_calls_on_their_call_plans(direct_session)
    assert any(p is not None for p in direct_session.q._packed.values())


@pytest.mark.gpu
def test_dgemm_on_tensor_cores_through_direct_launches(direct_session: Any) -> None:
    """A DMMA kernel with dynamic shared memory (the CUDA default tiling), planned and
    launched through cuLaunchKernel with new operands per call."""
    import cupy as cp

    rng = np.random.default_rng(5)
    for _ in range(3):
        A, B = rng.uniform(-1, 1, (256, 192)), rng.uniform(-1, 1, (192, 320))
        C = cp.full((256, 320), np.nan)
        got = direct_session.gemm(cp.asarray(A), cp.asarray(B), C).result()
        np.testing.assert_allclose(cp.asnumpy(got), A @ B, rtol=1e-12, atol=1e-12)
