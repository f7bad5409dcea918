"""GEMV T in one kernel whose column blocks' row chunks meet in global memory (pattern lastWrg,
rule gemv-lane-columns-last, codelet column-groups-last): the pattern's meaning, type rule and
printing; the derivation sound in the interpreter (integer inputs: exact sums, real and
complex); the generated kernel run for real on the CPU device at random shapes (general path
and call plan, the counters reused by every later call), and compiled for CUDA by NVRTC."""

from __future__ import annotations

import numpy as np
import pytest

from liftkit import dsl as D
from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.ir.parser import parse
from liftkit.ir.printer import show
from liftkit.ir.typecheck import check_program
from liftkit.rewrite.rules.corpus import run
from liftkit.types import LiftTypeError

from .test_gemv_split import check_gemv_t_at_random_shapes
from .test_gemv_tree import check_gemv_t_in_the_interpreter, check_gemv_t_on_the_gpu
from .test_gpu_codelets import _forced
from .test_properties import _mat

LAST = [Variant.of("column-groups-last", lanes=2, g=8, w=4, r=4, c=1),
        Variant.of("column-groups-last", lanes=4, g=4, w=2, r=8, b=32),
        Variant.of("column-groups-last", lanes=8, g=4, w=1, r=2),
        Variant.of("column-groups-last", lanes=4, g=4, w=4, r=2, u=4)]  # 4 accumulators


def _sums_of_parts() -> D.FunDecl:
    """lastWrg over [[[float]_4]_r]_n: each part's two halves' sums (a work-group of 2
    work-items), the block's 2·r sums added in order to its value z."""
    def part(xs: D.Expr) -> D.Expr:
        return D.toGlobal(D.mapLcl(0)(D.mapSeq(D.id))) << D.toLocal(
            D.mapLcl(0)(D.reduceSeq(D.add, 0.0))) << D.split(2) << xs

    def finish(ps: D.Expr, z: D.Expr) -> D.Expr:
        return D.mapLcl(0)(lambda p: D.add(p, z)) << D.reduceSeq(D.add, 0.0) << D.join << D.join \
            << ps

    return D.lastWrg(part, finish)


def test_last_wrg_means_a_map_of_its_blocks() -> None:
    n, r = D.sizes("n r")
    prog = D.fun([D.ArrayType(D.ArrayType(D.ArrayType(D.float32, 4), r), n), D.float32[n]],
                 lambda xs, zs: D.join << _sums_of_parts()(xs, zs))
    xs = np.arange(3 * 5 * 4, dtype=np.float32).reshape(3, 5, 4)
    zs = np.array([1.0, -2.0, 0.5], np.float32)
    got = run(prog, [xs, zs], {"n": 3, "r": 5})
    np.testing.assert_array_equal(np.asarray(got).ravel(), xs.reshape(3, -1).sum(1) + zs)
    assert show(parse(show(prog))) == show(prog)
    assert "lastWrg 0 0 (" in show(prog)


def test_last_wrg_bound_builds_for_resident_groups() -> None:
    """lastWrg b: CUDA's kernel carries __launch_bounds__(work-items, b), OpenCL's nothing (it
    has no such attribute) and still runs on the CPU device; printed and parsed with b; the
    meaning is b's too; b outside 0..32 refused in words."""
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen.compiler import CompileOptions, compile_program

    n, r = D.sizes("n r")
    xt = D.ArrayType(D.ArrayType(D.ArrayType(D.float32, 4), r), n)

    def prog(b: int) -> D.FunDecl:
        part, finish = _sums_of_parts().f, _sums_of_parts().g
        return D.fun([xt, D.float32[n]], lambda xs, zs: D.join << D.lastWrg(part, finish, b)(xs, zs))

    assert "lastWrg 6 0 (" in show(prog(6)) and show(parse(show(prog(6)))) == show(prog(6))
    cuda = compile_program(prog(6), CompileOptions(dialect="cuda")).kernels[0].source
    assert "__launch_bounds__(2, 6)" in cuda
    assert "__launch_bounds__" not in compile_program(prog(0), CompileOptions(dialect="cuda")
                                                      ).kernels[0].source
    c = compile_program(prog(6))
    assert "__launch_bounds__" not in c.kernels[0].source
    rng = np.random.default_rng(7)
    xs = rng.integers(-8, 9, (9, 5, 4)).astype(np.float32)
    zs = rng.integers(-8, 9, 9).astype(np.float32)
    want = xs.reshape(9, -1).sum(1) + zs
    np.testing.assert_array_equal(np.asarray(OpenCLRunner("cpu").run(c, xs, zs)).ravel(), want)
    np.testing.assert_array_equal(np.asarray(run(prog(6), [xs, zs], {"n": 9, "r": 5})).ravel(), want)
    for bad in (33, -1):
        with pytest.raises(LiftTypeError, match="constant from 0 to 32"):
            check_program(prog(bad))


