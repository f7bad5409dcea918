"""Complex GEMMs at sizes off the complex kernels' tiles (results/issue15/oddc25): the guarded
complex tiles `edge-ctiles-async` (blas/mm_cedge.py: any M, N, K, no copies) sound bit for bit
in the interpreter for every layout and compiled by NVRTC; the complex kernels chosen where the
profile measured them at a call's very sizes (`gemm.measured_here`: guarded entries, and via
"padded" ctiles-async / zmma on padded copies), launched so on the stubbed CUDA queue; (gpu
marker) such calls against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas.gemm import measured_here
from liftkit.blas.codelets import CODELETS, EDGE_CODELETS, Kind, Variant, derive, multiples
from liftkit.blas.mm_cedge import edge_ctiles
from liftkit.blas.profile import Entry, Profile
from liftkit.semantics import interpret

from .test_ctiles_async import _operands

CT = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2)
EDGE = edge_ctiles(CT)
ZV = Variant.of("zmma", tm=128, tn=32, tk=8, warps=4, staged=4, ahead=1, group=2)


@pytest.mark.parametrize("layout,m,n,k", [("NN", 33, 17, 5), ("NN", 1, 1, 1), ("NN", 40, 70, 33),
                                          ("NT", 31, 9, 17), ("TN", 3, 65, 18),
                                          ("RN", 35, 33, 2), ("NC", 64, 32, 16)])
def test_the_guarded_complex_tiles_are_sound_at_any_sizes(layout: str, m: int, n: int,
                                                           k: int) -> None:
    """No size multiples; op(A)·op(B) bit for bit on integer-valued operands, on and off the
    tiles, conjugations through the product, transposes through the views."""
    v = Variant.of("edge-ctiles-async", tm=32, tn=32, tk=16, rm=4, rn=4, stages=2)
    kind = Kind("mm", "complex64", layout)
    assert multiples(kind, v) == {}
    want, X, Y = _operands(layout, m, n, k, m + n + k)
    np.testing.assert_array_equal(np.asarray(interpret(derive(kind, v).final, X, Y)), want)


@pytest.mark.parametrize("tiles", [dict(tm=128, tn=32, tk=16, rm=8, rn=4),
                                   dict(tm=128, tn=32, tk=16, rm=4, rn=4),
                                   dict(tm=128, tn=64, tk=32, rm=8, rn=4)])
def test_the_complex_edge_tilings_are_sound(tiles: dict) -> None:
    """mm-edge-tiles' complex shapes (EDGE_TILES_COMPLEX's 128×32, mm-local-tiles' 128×64×32):
    they derive, and off the tiles equal the product bit for bit."""
    v = Variant.of("edge-ctiles-async", **tiles, stages=2)
    want, X, Y = _operands("NN", 130, 40, 20, 11)
    np.testing.assert_array_equal(
        np.asarray(interpret(derive(Kind("mm", "complex64", "NN"), v).final, X, Y)), want)


def test_the_guarded_split_tail_is_sound_and_compiles(compile_cuda: Any) -> None:
    """ctiles-async's 128×64 tiles guarded and split along K in 2 (the H100's capped slots):
    sound off the tiles; the CUDA C copies 8-byte elements with a source size (0 past K) and
    guards the edge's stores; NVRTC compiles it."""
    from liftkit.codegen import CompileOptions, compile_program

    v = edge_ctiles(Variant.of("ctiles-async", **CT.kw, split=2, slots=264, bound=2))
    assert v == Variant.of("edge-ctiles-async", **CT.kw, split=2, slots=264, bound=2)
    d = derive(Kind("mm", "complex64", "NN"), v)
    want, X, Y = _operands("NN", 130, 70, 40, 3)
    np.testing.assert_array_equal(np.asarray(interpret(d.final, X, Y)), want)
    src = compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source
    assert "cp.async.ca.shared.global [%0], [%1], 8, %2;" in src and "< K)) ? 8 : 0" in src
    assert compile_cuda(src, "compute_90a", name="cgemm_edge.cu").ptx


def test_edge_ctiles_is_a_guarded_cuda_complex64_codelet_outside_the_tuning_space() -> None:
    c = CODELETS["edge-ctiles-async"]
    assert c.dtypes == ("complex64",) and c.backends == ("cuda",) and c.space("gpu") == []
    assert "edge-ctiles-async" in EDGE_CODELETS
    rot = Variant.of("ctiles-async", **CT.kw, kt=1, rot=1, pair=1)
    assert edge_ctiles(rot) == EDGE
    with pytest.raises(ValueError):
        edge_ctiles(ZV)


def _entry(dt: str, layout: str, sizes: dict[str, int], v: Variant, rate: float,
           via: str = "") -> Entry:
    return Entry(Kind("mm", dt, layout), "large", sizes, v, 1.0, rate, via=via)


