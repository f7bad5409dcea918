"""GEMV T in two passes (rule gemv-lane-columns-split, codelet column-groups-split): sound in the
interpreter (integer inputs: exact sums, so any regrouping gives the same bits), two kernels
with an [r][N] intermediate, run for real on the CPU device at random shapes (padded to its
multiples, both storage orders, α and β) against NumPy, and compiled for CUDA by NVRTC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.rewrite.rules.corpus import run, same_result

from .test_gpu_codelets import _forced
from .test_properties import _mat

SPLIT = [Variant.of("column-groups-split", lanes=4, g=8, w=4, r=2),
         Variant.of("column-groups-split", lanes=2, g=4, w=8, r=4),  # float8 / double8 steps
         Variant.of("column-groups-split", lanes=8, g=4, w=1, r=8),
         Variant.of("column-groups-split", lanes=4, g=4, w=2, r=16)]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("variant", SPLIT)
def test_split_columns_are_sound_in_the_interpreter(dt: str, variant: Variant) -> None:
    kind = Kind("gemv", dt, "T")
    d = derive(kind, variant)
    assert d.replay()
    rng = np.random.default_rng(7)
    m, n = 128, 64
    xs = [rng.integers(-4, 5, (m, n)).astype(dt), rng.integers(-4, 5, m).astype(dt),
          rng.integers(-4, 5, n).astype(dt), np.array(3.0, dt), np.array(-2.0, dt)]
    assert same_result(run(d.final, xs, {"M": m, "N": n}), run(kind.program(), xs, {"M": m, "N": n}))


def test_two_kernels_through_an_intermediate() -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program

    d = derive(Kind("gemv", "float32", "T"), SPLIT[0])
    c = compile_program(d.final, CompileOptions(dialect="cuda"))
    assert len(c.kernels) == 2
    assert [b.role for b in c.buffers].count("intermediate") == 1
    first, second = c.kernels
    assert first.ndrange.local_size == (4, 8) and second.ndrange.local_size is None


@pytest.mark.parametrize("variant", SPLIT)
def test_split_columns_at_any_size(session: Session, variant: Variant) -> None:
    check_gemv_t_at_random_shapes(session, variant, 11)


def check_gemv_t_at_random_shapes(session: Session, variant: Variant, seed: int) -> None:
    """GEMV T forced to `variant` (float32 and float64) against NumPy at 6 random shapes, A
    row-major read transposed and column-major read as stored, α/β, through the general path
    and then the call plan."""
    s = _forced(session, [Kind("gemv", dt, "T") for dt in ("float32", "float64")], variant)
    rng = np.random.default_rng(seed)
    for case in range(6):
        dt = (np.float32, np.float64)[case % 2]
        order = "CF"[case // 2 % 2]
        flag = order == "C"  # a row-major A read transposed: this kernel
        A = _mat(rng, (int(rng.integers(1, 200)), int(rng.integers(1, 120))), dt, order)
        x = _mat(rng, (A.shape[0] if flag else A.shape[1],), dt)
        y = _mat(rng, (A.shape[1] if flag else A.shape[0],), dt)
        want = 1.5 * (A.T if flag else A).astype(np.float64) @ x - 0.5 * y
        for _ in range(2):  # the general path, then the call plan (the intermediate reused)
            got = s.gemv(A, x, y.copy(), alpha=1.5, beta=-0.5, trans=flag).result()
            tol = 1e-4 if dt == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10,
                                       err_msg=str((case, A.shape)))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_split_columns_compile_for_cuda(dt: str, compile_cuda: Any) -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program
    for v in (SPLIT[0], Variant.of("column-groups-split", lanes=4, g=64, w=8, r=2)):
        d = derive(Kind("gemv", dt, "T"), v)
        for k in compile_program(d.final, CompileOptions(dialect="cuda")).kernels:
            compile_cuda(k.source, "compute_90", list(k.build_options or []))