def test_last_wrg_in_a_cluster() -> None:
    """lastWrg b 1: CUDA runs a block's parts as one thread-block cluster (no counters, no
    workspace: the partials read from the cluster's local memories), OpenCL (no clusters) the
    counters, which run on the CPU device; printed and parsed with the flag; more than 8 parts
    or a flag other than 0/1 refused in words."""
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen.compiler import CompileOptions, compile_program

    (n,) = D.sizes("n")

    def prog(r: int, c: int = 1) -> D.FunDecl:
        xt = D.ArrayType(D.ArrayType(D.ArrayType(D.float32, 4), r), n)
        part, finish = _sums_of_parts().f, _sums_of_parts().g
        return D.fun([xt, D.float32[n]],
                     lambda xs, zs: D.join << D.lastWrg(part, finish, 0, c)(xs, zs))

    assert "lastWrg 0 1 (" in show(prog(5)) and show(parse(show(prog(5)))) == show(prog(5))
    cu = compile_program(prog(5), CompileOptions(dialect="cuda"))
    src = cu.kernels[0].source
    assert "__cluster_dims__(1, 5, 1)" in src and "mapa.shared::cluster" in src
    assert src.count("barrier.cluster.arrive") == 2 and "atomicAdd" not in src
    assert not [b for b in cu.buffers if b.role == "temporary"]
    c = compile_program(prog(5))
    assert "atomic_inc(&" in c.kernels[0].source and "cluster" not in c.kernels[0].source
    rng = np.random.default_rng(8)
    xs = rng.integers(-8, 9, (9, 5, 4)).astype(np.float32)
    zs = rng.integers(-8, 9, 9).astype(np.float32)
    want = xs.reshape(9, -1).sum(1) + zs
    np.testing.assert_array_equal(np.asarray(OpenCLRunner("cpu").run(c, xs, zs)).ravel(), want)
    np.testing.assert_array_equal(np.asarray(run(prog(5), [xs, zs], {"n": 9})).ravel(), want)
    with pytest.raises(LiftTypeError, match="at most 8 parts"):
        check_program(prog(9))
    with pytest.raises(LiftTypeError, match="cluster flag must be 0"):
        check_program(prog(5, 2))


def test_last_wrg_is_refused_where_it_cannot_run() -> None:
    n, r = D.sizes("n r")
    xt = D.ArrayType(D.ArrayType(D.ArrayType(D.float32, 4), r), n)
    with pytest.raises(LiftTypeError, match="blocks but"):
        check_program(D.fun([xt, D.float32[n + 1]], lambda xs, zs: D.join << _sums_of_parts()(xs, zs)))
    with pytest.raises(LiftTypeError, match="cannot be nested inside mapGlb"):
        check_program(D.fun([D.ArrayType(xt, 2), D.float32[n]], lambda xss, zs: D.mapGlb(
            lambda xs: D.join << _sums_of_parts()(xs, zs)) << xss))


def test_last_wrg_runs_on_the_cpu_device() -> None:
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen.compiler import compile_program

    n, r = D.sizes("n r")
    prog = D.fun([D.ArrayType(D.ArrayType(D.ArrayType(D.float32, 4), r), n), D.float32[n]],
                 lambda xs, zs: D.join << _sums_of_parts()(xs, zs))
    c = compile_program(prog)
    assert len(c.kernels) == 1
    assert [b.zeroed for b in c.buffers if b.role == "temporary"] == [False, True]
    rng = np.random.default_rng(3)
    xs = rng.integers(-8, 9, (37, 11, 4)).astype(np.float32)
    zs = rng.integers(-8, 9, 37).astype(np.float32)
    got = OpenCLRunner("cpu").run(c, xs, zs)
    np.testing.assert_array_equal(np.asarray(got).ravel(), xs.reshape(37, -1).sum(1) + zs)


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("variant", LAST)
def test_last_columns_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    if dt == "complex64":  # one element per step, a warp's run ≥ 8 of them
        p = dict(variant.params)
        variant = Variant.of("column-groups-last", lanes=8, g=p["g"], w=1, r=p["r"])
    check_gemv_t_in_the_interpreter(dt, variant, 11)


def test_one_kernel_with_counters() -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program

    d = derive(Kind("gemv", "float32", "T"), Variant.of("column-groups-last", lanes=8, g=32, w=4, r=8))
    for dialect, inc in (("opencl", "atomic_inc(&"), ("cuda", "atomicAdd((int*)&")):
        c = compile_program(d.final, CompileOptions(dialect=dialect))
        assert len(c.kernels) == 1 and c.kernels[0].ndrange.local_size == (8, 32)
        src = c.kernels[0].source
        assert inc in src and "volatile" in src and src.count("== 7;") == 1
        zeroed = [b for b in c.buffers if b.zeroed]
        assert len(zeroed) == 1 and zeroed[0].role == "temporary"


