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

# Intel's CPU runtime 2026.2.0 returns init - x[N-1] for the first (a vectorised float
# subtraction loop); 2026.1.2 and 2026.2.0 return init + sum for the second (an int subtraction
# through a permuted index, the shape of random program 60139)
_SUB_SOURCE = """
kernel void liftkit_fsub_check(const global float* restrict x, global float* out, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; i += 1) { acc = acc - x[i]; }
  out[0] = acc;
}
kernel void liftkit_isub_check(const global int* restrict x, global int* out, int n) {
  int acc = 0;
  for (int i = 0; i < n; i += 1) {
    acc = acc - x[16*((n - i - 1)/16) + (n - i - 1) % 8 + 8*((n - i - 1)/8 % 2)];
  }
  out[0] = acc;
}
"""
_SUB_N = 64  # a multiple of 16, and at least 16 steps (shorter loops are not vectorised)


def _sub_reduction_is_wrong(cl_device: Any) -> bool:
    ctx = cl.Context([cl_device])
    queue = cl.CommandQueue(ctx)
    from liftkit.backends.opencl.buildlog import quiet_build

    with quiet_build("known-answer check"):
        prog = cl.Program(ctx, _SUB_SOURCE).build()
    mf = cl.mem_flags
    for kernel, dtype in ((prog.liftkit_fsub_check, np.float32), (prog.liftkit_isub_check, np.int32)):
        x = (np.arange(_SUB_N) % 7 + 1).astype(dtype)  # small integers: the sum is exact
        xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        ob = cl.Buffer(ctx, mf.WRITE_ONLY, x.itemsize)
        kernel(queue, (1,), (1,), xb, ob, np.int32(_SUB_N))
        out = np.empty(1, dtype)
        cl.enqueue_copy(queue, out, ob)
        if out[0] != -x.sum():
            return True
    return False


@functools.lru_cache(maxsize=None)
def _quirks(fingerprint: str, cl_device: Any) -> frozenset[str]:
    try:
        wrong = _sub_reduction_is_wrong(cl_device)
    except cl.Error:  # a device that cannot build or run it: the build problem is reported elsewhere
        return frozenset()
    return frozenset({SERIAL_SUB_REDUCTIONS}) if wrong else frozenset()


def compiler_quirks(device: Any) -> frozenset[str]:
    """The code-generator workarounds `device` (a `Device`) needs; empty for correct compilers."""
    if device.cl_device is None or device.type != "cpu":
        return frozenset()
    return _quirks(device.fingerprint, device.cl_device)
