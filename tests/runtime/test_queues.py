"""The runtime's queues (seed 003 §7.3.3, §7.4) on the CPU OpenCL device: transfers on their own
queue overlap kernels, several compute queues for independent tasks, the order between queues
kept by events (results stay correct), and the calibration that writes the device profile."""

from __future__ import annotations

import json

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.cli.main import main  # noqa: E402
from liftkit.runtime import Kernel, Runtime  # noqa: E402
from liftkit.runtime.profile import FORMAT, calibrate, load_profile, profile_path  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
pytestmark = pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")

SCALE = Kernel("scale", {"opencl": """kernel void scale(global double* x, long xo, double a) {
    long i = get_global_id(0); x[xo + i] *= a; }"""})
ADD = Kernel("add", {"opencl": """kernel void add(global const double* x, long xo,
        global double* y, long yo) { long i = get_global_id(0); y[yo + i] += x[xo + i]; }"""})
# y = x after a busy loop: a kernel that keeps reading x for a while
SLOWCOPY = Kernel("slowcopy", {"opencl": """kernel void slowcopy(global const double* x, long xo,
        global double* y, long yo, long n) {
    long i = get_global_id(0); double s = 0.0;
    for (long k = 0; k < n; k++) s = s * 0.999999 + (double)k;
    y[yo + i] = x[xo + i] + (s < 0.0 ? 1.0 : 0.0); }"""})
LONG = 30_000_000  # about 0.1 s for one work-item on this machine's CPU


@pytest.fixture(autouse=True)
def no_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFTKIT_RUNTIME_PROFILES", str(tmp_path / "profiles"))


def _slow(rt, x, y, n=1):
    return rt.launch(SLOWCOPY, (n,), [x, y, np.int64(LONG)], reads=[x], writes=[y])


def test_download_does_not_wait_for_unrelated_kernels():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        a, spare = rt.submit(np.arange(8.0)), rt.empty((8,), np.float64)
        rt.launch(SCALE, (8,), [a, 3.0], writes=[a])
        slow = _slow(rt, rt.submit(np.ones(8)), spare)   # queued after the write of a
        np.testing.assert_allclose(rt.read(a), 3 * np.arange(8.0))  # on the transfer queue
        assert not rt.event_done(slow)  # a came back while the slow kernel still runs
        s = rt.stats()
        assert s["downloads"] == 1 and s["overlapped_transfers"] >= 1
        assert rt.read(spare)[0] == 1.0
    finally:
        rt.close()


def test_upload_overlaps_a_running_kernel_and_kernels_wait_for_it():
    rt = Runtime("opencl", "cpu", queues=1)
    try:
        spare = rt.empty((8,), np.float64)
        slow = _slow(rt, rt.submit(np.ones(8)), spare)  # one work-item: a core stays free
        b, c = rt.submit(np.arange(8.0)), rt.submit(np.full(8, 10.0))
        rt.launch(ADD, (8,), [b, c], reads=[b, c], writes=[c])  # two uploads, then the kernel
        ups = [e for e, row in rt.events.items() if row.task == "upload" and row.queue == -1
               and e > slow]
        assert len(ups) == 2
        for e in ups:
            rt.wait_event(e)
        assert not rt.event_done(slow)  # the uploads ran beside the slow kernel
        assert rt.stats()["overlapped_transfers"] >= 2
        np.testing.assert_allclose(rt.read(c), 10.0 + np.arange(8.0))
    finally:
        rt.close()


def test_an_upload_waits_for_the_kernels_still_reading_the_old_contents():
    rt = Runtime("opencl", "cpu", queues=2)
    try:
        host = np.arange(8.0)
        x, y = rt.submit(host), rt.empty((8,), np.float64)
        _slow(rt, x, y, 8)                  # reads the device copy of x for a while
        rt.write(x, np.full(8, -1.0))        # the host copy changes meanwhile
        rt.launch(SCALE, (8,), [x, 2.0], writes=[x])  # re-uploads x: after slowcopy read it
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
        ref = [rng.standard_normal(32) for _ in range(5)]
        vs = [rt.submit(r.copy()) for r in ref]
        for step in range(120):
            op = rng.integers(6)
            i, j = (int(k) for k in rng.choice(len(vs), 2, replace=False))
            if op <= 1:
                a = float(rng.choice([0.5, 2.0, -1.0]))
                rt.launch(SCALE, (32,), [vs[i], a], writes=[vs[i]])
                ref[i] = ref[i] * a
            elif op == 2:
                rt.launch(ADD, (32,), [vs[i], vs[j]], reads=[vs[i], vs[j]], writes=[vs[j]])
                ref[j] = ref[j] + ref[i]
            elif op == 3:
                new = rng.standard_normal(32)
                rt.write(vs[i], new)
                ref[i] = new
            elif op == 4 and len(vs) < 9:
                vs.append(rt.copy(vs[i]))
                ref.append(ref[i].copy())
            else:
                np.testing.assert_allclose(rt.read(vs[i]), ref[i], err_msg=f"step {step}")
        for v, r in zip(vs, ref):
            np.testing.assert_allclose(rt.read(v), r)
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
