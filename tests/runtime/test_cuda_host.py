"""CUDA launches through the driver API without a GPU: argument lists packed once per
signature into 8-byte slots (what cuLaunchKernel reads), and the runtime's CUDA device over the
stubbed driver of benchmarks/jit/cuda_stub.py handing the driver the packed arguments, the
geometry and the dynamic shared memory of each launch."""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cuda.bindings")

from liftkit.backends.cuda.launch import Packed  # noqa: E402
from liftkit.runtime import Kernel  # noqa: E402
from liftkit.runtime.devices import RuntimeBackendError  # noqa: E402

_STUB = Path(__file__).resolve().parents[2] / "benchmarks" / "jit" / "cuda_stub.py"
_READ = {"q": ctypes.c_int64, "d": ctypes.c_double, "f": ctypes.c_float, "i": ctypes.c_int32,
         "Q": ctypes.c_uint64}


def _stub():
    spec = importlib.util.spec_from_file_location("lk_cuda_stub", _STUB)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lk_cuda_stub"] = mod
    spec.loader.exec_module(mod)
    return mod


def _read(address, kinds: str) -> list:
    ptrs = (ctypes.c_void_p * len(kinds)).from_address(address if isinstance(address, int) else
                                                       ctypes.addressof(address))
    return [_READ[k].from_address(ptrs[i]).value for i, k in enumerate(kinds)]


def test_packed_arguments_hold_each_value_in_its_slot_and_are_refilled_per_launch() -> None:
    types = (int, np.int64, np.float32, np.int32, np.float64, np.longlong, np.uint64)
    p = Packed(types)
    p.pack([0x7F0012345678, np.int64(-3), np.float32(1.5), np.int32(-7), np.float64(2.25),
            np.longlong(9), np.uint64(2**63 + 1)])
    assert _read(p.pointers, "qqfidqQ") == [0x7F0012345678, -3, 1.5, -7, 2.25, 9, 2**63 + 1]
    p.pack([1, np.int64(2), np.float32(3), np.int32(4), np.float64(5), np.longlong(6),
            np.uint64(7)])
    assert _read(p.pointers, "qqfidqQ") == [1, 2, 3.0, 4, 5.0, 6, 7]
    with pytest.raises(TypeError, match="complex128"):
        Packed((np.complex128,))


K = Kernel("k", {"cuda": 'extern "C" __global__ void k(double* x, long xo, float a, int n) {}'})
BIG = Kernel("big", {"cuda": 'extern "C" __global__ void big(double* x, long xo) {}'},
             dynamic_shared=64 * 1024)


def test_the_cuda_device_launches_packed_arguments_with_geometry_and_shared_memory(
        monkeypatch) -> None:
    stub = _stub()  # (opting a kernel in to 64 KB is the driver's part: not stubbed)
    monkeypatch.setattr("liftkit.backends.cuda.runner.allow_dynamic_shared", lambda *a: None)
    rt = stub.stub_runtime(one_gpu=False)
    try:
        x = np.zeros(1000)
        v = rt.submit(x)
        rt.launch(K, (1000,), [v, np.float32(0.5), np.int32(1000)], writes=[v])
        drv = rt.device._calls
        f, geo, shmem, params = drv.last
        ptr = rt.device.ptr(rt.buffers[rt.vars[v.id].buffer].handle)
        assert _read(params, "qqfi") == [ptr, 0, 0.5, 1000]
        assert geo == (4, 1, 1, 256, 1, 1) and shmem == 0
        view = rt.attach(x.ctypes.data + 80, (10,), (8,), np.float64)  # element 10 on
        rt.launch(BIG, (64, 2), [view], local_size=(32, 2), writes=[view])
        _, geo, shmem, params = drv.last
        assert _read(params, "qq") == [ptr, 10] and geo == (2, 1, 1, 32, 2, 1)
        assert shmem == 64 * 1024
        with pytest.raises(RuntimeBackendError, match="kernel k: an argument"):
            rt.launch(K, (8,), [v, np.complex128(1), np.int32(8)], writes=[v])
        assert drv.launches == 2
    finally:
        rt.close()


READ = Kernel("rd", {"cuda": 'extern "C" __global__ void rd(const double* x, long xo, double* y, '
                             'long yo) {}'})


def test_waits_take_the_newest_task_of_each_in_order_queue() -> None:
    stub = _stub()
    from liftkit.runtime import Runtime
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=2))
    try:
        x = rt.submit(np.ones(64))
        outs = [rt.submit(np.zeros(64)) for _ in range(4)]
        eids = [rt.launch(READ, (64,), [x, o], reads=[x], writes=[o]) for o in outs]
        queues = [rt.events[e].queue for e in eids]
        assert sorted(set(queues)) == [0, 1]  # independent readers spread over both queues
        readers = rt.buffers[rt.vars[x.id].buffer].readers
        assert sorted(readers) == sorted(eids)
        newest = {q: max(e for e, qq in zip(eids, queues) if qq == q) for q in (0, 1)}
        got = rt.latest_events(readers)
        assert len(got) == 2 and {id(e) for e in got} == {id(rt.events[e].event)
                                                         for e in newest.values()}
        assert rt._events(readers, queue=0) == [rt.events[newest[1]].event]
    finally:
        rt.close()


def test_binding_calls_take_the_handles_ctypes_calls_take() -> None:
    from liftkit.backends.cuda.launch import _BindingCalls
    assert _BindingCalls._h(ctypes.c_void_p(None)) == 0  # the legacy default stream
    assert _BindingCalls._h(ctypes.c_void_p(0x7F00)) == 0x7F00 and _BindingCalls._h(5) == 5
