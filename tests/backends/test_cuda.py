"""The CUDA backend. Without a GPU: NVRTC (from pip) compiles the CUDA C of every bundled
low-level program and of the random-program generator's programs to PTX, the module cache's
keys and its refusal of damaged entries. With a GPU (`gpu` marker): every bundled program and a
window of random programs against the interpreter, GPU arrays in and out without copies, the
errors for wrong arrays, the disk cache.

    LIFTKIT_RANDOM_SEED / LIFTKIT_RANDOM_COUNT   the random window (as in test_random_programs)
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.programs import PROGRAMS
from liftkit.testing.random_programs import generate

pytest.importorskip("cuda.bindings", reason="cuda-python is not installed")

from liftkit.backends.cuda import (  # noqa: E402
    CUDAError, ModuleCache, NVRTCError, compile_cuda, list_devices, module_key,
)
from liftkit.backends.cuda.cache import MAGIC, cuda_options, unwrap_entry, wrap_entry  # noqa: E402
from liftkit.backends.cuda.nvrtc import CompileServer, compile_server  # noqa: E402

CUDA = CompileOptions(dialect="cuda")
LOW = [s.name for s in PROGRAMS if s.level == "low"]
BASE = int(os.environ.get("LIFTKIT_RANDOM_SEED", "20240"))
COUNT = int(os.environ.get("LIFTKIT_RANDOM_COUNT", "200"))
CHUNK = 25
PTX_ARCH = "compute_90a"  # Hopper's PTX: what `-arch=sm_90a` builds on an H100/H200

DEVICES = list_devices()
needs_gpu = pytest.mark.skipif(not DEVICES, reason="no CUDA GPU")


def _ptx(program, options: CompileOptions = CUDA) -> list[str]:
    """Every kernel of the program through NVRTC; NVRTCError (with the log) on any error."""
    return [compile_cuda(k.source, PTX_ARCH, name=f"{k.name}.cu").ptx
            for k in compile_program(program, options).kernels]


# ---------------------------------------------------------------------------------------------
# no GPU needed


@pytest.mark.parametrize("name", LOW)
def test_every_bundled_low_level_program_compiles_to_ptx(name: str) -> None:
    for ptx in _ptx(PROGRAMS[name].program):
        assert ".entry KERNEL" in ptx and ".target sm_90a" in ptx


@pytest.mark.parametrize("start", range(BASE, BASE + COUNT, CHUNK))
def test_random_programs_compile_to_ptx(start: int) -> None:
    for seed in range(start, min(start + CHUNK, BASE + COUNT)):
        try:
            _ptx(generate(seed).program)
        except NVRTCError as err:
            pytest.fail(f"random program seed {seed}: {err}", pytrace=False)


def test_an_nvrtc_error_carries_the_log() -> None:
    with pytest.raises(NVRTCError, match=r'identifier "undefined_thing" is undefined'):
        compile_cuda('extern "C" __global__ void k(float* x) { x[0] = undefined_thing; }', PTX_ARCH)


def test_cubin_for_a_real_architecture() -> None:
    out = compile_cuda('extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }', "sm_90a")
    assert out.cubin and out.cubin[:4] == b"\x7fELF"


def test_the_vector_prelude_compiles_opencl_vector_code() -> None:
    """OpenCL vector arithmetic, broadcasts, lanes and built-ins, as the prelude provides them
    (their values are checked on the GPU by the bundled vector programs)."""
    from liftkit.codegen.cuda_prelude import prelude

    src = prelude(True) + (
        'extern "C" __global__ void probe(float* out, const float* in) {\n'
        "  float4 a = vload4(0, in); float4 b = float4(2.0f);\n"
        "  float4 c = fma(a, b, a) * 3 - b / 2.0f; c.s1 += c.x; c.w = fmax(c, b).z;\n"
        "  int4 m = convert_int4(c); vstore4(c, 0, out); out[4] = dot(a, b) + m.y;\n"
        "  double2 d = double2(1.0, 2.0); out[5] = (float)(d * 2.0).y + abs(m).x;\n}\n")
    assert ".entry probe" in compile_cuda(src, PTX_ARCH).ptx


def test_module_keys_change_with_everything_that_changes_the_binary() -> None:
    dev = _fake_device()
    other = _fake_device(driver_version=12080)
    base = module_key("src", dev, ("-arch=sm_90a",))
    assert base == module_key("src", dev, ("-arch=sm_90a",))
    assert len({base, module_key("src2", dev, ("-arch=sm_90a",)),
                module_key("src", dev, ("-arch=sm_90",)), module_key("src", other, ("-arch=sm_90a",))}) == 4




def test_a_cubin_built_elsewhere_is_stored_under_the_key_get_looks_up(tmp_path) -> None:
    """`ModuleCache.put` (the benchmarks' pools of NVRTC processes) writes the entry `get`
    reads for the same source, options and device."""
    dev, cache = _fake_device(), ModuleCache(tmp_path)
    cache.put(dev, "src", ("-DX=1",), b"\x7fELF...")
    key = module_key("src", dev, cuda_options(dev, ("-DX=1",)))
    assert unwrap_entry(cache.path_for(key).read_bytes(), key) == b"\x7fELF..."
def test_damaged_disk_entries_are_never_used(tmp_path, caplog) -> None:
    cache = ModuleCache(tmp_path)
    key = "k" * 64
    path = cache.path_for(key)
    path.write_bytes(b"garbage")
    assert cache._from_disk(key, "KERNEL") is None
    path.write_bytes(MAGIC + key.encode() + b"\n" + b"\0" * 32 + b"\x7fELF...")  # bad checksum
    assert cache._from_disk(key, "KERNEL") is None
    assert "rebuilding from source" in caplog.text and "checksum" in caplog.text
    # another kernel's entry copied over this one's file (issue 11): a miss, not its module
    path.write_bytes(wrap_entry(b"\x7fELF... another kernel", "o" * 64))
    assert cache._from_disk(key, "KERNEL") is None
    assert "the entry of another kernel" in caplog.text
    assert unwrap_entry(wrap_entry(b"\x7fELF...", key), key) == b"\x7fELF..."


def test_no_gpu_is_one_clear_error() -> None:
    if DEVICES:
        pytest.skip("a CUDA GPU is present")
    from liftkit.backends.cuda import CUDARunner

    with pytest.raises(CUDAError, match="no CUDA device"):
        CUDARunner()


TINY = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }'
CL_TINY = "kernel void v(global float* a) { a[get_global_id(0)] = 2.0f; }"


def test_nvrtc_never_loads_into_this_process() -> None:
    """NVRTC compiles in the compile server: liftkit's process maps no libnvrtc."""
    assert compile_cuda(TINY, PTX_ARCH).ptx
    server = compile_server()
    assert server.running and server._proc is not None and server._proc.pid != os.getpid()
    maps = "/proc/self/maps"
    if os.path.exists(maps):
        with open(maps) as f:
            assert "libnvrtc" not in f.read()


def test_a_dead_server_is_restarted_once_and_a_second_death_is_one_error(tmp_path) -> None:
    server = CompileServer()
    try:
        assert server.request("version") >= (12, 0)
        assert server._proc is not None
        server._proc.kill()
        server._proc.wait()
        ptx, cubin, _ = server.request("compile", TINY, PTX_ARCH, [], "k.cu")
        assert ".entry k" in ptx and cubin is None
        crash = tmp_path / "python"
        crash.write_text("#!/bin/sh\necho 'NVRTC exploded' >&2\nexit 3\n")
        crash.chmod(0o755)
        server.python = str(crash)
        server._proc.kill()
        server._proc.wait()
        with pytest.raises(CUDAError, match=r"stopped twice .*exit code 3: NVRTC exploded"):
            server.request("version")
    finally:
        server.close()
    assert not server.running


def _opencl_builds_after_nvrtc(nvidia: bool) -> int:
    """Builds an OpenCL program on every working (NVIDIA or other) OpenCL device before and
    after NVRTC compiled a cubin in the compile server; the number of devices built on."""
    opencl = pytest.importorskip("liftkit.backends.opencl")
    from liftkit.backends.opencl.devices import build_problem, is_simulator

    cl = pytest.importorskip("pyopencl")
    devices = [d for d in opencl.list_devices() if ("NVIDIA" in d.platform) == nvidia
               and not is_simulator(d) and build_problem(d) is None]
    for d in devices:
        ctx = cl.Context([d.cl_device])
        with warnings.catch_warnings():  # raw pyopencl builds: the driver's build log is noise
            warnings.simplefilter("ignore", cl.CompilerWarning)
            cl.Program(ctx, CL_TINY).build()
            assert compile_cuda(TINY, "sm_90a").cubin
            cl.Program(ctx, CL_TINY.replace("2.0f", "3.0f")).build()
    return len(devices)


def test_opencl_cpu_builds_beside_nvrtc() -> None:
    if not _opencl_builds_after_nvrtc(nvidia=False):
        pytest.skip("no OpenCL CPU device")


@pytest.mark.gpu
def test_nvidia_opencl_builds_beside_nvrtc() -> None:
    """Once NVRTC had compiled in the process, every NVIDIA OpenCL build failed with "Don't
    understand command line argument "sm_90"" (H100, driver 580, NVRTC 13)."""
    if not _opencl_builds_after_nvrtc(nvidia=True):
        pytest.skip("no NVIDIA OpenCL device")


def test_launch_geometry_maps_ndranges_and_stays_within_the_grid_limits() -> None:
    from liftkit.backends.cuda import CUDARunner
    from liftkit.backends.pipeline import Launch

    runner = CUDARunner.__new__(CUDARunner)  # geometry needs only the device's limits
    runner.device = _fake_device()
    assert runner.geometry(Launch("K", (4096, 64), (64, 4))) == ((64, 4), (64, 16))
    assert runner.geometry(Launch("K", (1000,), None)) == ((256,), (4,))  # mapGlb: grid-stride
    # more blocks than the grid allows in y: the mapGlb/mapWrg loops step by the grid's extent
    assert runner.geometry(Launch("K", (64, 4 * 70000), (64, 4))) == ((64, 4), (1, 65535))


def _fake_device(**kw):
    from liftkit.backends.cuda import Device

    fields = dict(ordinal=0, name="NVIDIA H100", compute_capability=(9, 0), driver_version=13000,
                  multiprocessors=132, max_threads_per_block=1024, max_block_dims=(1024, 1024, 64),
                  max_grid_dims=(2**31 - 1, 65535, 65535), shared_memory_per_block=49152,
                  total_memory=80 << 30)
    fields.update(kw)
    return Device(**fields)


# ---------------------------------------------------------------------------------------------
# on a GPU


@pytest.fixture(scope="module")
def runner():
    from liftkit.backends.cuda import CUDARunner

    return CUDARunner(DEVICES[0], ModuleCache(disk=False))


def _close(out, ref, spec) -> None:
    if isinstance(ref, np.ndarray) and ref.dtype.names:
        for name in ref.dtype.names:
            np.testing.assert_allclose(out[name], ref[name], rtol=spec.rtol, atol=spec.atol)
    elif isinstance(ref, tuple):
        for o, r in zip(out, ref):
            np.testing.assert_allclose(o, r, rtol=spec.rtol, atol=spec.atol)
    else:
        np.testing.assert_allclose(out, ref, rtol=spec.rtol, atol=spec.atol)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", LOW)
def test_bundled_program_on_cuda_matches_the_interpreter(name: str, runner) -> None:
    from liftkit.semantics import interpret

    spec = PROGRAMS[name]
    inputs = spec.inputs(seed=3)
    out = runner.run(compile_program(spec.program, CUDA), *inputs, name=name)
    _close(out, interpret(spec.program, *inputs), spec)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("start", range(BASE, BASE + COUNT, CHUNK))
def test_random_programs_on_cuda(start: int, runner) -> None:
    from liftkit.testing import check_case, failure_report

    failures = []
    for seed in range(start, min(start + CHUNK, BASE + COUNT)):
        case = generate(seed)
        outcome = check_case(case, runner)
        if not outcome.ok:
            failures.append(failure_report(case, outcome, device="cuda"))
    assert not failures, "\n\n".join(failures)


@pytest.mark.gpu
@needs_gpu
def test_cupy_arrays_in_and_out_without_copies(runner) -> None:
    cupy = pytest.importorskip("cupy")
    spec = PROGRAMS["scal_gpu"]
    a, x = spec.inputs({"N": 1 << 16}, seed=5)
    dx = cupy.asarray(x)
    out = runner.run(compile_program(spec.program, CUDA), a, dx)
    assert isinstance(out, cupy.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(cupy.asnumpy(out), spec.reference(a, x), rtol=1e-6)
    # the kernel read the array in place: a change to it shows in the next result
    dx *= 2
    out2 = runner.run(compile_program(spec.program, CUDA), a, dx)
    np.testing.assert_allclose(cupy.asnumpy(out2), 2 * spec.reference(a, x), rtol=1e-6)


@pytest.mark.gpu
@needs_gpu
def test_torch_tensors_in_and_out(runner) -> None:
    try:
        import torch
    except Exception as err:  # noqa: BLE001 - an installation whose import fails
        pytest.skip(f"PyTorch does not import here: {str(err).splitlines()[0]}")
    spec = PROGRAMS["partial_dot"]
    x, y = spec.inputs({"N": 1 << 14}, seed=6)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    out = runner.run(compile_program(spec.program, CUDA), tx, ty)
    assert isinstance(out, torch.Tensor) and out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), spec.reference(x, y), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@needs_gpu
def test_wrong_gpu_arrays_are_one_clear_error(runner) -> None:
    cupy = pytest.importorskip("cupy")
    spec = PROGRAMS["scal_gpu"]
    a, x = spec.inputs({"N": 1024}, seed=5)
    compiled = compile_program(spec.program, CUDA)
    with pytest.raises(CUDAError, match=r"expected float elements \(float32\), got a GPU array of float64"):
        runner.run(compiled, a, cupy.asarray(x, dtype=cupy.float64))
    with pytest.raises(CUDAError, match="not C-contiguous"):
        runner.run(compiled, a, cupy.asarray(np.stack([x, x], 1))[:, 0])


@pytest.mark.gpu
@needs_gpu
def test_disk_cache_serves_a_second_runner_and_rebuilds_damaged_entries(tmp_path) -> None:
    from liftkit.backends.cuda import CUDARunner

    spec = PROGRAMS["asum_nvidia"]  # two kernels
    inputs = spec.inputs(seed=1)
    compiled = compile_program(spec.program, CUDA)
    first = ModuleCache(tmp_path)
    CUDARunner(DEVICES[0], first).run(compiled, *inputs)
    assert first.stats().misses == 2
    second = ModuleCache(tmp_path)
    out, info = CUDARunner(DEVICES[0], second).run_with_info(compiled, *inputs, timing=True, repeat=3)
    assert second.stats().disk_hits == 2 and second.stats().misses == 0
    assert info.total_seconds > 0 and len(info.kernel_times) == 2 and info.repeat == 3
    for p in tmp_path.glob("*.cubin"):
        p.write_bytes(p.read_bytes()[:-7] + b"damaged")
    third = ModuleCache(tmp_path)
    out3 = CUDARunner(DEVICES[0], third).run(compiled, *inputs)
    assert third.stats().misses == 2
    np.testing.assert_allclose(out3, out)
