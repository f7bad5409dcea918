"""Launch plans (``Runtime.plan`` / ``launch_planned``) on the CPU OpenCL device: a kernel
launched again and again on the same arrays reuses what the runtime worked out the first time,
and every guarantee of a plain launch still holds when the tables change under the plan —
lazy transfers, host writes, deferred copies, released and evicted buffers."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402

pytestmark = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                                reason="no CPU OpenCL device")

AXPY = Kernel("axpy", {"opencl": """kernel void axpy(global double* x, long xo,
    global const double* a, long ao, double s) {
    long i = get_global_id(0); x[xo + i] = x[xo + i] * s + a[ao + i]; }"""})


def test_planned_launches_match_plain_ones_and_copy_each_input_once() -> None:
    rt = Runtime("opencl", "cpu")
    n = 64
    x, a = np.ones(n), np.arange(n, dtype=np.float64)
    vx, va = rt.submit(x), rt.submit(a)
    p = rt.plan(AXPY, 3, reads=[vx, va], writes=[vx])
    ref = np.ones(n)
    for s in (0.5, 2.0, 0.25, 3.0):  # the scalar changes per launch, the arrays do not
        rt.launch_planned(p, (n,), [vx, va, np.float64(s)])
        ref = ref * s + a
    assert p.epoch >= 0, "the plan never became valid"
    st = rt.stats()
    assert (st["kernels"], st["uploads"]) == (4, 2)
    np.testing.assert_allclose(rt.read(vx), ref)
    rt.close()


def test_a_plan_follows_host_writes_copies_and_releases() -> None:
    rt = Runtime("opencl", "cpu")
    n = 32
    a = np.arange(n, dtype=np.float64)
    vx, va = rt.submit(np.zeros(n)), rt.submit(a)
    p = rt.plan(AXPY, 3, reads=[vx, va], writes=[vx])
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])  # x = 2a
    rt.write(va, np.full(n, 5.0))  # a host write (into a): the next launch uploads a again
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])  # x = 2a + 5
    before = rt.copy(vx)  # a deferred copy of x: the next write makes it first
    rt.launch_planned(p, (n,), [vx, va, np.float64(0.0)])  # x = 5
    np.testing.assert_allclose(rt.read(before), 2 * np.arange(n) + 5)
    np.testing.assert_allclose(rt.read(vx), np.full(n, 5.0))
    rt.release(before, writeback=False)
    rt.launch_planned(p, (n,), [vx, va, np.float64(2.0)])  # x = 15
    np.testing.assert_allclose(rt.read(vx), np.full(n, 15.0))
    assert rt.stats()["uploads"] == 3
    rt.close()


def test_a_plan_survives_eviction_under_memory_pressure() -> None:
    n = 1024
    rt = Runtime("opencl", "cpu", memory_limit=3 * n * 8)
    a = np.ones(n)
    vx, va = rt.submit(np.zeros(n)), rt.submit(a)
    p = rt.plan(AXPY, 3, reads=[vx, va], writes=[vx])
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])  # x = 2
    vy, vb = rt.submit(np.zeros(n)), rt.submit(np.ones(n))  # evicts x and a
    rt.launch(AXPY, (n,), [vy, vb, np.float64(1.0)], reads=[vy, vb], writes=[vy])
    rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])  # x = 3, back on the device
    np.testing.assert_allclose(rt.read(vx), np.full(n, 3.0))
    np.testing.assert_allclose(rt.read(vy), np.ones(n))
    assert rt.stats()["evictions"] >= 1
    rt.close()


def test_a_plan_on_a_shared_buffer_gives_up_and_stays_correct() -> None:
    """A kernel writing a view whose buffer other variables share checks copy-on-write at each
    launch: its plan is given up once (no work per launch) and the results stay right."""
    rt = Runtime("opencl", "cpu")
    n = 32
    whole = np.zeros(2 * n)
    vx = rt.submit(whole[:n])
    vy = rt.submit(whole[n // 2:n // 2 + n])  # overlapping views: one buffer, two variables
    va = rt.submit(np.ones(n))
    p = rt.plan(AXPY, 3, reads=[vx, va], writes=[vx])
    for _ in range(3):
        rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])
    assert p.dead and p.epoch == -1
    np.testing.assert_allclose(rt.read(vx), np.full(n, 3.0))
    np.testing.assert_allclose(rt.read(vy), np.r_[np.full(n // 2, 3.0), np.zeros(n // 2)])
    rt.close()


def test_a_plan_whose_tables_change_between_launches_stops_being_worked_out() -> None:
    """Other work making and dropping variables between a plan's launches invalidates it each
    time: after a few misses it takes plain launches only (no plan work per launch)."""
    rt = Runtime("opencl", "cpu")
    n = 16
    vx, va = rt.submit(np.zeros(n)), rt.submit(np.ones(n))
    p = rt.plan(AXPY, 3, reads=[vx, va], writes=[vx])
    for _ in range(6):
        rt.launch_planned(p, (n,), [vx, va, np.float64(1.0)])
        rt.release(rt.empty((n,), np.float64), writeback=False)  # a temporary between launches
    assert p.dead and p.misses == 3
    np.testing.assert_allclose(rt.read(vx), np.full(n, 6.0))
    rt.close()


def test_repeated_plain_launches_take_a_plan_from_their_second_time() -> None:
    rt = Runtime("opencl", "cpu")
    n = 32
    a = np.arange(n, dtype=np.float64)
    vx, va = rt.submit(np.zeros(n)), rt.submit(a)
    fills = []
    fill = rt._fill
    rt._fill = lambda p, args: (fills.append(p), fill(p, args))[1]
    ref = np.zeros(n)
    for k, s in enumerate((1.0, 0.5, 2.0, 1.0, 3.0)):
        if k == 3:  # a host write between two launches: the plan uploads a again
            rt.write(va, np.full(n, 5.0))
            a = np.full(n, 5.0)
        rt.launch(AXPY, (n,), [vx, va, np.float64(s)], reads=[vx, va], writes=[vx])
        ref = ref * s + a
    assert len(fills) == 1 and fills[0].epoch >= 0  # one plan, made at the second launch
    np.testing.assert_allclose(rt.read(vx), ref)
    assert rt.stats()["uploads"] == 3
    other = rt.submit(np.ones(n))  # other arrays: another launch, planned on its own
    rt.launch(AXPY, (n,), [other, va, np.float64(1.0)], reads=[other, va], writes=[other])
    rt.launch(AXPY, (n,), [vx, va, np.float64(1.0)], reads=[vx, va], writes=[vx],
              plan=False)  # a one-off
    np.testing.assert_allclose(rt.read(other), 6.0)
    np.testing.assert_allclose(rt.read(vx), ref + 5.0)
    rt.close()


def test_remembered_launches_let_go_of_released_arrays() -> None:
    import gc
    import weakref
    rt = Runtime("opencl", "cpu")
    x, a = np.zeros(32), np.ones(32)
    alive = weakref.ref(x)
    vx, va = rt.submit(x), rt.submit(a)
    for _ in range(3):  # repeated: planned from the second launch
        rt.launch(AXPY, (32,), [vx, va, np.float64(1.0)], reads=[vx, va], writes=[vx])
    rt.release(vx)
    np.testing.assert_allclose(x, 3.0)
    del x
    gc.collect()
    assert alive() is None  # the runtime keeps nothing of it, its plan included
    rt.close()
