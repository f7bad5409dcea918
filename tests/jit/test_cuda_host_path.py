"""The CUDA host path of GPU sections without a GPU: the task runtime's CUDA device over the
stubbed driver of benchmarks/jit/cuda_stub.py (no GPU work is done, so results are not checked
here; test_gpu_arrays checks them on a GPU). A call on CUDA-array-interface arrays adopts them,
launches through the runtime, and leaves nothing behind; a kernel launched again on the same
arrays takes its launch plan's short path."""

from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("liftkit.backends.cuda.devices")

from .helpers import compile_source, left_behind  # noqa: E402




SRC = """
import liftkit
def f(x, y):
    with liftkit.gpu():
        for s in range(5):
            for i in prange(x.shape[0]):
                y[i] = x[i] * 2.0 + s
    return y
"""


def test_a_cuda_call_on_gpu_arrays_launches_through_plans_and_leaves_nothing(cuda_stub) -> None:
    stub = cuda_stub
    rt = stub.stub_runtime(one_gpu=False)  # the process's CUDA device list stays as it is
    f = compile_source(SRC, gpu_runtime=rt)
    x, y = stub.GpuArray(np.arange(64.0)), stub.GpuArray(np.zeros(64))
    assert f(x, y) is y  # the argument itself comes back
    before = dict(rt.buffers)
    fills = []
    fill = rt._fill
    rt._fill = lambda p, args: (fills.append(p), fill(p, args))[1]
    launched = rt.device.calls["launch"]
    for _ in range(3):
        assert f(x, y) is y
    assert rt.device.calls["launch"] - launched == 3 * 5  # every launch reached the driver
    assert len(fills) == 3  # per call: one plan, made at its second launch, short path after
    assert not left_behind(rt, f, before=before)
    assert not [v for v in rt.vars.values() if rt.buffers[v.buffer].borrowed]  # let go of
    rt.close()
