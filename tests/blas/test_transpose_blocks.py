"""The blocked transpose (rule transpose-blocks, codelet blocks-t): every dtype, random shapes
padded to the blocks, both assignments of the blocks to the dimensions; the CUDA kernel compiles
with NVRTC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.profile import Entry

from .test_properties import _mat


@pytest.mark.parametrize("variant", [Variant.of("blocks-t", r=4, swap=0),
                                     Variant.of("blocks-t", r=8, swap=1)])
def test_blocked_transpose_at_any_size(session: Session, variant: Variant) -> None:
    prof = Profile(session.device.fingerprint, session.device.label, "cpu")
    prof.add(Entry(Kind("transpose", dt), cls, {"N": 1}, variant, 1.0, 1e9)
             for dt in ("float32", "float64", "complex64", "complex128")
             for cls in ("small", "medium", "large"))
    import liftkit.blas.profile as pm

    s = Session(session.device, profile=prof)
    s.profile.choose = lambda kind, sizes, mult: next(  # type: ignore[method-assign]
        (e.variant for e in prof.ranked(kind, pm.size_class(kind.op, sizes))), None)
    rng = np.random.default_rng(9)
    for case in range(24):
        dt = (np.float32, np.float64, np.complex64, np.complex128)[case % 4]
        order = "CF"[case // 4 % 2]
        A = _mat(rng, (int(rng.integers(1, 90)), int(rng.integers(1, 90))), dt, order)
        out = np.full(A.shape[::-1], np.nan, dtype=dt, order=order)
        got = s.transpose(A, out).result()
        assert got is out and np.array_equal(out, A.T), (case, A.shape, order)


def test_blocked_transpose_compiles_for_cuda(compile_cuda: Any) -> None:
    from liftkit.blas.codelets import derive
    from liftkit.codegen.compiler import compile_program
    from liftkit.codegen.kernel import CompileOptions
    d = derive(Kind("transpose", "float64"), Variant.of("blocks-t", r=8, swap=0))
    assert d.replay()  # the recorded derivation replays
    for k in compile_program(d.final, CompileOptions(dialect="cuda")).kernels:
        compile_cuda(k.source, "sm_90", k.build_options, name=f"{k.name}.cu")
