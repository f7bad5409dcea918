"""Launches without events (issue 14's dependent-launch fast path): a device that can mark a
queue later (CUDA's ``mark``) launches with no event recorded; an in-order queue orders its own
tasks, and an event is recorded only when a wait on another queue, a host read or a sweep of
the event table needs one. On the CPU OpenCL device (a subclass that marks lazily, kernels run
for real) cross-queue work, host reads and writes stay ordered; on the stubbed CUDA driver a
chain of dependent launches makes one driver call per launch."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402
from liftkit.runtime.devices import OpenCLDevice  # noqa: E402

from .random_tasks import ADD, SCALE, random_task_stream  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())



class LazyCL(OpenCLDevice):
    """The CPU OpenCL device launching without events, as the runtime's CUDA device does
    (``mark``: a marker enqueued on the queue when an event is asked for)."""

    marks = 0

    def launch(self, kernel, global_size, local_size, args, queue=0, wait=(), record=True):
        ev = super().launch(kernel, global_size, local_size, args, queue, wait)
        return ev if record else None

    def mark(self, queue):
        self.marks += 1
        ev = cl.enqueue_marker(self.queues[queue])
        self.queues[queue].flush()
        return ev


def _lazy(queues):
    return Runtime(dev=LazyCL("cpu", queues=queues))


needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")


@needs_cpu
def test_a_chain_without_events_is_read_after_its_last_kernel():
    rt = _lazy(1)
    try:
        x = rt.submit(np.ones(64))
        gate = cl.UserEvent(rt.device.context)  # hold the queue: the chain waits behind it
        cl.enqueue_marker(rt.device.queues[0], wait_for=[gate])
        for _ in range(20):
            rt.launch(SCALE, (64,), [x, 2.0], reads=[x], writes=[x])
        assert rt.device.marks == 0 and all(r.event is None for r in rt.events.values()
                                            if r.task == "scale")
        got: list = []
        t = threading.Thread(target=lambda: got.append(rt.read(x).copy()), daemon=True)
        t.start()
        t.join(0.3)
        assert t.is_alive() and not got  # the read waits for the held chain
        gate.set_status(cl.command_execution_status.COMPLETE)
        t.join(20)
        np.testing.assert_array_equal(got[0], 2.0 ** 20)
        assert rt.device.marks == 1  # one event for the whole chain, made by the read
    finally:
        rt.close()


@needs_cpu
def test_cross_queue_work_waits_for_a_chain_without_events():
    rt = _lazy(2)
    try:
        a, b = rt.submit(np.ones(64)), rt.submit(np.ones(64))
        rt.launch(SCALE, (64,), [a, 1.0], writes=[a])
        rt.launch(SCALE, (64,), [b, 1.0], writes=[b])
        qa = rt.events[max(rt.events)].queue
        gate = cl.UserEvent(rt.device.context)
        cl.enqueue_marker(rt.device.queues[1 - qa], wait_for=[gate])  # hold a's queue
        for _ in range(10):
            rt.launch(SCALE, (64,), [a, 3.0], reads=[a], writes=[a])
        before = rt.stats()["cross_queue_waits"]
        for _ in range(3):  # b's queue waits once for a's chain, then follows itself
            rt.launch(ADD, (64,), [a, b], reads=[a, b], writes=[b])
        assert rt.stats()["cross_queue_waits"] - before <= 1
        gate.set_status(cl.command_execution_status.COMPLETE)
        np.testing.assert_array_equal(rt.read(b), 1 + 3 * 3.0 ** 10)
        np.testing.assert_array_equal(rt.read(a), 3.0 ** 10)
    finally:
        rt.close()


@needs_cpu
@pytest.mark.parametrize("queues", [1, 3])
def test_random_task_streams_without_events_match_numpy(queues):
    """Kernels (repeated ones through plans), host writes, deferred copies, reads and retiring
    sweeps in a random order on lazily marked queues give NumPy's answers."""
    rng = np.random.default_rng(10 + queues)
    rt = _lazy(queues)
    rt._retire_at = 8  # sweeps (each marks the queues) often
    try:
        random_task_stream(rt, rng, steps=160, scales=3, scale_reads=True)
    finally:
        rt.close()


