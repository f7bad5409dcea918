"""The OpenCL runtime on PoCL: device selection, the kernel cache, and runs checked against the
interpreter. Hand-written kernels keep the runtime's tests independent of how complete the code
generator is; compiled bundled programs check the two work together."""

from __future__ import annotations

import logging

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from liftkit.arith import cst, size_var  # noqa: E402
from liftkit.backends.opencl import (  # noqa: E402
    BuildError,
    KernelCache,
    OpenCLError,
    OpenCLRunner,
    cache_key,
    list_devices,
    run_opencl,
    select_device,
)
from liftkit.codegen import CodegenError, compile_program  # noqa: E402
from liftkit.codegen.kernel import Buffer, CompiledProgram, Kernel, KernelArg, NDRange  # noqa: E402
from liftkit.codegen.memory import bytes_of  # noqa: E402
from liftkit.dsl import (  # noqa: E402
    abs4, float4, float32, float64, fun, get, mapGlb, mult, neg, size, tuple_, tuple_of, user_fun,
)
from liftkit.dsl import abs as labs, map as lmap, zip as lzip  # noqa: E402  (not the built-ins)
from liftkit.ir.typecheck import check_program  # noqa: E402
from liftkit.programs import PROGRAMS  # noqa: E402
from liftkit.semantics import EvaluationError, interpret  # noqa: E402
from liftkit.types import TupleType  # noqa: E402

DEVICES = list_devices()
pytestmark = pytest.mark.skipif(not DEVICES, reason="no OpenCL platform installed")
HAS_CPU = any(d.type == "cpu" for d in DEVICES)
from liftkit.backends.opencl.devices import is_simulator  # noqa: E402

HAS_GPU = any(d.type == "gpu" and not is_simulator(d) for d in DEVICES)
N = size("N")
rng = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture(scope="module")
def runner(cache_dir):
    """One runner for the module: a context per test would rebuild every kernel."""
    return OpenCLRunner("cpu" if HAS_CPU else None, KernelCache(cache_dir))


