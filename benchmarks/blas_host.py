"""liftkit.blas's per-call host time, without a GPU: the CUDA path with the driver, cuda.core and
the module loader stubbed (every driver call returns at once, launches do nothing), so what is
timed is liftkit's own Python path per call — operand checks, plan look-up, argument packing,
launch and future. The OpenCL path (`--device cpu`) is timed for real on small sizes.

    python benchmarks/blas_host.py                      # CUDA path, stubbed driver
    python benchmarks/blas_host.py --device cpu         # OpenCL on the CPU device

Each case: warm-up calls (the first builds kernels and plans), then `--batches` batches of
`--calls` calls back to back; the table gives the median µs per call. NumPy-resident cases wait
for each result (`.result()`: the download is part of the call a user makes); device-array
cases do not (their futures are left unread, as a pipeline of calls leaves them).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import statistics
import sys
import time
import types
from typing import Any, Callable

import numpy as np

H100 = dict(ordinal=0, name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0),
            driver_version=13000, multiprocessors=132, max_threads_per_block=1024,
            max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535),
            shared_memory_per_block=49152, total_memory=80 * 2**30,
            shared_memory_optin=232448)


# -- the stubbed CUDA driver and cuda.core ---------------------------------------------------------
# what the stubs were asked to do (driver calls by name, cuda.core launches, events, buffers)
COUNTS: collections.Counter[str] = collections.Counter()


class _Ok:
    """A driver function: returns CUDA_SUCCESS (and a handle where the call makes one)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> tuple[int, int]:
        COUNTS[self.name] += 1
        return (0, 1)


class StubDriver:
    """cuda.bindings.driver's calls liftkit.blas makes, each returning success at once."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUevent_flags:  # noqa: N801 - the driver's names
        CU_EVENT_DEFAULT = 0
        CU_EVENT_DISABLE_TIMING = 2

    class CUmemorytype:
        CU_MEMORYTYPE_DEVICE = 2

    class CUDA_MEMCPY2D:  # noqa: N801
        pass

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu"):
            raise AttributeError(name)
        f = _Ok(name)
        setattr(self, name, f)
        return f


class _Event:
    def __init__(self) -> None:
        self.is_done = True

    def sync(self) -> None:
        pass

    def __sub__(self, other: Any) -> float:
        return 0.0


class _Stream:
    handle = 0

    def record(self, event: Any = None, options: Any = None) -> _Event:
        COUNTS["cuda.core event"] += 1
        return _Event()

    def sync(self) -> None:
        pass

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, 0)


class _Buffer:
    _next = itertools.count(1 << 32, 1 << 28)

    def __init__(self, nbytes: int) -> None:
        COUNTS["allocation"] += 1
        self.handle = next(self._next)
        self.size = nbytes

    def close(self, stream: Any = None) -> None:
        pass


class _Attributes:
    max_threads_per_block = 1024
    shared_size_bytes = 0


class _Kernel:
    attributes = _Attributes()


def _core() -> Any:
    core = types.SimpleNamespace()
    core.LaunchConfig = lambda **kw: tuple(sorted(kw.items()))
    core.EventOptions = lambda **kw: kw
    core.launch = lambda stream, config, kernel, *args: COUNTS.update(("cuda.core launch",))
    return core


def stub_runner_class() -> type:
    """A CUDARunner with the device and driver stubbed: the H100's limits, a stream whose
    commands return at once, kernels that are never compiled (the CUDA source is still
    generated), allocations that hand out fresh addresses."""
    from liftkit.backends.cuda.devices import Device
    from liftkit.backends.cuda.runner import CUDARunner

    class StubRunner:
        check_device_limits = CUDARunner.check_device_limits
        geometry = CUDARunner.geometry

        def __init__(self, device: Any = None, blocking: bool = False) -> None:
            self.device = Device(**H100)  # type: ignore[arg-type]
            self._core = _core()
            self.stream = _Stream()

        def _allocate(self, nbytes: int) -> _Buffer:
            return _Buffer(nbytes)

        def get_kernel(self, k: Any) -> _Kernel:
            return _Kernel()

    return StubRunner


def stub_session(profile: Any = None, patch: Callable[[Any, str, Any], None] = setattr,
                 modules: dict[str, Any] = sys.modules) -> Any:
    """A liftkit.blas CUDA session on the stubbed H100 (the shipped H100 profile applies).
    `patch(obj, name, value)` replaces the driver, check and runner (tests pass pytest's
    monkeypatch.setattr); `modules` gets a stand-in `cupy` where none is imported."""
    import liftkit.backends.cuda as cuda_pkg
    import liftkit.blas.queues as queues
    from liftkit.blas import Session

    drv = StubDriver()
    patch(queues, "_driver_module", lambda: drv)
    patch(queues, "_backend_check",
          lambda: (lambda result, what: result[1] if len(result) > 1 else None))
    patch(cuda_pkg, "CUDARunner", stub_runner_class())
    if "cupy" not in modules:  # the library stream look-up of fake CuPy arrays
        cupy = types.ModuleType("cupy")
        stream = types.SimpleNamespace(ptr=0)
        setattr(cupy, "cuda", types.SimpleNamespace(get_current_stream=lambda: stream))
        modules["cupy"] = cupy
    return Session("gpu", backend="cuda", profile=profile)


class _Memory:
    def __init__(self, ptr: int) -> None:
        self.ptr, self.device_id = ptr, 0  # (CuPy's MemoryPointer: its device's id)


class _Flags:
    def __init__(self, c: bool, f: bool) -> None:
        self.c_contiguous, self.f_contiguous = c, f


class _Device:
    id = 0


class ndarray:  # noqa: N801 - what CuPy's arrays are called
    """A CuPy-like GPU array: data.ptr, shape, dtype, strides, flags, device and the CUDA array
    interface (built per access, as CuPy does)."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, order: str = "C") -> None:
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.data = _Memory(_Buffer(0).handle)
        self.device = _Device()
        item = self.dtype.itemsize
        if order == "F" and len(shape) == 2:
            self.strides: tuple[int, ...] = (item, shape[0] * item)
        else:
            st, acc = [], item
            for n in reversed(shape):
                st.append(acc)
                acc *= n
            self.strides = tuple(reversed(st))
        c = order == "C" or len(shape) < 2
        self.flags = _Flags(c, not c or len(shape) < 2)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        c = self.flags.c_contiguous
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False),
                "strides": None if c else self.strides, "version": 3, "stream": 1}


