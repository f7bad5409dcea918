"""A CUDA tuning run's kernels compiled ahead, in parallel.

Tuning from nothing spends more host time deriving, generating and compiling (NVRTC) its
kernels than the GPU spends timing them: about 60 kernels for S/D GEMM NN, 0.05-3 s each. A
pool of worker processes (spawned: the tuning process holds a CUDA context a fork must not
copy) derives and compiles them in the order the run measures them, each with its own NVRTC
compile server; the tuner, before it builds a variant, waits for that variant's cubin and
stores it in the CUDA module cache its runner reads (`ModuleCache.put`), so the build is a
disk hit. Derivation and code generation are pure, so a worker's source is the one the runner
would compile, and the cache key (source, device, options, NVRTC version) is the runner's.
A variant a worker cannot compile is left to the runner, whose error the trial records.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Iterable, Optional

from liftkit.blas.variants import Kind, Variant

Cubins = list[tuple[str, tuple[str, ...], bytes]]  # (source, build options, cubin) per kernel


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the tuning process, which stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def compile_variant(kind: Kind, variant: Variant, arch: str) -> Cubins:
    """Derive, generate and NVRTC-compile one variant's kernels for `arch` (e.g. sm_90a)."""
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions

    compiled = compile_program(derive(kind, variant).final, CompileOptions(dialect="cuda"))
    out: Cubins = []
    for k in compiled.kernels:
        built = compile_cuda(k.source, arch, k.build_options, name=f"{k.function}.cu")
        if built.cubin is not None:  # a PTX-only target: the runner JIT-loads it, no entry
            out.append((k.source, tuple(k.build_options), built.cubin))
    return out


def default_workers() -> int:
    """Compile processes beside the tuning process: all cores but two, at most 8."""
    return max(1, min(8, (os.cpu_count() or 1) - 2))


class Prebuild:
    """Variants compiled ahead into `cache` (a `ModuleCache` with a disk directory) for
    `device` (a CUDA `Device`); `add` queues more, `ready` waits for one and stores its cubins.
    A context manager; `close` drops what was not started."""

    def __init__(self, cache: Any, device: Any, jobs: Iterable[tuple[Kind, Variant]] = (),
                 workers: Optional[int] = None) -> None:
        from liftkit.backends.cuda.nvrtc import arch_for

        self.cache, self.device = cache, device
        self.arch = arch_for(device.compute_capability)
        self._pool = ProcessPoolExecutor(workers or default_workers(),
                                         mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_ignore_interrupts)
        self._futures: dict[tuple[Kind, Variant], Future] = {}
        self._stored: set[tuple[Kind, Variant]] = set()
        self.compiled = 0  # kernels stored in the cache
        self.add(jobs)

    def add(self, jobs: Iterable[tuple[Kind, Variant]]) -> None:
        for kind, variant in jobs:
            if (kind, variant) not in self._futures:
                self._futures[(kind, variant)] = self._pool.submit(compile_variant, kind, variant,
                                                                   self.arch)

    def ready(self, kind: Kind, variant: Variant) -> None:
        """Wait for the variant's cubins (if queued) and put them in the cache; a failure is
        left for the runner's own build to report."""
        fut = self._futures.get((kind, variant))
        if fut is None or (kind, variant) in self._stored:
            return
        self._stored.add((kind, variant))
        try:
            cubins = fut.result()
        except Exception:  # noqa: BLE001 - NVRTC's error, a dead worker: the runner rebuilds
            cubins = []
        for source, options, cubin in cubins:
            self.cache.put(self.device, source, options, cubin)
            self.compiled += 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "Prebuild":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class NoPrebuild:
    """What a run without ahead compilation uses (OpenCL, a cache without a disk directory)."""

    compiled = 0

    def add(self, jobs: Iterable[tuple[Kind, Variant]]) -> None:
        pass

    def ready(self, kind: Kind, variant: Variant) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "NoPrebuild":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def for_session(session: Any, jobs: Iterable[tuple[Kind, Variant]], workers: Optional[int] = None
                ) -> Any:
    """A `Prebuild` for a CUDA session whose module cache keeps a disk directory (the runner
    reads cubins from there), else a `NoPrebuild`; `workers` 0 turns it off."""
    from liftkit.blas.queues import CUDAQueue

    q = getattr(session, "q", None)
    if workers == 0 or not isinstance(q, CUDAQueue) or q.runner.cache.directory is None:
        return NoPrebuild()
    return Prebuild(q.runner.cache, session.device, jobs, workers)
