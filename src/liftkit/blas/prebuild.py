"""A CUDA tuning run's kernels compiled ahead, several at once.

Tuning from nothing spends more host time deriving, generating and compiling (NVRTC) its
kernels than the GPU spends timing them: about 65 kernels for S/D GEMM NN, 0.05-3 s of NVRTC
each. A few threads derive and generate them in the order the run measures them, into the
session's `KernelStore` (so the build does not generate them again), and compile them, each
thread with an NVRTC compile server of its own (NVRTC runs in those processes, at once), into
the CUDA module cache its runner reads (`ModuleCache.put`, under the runner's key). Before it
builds a variant the tuner waits for that variant (`ready`); the build then loads the cubin
from the cache. A variant that cannot be compiled is left to the build, whose error the trial
records. Driver calls (loading modules) stay on the tuning thread, and no thread generates
code while a trial runs (`quiet`): it would hold the GIL between a timing's launches.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Optional

from liftkit.blas.variants import Kind, Variant


def default_workers() -> int:
    """Compile threads (and NVRTC servers) beside the tuning: the cores but two, at most 8."""
    return max(1, min(8, (os.cpu_count() or 1) - 2))


class Prebuild:
    """Variants generated into `store` (a `KernelStore`) and compiled into `cache` (a
    `ModuleCache` with a disk directory) for `device` (a CUDA `Device`); `add` queues more,
    `ready` waits for one. A context manager: leaving it drops what was not started and stops
    the compile servers."""

    def __init__(self, store: Any, cache: Any, device: Any,
                 jobs: Iterable[tuple[Kind, Variant]] = (), workers: Optional[int] = None) -> None:
        from liftkit.backends.cuda.nvrtc import arch_for

        self.store, self.cache, self.device = store, cache, device
        self.arch = arch_for(device.compute_capability)
        self._pool = ThreadPoolExecutor(workers or default_workers(),
                                        thread_name_prefix="liftkit-prebuild")
        self._futures: dict[tuple[Kind, Variant], Future] = {}
        self._local = threading.local()
        self._servers: list[Any] = []
        self._lock = threading.Lock()
        # held by the tuner while a trial runs, by a thread while it generates code: Python
        # work on other threads during a timing delays launches between its events (the
        # H100 run timed 128³ SGEMMs at 0.0-0.7 GFLOP/s while DGEMM was being generated)
        self.quiet = threading.Lock()
        self.compiled = 0  # kernels NVRTC compiled here
        self.add(jobs)

    def add(self, jobs: Iterable[tuple[Kind, Variant]]) -> None:
        for kind, variant in jobs:
            if (kind, variant) not in self._futures:
                self._futures[(kind, variant)] = self._pool.submit(self._compile, kind, variant)

    def ready(self, kind: Kind, variant: Variant) -> None:
        """Wait for the variant (if queued); a failure is left for the build to report."""
        fut = self._futures.get((kind, variant))
        if fut is not None:
            try:
                fut.result()
            except Exception:  # noqa: BLE001 - derivation or NVRTC: the build says it again
                pass

    def _server(self) -> Any:
        server = getattr(self._local, "server", None)
        if server is None:
            from liftkit.backends.cuda.nvrtc import CompileServer

            server = self._local.server = CompileServer()
            with self._lock:
                self._servers.append(server)
        return server

    def _compile(self, kind: Kind, variant: Variant) -> None:
        from liftkit.backends.cuda.cache import cuda_options, module_key
        from liftkit.backends.cuda.nvrtc import compile_cuda

        with self.quiet:
            _, compiled = self.store.program(kind, variant)
        for k in compiled.kernels:
            path = self.cache.path_for(module_key(k.source, self.device,
                                                  cuda_options(self.device, k.build_options)))
            if path is None or path.is_file():  # no disk cache, or compiled before (resumed)
                continue
            out = compile_cuda(k.source, self.arch, k.build_options, name=f"{k.function}.cu",
                               server=self._server())
            if out.cubin is not None:  # a PTX-only target: the runner JIT-loads its own build
                self.cache.put(self.device, k.source, k.build_options, out.cubin)
                with self._lock:
                    self.compiled += 1

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)  # the running ones end first
        for server in self._servers:
            server.close()

    def __enter__(self) -> "Prebuild":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class NoPrebuild:
    """What a run without ahead compilation uses (OpenCL, a cache without a disk directory)."""

    compiled = 0
    quiet = contextlib.nullcontext()

    def add(self, jobs: Iterable[tuple[Kind, Variant]]) -> None:
        pass

    def ready(self, kind: Kind, variant: Variant) -> None:
        pass

    def __enter__(self) -> "NoPrebuild":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def for_session(session: Any, jobs: Iterable[tuple[Kind, Variant]], workers: Optional[int] = None
                ) -> Any:
    """A `Prebuild` for a CUDA session whose module cache keeps a disk directory (the runner
    loads cubins from there), else a `NoPrebuild`; `workers` 0 turns it off."""
    from liftkit.blas.queues import CUDAQueue

    q = getattr(session, "q", None)
    if workers == 0 or not isinstance(q, CUDAQueue) or q.runner.cache.directory is None:
        return NoPrebuild()
    return Prebuild(session.store, q.runner.cache, session.device, jobs, workers)