ndarray.__module__ = "cupy._core.core"


# -- cases -----------------------------------------------------------------------------------------
def cases(s: Any, device_arrays: bool, sizes: dict[str, int]) -> dict[str, Callable[[], Any]]:
    """name -> one call. Device-array cases write into given outputs (as cuBLAS through CuPy's
    `out=` does); NumPy cases return new arrays and are read."""
    n_mm, n_mv, n_tr = sizes["gemm"], sizes["gemv"], sizes["transpose"]
    out: dict[str, Callable[[], Any]] = {}
    for dt in ("float32", "float64"):
        if device_arrays:
            A, B, C = (ndarray((n_mm, n_mm), dt) for _ in range(3))
            M, x, y = ndarray((n_mv, n_mv), dt), ndarray((n_mv,), dt), ndarray((n_mv,), dt)
            T, U = ndarray((n_tr, n_tr), dt), ndarray((n_tr, n_tr), dt)
            out[f"gemm {dt} NN {n_mm}"] = lambda A=A, B=B, C=C: s.gemm(A, B, C)
            out[f"gemm {dt} NT {n_mm}"] = lambda A=A, B=B, C=C: s.gemm(A, B, C, trans_b=True)
            out[f"gemv {dt} N {n_mv}"] = lambda M=M, x=x, y=y: s.gemv(M, x, y)
            out[f"gemv {dt} T {n_mv}"] = lambda M=M, x=x, y=y: s.gemv(M, x, y, trans=True)
            out[f"transpose {dt} {n_tr}"] = lambda T=T, U=U: s.transpose(T, U)
            out[f"gemm {dt} NN {n_mm} a=2 b=.5"] = lambda A=A, B=B, C=C: s.gemm(
                A, B, C, alpha=2.0, beta=0.5)
            P, Q, R = (ndarray(sh, dt) for sh in ((1000, 1000), (1000, 1000), (1000, 1000)))
            out[f"gemm {dt} NN 1000 (padded)"] = lambda P=P, Q=Q, R=R: s.gemm(P, Q, R)
        else:
            rng = np.random.default_rng(0)
            A, B = (rng.random((n_mm, n_mm)).astype(dt) for _ in range(2))
            M, x = rng.random((n_mv, n_mv)).astype(dt), rng.random(n_mv).astype(dt)
            T = rng.random((n_tr, n_tr)).astype(dt)
            out[f"gemm {dt} NN {n_mm}"] = lambda A=A, B=B: s.gemm(A, B).result()
            out[f"gemm {dt} NT {n_mm}"] = lambda A=A, B=B: s.gemm(A, B, trans_b=True).result()
            out[f"gemv {dt} N {n_mv}"] = lambda M=M, x=x: s.gemv(M, x).result()
            out[f"gemv {dt} T {n_mv}"] = lambda M=M, x=x: s.gemv(M, x, trans=True).result()
            out[f"transpose {dt} {n_tr}"] = lambda T=T: s.transpose(T).result()
    return out