def test_measured_complex_kernels_at_the_very_sizes_are_chosen() -> None:
    """The fastest of the guarded and the via-"padded" entries at these sizes; a conjugating
    layout from its plain one's; the class's other entries and other sizes: None."""
    from types import SimpleNamespace

    odd = {"M": 1000, "N": 1000, "K": 1000}
    p = Profile("dev", "dev", "gpu")
    p.add([_entry("complex64", "NN", {"M": 1024, "N": 1024, "K": 1024}, CT, 9e4),
           _entry("complex64", "NN", odd, EDGE, 4.2e4),
           _entry("complex64", "NN", odd, CT, 4.0e4, "padded"),
           _entry("complex128", "NN", odd, ZV, 5e4, "padded"),
           _entry("float32", "NN", odd, Variant.of("edge-tiles-async", tm=64, tn=64, tk=16, rm=8,
                                                   rn=8, stages=2), 3e4)])
    s = SimpleNamespace(profile=p)

    def here(dt: str, layout: str, sizes: dict[str, int]) -> Any:
        found = measured_here(s, Kind("mm", dt, layout), sizes)  # type: ignore[arg-type]
        return found[0].variant if found else None

    assert here("complex64", "NN", odd) == EDGE and here("complex64", "RN", odd) == EDGE
    assert here("complex128", "NN", odd) == ZV and here("complex128", "NT", odd) is None
    assert here("complex64", "NN", {"M": 1024, "N": 1024, "K": 1024}) is None
    assert here("complex64", "NN", {"M": 1000, "N": 1000, "K": 999}) is None
    assert here("float32", "NN", odd).codelet == "edge-tiles-async"  # (real dtypes' alike)
    p.add([_entry("complex64", "NN", odd, Variant.of("ctiles-async", **CT.kw, split=2, slots=264,
                                                     bound=2), 4.5e4, "padded")])
    assert here("complex64", "NN", odd).codelet == "ctiles-async"


@pytest.mark.parametrize("dt,sizes,v,via,launches,copies", [
    ("complex64", (1000, 1000, 1000), None, "", 2, 0),  # the real plan: cembed, guarded product
    ("complex64", (1000, 1000, 1000), EDGE, "", 1, 0),  # the guarded complex tiles alone
    ("complex64", (1023, 1025, 999), EDGE, "", 1, 0),
    ("complex64", (1000, 1000, 1000), CT, "padded", 1, 3),  # 16-byte pitches: 2-D copies
    ("complex64", (1023, 1025, 999), CT, "padded", 4, 0),  # pad2d A, pad2d B, product, crop2d
    ("complex128", (1000, 1000, 1000), ZV, "padded", 4, 0),  # the copies as kernels too
])
def test_calls_run_the_measured_complex_kernels_on_cuda(blas_host: Any, stub_cuda: Any, dt: str,
                                                        sizes: tuple[int, int, int], v: Any,
                                                        via: str, launches: int,
                                                        copies: int) -> None:
    """The CUDA queue stubbed (the shipped H100 profile, without its entries at these sizes, plus
    the row's entry): the first call and the
    repeated one (its call plan) launch the same kernels and 2-D copies; the plan's kernel is
    the entry's variant (padded to its tiles where it is not guarded)."""
    host, s = blas_host, stub_cuda
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    m, n, k = sizes
    at = {"M": m, "N": n, "K": k}
    s.profile.entries = [e for e in s.profile.entries  # (the shipped ones at these sizes)
                         if not (dict(e.sizes) == at and e.kind.dtype == dt)]
    s.forget_choices()
    if v is not None:
        s.profile.add([_entry(dt, "NN", at, v, 1e6, via)])
        s.forget_choices()
    plan = s.plan_gemm((m, k), (k, n), np.dtype(dt))
    if v is None:
        assert plan.embed is not None and plan.variant == Variant.of("real")
    else:
        assert plan.embed is None and plan.built.variant == v
        assert (plan.padded == at) == (v.codelet == "edge-ctiles-async")
    A, B, C = (host.ndarray(sh, dt) for sh in ((m, k), (k, n), (m, n)))
    for _ in range(2):
        got.clear()
        host.COUNTS.clear()
        s.gemm(A, B, C)
        assert len(got) == launches and host.COUNTS.get("cuMemcpy2DAsync", 0) == copies


@pytest.mark.gpu
@pytest.mark.parametrize("dt,v,via", [("complex64", EDGE, ""), ("complex64", CT, "padded"),
                                      ("complex128", ZV, "padded")])
