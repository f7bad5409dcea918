"""Derived kernels, compiled once per (kind, variant) and built once per OpenCL context, and
their asynchronous launch on caller-given buffers.

The code generator passes sizes as kernel arguments, so one built kernel serves every input
size its derivation allows (`multiples`); launching sets the buffers, scalars and sizes and
enqueues the pipeline's kernels in order on an in-order queue, returning the last event
without waiting.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pyopencl as cl

from liftkit.backends.opencl.cache import KernelCache
from liftkit.backends.opencl.devices import Device
from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompiledProgram
from liftkit.rewrite.derivation import Derivation


class BlasError(ValueError):
    """A problem with a liftkit.blas call, in the caller's terms (shapes, dtypes, layouts,
    devices)."""


@dataclass
class Built:
    """One derived kernel pipeline, built for one context."""

    kind: Kind
    variant: Variant
    derivation: Derivation
    compiled: CompiledProgram
    multiples: dict[str, int]
    kernels: list[Any]  # cl.Kernel per pipeline stage (not thread-safe: launches set args)

    def launch(self, queue: Any, arrays: Mapping[int, Any], scalars: Mapping[int, Any],
               out: Any, sizes: Mapping[str, int], wait_for: Sequence[Any] = ()) -> tuple[Any, list[Any]]:
        """Enqueue the pipeline: `arrays[i]`/`scalars[i]` are the buffers/values of program
        parameter i, `out` the result buffer. Returns (last event, temporaries to keep alive
        until it completes)."""
        c = self.compiled
        temps: dict[str, Any] = {}
        for b in c.buffers:
            if b.role in ("intermediate", "temporary"):
                temps[b.name] = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                                          size=max(1, int(b.nbytes.eval(sizes))))
        event = None
        waits = list(wait_for)
        for k, clk in zip(c.kernels, self.kernels):
            for i, a in enumerate(k.args):
                if a.kind == "buffer":
                    buf = c.buffer(a.buffer)  # type: ignore[arg-type]
                    if buf.role == "input":
                        value = arrays[buf.param_index]  # type: ignore[index]
                    elif buf.role == "output":
                        value = out
                    else:
                        value = temps[buf.name]
                elif a.kind == "scalar":
                    value = scalars[a.param_index]  # type: ignore[index]
                else:
                    v = int(a.size.eval(sizes))  # type: ignore[union-attr]
                    if v > np.iinfo(np.int32).max:
                        raise BlasError(f"{self.kind.op}: size {a.name} = {v} exceeds the kernels' "
                                        f"32-bit indices")
                    value = np.int32(v)
                clk.set_arg(i, value)
            glob = tuple(int(g.eval(sizes)) for g in k.ndrange.global_size)
            local = k.ndrange.local_size
            event = cl.enqueue_nd_range_kernel(queue, clk, glob, local, wait_for=waits or None)
            waits = []
        return event, list(temps.values())


class KernelStore:
    """Derived and compiled programs by (kind, variant) for one context (an explicit cache:
    derivation and code generation are pure, the driver build is cached on disk by
    `KernelCache`)."""

    def __init__(self, context: Any, device: Device, cache: Optional[KernelCache] = None) -> None:
        self.context = context
        self.device = device
        self.cache = cache if cache is not None else KernelCache()
        self._built: dict[tuple[Kind, Variant], Built] = {}

    def get(self, kind: Kind, variant: Variant) -> Built:
        key = (kind, variant)
        got = self._built.get(key)
        if got is None:
            derivation = derive(kind, variant)
            compiled = compile_program(derivation.final)
            kernels = []
            with warnings.catch_warnings():  # driver build logs are not the user's business
                warnings.simplefilter("ignore", cl.CompilerWarning)
                for k in compiled.kernels:
                    prog = self.cache.get(self.context, self.device, k.source, k.build_options)
                    kernels.append(cl.Kernel(prog, k.name))
            got = Built(kind, variant, derivation, compiled, multiples(kind, variant), kernels)
            self._built[key] = got
        return got

    def __len__(self) -> int:
        return len(self._built)