def assert_same(out, ref, rtol=1e-5, atol=1e-6):
    """The compiled result has the interpreter's form (type, dtype, shape) and values."""
    if isinstance(ref, tuple):
        assert isinstance(out, tuple) and len(out) == len(ref)
        for o, r in zip(out, ref):
            assert_same(o, r, rtol, atol)
        return
    assert isinstance(out, np.ndarray)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if ref.dtype.names:
        for f in ref.dtype.names:
            np.testing.assert_allclose(out[f], ref[f], rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# hand-written pipelines


SCALE_SRC = """
kernel void scale(const global float* restrict x, global float* out, float a, int n) {
  int i = get_global_id(0);
  if (i < n) out[i] = a * x[i];
}
"""


def scale_program() -> CompiledProgram:
    """out = a·x with a scalar argument and a size argument; local size 64 (N % 64 == 0)."""
    prog = fun([float32, float32[N]], lambda a, x: lmap(lambda v: mult(a, v)) << x)
    t = float32[N]
    args = (KernelArg("buffer", "x", "const global float* restrict", buffer="input:x"),
            KernelArg("buffer", "out", "global float*", buffer="output"),
            KernelArg("scalar", "a", "float", param_index=0),
            KernelArg("size", "n", "int", size=size_var("N")))
    k = Kernel("scale", SCALE_SRC, args, NDRange((size_var("N"),), (64,)))
    bufs = (Buffer("input:x", t, bytes_of(t), "input", 1), Buffer("output", t, bytes_of(t), "output"))
    return CompiledProgram(prog, (k,), bufs, ("output",), check_program(prog))


def test_hand_written_kernel_with_scalar_and_size_args(runner):
    cp = scale_program()
    for n in (64, 640):
        a, x = np.float32(-1.25), rng.standard_normal(n).astype(np.float32)
        out, info = runner.run_with_info(cp, a, x)
        assert_same(out, interpret(cp.program, a, x))
        assert info.sizes == {"N": n}
        assert info.launches[0].global_size == (n,) and info.launches[0].local_size == (64,)
        assert info.launches[0].work_groups == (n // 64,)
        assert info.repeat == 1 and info.kernel_times[0] >= 0 and info.upload_seconds >= 0
    # a Python float for the scalar and an int16 array for x (every value kept) are converted
    # like the interpreter does; an int64 array (values beyond float32's 24 bits) is refused
    out = runner.run(cp, 2.0, np.arange(64, dtype=np.int16))
    assert_same(out, interpret(cp.program, 2.0, np.arange(64, dtype=np.int16)))
    with pytest.raises(EvaluationError, match="int64 values, but .* takes float32"):
        runner.run(cp, 2.0, np.arange(64))


PAIR_SRC = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef struct { float _0; double _1; } Pair;
kernel void pairs(const global float* restrict x, global Pair* out, int n) {
  int i = get_global_id(0);
  if (i < n) {
    float4 v = vload4(i, x);
    Pair p = { v.x + v.w, (double)v.y * 2.0 };
    out[i] = p;
  }
}
"""


def test_vector_input_and_padded_struct_output(runner):
    """[float4]_N in as a flat float buffer, [(float, double)]_N out as C structs with padding,
    back as the interpreter's structured array (fields f0, f1, no padding)."""
    pair = user_fun("pair", [("v", float4)], tuple_of(float32, float64), "",
                    lambda v: (v[..., 0] + v[..., 3], v[..., 1].astype(np.float64) * 2.0))
    prog = fun([float4[N]], lambda x: lmap(pair) << x)
    tin, tout = float4[N], check_program(prog)
    args = (KernelArg("buffer", "x", "const global float* restrict", buffer="input:x"),
            KernelArg("buffer", "out", "global Pair*", buffer="output"),
            KernelArg("size", "n", "int", size=size_var("N")))
    cp = CompiledProgram(prog, (Kernel("pairs", PAIR_SRC, args, NDRange((size_var("N"),), None)),),
                         (Buffer("input:x", tin, bytes_of(tin), "input", 0),
                          Buffer("output", tout, bytes_of(tout), "output")), ("output",), tout)
    for n in (5, 33):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        out = runner.run(cp, x)
        assert out.dtype.names == ("f0", "f1") and out.dtype.itemsize == 12
        assert_same(out, interpret(prog, x))


TWO_OUT_SRC = """
kernel void two(const global float* restrict x, global float* o0, global float* o1) {
  int i = get_global_id(0);
  o0[i] = -x[i];
  o1[i] = fabs(x[i]);
}
"""


def test_tuple_result_from_two_buffers(runner):
    prog = fun([float32[N]], lambda x: tuple_(lmap(neg) << x, lmap(labs) << x))
    rt = check_program(prog)
    assert isinstance(rt, TupleType)
    t = float32[N]
    args = (KernelArg("buffer", "x", "const global float* restrict", buffer="input:x"),
            KernelArg("buffer", "o0", "global float*", buffer="output0"),
            KernelArg("buffer", "o1", "global float*", buffer="output1"))
    cp = CompiledProgram(prog, (Kernel("two", TWO_OUT_SRC, args, NDRange((size_var("N"),), None)),),
                         (Buffer("input:x", t, bytes_of(t), "input", 0),
                          Buffer("output0", t, bytes_of(t), "output"),
                          Buffer("output1", t, bytes_of(t), "output")), ("output0", "output1"), rt)
    x = rng.standard_normal(37).astype(np.float32)
    assert_same(runner.run(cp, x), interpret(prog, x))


def test_build_error_carries_the_log(runner):
    cp = scale_program()
    bad = Kernel("scale", SCALE_SRC.replace("a * x[i]", "a * x[i] +"), cp.kernels[0].args,
                 cp.kernels[0].ndrange)
    cp = CompiledProgram(cp.program, (bad,), cp.buffers, cp.result, cp.result_type)
    with pytest.raises(BuildError, match="build failed"):
        runner.run(cp, 1.0, np.ones(64, np.float32))


# ---------------------------------------------------------------------------------------------
# compiled programs against the interpreter

LOW_LEVEL = [s.name for s in PROGRAMS if s.level == "low"]
MUST_COMPILE = {"partial_dot", "transpose", "vector_scal"}


@pytest.mark.parametrize("name", LOW_LEVEL)
def test_bundled_low_level_program_matches_interpreter(runner, name):
    spec = PROGRAMS[name]
    try:
        cp = compile_program(spec.program)
    except CodegenError as err:
        if name in MUST_COMPILE:
            raise
        pytest.skip(f"the code generator does not compile {name} yet: {err}")
    for k, sizes in enumerate((dict(spec.sizes), {v: 3 * n for v, n in spec.sizes.items()})):
        inputs = spec.inputs(sizes, seed=10 + k)
        out = runner.run(cp, *inputs, name=name)
        assert_same(out, interpret(spec.program, *inputs), spec.rtol, spec.atol)


def _compiled_cases():
    pair = user_fun("twice", [("v", float32)], tuple_of(float32, float64),
                    "return (Tuple2_float_double){v * 2.0f, (double)v + 1.0};",
                    lambda v: (v * 2, v.astype(np.float64) + 1))
    return {
        "scalar_param": (fun([float32, float32[N]], lambda a, x: mapGlb(0)(lambda v: mult(a, v)) << x),
                         lambda n: [np.float32(1.5), rng.standard_normal(n).astype(np.float32)]),
        "float4_in": (fun([float4[N]], lambda x: mapGlb(0)(abs4) << x),
                      lambda n: [rng.standard_normal((n, 4)).astype(np.float32)]),
        "zip_to_tuples": (fun([float32[N], float32[N]], lambda x, y: mapGlb(0)(
            lambda p: tuple_(neg(get(0)(p)), get(1)(p))) << lzip(x, y)),
            lambda n: [rng.standard_normal(n).astype(np.float32) for _ in range(2)]),
        "struct_out": (fun([float32[N]], lambda x: mapGlb(0)(pair) << x),
                       lambda n: [rng.standard_normal(n).astype(np.float32)]),
    }


@pytest.mark.parametrize("case", ["scalar_param", "float4_in", "zip_to_tuples", "struct_out"])
def test_compiled_small_programs_match_interpreter(runner, case):
    prog, make = _compiled_cases()[case]
    try:
        cp = compile_program(prog)
    except CodegenError as err:
        pytest.skip(f"not compiled yet: {err}")
    for n in (16, 100):
        inputs = make(n)
        assert_same(runner.run(cp, *inputs), interpret(prog, *inputs))


def test_array_of_tuples_input_as_structured_array_or_tuple(runner):
    prog = fun([tuple_of(float32, float64)[N]],
               lambda xs: mapGlb(0)(lambda p: tuple_(get(1)(p), get(0)(p))) << xs)
    try:
        cp = compile_program(prog)
    except CodegenError as err:
        pytest.skip(f"not compiled yet: {err}")
    a, b = rng.standard_normal(20).astype(np.float32), rng.standard_normal(20)
    packed = np.empty(20, dtype=[("f0", np.float32), ("f1", np.float64)])
    packed["f0"], packed["f1"] = a, b
    ref = interpret(prog, (a, b))
    assert_same(runner.run(cp, (a, b)), ref)
    assert_same(runner.run(cp, packed), ref)


def test_run_opencl_convenience(runner):
    spec = PROGRAMS["vector_scal"]
    x = spec.inputs(seed=3)[0]
    ref = interpret(spec.program, x)
    assert_same(run_opencl(spec.program, x, runner=runner), ref)
    assert_same(run_opencl(compile_program(spec.program), x, runner=runner), ref)


def test_timing_with_repeats_reports_medians(runner):
    spec = PROGRAMS["partial_dot"]
    cp = compile_program(spec.program)
    inputs = spec.inputs(seed=4)
    out, info = runner.run_with_info(cp, *inputs, timing=True, repeat=3)
    assert_same(out, interpret(spec.program, *inputs), spec.rtol, spec.atol)
    assert info.warmup and info.repeat == 3 and len(info.runs[0]) == len(cp.kernels)
    assert info.kernel_times[0] == pytest.approx(float(np.median([r[0] for r in info.runs])))
    assert set(info.kernel_seconds) == {k.name for k in cp.kernels}
    assert info.total_seconds > 0


# ---------------------------------------------------------------------------------------------
# errors


def test_wrong_input_shape_and_dtype(runner):
    cp = compile_program(PROGRAMS["transpose"].program)
    with pytest.raises(EvaluationError, match="expected 2 dimension"):
        runner.run(cp, np.zeros((4, 4, 4), np.float32))
    with pytest.raises(EvaluationError, match="complex64 values, but .* takes float32"):
        runner.run(cp, np.zeros((4, 4), np.complex64))
    with pytest.raises(EvaluationError, match="takes 1 input"):
        runner.run(cp)
    scal = scale_program()
    with pytest.raises(EvaluationError, match=r"length N = 64 but the array has 32"):
        runner.run(scal, 1.0, np.ones(32, np.float32), sizes={"N": 64})


def test_non_divisible_size_is_reported_with_a_fix(runner):
    cp = compile_program(PROGRAMS["partial_dot"].program)
    x = np.ones(200, np.float32)
    with pytest.raises(OpenCLError, match=r"partial_dot: N=200: split 128 .*N must be a multiple of 128"):
        runner.run(cp, x, x, name="partial_dot")
    with pytest.raises(OpenCLError, match=r"global size N = 100 is not a multiple of the local "
                                          r"size 64.*N must be a multiple of 64"):
        runner.run(scale_program(), 1.0, np.ones(100, np.float32))


def test_zero_work_groups(runner):
    cp = compile_program(PROGRAMS["vector_scal"].program)
    with pytest.raises(OpenCLError, match=r"vector_scal: N=1000 gives 0 work-groups .*"
                                          r"N must be a multiple of 1024"):
        runner.run(cp, np.ones(1000, np.int32), name="vector_scal")


def test_launch_limits(runner):
    cp = scale_program()
    x = np.ones(1 << 14, np.float32)
    too_big = runner.device.max_work_group_size * 2
    with pytest.raises(OpenCLError, match=r"kernel scale uses work-groups of .* at most"):
        runner.run(cp, 1.0, x, ndrange_override=NDRange((cst(1 << 14),), (too_big,)))
    with pytest.raises(OpenCLError, match="names no kernel"):
        runner.run(cp, 1.0, x, ndrange_override={"nope": NDRange((cst(64),), None)})
    out = runner.run(cp, 3.0, x, ndrange_override={"scale": NDRange((cst(1 << 14),), (128,))})
    np.testing.assert_array_equal(out, 3 * x)


def test_size_argument_must_fit_in_int(runner):
    cp = scale_program()
    k = cp.kernels[0]
    huge = KernelArg("size", "n", "int", size=size_var("N") * (1 << 25))  # 64 * 2**25 = 2**31
    cp = CompiledProgram(cp.program, (Kernel(k.name, k.source, k.args[:3] + (huge,), k.ndrange),),
                         cp.buffers, cp.result, cp.result_type)
    with pytest.raises(OpenCLError, match=r"argument n = .*2147483648 does not fit in a C int"):
        runner.run(cp, 1.0, np.ones(64, np.float32))


# ---------------------------------------------------------------------------------------------
# devices and the cache


@pytest.mark.skipif(not HAS_CPU, reason="no CPU OpenCL device")
def test_select_device():
    d = select_device("cpu")
    assert d.type == "cpu" and d.max_work_group_size > 0 and d.local_mem_size > 0
    assert d.driver_version in d.fingerprint and d.name in d.fingerprint
    assert select_device(d.platform.upper()[:6]).platform == d.platform  # case-insensitive
    default = select_device()
    assert default.type == ("gpu" if HAS_GPU else "cpu")
    with pytest.raises(OpenCLError, match=r"no device matches 'no-such-device'.*available devices") as e:
        select_device("no-such-device")
    assert d.name in str(e.value)
    if not HAS_GPU:
        with pytest.raises(OpenCLError, match="no GPU device"):
            select_device("gpu")


def test_cache_key_depends_on_source_device_and_options():
    d = DEVICES[0]
    k = cache_key("src", d, ["-DX"])
    assert k == cache_key("src", d, ["-DX"]) and len(k) == 64
    assert len({k, cache_key("src2", d, ["-DX"]), cache_key("src", d, []),
                cache_key("sr", d, ["c-DX"])}) == 4


def test_cache_memory_and_disk(tmp_path, caplog):
    cp = scale_program()
    x = np.arange(64, dtype=np.float32)
    dev = "cpu" if HAS_CPU else None
    r1 = OpenCLRunner(dev, KernelCache(tmp_path))
    with caplog.at_level(logging.INFO, logger="liftkit.cache"):
        r1.run(cp, 2.0, x)
        r1.run(cp, 2.0, x)
    assert r1.cache.stats().as_dict() == {"hits": 1, "disk_hits": 0, "misses": 1}
    assert any("miss" in m for m in caplog.messages)
    files = list(tmp_path.glob("*.bin"))
    assert len(files) == 1 and not list(tmp_path.glob("*.tmp"))

    r2 = OpenCLRunner(r1.device, KernelCache(tmp_path))  # a new process, in effect
    np.testing.assert_array_equal(r2.run(cp, 2.0, x), 2 * x)
    assert r2.cache.stats().as_dict() == {"hits": 0, "disk_hits": 1, "misses": 0}

    files[0].write_bytes(b"not a binary")  # a corrupt entry is rebuilt and overwritten
    r3 = OpenCLRunner(r1.device, KernelCache(tmp_path))
    np.testing.assert_array_equal(r3.run(cp, 2.0, x), 2 * x)
    assert r3.cache.stats().as_dict() == {"hits": 0, "disk_hits": 0, "misses": 1}
    assert files[0].read_bytes() != b"not a binary"

    small = KernelCache(tmp_path, max_memory=1)  # least recently used programs are dropped
    r4 = OpenCLRunner(r1.device, small)
    r4.run(cp, 2.0, x)
    r4.run(compile_program(PROGRAMS["vector_scal"].program), np.ones(1024, np.int32))
    r4.run(cp, 2.0, x)
    assert small.stats().hits == 0 and small.stats().disk_hits == 2


def test_cache_without_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFTKIT_CACHE_DIR", str(tmp_path / "env"))
    assert KernelCache().directory == tmp_path / "env"
    cache = KernelCache(disk=False)
    r = OpenCLRunner(DEVICES[0] if not HAS_CPU else "cpu", cache)
    r.run(scale_program(), 1.0, np.ones(64, np.float32))
    assert cache.directory is None and cache.stats().misses == 1
    assert not (tmp_path / "env").exists()


# ---------------------------------------------------------------------------------------------
# GPU


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="no GPU OpenCL platform")
def test_partial_dot_on_gpu(tmp_path):
    spec = PROGRAMS["partial_dot"]
    r = OpenCLRunner("gpu", KernelCache(tmp_path))
    inputs = spec.inputs({"N": 1 << 20})
    out = r.run(compile_program(spec.program), *inputs)
    np.testing.assert_allclose(out, spec.reference(*inputs), rtol=1e-3, atol=1e-3)
