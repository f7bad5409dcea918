"""`A @ B` in GPU sections on the CUDA backend: liftkit.blas's CUDA derivations (the CUDA
profile's cp.async tiles, DMMA), whose CUDA C has no OpenCL C twin, and the OpenCL kernel of the
same program the runtime's CPU fallback runs instead under memory pressure. The pipeline is
built for a CUDA runtime here without a GPU (code generation only; NVRTC where installed) and
its fallback runs for real on the CPU device."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from liftkit.backends.opencl import list_devices  # noqa: E402
from liftkit.jit.gpu_library import LiftLibrary, _program  # noqa: E402
from liftkit.runtime import Runtime  # noqa: E402

HAS_CPU = any(d.type == "cpu" for d in list_devices())
H100 = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3",
                             fingerprint="cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000")


def _cuda_runtime() -> types.SimpleNamespace:
    """What LiftLibrary reads of a CUDA runtime on an H100 (its dialect and device)."""
    return types.SimpleNamespace(dialect="cuda", device=types.SimpleNamespace(
        is_cpu=False, device=H100, label="NVIDIA H100 80GB HBM3 (no GPU here)"))


SIZES = {"M": 256, "N": 128, "K": 64}  # the product the CPU fallback tests run (A 256×64, B 64×128)


def _cuda_sgemm(lib: LiftLibrary, sizes: dict):  # type: ignore[no-untyped-def]
    """lib's SGEMM pipeline of `sizes` built for the CUDA runtime, its build's warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib._build(_cuda_runtime(), "mm", "float32", sizes)


def test_sections_on_cuda_take_the_cuda_gemm_derivations():
    cube = {"M": 4096, "N": 4096, "K": 4096}
    # the shipped CUDA profile of the H100 (tuned through CUDA), not the OpenCL one
    assert _program("mm", "float32", cube, "gpu", H100, True)[2].codelet == "tiles-async"
    assert _program("mm", "float32", cube, "gpu", H100, False)[2].codelet == "tiles"
    # without a CUDA profile entry, liftkit.blas's CUDA defaults; odd sizes the any-size one
    assert _program("mm", "float64", {"M": 256, "N": 64, "K": 128}, "gpu", H100,
                    True)[2].codelet == "mma"
    assert _program("mm", "float32", {"M": 96, "N": 96, "K": 96}, "gpu", H100,
                    True)[2].codelet == "glb"


def _cpu_tasks_of_a_product_too_big(lib: LiftLibrary, p, sizes: dict, seed: int) -> int:  # type: ignore[no-untyped-def]
    """Run pipeline p (A: 256×64 by B: 64×128, float32) on the CPU device with 64 KB of device
    memory, so A, B and C do not fit: check the product; the runtime's CPU tasks."""
    rt = Runtime("opencl", "cpu", memory_limit=1 << 16)
    try:
        rng = np.random.default_rng(seed)
        A = rng.random((256, 64), dtype=np.float32)
        B = rng.random((64, 128), dtype=np.float32)
        C = np.zeros((256, 128), np.float32)
        va, vb, vc = (rt.submit(x) for x in (A, B, C))
        lib.run(rt, "mm", [va, vb], vc, sizes, "float32", pipeline=p)
        np.testing.assert_allclose(rt.read(vc), A @ B, rtol=1e-5)
        return rt.stats()["cpu_tasks"]
    finally:
        rt.close()


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_a_cuda_only_gemm_runs_its_opencl_twin_when_it_cannot_fit():
    lib = LiftLibrary()
    p = _cuda_sgemm(lib, SIZES)
    (k,) = p.kernels
    assert "cp.async" in k.sources["cuda"] and "opencl" not in k.sources  # CUDA only
    assert k.cpu is not None and "cp.async" not in k.cpu.source and "__kernel" not in \
        k.cpu.source and "kernel void" in k.cpu.source  # liftkit.blas's CPU tiles, OpenCL C
    try:
        from liftkit.backends.cuda import compile_cuda
        assert compile_cuda(k.sources["cuda"], "compute_90a").ptx
    except ImportError:
        pass
    assert _cpu_tasks_of_a_product_too_big(lib, p, SIZES, seed=4) == 1


class _Recorder(types.SimpleNamespace):
    """What LiftLibrary.run reads and calls of a CUDA runtime, recording the launches."""

    def __init__(self) -> None:
        super().__init__(dialect="cuda", device=_cuda_runtime().device, vars={}, launches=[])

    def empty(self, shape, dtype):  # type: ignore[no-untyped-def]
        v = types.SimpleNamespace(id=len(self.vars) + 100, shape=tuple(shape), dtype=np.dtype(dtype))
        self.vars[v.id] = v
        return v

    def launch(self, kern, glob, args, reads, writes, overwrites, local_size):  # type: ignore[no-untyped-def]
        self.launches.append((kern, glob, [getattr(a, "var", a) for a in args], writes))

    def release(self, v, writeback):  # type: ignore[no-untyped-def]
        self.vars.pop(v.id, None)


def test_a_split_tail_gemm_gets_zero_filled_flags_per_launch():
    """The H100 profile's SGEMM at 4096³ splits its tail (mm-split-tail): its flags are a
    zero-filled temporary of this launch (a zero fill launched before it), its partial sums a
    plain one, both released after; nothing shared between launches."""
    lib = LiftLibrary()
    rt = _Recorder()
    cube = {"M": 4096, "N": 4096, "K": 4096}
    assert _program("mm", "float32", cube, "gpu", H100, True)[2].kw.get("split")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = lib._build(rt, "mm", "float32", cube)
        a, b, c = (rt.empty((4096, 4096), np.float32) for _ in range(3))
        lib.run(rt, "mm", [a, b], c, cube, "float32", pipeline=p)
    (fill, _, fill_args, fill_writes), (mm, glob, args, writes) = rt.launches
    flags = [b for b in p.compiled.buffers if b.zeroed]
    assert len(flags) == 1 and flags[0].nbytes.eval({}) == 396 * 4
    assert "sk_flags" in mm.sources["cuda"] and glob[2] == 5  # the parts on the grid's z (4096: t5@396)
    zeroed = fill_writes[0]
    assert zeroed in writes and zeroed.dtype == np.float32 and zeroed.shape == (396,)
    assert "return 0.0f;" in fill.sources["cuda"] or "0.0f" in fill.sources["cuda"]
    assert set(rt.vars) == {a.id, b.id, c.id}  # the flags and partial sums released


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_a_split_tail_gemm_runs_its_twin_without_the_scratch_when_it_cannot_fit(monkeypatch):
    """Under memory pressure a split-tail SGEMM (its flags and partial sums are kernel
    parameters) still runs on the CPU: the OpenCL twin takes the launch's arguments but the
    two scratch buffers, and computes the product."""
    from liftkit.jit import gpu_library

    split = _program("mm", "float32", {"M": 4096, "N": 4096, "K": 4096}, "gpu", H100, True)[2]
    monkeypatch.setattr(gpu_library, "_profiled", lambda *a, **k: split)
    lib = LiftLibrary()
    p = _cuda_sgemm(lib, SIZES)
    (k,) = p.kernels
    (c,) = p.compiled.kernels
    scratch = [i for i, a in enumerate(c.args) if a.buffer in
               {b.name for b in p.compiled.buffers if b.role == "temporary"}]
    assert "sk_flags" in k.sources["cuda"] and len(scratch) == 2
    assert k.cpu is not None and k.cpu.args == tuple(i for i in range(len(c.args)) if i not in scratch)
    assert _cpu_tasks_of_a_product_too_big(lib, p, SIZES, seed=5) >= 1