def test_measured_complex_kernels_compute_odd_gemms(cuda_session: Any, dt: str, v: Variant,
                                                    via: str) -> None:
    """CuPy operands, entries at 1000³ and 333×65×47: the same products as NumPy's, NaN-poisoned
    outputs overwritten, a repeated call (its call plan) too."""
    cp = pytest.importorskip("cupy")
    prof = Profile(cuda_session.device.fingerprint, cuda_session.device.label, "gpu")
    shapes = ((1000, 1000, 1000), (333, 65, 47))
    prof.add([_entry(dt, "NN", dict(zip("MNK", sh)), v, 1e6, via) for sh in shapes])
    cuda_session.profile = prof
    cuda_session.forget_choices()
    rng = np.random.default_rng(5)
    tol = 1e-4 if dt == "complex64" else 1e-12
    for m, n, k in shapes:
        A = (rng.uniform(-1, 1, (m, k)) + 1j * rng.uniform(-1, 1, (m, k))).astype(dt)
        B = (rng.uniform(-1, 1, (k, n)) + 1j * rng.uniform(-1, 1, (k, n))).astype(dt)
        want = A.astype(np.complex128) @ B
        assert cuda_session.plan_gemm(A.shape, B.shape, dt).built.variant == v
        dA, dB = cp.asarray(A), cp.asarray(B)
        for _ in range(2):
            C = cp.full((m, n), np.nan, dt)
            cuda_session.gemm(dA, dB, C).result()
            got = cp.asnumpy(C)
            assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_the_h100_profile_runs_the_odd_complex_sizes_on_the_complex_kernels(stub_cuda: Any) -> None:
    """results/issue15/oddc25 runs 1-2 (ship.py on run 2): CGEMM 1000³ NN on edge-ctiles-async
    128×64 split in 2 (0.847x cuBLAS per call, the real plan 0.757x), CGEMM 1023×1025×999 on
    edge-ctiles-async 128×32 with 4×4 accumulators (0.785x against 0.744x), no copies; ZGEMM
    1000³ and 1023×1025×999 on zmma's guarded form without copies since odd26b (edge-zmma:
    1.009x / 1.115x against zmma padded's 0.808x / 0.971x in the same run); NC (NT's entries:
    none at these sizes) and 1024 as before."""
    s = stub_cuda
    split2 = Variant.of("edge-ctiles-async", **CT.kw, split=2, slots=264, bound=2)
    plan = s.plan_gemm((1000, 1000), (1000, 1000), np.complex64)
    assert plan.embed is None and plan.built.variant == split2 and plan.padded == plan.sizes
    assert s.plan_gemm((1000, 1000), (1000, 1000), np.complex64,  # (NC: NT's entries, none)
                       trans_b="C").variant == Variant.of("real")
    odd = s.plan_gemm((1023, 999), (999, 1025), np.complex64)  # (since oddc26: 256×32 rot=3)
    assert odd.embed is None and odd.built.variant == Variant.of(
        "edge-ctiles-async", rm=8, rn=4, rot=3, stages=2, tk=16, tm=256, tn=32)
    assert s.plan_gemm((1024, 1024), (1024, 1024), np.complex64).built.variant.codelet == \
        "ctiles-async"
    for a, b in (((1000, 1000), (1000, 1000)), ((1023, 999), (999, 1025))):
        z = s.plan_gemm(a, b, np.complex128)
        assert z.embed is None and z.built.variant.codelet == "edge-zmma" and z.padded == z.sizes


def test_the_tuner_times_the_guarded_complex_tiles_against_the_real_plan() -> None:
    """`tune --edges` follow-ups of a complex64 class whose choice is ctiles-async: the real plan
    as a call at the odd size (what the choice becomes there), then the guarded forms of the
    class's two fastest complex tilings (without kt/pair, A's 16-byte swizzle kept); none where
    no complex tiles lead."""
    from liftkit.blas.followups import Task, edge_tasks

    kind = Kind("mm", "complex64", "NN")
    at = {"M": 1024, "N": 1024, "K": 1024}
    rot = Variant.of("ctiles-async", **CT.kw, rot=3, pair=1)
    small = Variant.of("ctiles-async", tm=64, tn=64, tk=16, rm=4, rn=8, stages=2)
    p = Profile("dev", "dev", "gpu")
    p.add([Entry(kind, "large", at, v, 1.0, r) for v, r in
           ((rot, 4.6e4), (small, 4.4e4), (CT, 4.0e4), (Variant.of("real"), 3.9e4))])
    odd = {"M": 1000, "N": 1000, "K": 1000}
    assert edge_tasks(p, kind, "large", "gpu") == [
        Task(Variant.of("real"), odd, "plan"), Task(Variant.of("edge-ctiles-async", **CT.kw,
                                                               rot=3), odd),
        Task(edge_ctiles(small), odd)]
    p.entries = [e for e in p.entries if e.variant.codelet == "real"]
    assert edge_tasks(p, kind, "large", "gpu") == []
