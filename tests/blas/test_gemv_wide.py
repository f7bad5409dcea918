"""GEMV T's tree form with work-groups beyond the code generator's 256 work-items (k = 1:
`wrgItems lanes·g`, CUDA `__launch_bounds__(lanes·g, 1)`), with each step's rows read a step
ahead (a = 1: a software-pipelined loop) and with a tree of fan-in f over the row groups: sound in the interpreter (integer inputs, exact sums),
run for real on the CPU device at random shapes against NumPy, the generated code's shape (the
group's size, the bound, the next step's loads before this step's sums), NVRTC compiles, and
the GPU test (NVIDIA OpenCL and CUDA). Also the pattern's refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.codegen.compiler import CompileOptions, compile_program

from .test_gemv_split import check_gemv_t_at_random_shapes
from .test_gemv_tree import check_gemv_t_in_the_interpreter, check_gemv_t_on_the_gpu

WIDE = [Variant.of("column-groups-tree", lanes=4, g=128, w=2, u=2, k=1),  # 512 work-items
        Variant.of("column-groups-tree", lanes=2, g=8, w=4, u=4, a=1),  # rows a step ahead
        Variant.of("column-groups-tree", lanes=8, g=4, w=1, u=2, a=1),
        Variant.of("column-groups-tree", lanes=2, g=256, w=4, u=2, k=1, a=1),
        Variant.of("column-groups-tree", lanes=2, g=16, w=4, u=2, a=1, f=4)]  # tree fan-in 4


def _source(dt: str, variant: Variant, dialect: str = "cuda") -> Any:
    c = compile_program(derive(Kind("gemv", dt, "T"), variant).final, CompileOptions(dialect=dialect))
    assert len(c.kernels) == 1
    return c.kernels[0]


# the interpreter's 64×64 operands: g·u ≤ 64 rows (2·g·u where a = 1), lanes·w ≤ 64 columns
SMALL = [Variant.of("column-groups-tree", lanes=8, g=64, w=4, k=1, f=8),
         Variant.of("column-groups-tree", lanes=32, g=16, w=2, u=2, k=1, a=1)] + WIDE[1:3] \
    + [WIDE[4]]


@pytest.mark.parametrize("dt,variant", [(("float32", "float64", "complex64")[i % 3], v)
                                        for i, v in enumerate(SMALL)])  # a dtype each (fast)
def test_wide_and_ahead_columns_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    if dt == "complex64":  # one element per step, a warp's run ≥ 8 of them
        p = dict(variant.params)
        lanes = 8 if not p.get("k") or 8 * p["g"] > 256 else 32  # k = 1: above 256 still
        variant = Variant.of("column-groups-tree", **dict(p, lanes=lanes, w=1))
    check_gemv_t_in_the_interpreter(dt, variant, 26)


@pytest.mark.parametrize("variant", WIDE)
def test_wide_and_ahead_columns_at_any_size(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 26)


def test_a_wide_group_keeps_its_work_items() -> None:
    """k = 1: the 8×64 work-items in one work-group (the code generator alone halves it to
    8×32, a loop over two row groups each) and the CUDA kernel built for 512 (≤ 128 registers
    a work-item); OpenCL C has no bound. k = 0 leaves the earlier kernel as it was."""
    wide = _source("float32", Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=8, k=1))
    assert wide.ndrange.local_size == (8, 64)
    assert "__launch_bounds__(512, 1)" in wide.source
    capped = _source("float32", Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=8))
    assert capped.ndrange.local_size == (8, 32) and "__launch_bounds__" not in capped.source
    ocl = _source("float32", Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=8, k=1),
                  "opencl")
    assert ocl.ndrange.local_size == (8, 64) and "launch_bounds" not in ocl.source


def test_the_next_rows_load_before_this_steps_sums() -> None:
    """a = 1: in the loop, the copies of the step's registers, then the next step's u row loads
    (and x's), then the u sums; the first step's loads before the loop, the last step's sums
    after it (one step fewer in the loop)."""
    src = _source("float32", Variant.of("column-groups-tree", lanes=8, g=32, w=4, u=4, a=1)).source
    loop = src.index("for (int i = 0; i < M/128 - 1; i += 1)")
    assert src.index("tmp_2_3 = id_float4(((const float4*)A)") < loop  # step 0, before the loop
    body = src[loop:src.index("float4 acc = ")]
    loads = [body.index(f"tmp_2_{k} = id_float4(((const float4*)A)") for k in range(4)]
    sums = [body.index(f"tmp_4_{k} = add4(tmp_4_{k}") for k in range(4)]
    assert max(loads) < min(sums)
    assert "tmp_7[3] = add4(tmp_4_3" in src[src.index("float4 tmp_7[4];"):]  # the last step


def test_a_tree_of_fan_in_eight_takes_two_steps() -> None:
    """f = 8 over 64 row groups: two folds of 8 (one peeled, one in the loop), each work-item of
    the first summing 8 row groups' partials, where pairs take 6."""
    src = _source("float32", Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=4, k=1,
                                        f=8)).source
    assert "iter < 1;" in src and "i_3 < 8;" in src
    assert "iter < 5;" in _source("float32", Variant.of("column-groups-tree", lanes=8, g=64, w=4,
                                                          u=4, k=1)).source