@pytest.mark.parametrize("variant", LAST)
def test_last_columns_at_any_size(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 17)


def test_last_columns_complex_on_the_cpu_device(session: Session) -> None:
    v = Variant.of("column-groups-last", lanes=8, g=4, w=1, r=2)
    s = _forced(session, [Kind("gemv", "complex128", "T")], v)
    rng = np.random.default_rng(5)
    A = _mat(rng, (77, 45), np.float64) + 1j * _mat(rng, (77, 45), np.float64)
    x = _mat(rng, (77,), np.float64) - 0.5j
    y = _mat(rng, (45,), np.float64) + 2j
    want = (1.5 - 1j) * A.T @ x + 0.25j * y
    for _ in range(3):
        got = s.gemv(A, x, y.copy(), alpha=1.5 - 1j, beta=0.25j, trans=True).result()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128"])
def test_last_columns_compile_for_cuda(dt: str) -> None:
    from liftkit.backends.cuda.nvrtc import compile_cuda, nvrtc_version
    from liftkit.codegen.compiler import CompileOptions, compile_program

    try:
        nvrtc_version()
    except Exception:  # noqa: BLE001 - no NVRTC here
        pytest.skip("needs NVRTC")
    from liftkit.blas.codelets import GEMV_SPLIT_SPACE

    complex_ = dt.startswith("complex")  # CUDA's complex struct through volatile field by field
    for lanes, g, w, r in ((8, 32, 1, 8), (16, 16, 1, 4)) if complex_ else GEMV_SPLIT_SPACE[:4]:
        b = 2048 // (lanes * g) if lanes == 16 else 0  # every slot of a multiprocessor
        c = int(r <= 8)  # the chunks of a block as one thread-block cluster
        d = derive(Kind("gemv", dt, "T"), Variant.of("column-groups-last", lanes=lanes, g=g, w=w,
                                                     r=r, b=b, c=c))
        for k in compile_program(d.final, CompileOptions(dialect="cuda")).kernels:
            assert (f"__launch_bounds__({lanes * g}, {b})" in k.source) == (b > 0)
            assert (f"__cluster_dims__(1, {r}, 1)" in k.source) == (c > 0)
            compile_cuda(k.source, "compute_90", list(k.build_options or []))


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["gpu_session", "cuda_session"])
def test_last_columns_on_the_gpu(backend: str, request: pytest.FixtureRequest) -> None:
    """Thousands of work-groups meeting through the counters on a real GPU (NVIDIA OpenCL and
    CUDA), every call right (the counters zero again after each), at odd shapes and 4096², with
    a kernel built for 8 resident groups of 256 among them, and one whose 8 chunks of a block
    run as a thread-block cluster (CUDA; NVIDIA OpenCL runs its counters)."""
    session = request.getfixturevalue(backend)
    rng = np.random.default_rng(23)
    for v in (Variant.of("column-groups-last", lanes=8, g=32, w=4, r=8),
              Variant.of("column-groups-last", lanes=4, g=16, w=8, r=16),
              Variant.of("column-groups-last", lanes=16, g=16, w=4, r=16, b=8),
              Variant.of("column-groups-last", lanes=16, g=16, w=4, r=8, c=1)):
        check_gemv_t_on_the_gpu(session, v, rng, backend, calls=4)


def test_last_columns_with_beta_zero_never_read_y(session: Session) -> None:
    """β = 0: y's old values (NaN here) are not read, as BLAS asks; α alone scales."""
    v = Variant.of("column-groups-last", lanes=4, g=4, w=2, r=8)
    s = _forced(session, [Kind("gemv", "float32", "T")], v)
    rng = np.random.default_rng(9)
    A = _mat(rng, (300, 70), np.float32)
    x = _mat(rng, (300,), np.float32)
    for alpha in (1.0, -2.0):
        y = np.full(70, np.nan, np.float32)
        got = s.gemv(A, x, y, alpha=alpha, trans=True).result()
        np.testing.assert_allclose(got, alpha * A.T.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


def test_last_columns_counters_are_zero_after_every_call(session: Session) -> None:
    """Calls on one plan with a new x each (a stale counter would let a work-group finish a
    block before its other parts wrote this call's partials: last call's sums, wrong here)."""
    v = Variant.of("column-groups-last", lanes=2, g=4, w=4, r=16)
    s = _forced(session, [Kind("gemv", "float64", "T")], v)
    rng = np.random.default_rng(4)
    A = _mat(rng, (256, 40), np.float64)
    for _ in range(5):
        x, y = _mat(rng, (256,), np.float64), _mat(rng, (40,), np.float64)
        got = s.gemv(A, x, y.copy(), alpha=2.0, beta=0.5, trans=True).result()
        np.testing.assert_allclose(got, 2.0 * A.T @ x + 0.5 * y, rtol=1e-12, atol=1e-12)
