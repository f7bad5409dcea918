"""The runtime's queues (seed 003 §7.3.3, §7.4) on the CPU OpenCL device: transfers on their own
queue overlap kernels, several compute queues for independent tasks, the order between queues
kept by events (results stay correct), and the calibration that writes the device profile."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.cli.main import main  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402
from liftkit.runtime.profile import FORMAT, calibrate, load_profile, profile_path  # noqa: E402

from .random_tasks import ADD, SCALE, random_task_stream  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")

COPY = Kernel("copy", {"opencl": """kernel void copy(global const double* x, long xo,
        global double* y, long yo) { long i = get_global_id(0); y[yo + i] = x[xo + i]; }"""})


@pytest.fixture(autouse=True)
def no_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFTKIT_RUNTIME_PROFILES", str(tmp_path / "profiles"))


def _hold(rt):
    """Block compute queue 0 on a user event until the test lets it go (no timing involved)."""
    gate = cl.UserEvent(rt.device.context)
    cl.enqueue_marker(rt.device.queues[0], wait_for=[gate])
    rt.device.queues[0].flush()
    return gate


def _within(fn, seconds=20.0):
    """fn() in a thread; True if it returned in time."""
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive()


def test_download_does_not_wait_for_unrelated_kernels():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        a, b = rt.submit(np.arange(8.0)), rt.submit(np.ones(8))
        rt.launch(SCALE, (8,), [a, 3.0], writes=[a])
        rt.launch(SCALE, (8,), [b, 2.0], writes=[b])
        rt.wait_all(sync=False)
        rt.launch(SCALE, (8,), [a, 3.0], writes=[a])
        gate = _hold(rt)
        later = rt.launch(SCALE, (8,), [b, 5.0], writes=[b])  # held behind the gate
        got = {}
        came_back = _within(lambda: got.setdefault("a", rt.read(a).copy()))
        held = not rt.event_done(later)
        gate.set_status(cl.command_execution_status.COMPLETE)
        assert came_back and held  # a came back while the queue was still held
        np.testing.assert_allclose(got["a"], 9 * np.arange(8.0))
        assert rt.stats()["overlapped_transfers"] >= 1
        np.testing.assert_allclose(rt.read(b), 10.0)
    finally:
        rt.close()


def test_upload_overlaps_a_held_queue_and_kernels_wait_for_it():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        spare = rt.submit(np.ones(8))
        rt.launch(SCALE, (8,), [spare, 2.0], writes=[spare])
        rt.wait_all(sync=False)
        gate = _hold(rt)
        first = rt.launch(SCALE, (8,), [spare, 2.0], writes=[spare])  # held
        b, c = rt.submit(np.arange(8.0)), rt.submit(np.full(8, 10.0))
        add = rt.launch(ADD, (8,), [b, c], reads=[b, c], writes=[c])  # two uploads, the kernel
        ups = [e for e, row in rt.events.items() if row.task == "upload" and e > first]
        assert len(ups) == 2 and all(rt.events[e].queue == -1 for e in ups)
        uploaded = _within(lambda: [rt.device.wait(rt.events[e].event) for e in ups])
        held = not rt.event_done(first) and not rt.event_done(add)
        gate.set_status(cl.command_execution_status.COMPLETE)
        assert uploaded and held  # the uploads finished while the compute queue was held
        assert rt.stats()["overlapped_transfers"] >= 2
        np.testing.assert_allclose(rt.read(c), 10.0 + np.arange(8.0))
        np.testing.assert_allclose(rt.read(spare), 4.0)
    finally:
        rt.close()


def test_an_upload_waits_for_the_kernels_still_reading_the_old_contents():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        x, y = rt.submit(np.arange(8.0)), rt.empty((8,), np.float64)
        rt.launch(SCALE, (8,), [x, 1.0], writes=[x])
        rt.wait_all(sync=False)
        gate = _hold(rt)
        rt.launch(COPY, (8,), [x, y], reads=[x], writes=[y])  # held: reads x's device copy later
        rt.write(x, np.full(8, -1.0))        # the host copy changes meanwhile
        rt.launch(SCALE, (8,), [x, 2.0], writes=[x])  # re-uploads x, after COPY has read it
        gate.set_status(cl.command_execution_status.COMPLETE)
        np.testing.assert_allclose(rt.read(y), np.arange(8.0))
        np.testing.assert_allclose(rt.read(x), -2.0)
    finally:
        rt.close()


def test_independent_tasks_spread_over_queues_and_dependent_ones_follow_events():
    rt = Runtime("opencl", "cpu", queues=3)
    try:
        assert rt.stats()["queues"] == 3
        vs = [rt.empty((16,), np.float64) for _ in range(3)]
        for v in vs:
            rt.write(v, np.ones(16))
        eids = [rt.launch(SCALE, (16,), [v, 2.0], writes=[v]) for v in vs]
        assert sorted(rt.events[e].queue for e in eids) == [0, 1, 2]
        again = rt.launch(SCALE, (16,), [vs[1], 5.0], writes=[vs[1]])
        assert rt.events[again].queue == rt.events[eids[1]].queue  # same queue, no event
        before = rt.stats()["cross_queue_waits"]
        rt.launch(ADD, (16,), [vs[0], vs[2]], reads=[vs[0], vs[2]], writes=[vs[2]])
        assert rt.stats()["cross_queue_waits"] == before + 1  # one writer on another queue
        np.testing.assert_allclose(rt.read(vs[2]), 4.0)
        np.testing.assert_allclose(rt.read(vs[1]), 10.0)
    finally:
        rt.close()


@pytest.mark.parametrize("queues", [1, 3])
def test_random_task_streams_match_numpy(queues):
    """Kernels, host writes, deferred copies and reads in a random order on several queues give
    NumPy's answers (every cross-queue order is expressed by events)."""
    rng = np.random.default_rng(queues)
    rt = Runtime("opencl", "cpu", queues=queues)
    try:
        random_task_stream(rt, rng, steps=120, scales=2, scale_reads=False)
        assert rt.stats()["queues"] == queues
    finally:
        rt.close()


def test_calibration_writes_the_profile_the_runtime_reads(tmp_path):
    data = calibrate("opencl", "cpu", (1, 2), kernels=4, items=16, work=10, repeats=1,
                     directory=tmp_path)
    assert data["queues"] in (1, 2) and set(data["seconds"]) == {"1", "2"}
    fp = Runtime("opencl", "cpu", queues=1).device.fingerprint
    assert load_profile(fp, tmp_path)["queues"] == data["queues"]
    p = profile_path(fp)  # the default directory (the fixture's): a profile choosing 3 queues
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({"format": FORMAT, "device": {"fingerprint": fp}, "queues": 3}))
    rt = Runtime("opencl", "cpu")
    assert rt.stats()["queues"] == 3
    rt.close()


def test_calibrate_command(tmp_path, capsys):
    assert main(["runtime", "calibrate", "--backend", "opencl", "--device", "cpu",
                 "--queues", "1,2", "--kernels", "4", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "chosen:" in out and "profile:" in out
    assert len(list(tmp_path.glob("runtime-*.json"))) == 1
    assert main(["runtime", "calibrate", "--queues", "2,4"]) == 2  # 1 must be measured
    assert "including 1" in capsys.readouterr().err
