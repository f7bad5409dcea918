"""The runtime's CUDA device without a GPU, over the stubbed driver of
benchmarks/jit/cuda_stub.py: a launch hands cuda.core the arrays' device addresses (with their
element offsets), the scalars, the geometry and the dynamic shared memory; a wait on several
pending tasks takes the newest on each in-order queue; the driver calls through cuda.bindings
take the handles the ctypes ones take."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytest.importorskip("cuda.bindings")

from liftkit.runtime import Kernel, Runtime  # noqa: E402




K = Kernel("k", {"cuda": 'extern "C" __global__ void k(double* x, long xo, float a, int n) {}'})
BIG = Kernel("big", {"cuda": 'extern "C" __global__ void big(double* x, long xo) {}'},
             dynamic_shared=64 * 1024)


def test_the_cuda_device_launches_addresses_scalars_geometry_and_shared_memory(cuda_stub,
        monkeypatch) -> None:
    stub = cuda_stub  # (opting a kernel in to 64 KB is the driver's part: not stubbed)
    monkeypatch.setattr("liftkit.backends.cuda.runner.allow_dynamic_shared", lambda *a: None)
    rt = stub.stub_runtime(one_gpu=False)
    try:
        x = np.zeros(1000)
        v = rt.submit(x)
        rt.launch(K, (1000,), [v, np.float32(0.5), np.int32(1000)], writes=[v])
        core = rt.device._core
        config, _, args = core.last
        ptr = rt.device.ptr(rt.buffers[rt.vars[v.id].buffer].handle)
        assert args == (ptr, 0, 0.5, 1000) and type(args[0]) is int
        assert config == {"grid": (4,), "block": (256,)}
        view = rt.attach(x.ctypes.data + 80, (10,), (8,), np.float64)  # element 10 on
        rt.launch(BIG, (64, 2), [view], local_size=(32, 2), writes=[view])
        config, _, args = core.last
        assert args == (ptr, 10)
        assert config == {"grid": (2, 1), "block": (32, 2), "shmem_size": 64 * 1024}
        assert core.launches == 2
    finally:
        rt.close()


READ = Kernel("rd", {"cuda": 'extern "C" __global__ void rd(const double* x, long xo, double* y, '
                             'long yo) {}'})


def test_waits_take_the_newest_task_of_each_in_order_queue(cuda_stub) -> None:
    stub = cuda_stub
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
    from liftkit.backends.cuda.driver_calls import _BindingCalls
    assert _BindingCalls._h(ctypes.c_void_p(None)) == 0  # the legacy default stream
    assert _BindingCalls._h(ctypes.c_void_p(0x7F00)) == 0x7F00 and _BindingCalls._h(5) == 5
