"""The 2-D copies of the padded and split GEMM plans in 16-byte vectors (the `vec2d` codelet:
vectorize-map on each result row's map, `codelets.copy_form` choosing it on GPUs where the
result rows are whole vectors): each copy against NumPy at random shapes on the CPU device
(margins written, sources of any pitch), the choice rule, and split / padded GEMMs (complex64's
copied as float32) whose copies are the vector forms against NumPy at random shapes."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import (COPY_ROWS, Kind, Variant, copy_form, default_variant,
                                   multiples)

gm = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
REALS = ("float32", "float64")


def _put(q: Any, x: np.ndarray) -> Any:
    buf = q.alloc(x.nbytes)
    q.upload(buf, x)
    return buf


def _width(dt: str) -> int:
    return 16 // np.dtype(dt).itemsize


def _want(op: str, x: np.ndarray, at: dict[str, int]) -> np.ndarray:
    """NumPy's answer for a copy program at `at` (programs.pad2d, window2d, crop2d)."""
    if op == "pad2d":
        y = np.zeros((at["P"], at["Q"]), x.dtype)
        y[:at["M"], :at["N"]] = x
    elif op == "window2d":
        y = np.zeros((at["P"], at["Q"]), x.dtype)
        y[:at["M"]] = x[:, :at["Q"]]
    else:  # crop2d
        y = x[:at["M"], :at["N"]].copy()
    return y


def _mat(g: np.random.Generator, shape: tuple[int, int], dt: str) -> np.ndarray:
    x = g.standard_normal(shape)
    return (x + 1j * g.standard_normal(shape) if dt.startswith("complex") else x).astype(dt)