def time_calls(fn: Callable[[], Any], calls: int, batches: int, finish: Callable[[], Any]
               ) -> float:
    """Median seconds per call over `batches` batches of `calls` calls (after 3 warm-ups)."""
    for _ in range(3):
        fn()
    finish()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
        finish()
    return statistics.median(times)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda-stub", "cpu"), default="cuda-stub")
    p.add_argument("--arrays", default="device,numpy",
                   help="device (CuPy-like arrays; pyopencl arrays on cpu) and/or numpy")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--batches", type=int, default=7)
    p.add_argument("--only", default="", help="run the cases whose name contains this")
    a = p.parse_args(argv)
    if a.device == "cpu":
        import warnings

        from liftkit.blas import NoProfileWarning, Session

        warnings.simplefilter("ignore", NoProfileWarning)
        s = Session("cpu", backend="opencl")
        sizes = {"gemm": 32, "gemv": 64, "transpose": 64}  # the kernels' own time stays small
    else:
        s = stub_session()
        sizes = {"gemm": 1024, "gemv": 8192, "transpose": 4096}
    print(f"# {s.device.label} ({'stubbed driver' if a.device == 'cuda-stub' else 'real'}), "
          f"{a.calls} calls x {a.batches} batches, median us per call; liftkit "
          f"{getattr(sys.modules['liftkit'], '__file__', '?')}")
    print("# (stubbed: what one call asked of the driver and cuda.core follows its time)")
    for kind in a.arrays.split(","):
        dev = kind == "device"
        if dev and a.device == "cpu":
            import pyopencl.array as cla

            todo = _cl_cases(s, cla, sizes)
        else:
            todo = cases(s, dev, sizes)
        for name, fn in todo.items():
            if a.only and a.only not in name:
                continue
            us = time_calls(fn, a.calls, a.batches, s.q.finish) * 1e6
            COUNTS.clear()
            fn()
            counts = ", ".join(f"{n} {k}" for k, n in sorted(COUNTS.items()))
            print(f"{kind:6} {name:28} {us:8.1f}   {counts}")
    return 0


def _cl_cases(s: Any, cla: Any, sizes: dict[str, int]) -> dict[str, Callable[[], Any]]:
    """pyopencl-array cases on the OpenCL session (outputs given)."""
    out: dict[str, Callable[[], Any]] = {}
    rng = np.random.default_rng(0)
    n_mm, n_mv, n_tr = sizes["gemm"], sizes["gemv"], sizes["transpose"]
    for dt in ("float32", "float64"):
        def dev(shape: tuple[int, ...]) -> Any:
            return cla.to_device(s.queue, rng.random(shape).astype(dt))
        A, B, C = dev((n_mm, n_mm)), dev((n_mm, n_mm)), dev((n_mm, n_mm))
        M, x, y = dev((n_mv, n_mv)), dev((n_mv,)), dev((n_mv,))
        T, U = dev((n_tr, n_tr)), dev((n_tr, n_tr))
        out[f"gemm {dt} NN {n_mm}"] = lambda A=A, B=B, C=C: s.gemm(A, B, C)
        out[f"gemm {dt} NT {n_mm}"] = lambda A=A, B=B, C=C: s.gemm(A, B, C, trans_b=True)
        out[f"gemv {dt} N {n_mv}"] = lambda M=M, x=x, y=y: s.gemv(M, x, y)
        out[f"gemv {dt} T {n_mv}"] = lambda M=M, x=x, y=y: s.gemv(M, x, y, trans=True)
        out[f"transpose {dt} {n_tr}"] = lambda T=T, U=U: s.transpose(T, U)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
