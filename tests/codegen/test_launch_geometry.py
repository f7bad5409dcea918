"""Never a silent (or loud) failure on launch sizes (issue 11, random programs 101547, 101811,
101833, 101873): a kernel whose result is a tuple of a mapGlb and a mapWrg(mapLcl) took its
global size from whichever outer map came first, so the mapGlb's length (64) met the mapLcl's
local size (6) and the launch was refused. A mapWrg fixes the dimension's global size; a mapGlb
beside it loops with the global stride and runs right under any global size (rounded up to a
multiple of the local size where it alone sets the dimension). Each program runs on the CPU
device and is compared with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit.arith import cst
from liftkit.backends.opencl import KernelCache, OpenCLRunner, list_devices
from liftkit.codegen import compile_program
from liftkit.ir.parser import parse_program
from liftkit.semantics import interpret

needs_cpu = pytest.mark.skipif(not any(d.type == "cpu" for d in list_devices()),
                               reason="no CPU OpenCL device installed")

SQUARES = "mapGlb(0)(λv. mult_int(v, v))(y)"
CASES = {
    # (program, sizes, input lengths, expected global size, local size)
    "mapGlb before mapWrg, constant lengths": (
        f"λ(x: [int]_96, y: [int]_64). tuple({SQUARES}, (join ∘ mapWrg(0)(mapLcl(0)(id_int)) ∘ split 6)(x))",
        {}, (96, 64), (96,), (6,)),
    "mapGlb before mapWrg, symbolic lengths": (
        f"λ(x: [int]_M, y: [int]_N). tuple({SQUARES}, (join ∘ mapWrg(0)(mapLcl(0)(id_int)) ∘ split 160)(x))",
        {"M": 640, "N": 256}, (640, 256), (640,), (160,)),
    "mapGlb alone in a dimension a mapLcl sizes": (
        f"λ(x: [int]_96, y: [int]_50). tuple({SQUARES}, (join ∘ mapWrg(1)(mapLcl(0)(id_int)) ∘ split 8)(x))",
        {}, (96, 50), (56, 12), (8, 1)),
}


@pytest.mark.parametrize("name", CASES)
def test_global_size_suits_every_outer_map(name: str) -> None:
    src, sizes, _, glob, local = CASES[name]
    nd = compile_program(parse_program(src)).kernels[0].ndrange
    env = {k: cst(v) for k, v in sizes.items()}
    got = tuple(g.substitute(env).value if sizes else g.value for g in nd.global_size)  # type: ignore[attr-defined]
    assert got == glob and tuple(nd.local_size) == local


@needs_cpu
@pytest.mark.parametrize("name", CASES)
def test_mixed_outer_maps_match_the_interpreter(name: str) -> None:
    src, sizes, lengths, _, _ = CASES[name]
    prog = parse_program(src)
    xs = [np.arange(n, dtype=np.int32) - 40 for n in lengths]
    out = OpenCLRunner("cpu", KernelCache(disk=False)).run(compile_program(prog), *xs,
                                                          sizes=sizes or None)
    want = interpret(prog, *xs, sizes=sizes)
    assert len(out) == len(want) and all(np.array_equal(a, b) for a, b in zip(out, want))