KC = Kernel("k", {"cuda": 'extern "C" __global__ void k(double* x, long xo, const double* a, '
                          'long ao, long n) {}'})


def _kc(rt: Runtime, x, a, **kw) -> None:  # type: ignore[no-untyped-def]
    """Launch KC on 256 elements: x written, x and a read (`kw`: the launch's options)."""
    rt.launch(KC, (256,), [x, a, np.int64(256)], reads=[x, a], writes=[x], **kw)



def test_a_cuda_chain_makes_one_driver_call_per_launch_and_reads_mark_once(cuda_stub):
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=2))
    try:
        x, a = rt.submit(np.ones(256)), rt.submit(np.ones(256))
        calls = rt.device.calls
        _kc(rt, x, a)
        calls.clear()
        for _ in range(20):
            _kc(rt, x, a)
        assert dict(calls) == {"launch": 20}  # no event record, no wait, no query
        calls.clear()
        chain_q = rt.events[max(rt.events)].queue
        y = rt.submit(np.zeros(256))  # independent: the other queue
        rt.launch(KC, (256,), [y, y, np.int64(256)], reads=[y], writes=[y])
        assert rt.events[max(rt.events)].queue != chain_q
        calls.clear()
        _kc(rt, y, x)  # after both
        assert rt.events[max(rt.events)].queue != chain_q
        calls.pop("event create", None)  # (no retired task's event to record again yet)
        assert dict(calls) == {"event record": 1, "stream wait": 1, "launch": 1}  # the mark
        calls.clear()
        _kc(rt, y, x)
        assert dict(calls) == {"launch": 1}  # that queue waited for the chain already
        calls.clear()
        rt.read(x)  # the chain's event exists now: the read records nothing more
        assert calls["event record"] == 0 and calls["launch"] == 0
    finally:
        rt.close()


def _params(addr, types):
    """The values a packed launch's kernelParams (void** at ``addr``) point to."""
    ptrs = (ctypes.c_void_p * len(types)).from_address(addr)
    return [t.from_address(p).value for t, p in zip(types, ptrs)]


def test_a_planned_cuda_launch_packs_its_arguments_once_and_sets_the_scalars(cuda_stub):
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=1))
    try:
        x, a = rt.submit(np.ones(1000)), rt.submit(np.ones(1000))
        for n in (1000, 1000, 999, 998):  # the plan from the second launch on
            rt.launch(KC, (1000,), [x, a, np.int64(n)], reads=[x, a], writes=[x])
        drv = rt.device._drv
        f, dims, stream, params = drv.last
        ptr = [rt.device.ptr(rt.buffers[rt.vars[v.id].buffer].handle) for v in (x, a)]
        c = ctypes
        assert _params(params, [c.c_uint64, c.c_int64, c.c_uint64, c.c_int64, c.c_int64]) == \
            [ptr[0], 0, ptr[1], 0, 998]
        assert dims == (4, 1, 1, 256, 1, 1, 0) and stream == rt.device._shandles[0]
        assert rt.device._core.launches == 1 and rt.device.calls["launch"] == 4
    finally:
        rt.close()


def test_a_packed_launch_the_driver_refuses_falls_back_to_cuda_core(cuda_stub):
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=1))
    try:
        rt.device._drv.cuLaunchKernel = lambda *a: (1,)  # CUDA_ERROR_INVALID_VALUE
        x, a = rt.submit(np.ones(256)), rt.submit(np.ones(256))
        for _ in range(4):
            _kc(rt, x, a)
        assert rt.device._core.launches == 4  # every launch went through cuda.core
        assert rt.stats()["kernels"] == 4
    finally:
        rt.close()


