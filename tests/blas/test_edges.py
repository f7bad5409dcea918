"""GEMMs whose sizes the tiles do not divide run the tiled derivation's guarded form
(codelets.edge_forms, rewrite.rules.mm_edges) on the caller's operands, with no padded copies:
on the CPU device (OpenCL), every dtype and layout, against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant, edge_form, edge_forms
from liftkit.blas.gemm import mm_kernel, plan_gemm

TILES = {"float32": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
         "float64": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=4),
         "complex64": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1),
         "complex128": Variant.of("tiles", tm=32, tn=32, tk=16, rm=4, rn=1, w=1)}


def _mat(g: np.random.Generator, shape: tuple[int, int], dt: str) -> np.ndarray:
    x = g.standard_normal(shape)
    if dt.startswith("complex"):
        x = x + 1j * g.standard_normal(shape)
    return x.astype(dt)


@pytest.mark.parametrize("dt", list(TILES))
@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False)],
                         ids=["NN", "NT", "TN"])
def test_odd_sizes_run_the_guarded_tiles_without_copies(session, dt, trans) -> None:  # type: ignore[no-untyped-def]
    """M ragged everywhere, N and K multiples of the vector width only: the plan's kernel is
    the guarded form, nothing is copied, the kernel writes C itself: the product."""
    g = np.random.default_rng(7)
    w = 4 if dt == "float32" else 2 if dt == "float64" else 1
    m, n, k = 37, 12 * w - (0 if w > 1 else 5), 9 * w + (0 if w > 1 else 2)
    ta, tb = trans
    a = _mat(g, (k, m) if ta else (m, k), dt)
    b = _mat(g, (n, k) if tb else (k, n), dt)
    plan = plan_gemm(session, a.shape, b.shape, dt, trans_a=ta, trans_b=tb, variant=TILES[dt])
    assert plan.built.variant.codelet == "edge-tiles"
    assert plan.padded == plan.sizes and plan._direct(1.0, 0.0)  # the kernel writes C itself
    assert not plan._pack_steps("A") and not plan._pack_steps("B")  # no copies
    ws = plan.workspace()
    c = np.zeros((m, n), dt)
    plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c).result()
    want = (a.T if ta else a).astype(np.complex128 if dt.startswith("complex") else np.float64) @ (
        b.T if tb else b)
    tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol * k)


def test_alpha_beta_and_a_column_major_c_through_the_guarded_kernel(session) -> None:  # type: ignore[no-untyped-def]
    """A column-major C (the kernel computes Cᵀ = Bᵀ·Aᵀ) with α, β: the guarded kernel's product,
    then the epilogue."""
    g = np.random.default_rng(3)
    a, b = _mat(g, (45, 20), "float64"), _mat(g, (20, 14), "float64")
    c = np.asfortranarray(_mat(g, (45, 14), "float64"))
    want = 2.0 * a @ b + 0.5 * c
    plan = plan_gemm(session, a.shape, b.shape, "float64", order_c="F", variant=TILES["float64"])
    assert plan.built.variant.codelet == "edge-tiles" and plan.padded == plan.sizes
    ws = plan.workspace()
    plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c, alpha=2.0, beta=0.5).result()
    np.testing.assert_allclose(c, want, rtol=1e-10, atol=1e-10)


def test_the_choice_between_guarded_forms_and_padding(session) -> None:  # type: ignore[no-untyped-def]
    """float4 tiles: at N = 12 the guarded form padded by whole vectors runs; at N = 13 the
    one padded element by element (it lacks the vector copies: below EDGE_LOSSY_VOLUME only),
    above that volume the tiles run padded (the fallback); sizes the tiles divide keep the tiled
    kernel itself; variants without a guarded form are kept as they are."""
    import importlib

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
    kind = Kind("mm", "float32", "NN")
    v = TILES["float32"]
    vec, elems = edge_forms(v)
    assert vec == edge_form(v) and elems == Variant(vec.codelet, tuple(sorted(
        vec.params + (("elems", 1),))))
    assert mm_kernel(session, kind, {"M": 37, "N": 12, "K": 20}, v).variant == vec
    assert mm_kernel(session, kind, {"M": 37, "N": 13, "K": 20}, v).variant == elems
    assert mm_kernel(session, kind, {"M": 64, "N": 32, "K": 32}, v).variant == v
    big = {"M": 4097, "N": 4095, "K": 4095}
    assert g.padded_sizes(big, g.multiples(kind, v)) != big
    assert math.prod(big.values()) >= g.EDGE_LOSSY_VOLUME  # (not built: checked by the rule)
    assert g.edge_lossy(v, elems) and not g.edge_lossy(v, vec)
    glb = Variant.of("glb")
    assert edge_form(glb) is None and edge_forms(glb) == []
    assert mm_kernel(session, kind, {"M": 37, "N": 13, "K": 20}, glb).variant == glb


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_tiles_of_vectors_padded_element_by_element(session, dt) -> None:  # type: ignore[no-untyped-def]
    """N and K not multiples of the vector width: the guarded form padded and copied element
    by element (the tiles still read as float4/double2 from local memory), no copies."""
    g = np.random.default_rng(5)
    m, n, k = 45, 13, 23
    a, b = _mat(g, (m, k), dt), _mat(g, (k, n), dt)
    plan = plan_gemm(session, a.shape, b.shape, dt, variant=TILES[dt])
    assert plan.built.variant.kw.get("elems") == 1 and plan.padded == plan.sizes
    c = np.zeros((m, n), dt)
    ws = plan.workspace()
    plan.run(plan.pack("A", a, ws), plan.pack("B", b, ws), c).result()
    tol = 1e-4 if dt == "float32" else 1e-10
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=tol, atol=tol * k)


def test_a_guarded_form_lacking_the_variants_speed_ups_runs_below_a_volume_only() -> None:
    """DMMA tiles staged over whole lines (lines=1): the guarded form with lines where 2
    divides the chunks' dimensions (K and N), else the one without lines, which runs only where
    the padded copies would take a large share of the call (volume below EDGE_LOSSY_VOLUME);
    m16n8k8 (ik=8, ahead) has a guarded form with lines, which loses nothing; sizes the tiles
    divide keep the variant."""
    import importlib
    from types import SimpleNamespace

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)

    class Stub:
        def choose(self, kind, sizes):  # type: ignore[no-untyped-def]
            raise AssertionError("the variant is given")

        def kernel(self, kind, sizes, variant):  # type: ignore[no-untyped-def]
            return SimpleNamespace(variant=variant)

    kind = Kind("mm", "float64", "NN")
    tiles = dict(tm=64, tn=64, tk=8, warps=4, staged=4)
    lines, plain = Variant.of("mma", lines=1, **tiles), Variant.of("mma", **tiles)
    e_lines, e_plain = Variant.of("edge-mma", lines=1, **tiles), Variant.of("edge-mma", **tiles)
    assert edge_forms(lines) == [e_lines, e_plain] and edge_forms(plain) == [e_plain]
    tiles16 = {**tiles, "tk": 16}  # (m16n8k8 takes 16-deep tiles)
    k8, k8_lines = (Variant.of("mma", lines=1, ik=8, ahead=2, **tiles16),
                    Variant.of("edge-mma", lines=1, ik=8, ahead=2, **tiles16))
    assert edge_forms(k8) == [k8_lines, Variant.of("edge-mma", **tiles16)]

    def pick(v: Variant, m: int, n: int, k: int) -> Variant:
        return g.mm_kernel(Stub(), kind, {"M": m, "N": n, "K": k}, v).variant

    assert pick(lines, 1000, 1000, 1000) == e_lines  # 2 divides K and N
    assert pick(lines, 1023, 1025, 999) == e_plain  # below the volume: without lines
    assert pick(lines, 4097, 4094, 4094) == e_lines  # nothing lost
    assert pick(lines, 4097, 4095, 4095) == lines  # above it: padded, with lines
    assert pick(k8, 4097, 4094, 4094) == k8_lines and pick(k8, 1000, 1000, 1000) == k8_lines
    assert pick(k8, 4097, 4095, 4095) == k8  # K, N odd: padded, with m16n8k8
    assert pick(plain, 4097, 4095, 4095) == e_plain
    assert pick(lines, 1024, 1024, 1024) == lines
    assert 1023 * 1025 * 999 < g.EDGE_LOSSY_VOLUME <= 4097 * 4095 * 4095


@pytest.mark.gpu
def test_guarded_kernels_on_a_cuda_gpu(cuda_session) -> None:  # type: ignore[no-untyped-def]
    """The CUDA guarded forms (edge-tiles-async for float32 and the real plan of complex64,
    edge-mma for float64 and complex128) at odd sizes, CuPy operands, against NumPy; repeated
    calls (call plans) with new operands. The sizes are within the untuned defaults' padding
    limit (codelets.DEFAULT_MAX_PADDING), so the tiled derivations are chosen."""
    cp = pytest.importorskip("cupy")
    g = np.random.default_rng(11)
    for dt, (m, n, k) in (("float32", (250, 124, 60)), ("float64", (250, 123, 61)),
                          ("complex64", (250, 124, 60)), ("complex128", (250, 123, 61))):
        plan = plan_gemm(cuda_session, (m, k), (k, n), dt)
        assert plan.built.variant.codelet.startswith("edge-"), (dt, plan.built.variant)
        for seed in range(2):
            a, b = _mat(g, (m, k), dt), _mat(g, (k, n), dt)
            c = cp.full((m, n), np.nan, dt)
            cuda_session.gemm(cp.asarray(a), cp.asarray(b), c).result()
            wide = np.complex128 if dt.startswith("complex") else np.float64
            tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
            np.testing.assert_allclose(cp.asnumpy(c), a.astype(wide) @ b, rtol=tol, atol=tol * k)


def test_a_guarded_form_copying_elements_runs_below_a_smaller_volume() -> None:
    """The shipped H100 SGEMM variant splits its tail: its guarded forms keep the split (the
    split's K tiles zero-filled past K), and at N, K off 4 copy element by element, which ran
    slower than the padded kernel at 4.2·10⁹ and above (CGEMM 1023×1025×999's real product on
    the H100: 0.64x against 0.63x padded, 4097×4095²: 0.76x against 0.85x; odd23/run2), so
    without a profile entry they run only below EDGE_COPY_VOLUME; DMMA forms keep the larger
    EDGE_LOSSY_VOLUME."""
    import importlib
    from types import SimpleNamespace

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)

    class Stub:
        def kernel(self, kind, sizes, variant):  # type: ignore[no-untyped-def]
            return SimpleNamespace(variant=variant)

    kind = Kind("mm", "float32", "NN")
    split = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, split=4,
                       slots=396, bound=3)

    def pick(m: int, n: int, k: int) -> Variant:
        return g.mm_kernel(Stub(), kind, {"M": m, "N": n, "K": k}, split).variant

    assert pick(1023, 2050, 1998) == split  # 4.2·10⁹: padded, split
    small = pick(1023, 1025, 999)  # 1.0·10⁹: a guarded form, no copies, split kept
    assert small == Variant.of("edge-tiles-async", elems=1, **{
        k: v for k, v in split.kw.items()})
    assert pick(4096, 4096, 4100) == Variant.of("edge-tiles-async", **split.kw)  # nothing lost
    assert g.EDGE_COPY_VOLUME <= 1023 * 2050 * 1998 < g.EDGE_LOSSY_VOLUME


def test_profile_entries_of_guarded_forms_choose_them_where_the_tiles_do_not_divide() -> None:
    """A profile's `edge-*` entries (measured at odd sizes) are never the choice where the
    tiles divide (Profile.choose skips them); where they do not, the entry that fits is used:
    vector forms before element forms, then the one measured nearest the sizes, then the
    fastest (gemm.profiled_edge)."""
    import importlib
    from types import SimpleNamespace

    from liftkit.blas.codelets import multiples
    from liftkit.blas.profile import Entry, Profile

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
    kind = Kind("mm", "float32", "NN")
    tiles = dict(tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)
    plain = Variant.of("tiles-async", **tiles)
    near_s = Variant.of("edge-tiles-async", **tiles, split=2, slots=924)
    near_c = Variant.of("edge-tiles-async", **{**tiles, "stages": 4})
    elems = Variant.of("edge-tiles-async", **{**tiles, "tm": 128}, elems=1)
    p = Profile("dev", "dev", "gpu")

    def entry(v: Variant, m: int, n: int, k: int, rate: float) -> Entry:
        return Entry(kind, "large", {"M": m, "N": n, "K": k}, v, 1.0, rate)

    p.add([entry(plain, 1024, 1024, 1024, 30000), entry(near_s, 1000, 1000, 1000, 31000),
           entry(near_c, 1000, 2000, 2000, 37000), entry(elems, 1999, 1999, 1999, 99000)])

    class Stub:
        profile = p

        def choose(self, kind, sizes):  # type: ignore[no-untyped-def]
            return p.choose(kind, sizes, multiples)

        def kernel(self, kind, sizes, variant=None):  # type: ignore[no-untyped-def]
            return SimpleNamespace(variant=variant)

    def pick(m: int, n: int, k: int) -> Variant:
        return g.mm_kernel(Stub(), kind, {"M": m, "N": n, "K": k}).variant

    assert pick(1024, 1024, 1024) == plain  # the tiles divide: the ranked choice
    assert Stub().choose(kind, {"M": 1024, "N": 1024, "K": 1024}) == plain
    assert pick(1000, 1000, 1000) == near_s and pick(1000, 2000, 2000) == near_c
    assert pick(1100, 1000, 1000) == near_s  # nearest measured shape
    assert pick(1023, 1025, 999) == elems  # (N, K off 4: only the element form fits)
    vec = Variant.of("edge-tiles-async", **{**tiles, "tm": 128})
    p.add([entry(vec, 1023, 1025, 999, 30000)])  # measured there (padded to its float4s)
    assert pick(1023, 1025, 999) == vec and pick(1023, 1025, 1001) == elems
    assert pick(1000, 1000, 1000) == near_s
    assert pick(4000, 4000, 4000).codelet != "edge-tiles-async" or pick(
        4000, 4000, 4000) == Variant.of("edge-tiles-async", **tiles)  # huge: no entries


@pytest.mark.gpu
def test_guarded_dmma_k8_ahead_and_element_copies_on_a_cuda_gpu(cuda_session) -> None:  # type: ignore[no-untyped-def]
    """The guarded forms session 23 added or changed, forced at ragged sizes (every edge, K
    over several tiles), CuPy operands, NaN-poisoned C, against NumPy: DMMA m16n8k8 with
    fragments read ahead over padded views (edge-mma ik=8, ahead 0-2: K, N even for lines),
    the FFMA tiles copied element by element read back as float4 (elems=1, N and K odd), and
    the guarded FFMA tiles with the tail split along K (the whole grid one partial wave here:
    every tile split, the zero-filled K tiles included)."""
    cp = pytest.importorskip("cupy")
    g = np.random.default_rng(23)
    mma = dict(tm=64, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8)
    cases = [("float64", (131, 98, 70), Variant.of("edge-mma", ahead=a, **mma)) for a in (0, 1, 2)]
    cases += [("float64", (67, 130, 200), Variant.of("edge-mma", ahead=2, **{**mma, "tm": 128})),
              ("float32", (131, 67, 133), Variant.of("edge-tiles-async", tm=64, tn=64, tk=16,
                                                      rm=8, rn=8, stages=2, elems=1)),
              ("float32", (70, 129, 99), Variant.of("edge-tiles-async", tm=128, tn=64, tk=32,
                                                     rm=8, rn=8, stages=2, elems=1)),
              ("float32", (131, 67, 133), Variant.of("edge-tiles-async", tm=64, tn=64, tk=16,
                                                      rm=8, rn=8, stages=2, elems=1, split=2,
                                                      slots=924)),
              ("float32", (300, 132, 260), Variant.of("edge-tiles-async", tm=128, tn=64, tk=32,
                                                       rm=8, rn=8, stages=2, split=4, slots=396,
                                                       bound=3))]
    for dt, (m, n, k), v in cases:
        plan = plan_gemm(cuda_session, (m, k), (k, n), dt, variant=v)
        assert plan.built.variant == v and plan.padded == plan.sizes
        a, b = _mat(g, (m, k), dt), _mat(g, (k, n), dt)
        c = cp.full((m, n), np.nan, dt)
        ws = cuda_session.scratch  # the forced plan itself (gemm would take the profile's choice)
        plan.run(plan.pack("A", cp.asarray(a), ws), plan.pack("B", cp.asarray(b), ws), c,
                 workspace=ws).result()
        tol = 1e-4 if dt == "float32" else 1e-10
        np.testing.assert_allclose(cp.asnumpy(c), a.astype(np.float64) @ b, rtol=tol,
                                   atol=tol * k, err_msg=f"{dt} {m}x{n}x{k} {v}")
