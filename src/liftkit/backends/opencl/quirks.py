"""Known-answer kernels that find a device compiler's silent miscompilations before we use it.

Each check builds and runs a tiny kernel whose answer is known and, when the device gets it
wrong, names the code-generator workaround (`liftkit.codegen.quirks`) that avoids the defect.
Checks run once per device and driver build in a process, and only on CPU devices (the
defects found so far are in CPU runtimes; a check costs one build, about 0.1 s).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyopencl as cl

from liftkit.codegen.quirks import SERIAL_SUB_REDUCTIONS

# Intel's CPU runtime 2026.2.0 returns init - x[N-1] here (a vectorised float subtraction loop)
_FSUB_SOURCE = """
kernel void liftkit_fsub_check(const global float* restrict x, global float* out, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; i += 1) { acc = acc - x[i]; }
  out[0] = acc;
}
"""
_FSUB_N = 64


def _fsub_reduction_is_wrong(cl_device: Any) -> bool:
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    from liftkit.backends.opencl.buildlog import quiet_build

    with quiet_build("known-answer check"):
        prog = cl.Program(ctx, _FSUB_SOURCE).build()
    x = (np.arange(_FSUB_N) % 7 + 1).astype(np.float32)  # small integers: the sum is exact
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    ob = cl.Buffer(ctx, mf.WRITE_ONLY, 4)
    prog.liftkit_fsub_check(queue, (1,), (1,), xb, ob, np.int32(_FSUB_N))
    out = np.empty(1, np.float32)
    cl.enqueue_copy(queue, out, ob)
    return bool(out[0] != -x.sum())


@functools.lru_cache(maxsize=None)
def _quirks(fingerprint: str, cl_device: Any) -> frozenset[str]:
    try:
        wrong = _fsub_reduction_is_wrong(cl_device)
    except cl.Error:  # a device that cannot build or run it: the build problem is reported elsewhere
        return frozenset()
    return frozenset({SERIAL_SUB_REDUCTIONS}) if wrong else frozenset()


def compiler_quirks(device: Any) -> frozenset[str]:
    """The code-generator workarounds `device` (a `Device`) needs; empty for correct compilers."""
    if device.cl_device is None or device.type != "cpu":
        return frozenset()
    return _quirks(device.fingerprint, device.cl_device)
