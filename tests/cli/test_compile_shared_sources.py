"""`liftkit compile` prints a kernel source once: the steps of an iterate that runs one kernel
per step share one source, and each later step says whose it is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from liftkit.cli.main import main

PROGRAM = textwrap.dedent("""
    from liftkit.dsl import *
    N = size("N")
    step = compose(join, mapGlb(0)(reduceSeq(add, 0.0)), slide(3, 1), pad(1, 1, "clamp"))
    stencil12 = fun([float32[N]], lambda x: iterate(12, step) << x)
""")


@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_an_iterates_shared_step_source_is_printed_once(tmp_path: Path, backend: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "iterprog.py"
    path.write_text(PROGRAM)
    assert main(["compile", f"{path}:stencil12", "--backend", backend]) == 0
    out = capsys.readouterr().out
    assert out.count("\n// kernel KERNEL_") == 12  # every kernel's launch is listed
    assert out.count("__global__ void" if backend == "cuda" else "kernel void") == 3
    assert out.count("// the same source as kernel KERNEL_1") == 9