def test_a_launch_failing_packed_and_through_cuda_core_is_one_error(cuda_stub):
    from liftkit.runtime.devices import RuntimeBackendError
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=1))
    core = rt.device._core
    try:
        x, a = rt.submit(np.ones(256)), rt.submit(np.ones(256))
        for _ in range(3):
            _kc(rt, x, a)
        rt.device._drv.cuLaunchKernel = lambda *a: (719,)  # CUDA_ERROR_LAUNCH_FAILED

        def fails(*a):
            raise ValueError("CUDA_ERROR_LAUNCH_FAILED")
        core.launch = fails
        with pytest.raises(RuntimeBackendError, match="a kernel launch failed"):
            _kc(rt, x, a)
    finally:
        rt.device._drv.cuLaunchKernel = lambda *a: (0,)
        core.launch = lambda *a: None
        rt.close()


def test_the_last_launch_remembered_follows_lists_the_caller_changes():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        x, y = rt.submit(np.ones(16)), rt.submit(np.ones(16))
        args, rw = [x, 2.0], [x]
        for _ in range(3):
            rt.launch(SCALE, (16,), args, reads=rw, writes=rw)
        args[0], rw[0] = y, y  # the same list objects, now naming y
        for _ in range(2):
            rt.launch(SCALE, (16,), args, reads=rw, writes=rw)
        args[1] = 3.0  # another scalar: the same plan, the new value
        rt.launch(SCALE, (16,), args, reads=rw, writes=rw)
        np.testing.assert_array_equal(rt.read(x), 8.0)
        np.testing.assert_array_equal(rt.read(y), 12.0)
    finally:
        rt.close()


def test_a_sweep_asks_each_queue_once_when_its_newest_task_is_done(cuda_stub):
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=1))
    try:
        x, a = rt.submit(np.ones(256)), rt.submit(np.ones(256))
        calls = rt.device.calls
        _kc(rt, x, a)  # uploads
        calls.clear()
        for _ in range(199):  # 3 sweeps at 64 pending tasks: each marks once, asks once a queue
            _kc(rt, x, a)
        assert calls["launch"] == 199 and calls["event record"] == 3
        assert calls["event query"] <= 4  # (the first sweep: the transfer queue's too)
        assert len(rt.events) < 70
        np.testing.assert_array_equal(rt.read(x), 1.0)  # (the stub runs no kernels)
    finally:
        rt.close()


def test_a_launch_that_failed_leaves_its_waits_to_the_next_task(cuda_stub):
    from liftkit.runtime.devices import RuntimeBackendError
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=2))
    core = rt.device._core
    try:
        x, a, y = (rt.submit(np.ones(256)) for _ in range(3))
        for _ in range(3):
            _kc(rt, x, a)
        rt.launch(KC, (256,), [y, y, np.int64(256)], reads=[y], writes=[y])  # the other queue

        def fails(*args):
            raise ValueError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
        core.launch, launch = fails, core.launch
        with pytest.raises(RuntimeBackendError):
            _kc(rt, y, x, plan=False)
        core.launch = launch
        rt.device.calls.clear()
        _kc(rt, y, x, plan=False)
        assert rt.device.calls["stream wait"] == 1  # waits for x's chain again
    finally:
        rt.close()


def test_a_scalar_of_another_type_than_its_packed_slot_goes_through_cuda_core(cuda_stub):
    stub = cuda_stub
    rt = Runtime("cuda", dev=stub.StubCUDADevice(queues=1))
    try:
        x, a = rt.submit(np.ones(256)), rt.submit(np.ones(256))
        for _ in range(3):  # packed from the second launch on, an int64 slot
            _kc(rt, x, a)
        core = rt.device._core
        before = core.launches
        rt.launch(KC, [256], [x, a, np.float64(2.5)], reads=[x, a], writes=[x])
        assert core.launches == before + 1 and core.last[2][-1] == 2.5
    finally:
        rt.close()
