"""Complex GEMV on the GPU work-group rules (gemv-lane-rows, gemv-lane-columns,
gemv-lane-columns-split; codelets row-groups, column-groups, column-groups-split), one element
per step (complex numbers have no vectors): op(A) = A, conj(A), Aᵀ, Aᴴ sound in the interpreter
(Gaussian-integer inputs: exact sums), run on the CPU device at random shapes against NumPy, and
compiled for CUDA by NVRTC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Session, Variant
from liftkit.blas.codelets import derive
from liftkit.rewrite.rules.corpus import run, same_result

from .test_gpu_codelets import _forced

ROWS = Variant.of("row-groups", lanes=8, g=4, w=1)
COLUMNS = Variant.of("column-groups", lanes=8, g=4, w=1)
SPLIT = Variant.of("column-groups-split", lanes=8, g=4, w=1, r=4)
CASES = [(ROWS, "N"), (ROWS, "R"), (COLUMNS, "T"), (COLUMNS, "C"), (SPLIT, "T"), (SPLIT, "C")]


def _gauss(rng: np.random.Generator, shape: tuple[int, ...] | int, dt: str) -> np.ndarray:
    return (rng.integers(-4, 5, shape) + 1j * rng.integers(-4, 5, shape)).astype(dt)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("variant,layout", CASES)
def test_complex_groups_are_sound_in_the_interpreter(dt: str, variant: Variant, layout: str) -> None:
    kind = Kind("gemv", dt, layout)
    d = derive(kind, variant)
    rng = np.random.default_rng(13)
    m, n = 64, 64
    trans = layout in "TC"
    xs = [_gauss(rng, (m, n), dt), _gauss(rng, m if trans else n, dt),
          _gauss(rng, n if trans else m, dt), np.array(2 - 1j, dt), np.array(-1 + 0.5j, dt)]
    assert same_result(run(d.final, xs, {"M": m, "N": n}), run(kind.program(), xs, {"M": m, "N": n}))


@pytest.mark.parametrize("variant,layout", CASES[::2] + [(COLUMNS, "C")])
def test_complex_groups_at_any_size(session: Session, variant: Variant, layout: str) -> None:
    s = _forced(session, [Kind("gemv", dt, layout) for dt in ("complex64", "complex128")], variant)
    assert s.choose(Kind("gemv", "complex64", layout), {"M": 7, "N": 9}) == variant
    trans = {"N": False, "R": False, "T": True, "C": "C"}[layout]
    rng = np.random.default_rng(17)
    for case in range(4):
        dt = ("complex64", "complex128")[case % 2]
        A = np.ascontiguousarray(_gauss(rng, (int(rng.integers(1, 120)), int(rng.integers(1, 90))),
                                        dt) * 0.25)
        t = layout in "TC"
        x = _gauss(rng, A.shape[0] if t else A.shape[1], dt)
        y = _gauss(rng, A.shape[1] if t else A.shape[0], dt)
        opA = A.conj().T if layout == "C" else A.T if layout == "T" else A
        want = (1.5 - 0.5j) * opA.astype(np.complex128) @ x + 0.25j * y
        for _ in range(2):  # the general path, then the call plan
            got = s.gemv(A, x, y.copy(), alpha=1.5 - 0.5j, beta=0.25j, trans=trans).result()
            tol = 1e-4 if dt == "complex64" else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10, err_msg=str((case, A.shape)))


@pytest.mark.parametrize("variant,layout", [(ROWS, "N"), (COLUMNS, "C"), (SPLIT, "T")])
def test_complex_groups_compile_for_cuda(variant: Variant, layout: str, compile_cuda: Any) -> None:
    from liftkit.codegen.compiler import CompileOptions, compile_program
    for dt in ("complex64", "complex128"):
        for k in compile_program(derive(Kind("gemv", dt, layout), variant).final,
                                 CompileOptions(dialect="cuda")).kernels:
            compile_cuda(k.source, "compute_90", list(k.build_options or []))
