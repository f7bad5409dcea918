"""Run a bundled program on the Oclgrind simulator (out-of-bounds accesses, data races, barrier
divergence) and compare with the interpreter.

    OCLGRIND_LOG=log.txt OCLGRIND_DATA_RACES=1 python -m liftkit.testing.oclgrind NAME [K=V ...]

Oclgrind reads its settings from the environment when its platform loads, so each check runs in
its own process; `check(name, sizes)` does that and returns Oclgrind's report (empty when clean).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Mapping

# small sizes that satisfy each program's size rule (Oclgrind simulates every work-item)
SMALL_SIZES: dict[str, dict[str, int]] = {
    "asum_nvidia": {"N": 262144}, "asum_amd": {"N": 2048}, "asum_intel": {"N": 32768},
    "vector_scal": {"N": 2048}, "partial_dot": {"N": 512}, "transpose": {"M": 8, "N": 12},
    "gemv_fused": {"N": 3, "M": 256}, "mm_naive": {"M": 8, "K": 12, "N": 16},
    "mm_tiled": {"M": 16, "K": 32, "N": 32}, "stencil1d_clamp": {"N": 64},
    "stencil1d_wrap": {"N": 64}, "stencil1d_mirror": {"N": 64}, "conv2d": {"M": 16, "N": 32},
    "nbody_private": {"N": 32}, "md_low": {"N": 32, "M": 4}, "scal_gpu": {"N": 1024},
    "gemv_gpu": {"N": 2, "M": 1024},
}


def check(name: str, sizes: Mapping[str, int], timeout: float = 600.0) -> tuple[int, str, str]:
    """(exit status, Oclgrind's log, the run's output) of one program under Oclgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "oclgrind.log")
        env = dict(os.environ, OCLGRIND_LOG=log, OCLGRIND_DATA_RACES="1",
                   LIFTKIT_CACHE_DIR=os.path.join(tmp, "cache"))
        args = [sys.executable, "-m", "liftkit.testing.oclgrind", name] + [f"{k}={v}" for k, v in sizes.items()]
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
        report = open(log).read() if os.path.exists(log) else ""
        return proc.returncode, report.strip(), (proc.stdout + proc.stderr).strip()


def main(argv: list[str]) -> int:
    import numpy as np

    from liftkit.programs import PROGRAMS
    from liftkit.semantics import interpret

    name, sizes = argv[0], {k: int(v) for k, v in (a.split("=") for a in argv[1:])}
    spec = PROGRAMS[name]
    inputs = spec.inputs(sizes, seed=11)
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen import CompileOptions, compile_program

    runner = OpenCLRunner("oclgrind")
    options = CompileOptions(eliminate_barriers=os.environ.get("LIFTKIT_TEST_DROP_BARRIERS") != "1")
    compiled = compile_program(spec.program, options)
    if not options.eliminate_barriers:  # self-test of this harness: remove every barrier
        from dataclasses import replace

        compiled = replace(compiled, kernels=tuple(
            replace(k, source="\n".join(ln for ln in k.source.splitlines() if "barrier(" not in ln))
            for k in compiled.kernels))
    out = runner.run(compiled, *inputs)
    ref = interpret(spec.program, *inputs)
    if isinstance(ref, np.ndarray) and ref.dtype.names:
        ok = all(np.allclose(out[f], ref[f], rtol=1e-4, atol=1e-4) for f in ref.dtype.names)
    else:
        ok = bool(np.allclose(out, ref, rtol=1e-4, atol=1e-4))
    print(f"{name} on {runner.device.label}: {'matches' if ok else 'DIFFERS FROM'} the interpreter")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