def test_wrg_items_refuses_what_no_group_holds() -> None:
    from liftkit import dsl as D
    from liftkit.ir.typecheck import check_program
    from liftkit.types import LiftTypeError, float32

    for n in (0, 2048):
        prog = D.fun([float32[64]], lambda xs: D.join << D.wrgItems(
            n, D.mapWrg(0)(D.mapLcl(0)(D.id_of(float32)))) << D.split(32) << xs)
        with pytest.raises(LiftTypeError, match="from 1 to 1024"):
            check_program(prog)
    prog = D.fun([float32[64]], lambda xs: D.wrgItems(512, D.mapGlb(0)(D.id_of(float32))) << xs)
    with pytest.raises(LiftTypeError, match="must contain a mapWrg"):
        check_program(prog)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_wide_and_ahead_columns_compile_for_cuda(dt: str, compile_cuda: Any) -> None:
    from liftkit.blas.codelets import GEMV_TREE_SPACE

    for point in GEMV_TREE_SPACE:
        params = dict(zip(("lanes", "g", "w", "u", "k", "a"), point))
        if params.get("k") or params.get("a"):
            k = _source(dt, Variant.of("column-groups-tree", **params))
            compile_cuda(k.source, "compute_90", list(k.build_options or []))


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["gpu_session", "cuda_session"])
def test_wide_and_ahead_columns_on_the_gpu(backend: str, request: pytest.FixtureRequest) -> None:
    """512-work-item groups and rows read a step ahead on a real GPU (NVIDIA OpenCL and CUDA)
    at odd shapes and 4096², every call right against NumPy. (OpenCL has no register bound:
    forms that fit 512 work-items' registers unbounded.)"""
    session = request.getfixturevalue(backend)
    rng = np.random.default_rng(26)
    for v in (Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=8, k=1),
              Variant.of("column-groups-tree", lanes=8, g=32, w=4, u=8, a=1),
              Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=2, k=1, a=1)):
        check_gemv_t_on_the_gpu(session, v, rng, backend)


def test_the_shipped_h100_profile_runs_gemv_t_4096_in_512_work_item_groups() -> None:
    """The H100 profile's float32 and float64 GEMV T at 4096² (results/issue15/gemv26 run 2:
    8 lanes × 64 row groups, one group of 512 work-items, a tree of fan-in 8: float32 u = 4
    0.985x cuBLAS by kernel where the 256-work-item u = 16 tree ran 0.980x; float64 u = 2
    1.025x / 1.020x per call, where the 256-work-item tree ran 1.007x / 1.003x in run 1),
    built for 512 work-items; y's block read into local memory beside the rows (p = 1,
    results/issue15/gemv26b run 1)."""
    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import SHIPPED, Profile

    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")
    for dt, u in (("float32", 4), ("float64", 2)):
        got = prof.choose(Kind("gemv", dt, "T"), {"M": 4096, "N": 4096}, multiples)
        assert got == Variant.of("column-groups-tree", lanes=8, g=64, w=4, u=u, k=1, f=8, p=1,
                                 h=1)  # A read evict-first (results/issue15/gemv26c run 1)
        k = _source(dt, got)
        assert k.ndrange.local_size == (8, 64) and "__launch_bounds__(512, 1)" in k.source
