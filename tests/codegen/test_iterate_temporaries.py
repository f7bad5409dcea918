"""An iterate inside a kernel whose step writes a global temporary: the temporary's length is
the iteration's current length, known only inside the kernel, while the host allocates global
memory before the launch. It used to fail at run time ("cannot evaluate 4*M*size"); it is
refused when compiled, in pattern words, and the same step as one kernel per step runs."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.codegen import compile_program
from liftkit.codegen.views import CodegenError
from liftkit.dsl import (add, compose, float32, fun, id, iterate, join, mapGlb, mapLcl, mapWrg,
                         reduceSeq, size, split, toGlobal)
from liftkit.semantics import interpret

M, N = size("M"), size("N")
STEP = compose(join, mapLcl(0)(reduceSeq(add, 0.0)), split(2), toGlobal(mapLcl(0)(id)))


def test_a_global_temporary_of_an_in_kernel_iterate_is_refused_in_words() -> None:
    prog = fun([float32[M * 64]], lambda x: join << mapWrg(0)(
        compose(toGlobal(mapLcl(0)(id)), iterate(2, STEP))) << split(64) << x)
    with pytest.raises(CodegenError) as info:
        compile_program(prog)
    text = str(info.value)
    assert text.startswith("iterate: its step writes a global temporary")
    assert "changes from one iteration to the next" in text and "move the iterate out" in text


def test_the_same_step_as_one_kernel_per_step_runs() -> None:
    pytest.importorskip("pyopencl")
    from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices

    if not any(d.type == "cpu" for d in list_devices()):
        pytest.skip("no OpenCL CPU device")
    step = compose(join, mapGlb(0)(reduceSeq(add, 0.0)), split(2), toGlobal(mapGlb(0)(id)))
    prog = fun([float32[N]], lambda x: iterate(2, step) << x)
    x = np.arange(1024, dtype=np.float32)
    out = OpenCLRunner("cpu", KernelCache(disk=False)).run(compile_program(prog), x)
    np.testing.assert_allclose(np.asarray(out), interpret(prog, x))