def _random_sizes(op: str, g: np.random.Generator, w: int) -> tuple[tuple[int, int], dict]:
    """(source shape, sizes) of a random copy whose result rows are whole vectors of w."""
    m, n = (int(v) for v in g.integers(1, 40, 2))
    if op == "pad2d":
        return (m, n), {"M": m, "N": n, "P": m + int(g.integers(0, 5)),
                        "Q": -(-n // w) * w + w * int(g.integers(0, 3))}
    if op == "window2d":
        q = w * int(g.integers(1, 10))
        return (m, max(n, q)), {"M": m, "N": max(n, q), "P": m + int(g.integers(0, 5)), "Q": q}
    nn = w * int(g.integers(1, 10))  # crop2d
    return (m + int(g.integers(0, 4)), nn + int(g.integers(0, 7))), {"M": m, "N": nn, "P": 0,
                                                                     "Q": 0}


@pytest.mark.parametrize("dt", REALS)
@pytest.mark.parametrize("op", tuple(COPY_ROWS))
def test_vector_copies_at_random_shapes(session, op, dt) -> None:  # type: ignore[no-untyped-def]
    """Each copy's vec2d kernel against NumPy at 12 random shapes (odd source pitches,
    margins, single rows and columns); the result written whole (NaN before)."""
    g = np.random.default_rng(hash((op, dt)) % 2**32)
    q = session.q
    w = _width(dt)
    v = Variant.of("vec2d", w=w)
    assert multiples(Kind(op, dt), v) == {COPY_ROWS[op]: w}
    for _ in range(12):
        shape, at = _random_sizes(op, g, w)
        if op == "crop2d":
            at["P"], at["Q"] = shape
        x = g.standard_normal(shape).astype(dt)
        want = _want(op, x, at)
        out = _put(q, np.full(want.shape, np.nan, dt))
        session.kernel(Kind(op, dt), at, v).launch(q, {0: _put(q, x)}, {}, out, at)
        y = np.empty(want.shape, dt)
        q.read(y, out)
        np.testing.assert_array_equal(y, want, err_msg=f"{op} {dt} {at}")


def test_the_vector_form_is_chosen_on_gpus_where_rows_are_whole_vectors() -> None:
    """copy_form: 16-byte vectors where the result rows divide (pad2d Q, window2d Q,
    crop2d N), nothing for complex types, other operations (tailcols, cembed) or ragged rows; a
    GPU's default for the copies, never the CPU's."""
    at = {"M": 1023, "N": 999, "P": 1024, "Q": 1000}
    assert copy_form(Kind("pad2d", "float32"), at) == Variant.of("vec2d", w=4)
    assert copy_form(Kind("pad2d", "float64"), at) == Variant.of("vec2d", w=2)
    assert copy_form(Kind("pad2d", "float32"), {**at, "Q": 1002}) is None
    assert copy_form(Kind("pad2d", "float64"), {**at, "Q": 1002}) == Variant.of("vec2d", w=2)
    assert copy_form(Kind("crop2d", "float32"), {"M": 5, "N": 1025, "P": 8, "Q": 1028}) is None
    assert copy_form(Kind("tailcols", "float32"), {"M": 9, "N": 9, "P": 12, "R": 1}) is None
    assert copy_form(Kind("cembed", "complex64", "N"), {"K": 3, "N": 8}) is None
    assert copy_form(Kind("pad2d", "complex64"), at) is None
    assert copy_form(Kind("hcat", "float32"), {"M": 4, "Q": 4, "R": 4, "P": 4}) is None
    assert default_variant(Kind("pad2d", "float32"), "gpu", at, "cuda") == Variant.of("vec2d", w=4)
    assert default_variant(Kind("pad2d", "float32"), "gpu", {**at, "Q": 1001}, "cuda") \
        == Variant.of("glb")
    assert default_variant(Kind("pad2d", "float32"), "cpu", at) == Variant.of("glb")


def _vector_copies(session: Any, monkeypatch: Any) -> None:
    """The session chooses the copies as a GPU does (`copy_form` where it fits)."""
    choose = session.choose
    monkeypatch.setattr(session, "choose", lambda kind, sizes: copy_form(kind, sizes) or
                        choose(kind, sizes))
    session.forget_choices()


@pytest.mark.parametrize("dt", REALS)
def test_split_plans_on_vector_copies_at_random_shapes(session, monkeypatch, dt) -> None:  # type: ignore[no-untyped-def]
    """Forced split plans (pad2d of X, window2d of Y in vectors) against NumPy at random shapes
    whose N is one past a multiple of 8, α/β into a given C."""
    split = importlib.import_module("liftkit.blas.split")
    _vector_copies(session, monkeypatch)
    g = np.random.default_rng(25 if dt == "float32" else 26)
    seen = set()
    try:
        for case in range(6):
            m, k = (int(v) for v in g.integers(1, 70, 2))
            n = 8 * int(g.integers(1, 8)) + 1
            v = Variant.of("split", w=8, **({"gemv": 1} if case % 2 else {}))
            plan = gm.plan_gemm(session, (m, k), (k, n), dt, variant=v)
            assert isinstance(plan, split.SplitPlan)
            seen |= {b.variant.codelet for b in (plan.edge.window,)
                     + ((plan.edge.pad_x,) if plan.edge.pad_x is not None else ())}
            A = g.standard_normal((m, k)).astype(dt)
            B = g.standard_normal((k, n)).astype(dt)
            C = g.standard_normal((m, n)).astype(dt)
            want = 2.0 * (A.astype(np.float64) @ B) - 0.5 * C
            ws = plan.workspace()
            plan.run(plan.pack("A", A, ws), plan.pack("B", B, ws), C, alpha=2.0, beta=-0.5,
                     workspace=ws).result()
            np.testing.assert_allclose(C, want, rtol=1e-4 if dt == "float32" else 1e-10,
                                       atol=1e-3 * k if dt == "float32" else 1e-10 * k)
    finally:
        monkeypatch.undo()
        session.forget_choices()
    assert seen == {"vec2d"}


@pytest.mark.parametrize("dt", (*REALS, "complex64"))
def test_padded_gemms_on_vector_copies_at_random_shapes(session, monkeypatch, dt) -> None:  # type: ignore[no-untyped-def]
    """Padded plans whose operands are placed by pad2d (CUDA's path where a pitch is off 16
    bytes, forced here) in vectors, the product's block out by crop2d, against NumPy; complex64
    copied as the float32 matrix of twice the columns (`gemm._copy_sizes`)."""
    monkeypatch.setattr(gm, "copy_kernels", lambda s, have, need, item: True)
    monkeypatch.setattr(gm, "edge_forms", lambda v: [])  # padded, not guarded
    tiles = (Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1) if dt == "complex64"
             else Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4))
    choose = session.choose
    monkeypatch.setattr(session, "choose", lambda kind, sizes: tiles if kind.op == "mm" else (
        copy_form(kind, sizes) or choose(kind, sizes)))
    session.forget_choices()
    g = np.random.default_rng(7 if dt == "float32" else 8)
    seen = set()
    try:
        for _ in range(4):
            m, n, k = (int(v) for v in g.integers(1, 80, 3))
            A, B = _mat(g, (m, k), dt), _mat(g, (k, n), dt)
            plan = gm.plan_gemm(session, (m, k), (k, n), dt)
            seen |= {st.built.variant.codelet for r in "AB" for st in plan._pack_steps(r)
                     if st.built is not None}
            ws = plan.workspace()
            got = plan.run(plan.pack("A", A, ws), plan.pack("B", B, ws), workspace=ws).result()
            low = dt in ("float32", "complex64")
            np.testing.assert_allclose(got, A.astype(np.complex128) @ B,
                                       rtol=1e-4 if low else 1e-10,
                                       atol=1e-3 * k if low else 1e-10 * k)
    finally:
        monkeypatch.undo()
        session.forget_choices()
    assert "vec2d" in seen
