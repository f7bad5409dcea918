"""Testing helpers that ship with the package, so test suites, scripts and later issues share them.

- `liftkit.testing.random_programs`: a seeded generator of random well-typed low-level programs.
- here: the differential check of one generated case (compile, run on an OpenCL device, compare
  with the interpreter bit for bit) and the failure report that makes a case reproducible.
- `liftkit.testing.oclgrind`: bundled programs under the Oclgrind simulator.

The generator's names are re-exported lazily: `python -m liftkit.testing.oclgrind` should not
pay for (or depend on) the generator's imports.
"""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.kernel import CompileOptions
    from liftkit.ir.nodes import Lambda
    from liftkit.testing.random_programs import RandomCase

SWITCHES = ("simplify_indices", "eliminate_barriers", "simplify_control_flow", "unroll")
_GENERATOR = ("DEFAULT_FLAGS", "GeneratorFlags", "RandomCase", "generate")

__all__ = ["SWITCHES", "CaseOutcome", "check_case", "compare", "failure_report", "pattern_counts",
           "replay_command", *_GENERATOR]


def __getattr__(name: str) -> Any:
    if name in _GENERATOR:
        return getattr(importlib.import_module("liftkit.testing.random_programs"), name)
    raise AttributeError(f"module 'liftkit.testing' has no attribute {name!r}")


@dataclass(frozen=True)
class CaseOutcome:
    """How one case went: `stage` is ok, compile (the compiler raised), run (the OpenCL build or
    launch failed) or mismatch; `source` is the generated OpenCL when there is one."""

    stage: str
    detail: str
    source: str = ""
    kernels: int = 0

    @property
    def ok(self) -> bool:
        return self.stage == "ok"


def compare(out: Any, ref: Any, where: str = "result") -> Optional[str]:
    """None when `out` has exactly the interpreter's form and values; else what differs first."""
    if isinstance(ref, tuple):
        if not isinstance(out, tuple) or len(out) != len(ref):
            return f"{where}: expected a {len(ref)}-tuple, got {type(out).__name__}"
        diffs = (compare(o, r, f"{where}[{k}]") for k, (o, r) in enumerate(zip(out, ref)))
        return next((d for d in diffs if d), None)
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return f"{where}: expected {ref.dtype}{ref.shape}, got {out.dtype}{out.shape}"
    if ref.dtype.names:
        diffs = (compare(out[f], ref[f], f"{where}.{f}") for f in ref.dtype.names)
        return next((d for d in diffs if d), None)
    if np.array_equal(out, ref):
        return None
    bad = np.argwhere(out != ref)
    first = tuple(int(i) for i in bad[0])
    return (f"{where}: {len(bad)} of {ref.size} elements differ; first at {first}: "
            f"got {out[first]}, expected {ref[first]}")


def check_case(case: "RandomCase", runner: Any, options: Optional["CompileOptions"] = None) -> CaseOutcome:
    """Compile `case` with `options` in the runner's dialect, run it with `runner` (an
    OpenCLRunner or CUDARunner) and compare with the interpreter. Every failure is caught and
    returned: each one is a finding to report."""
    from dataclasses import replace

    from liftkit.codegen import CompileOptions, compile_program

    try:
        compiled = compile_program(case.program, replace(options or CompileOptions(),
                                                         dialect=getattr(runner, "dialect", "opencl")))
    except Exception as err:  # noqa: BLE001
        return CaseOutcome("compile", f"{type(err).__name__}: {err}")
    try:
        out = runner.run(compiled, *case.inputs, sizes=case.sizes or None)
    except Exception as err:  # noqa: BLE001
        return CaseOutcome("run", f"{type(err).__name__}: {err}", compiled.source, len(compiled.kernels))
    diff = compare(out, case.expected)
    return CaseOutcome("mismatch" if diff else "ok", diff or "", compiled.source, len(compiled.kernels))


def replay_command(case: "RandomCase", options: Optional["CompileOptions"] = None,
                   device: Optional[str] = None) -> str:
    """The shell command that reproduces `case` (same flags, options and device)."""
    from liftkit.testing.random_programs import DEFAULT_FLAGS

    cmd = f"python scripts/replay_random_program.py {case.seed}"
    off = [s for s in SWITCHES if options is not None and not getattr(options, s)]
    cmd += "".join(f" --no-{s.replace('_', '-')}" for s in off)
    cmd += "".join(f" --allow {f}" for f in DEFAULT_FLAGS.avoided() if f not in case.flags.avoided())
    return cmd + (f" --device {device}" if device else "")


def failure_report(case: "RandomCase", outcome: CaseOutcome, options: Optional["CompileOptions"] = None,
                   device: Optional[str] = None) -> str:
    """Everything needed to read and reproduce a failure: seed, program, OpenCL, replay command."""
    from liftkit.ir.printer import pretty

    return "\n".join([
        f"random program seed {case.seed}: {outcome.stage} "
        f"({options.key() if options is not None else 'default options'})",
        f"  {outcome.detail}",
        f"description: {case.description}",
        f"sizes: {case.sizes or 'constant'}; input shapes: {[np.shape(x) for x in case.inputs]}",
        "program:", pretty(case.program),
        "kernel source:", outcome.source or "(not generated)",
        f"replay: {replay_command(case, options, device)}",
    ])


def pattern_counts(program: "Lambda") -> Counter[str]:
    """How often each pattern occurs (parallel maps by dimension, pad by boundary, `let` for a
    lambda call kept as such, vector user functions): the generator's coverage."""
    from liftkit.ir import patterns as P
    from liftkit.ir.nodes import FunCall, Lambda, UserFun, walk
    from liftkit.types import VectorType

    out: Counter[str] = Counter()
    for n in walk(program):
        if isinstance(n, P.Pattern):
            out[f"{n.name}({n.dim})" if isinstance(n, P.ParallelMap) else n.name] += 1
            if isinstance(n, P.Pad):
                out[f"pad[{n.boundary.kind}]"] += 1
        elif isinstance(n, FunCall) and isinstance(n.f, Lambda):
            out["let"] += 1
        elif isinstance(n, UserFun) and isinstance(n.out_type, VectorType):
            out["vector userfun"] += 1
    return out
