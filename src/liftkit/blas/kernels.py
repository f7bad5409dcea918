"""Derived kernels, compiled once per (kind, variant) and built once per device queue (OpenCL
or CUDA, `liftkit.blas.queues`), and their asynchronous launch on caller-given buffers.

The code generator passes sizes as kernel arguments, so one built kernel serves every input
size its derivation allows (`multiples`); launching sets the buffers, scalars and sizes and
enqueues the pipeline's kernels in order on an in-order queue, returning the last event
without waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.codegen.compiler import compile_program
from liftkit.codegen.kernel import CompiledProgram, CompileOptions
from liftkit.rewrite.derivation import Derivation


class BlasError(ValueError):
    """A problem with a liftkit.blas call, in the caller's terms (shapes, dtypes, layouts,
    devices)."""


@dataclass
class Built:
    """One derived kernel pipeline, built for one queue's device (OpenCL or CUDA)."""

    kind: Kind
    variant: Variant
    derivation: Derivation
    compiled: CompiledProgram
    multiples: dict[str, int]
    kernels: list[Any]  # the backend's kernel handles per pipeline stage (launches set args)
    # per sizes: each kernel's size arguments and global size, evaluated once (the symbolic
    # arithmetic costs more than a launch on a GPU)
    _evaluated: dict[tuple[tuple[str, int], ...], list[tuple[dict[int, Any], tuple[int, ...]]]] = \
        field(default_factory=dict, repr=False)
    _temps: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)  # their bytes

    def _temp_bytes(self, buf: Any, sizes: Mapping[str, int]) -> int:
        key = (buf.name, tuple(sorted(sizes.items())))
        got = self._temps.get(key)
        if got is None:
            if len(self._temps) > 256:
                self._temps.clear()
            got = self._temps[key] = int(buf.nbytes.eval(sizes))
        return got

    def _sizes_of(self, sizes: Mapping[str, int]) -> list[tuple[dict[int, Any], tuple[int, ...]]]:
        key = tuple(sorted(sizes.items()))
        got = self._evaluated.get(key)
        if got is None:
            got = []
            for k in self.compiled.kernels:
                vals: dict[int, Any] = {}
                for i, a in enumerate(k.args):
                    if a.kind not in ("buffer", "scalar"):
                        v = int(a.size.eval(sizes))  # type: ignore[union-attr]
                        if v > np.iinfo(np.int32).max:
                            raise BlasError(f"{self.kind.op}: size {a.name} = {v} exceeds the "
                                            f"kernels' 32-bit indices")
                        vals[i] = np.int32(v)
                got.append((vals, tuple(int(g.eval(sizes)) for g in k.ndrange.global_size)))
            if len(self._evaluated) > 64:
                self._evaluated.clear()
            self._evaluated[key] = got
        return got

    def launch(self, queue: Any, arrays: Mapping[int, Any], scalars: Mapping[int, Any],
               out: Any, sizes: Mapping[str, int], wait_for: Sequence[Any] = (),
               workspace: Optional[Any] = None) -> tuple[Any, list[Any]]:
        """Enqueue the pipeline on `queue` (a `liftkit.blas.queues` queue): `arrays[i]`/
        `scalars[i]` are the buffers/values of program parameter i, `out` the result buffer.
        Intermediate and temporary buffers come from `workspace` (a `session.Workspace` on
        the same in-order queue, reused by later calls) or are allocated per call.
        Returns (last event, temporaries to keep alive until it completes)."""
        c = self.compiled
        temps: dict[str, Any] = {}
        waits = list(wait_for)
        for b in c.buffers:
            if b.role in ("intermediate", "temporary"):
                nbytes = self._temp_bytes(b, sizes)
                if workspace is not None:  # a zeroed one: zero-filled once, kept zero by the kernel
                    temps[b.name] = workspace.buffer(f"{self.kind}|{self.variant}|{b.name}", nbytes,
                                                     *(("zeroed",) if b.zeroed else ()))
                    continue
                temps[b.name] = queue.alloc(nbytes)
                if b.zeroed:  # this call's own (reduceSplitTail's flags)
                    ev = queue.fill_zero(temps[b.name], nbytes, waits)
                    waits = [ev] if ev is not None else waits
        event = None
        for k, handle, (size_vals, glob) in zip(c.kernels, self.kernels, self._sizes_of(sizes)):
            args: list[Any] = []
            for i, a in enumerate(k.args):
                if a.kind == "buffer":
                    buf = c.buffer(a.buffer)  # type: ignore[arg-type]
                    if buf.role == "input":
                        args.append(arrays[buf.param_index])  # type: ignore[index]
                    elif buf.role == "output":
                        args.append(out)
                    else:
                        args.append(temps[buf.name])
                elif a.kind == "scalar":
                    args.append(scalars[a.param_index])  # type: ignore[index]
                else:
                    args.append(size_vals[i])
            event = queue.launch(handle, k, glob, k.ndrange.local_size, args, waits)
            waits = []
        return event, list(temps.values())


class KernelStore:
    """Derived and compiled programs by (kind, variant) for one queue (an explicit cache:
    derivation and code generation are pure; the driver build is cached on disk by the backend's
    cache: `KernelCache` for OpenCL, the CUDA runner's `ModuleCache`)."""

    def __init__(self, queue: Any, device: Any, cache: Optional[Any] = None) -> None:
        self.queue = queue
        self.device = device
        self.dialect = "cuda" if getattr(queue, "backend", "opencl") == "cuda" else "opencl"
        if cache is None and self.dialect == "opencl":
            from liftkit.backends.opencl.cache import KernelCache

            cache = KernelCache()
        self.cache = cache
        self._built: dict[tuple[Kind, Variant], Built] = {}
        self._programs: dict[tuple[Kind, Variant], tuple[Derivation, CompiledProgram]] = {}

    @property
    def context(self) -> Any:
        return getattr(self.queue, "context", None)

    def program(self, kind: Kind, variant: Variant) -> tuple[Derivation, CompiledProgram]:
        """The variant's derivation and generated code, kept: a tuning run generates them
        ahead on other threads (`liftkit.blas.prebuild`) and the build here reuses them."""
        key = (kind, variant)
        got = self._programs.get(key)
        if got is None:
            derivation = derive(kind, variant)
            compiled = compile_program(derivation.final, CompileOptions(dialect=self.dialect))
            got = self._programs[key] = (derivation, compiled)
        return got

    def get(self, kind: Kind, variant: Variant) -> Built:
        key = (kind, variant)
        got = self._built.get(key)
        if got is None:
            derivation, compiled = self.program(kind, variant)
            kernels = self.queue.build(compiled, self.cache, self.device)
            got = Built(kind, variant, derivation, compiled, multiples(kind, variant), kernels)
            self._built[key] = got
        return got

    def __len__(self) -> int:
        return len(self._built)
