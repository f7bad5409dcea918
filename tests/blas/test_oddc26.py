"""The guarded complex tiles with A's rows swizzled in 16-byte units (results/issue15/oddc26):
mm-edge-tiles' rot=3 over complex scalars (rewrite.rules.mm_edges) sound bit for bit in the
interpreter at sizes on and off the tiles for every layout, its OpenCL form run on the CPU
device against NumPy, its CUDA form (the swizzled 8-byte cp.async copies with their source
sizes) compiled by NVRTC without spills; `edge_ctiles` keeps rot=3; (gpu marker) the entries at
odd sizes against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.blas.mm_cedge import edge_ctiles
from liftkit.blas.profile import Entry, Profile
from liftkit.semantics import interpret

from .test_ctiles_async import _operands

ROT = dict(tm=128, tn=32, tk=16, rm=4, rn=4, stages=2, rot=3)
EDGE_ROT = Variant.of("edge-ctiles-async", **ROT)


@pytest.mark.parametrize("layout,m,n,k", [("NN", 33, 17, 5), ("NN", 1, 1, 1), ("NN", 70, 40, 33),
                                          ("NT", 31, 9, 17), ("TN", 3, 65, 18),
                                          ("NC", 64, 32, 16), ("RN", 35, 33, 20)])
def test_swizzled_guarded_complex_tiles_are_sound_at_any_sizes(layout: str, m: int, n: int,
                                                              k: int) -> None:
    """rot=3 moves only the tile's places in shared memory: op(A)·op(B) bit for bit on
    integer-valued operands, on and off the tiles (K zero-filled past the end, M and N
    clamped), transposes through the views, conjugations through the product."""
    v = Variant.of("edge-ctiles-async", tm=32, tn=32, tk=16, rm=4, rn=4, stages=2, rot=3)
    kind = Kind("mm", "complex64", layout)
    assert multiples(kind, v) == {}
    want, X, Y = _operands(layout, m, n, k, m + n + k)
    np.testing.assert_array_equal(np.asarray(interpret(derive(kind, v).final, X, Y)), want)


@pytest.mark.parametrize("tiles", [dict(ROT), dict(ROT, rm=8), dict(ROT, tm=256, rm=8),
                                   dict(ROT, tm=256, rm=8, split=2, slots=264, bound=2),
                                   dict(ROT, stages=3)])
def test_the_swizzled_complex_edge_tilings_are_sound(tiles: dict) -> None:
    """The shapes oddc26 timed (128×32 4×4 / 8×4, 256×32 8×4, split along K in 2, three
    stages): they derive, and off the tiles equal the product bit for bit."""
    v = Variant.of("edge-ctiles-async", **tiles)
    want, X, Y = _operands("NN", 260, 40, 37, 11)
    np.testing.assert_array_equal(
        np.asarray(interpret(derive(Kind("mm", "complex64", "NN"), v).final, X, Y)), want)


def test_mm_edge_tiles_offers_the_swizzle_for_complex_scalars_only() -> None:
    """rot=3 after the plain complex tilings (8-byte scalars, at least four per row), not for
    float32 (its float4 tiles: 16-byte vectors, rot 1-2)."""
    from liftkit.rewrite.core import typed_sites
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES

    def offers(dt: str) -> list[dict]:
        prog = Kind("mm", dt, "NN").program()
        return [p for s in typed_sites(prog) for p in MM_EDGE_TILES.choices(s)]

    c = offers("complex64")
    plain = [o for o in c if "rot" not in o]
    assert [o for o in c if "rot" in o] == [{**o, "rot": 3} for o in plain if o["tk"] >= 4]
    assert c.index({**dict(tm=128, tn=32, tk=16, rm=4, rn=4, unroll=1, w=1), "rot": 3}) > \
        max(c.index(o) for o in plain)
    assert not any(o.get("rot") == 3 for o in offers("float32"))


def test_the_swizzled_tiles_run_in_opencl_on_the_cpu_device() -> None:
    """mm-edge-tiles rot=3 (no cp.async: plain local-memory copies) generated as OpenCL C and
    run on the CPU device at sizes off the 32×32 and 128×32 tiles: NumPy's product."""
    from liftkit.backends.opencl.runner import OpenCLRunner
    from liftkit.blas.codelets import BODY
    from liftkit.blas.mm_cedge import _rules
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.derivation import Derivation
    from liftkit.rewrite.rules.mm_edges import MM_EDGE_TILES
    from liftkit.rewrite.strategies import rule

    kind = Kind("mm", "complex64", "NN")
    runner = OpenCLRunner("cpu")
    g = np.random.default_rng(3)
    for tm, (m, n, k) in ((32, (37, 45, 19)), (128, (130, 70, 33))):
        d = Derivation(kind.program(), name="rot3").then(
            rule(MM_EDGE_TILES, tm=tm, tn=32, tk=16, rm=4, rn=4, unroll=1, w=1, rot=3), BODY,
            rules=_rules())
        A = (g.standard_normal((m, k)) + 1j * g.standard_normal((m, k))).astype(np.complex64)
        B = (g.standard_normal((k, n)) + 1j * g.standard_normal((k, n))).astype(np.complex64)
        got = np.asarray(runner.run(compile_program(d.final, CompileOptions()), A, B))
        want = A.astype(np.complex128) @ B
        np.testing.assert_allclose(got.reshape(m, n), want, rtol=1e-5, atol=1e-5 * k)


def test_the_swizzled_cuda_kernel_copies_whole_elements_and_compiles(compile_cuda: Any) -> None:
    """The CUDA C: 8-byte cp.async copies of A whose source column is the swizzled one (an xor),
    with a source size of 0 past K, the reads from shared memory at xor-ed places; NVRTC
    (ptxas -v) compiles it for sm_90a without spills."""
    from liftkit.codegen import CompileOptions, compile_program

    k = compile_program(derive(Kind("mm", "complex64", "NN"), EDGE_ROT).final,
                        CompileOptions(dialect="cuda")).kernels[0]
    src = k.source
    assert "cp.async.ca.shared.global [%0], [%1], 8, %2;" in src and "< K)) ? 8 : 0" in src
    a_copies = [ln for ln in src.splitlines() if "cp.async.ca" in ln and "&X[" in ln]
    assert a_copies and all("^" in ln for ln in a_copies)  # A's (X's) copies, swizzled
    assert any("^" in ln and "cp.async" not in ln and "stage[" in ln for ln in src.splitlines())
    log = compile_cuda(src, "sm_90a", list(k.build_options) + ["--ptxas-options=-v"],
                       name="cgemm_edge_rot3.cu").log
    assert "0 bytes spill stores" in log


def test_edge_ctiles_keeps_the_16_byte_swizzle() -> None:
    """A ctiles-async variant's guarded form keeps rot=3 (A's rows), drops kt, pair and the
    rotations the guarded tiles do not offer."""
    base = dict(tm=128, tn=64, tk=16, rm=8, rn=4, stages=2)
    plain = Variant.of("edge-ctiles-async", **base)
    assert edge_ctiles(Variant.of("ctiles-async", **base, rot=3)) == \
        Variant.of("edge-ctiles-async", **base, rot=3)
    assert edge_ctiles(Variant.of("ctiles-async", **base, kt=1, rot=3, pair=1)) == \
        Variant.of("edge-ctiles-async", **base, rot=3)
    assert edge_ctiles(Variant.of("ctiles-async", **base, kt=1, rot=1)) == plain


@pytest.mark.gpu
def test_swizzled_guarded_entries_compute_odd_cgemms(cuda_session: Any) -> None:
    """CuPy operands, rot=3 entries at 1023×1025×999 and 333×65×47: NumPy's products,
    NaN-poisoned outputs overwritten, a repeated call (its call plan) too."""
    cp = pytest.importorskip("cupy")
    prof = Profile(cuda_session.device.fingerprint, cuda_session.device.label, "gpu")
    shapes = ((1023, 1025, 999), (333, 65, 47))
    prof.add([Entry(Kind("mm", "complex64", "NN"), "large", dict(zip("MNK", sh)), EDGE_ROT, 1.0,
                    1e6) for sh in shapes])
    cuda_session.profile = prof
    cuda_session.forget_choices()
    rng = np.random.default_rng(9)
    for m, n, k in shapes:
        A = (rng.uniform(-1, 1, (m, k)) + 1j * rng.uniform(-1, 1, (m, k))).astype(np.complex64)
        B = (rng.uniform(-1, 1, (k, n)) + 1j * rng.uniform(-1, 1, (k, n))).astype(np.complex64)
        want = A.astype(np.complex128) @ B
        assert cuda_session.plan_gemm(A.shape, B.shape, np.complex64).built.variant == EDGE_ROT
        dA, dB = cp.asarray(A), cp.asarray(B)
        for _ in range(2):
            C = cp.full((m, n), np.nan, np.complex64)
            cuda_session.gemm(dA, dB, C).result()
            got = cp.asnumpy(C)
            assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_the_h100_profile_runs_the_swizzled_guarded_complex_tiles(stub_cuda: Any) -> None:
    """results/issue15/oddc26 run 1 (H100, ship.py): CGEMM NN 1023×1025×999 on 256×32 tiles
    with A's rows swizzled (0.842x cuBLAS per call; the session-25 entry 0.777x in the same
    run), 4097×4095×4095 on 128×64 rot=3 under the 2-blocks cap (0.926x; the real plan 0.849x):
    one kernel, no copies; 1000³ keeps 128×64 split in 2 (rot=3 ran slower there); other sizes
    of those classes as before (the entries serve their very sizes alone)."""
    s = stub_cuda
    odd = s.plan_gemm((1023, 999), (999, 1025), np.complex64)
    assert odd.embed is None and odd.padded == odd.sizes and odd.built.variant == \
        Variant.of("edge-ctiles-async", tm=256, tn=32, tk=16, rm=8, rn=4, stages=2, rot=3)
    big = s.plan_gemm((4097, 4095), (4095, 4095), np.complex64)
    assert big.embed is None and big.padded == big.sizes and big.built.variant == \
        Variant.of("edge-ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, rot=3,
                   slots=264, bound=2)
    assert not big._pack_steps("A") and not big._pack_steps("B")
    thousand = s.plan_gemm((1000, 1000), (1000, 1000), np.complex64)
    assert "rot" not in thousand.built.variant.kw and thousand.built.variant.kw["split"] == 2
    for m, n, k in ((4095, 4097, 4095), (1023, 1025, 1000), (4096, 4096, 4096)):
        p = s.plan_gemm((m, k), (k, n), np.complex64)
        assert p.embed is not None or p.built.variant.codelet == "ctiles-async"


H100 = dict(multiprocessors=132, registers=65536, shared=233472, threads=2048, blocks=32,
            reserved_shared=1024)
CKIND = Kind("mm", "complex64", "NN")
ODD = {"M": 1023, "N": 1025, "K": 999}


def test_fill_ctiles_tasks_give_every_multiprocessor_the_same_blocks() -> None:
    """At 1023×1025×999 on the H100's limits: 256×32 tiles (132, one per multiprocessor) and
    128×32 tiles three stages deep (264, two each), rot=3, as calls ("here"); none at 1000³
    (128 and 256 tiles), without the limits, or for other kinds."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas.followups import Task, fill_ctiles_tasks, fill_sizes

    lim = SMLimits(**H100)
    assert fill_sizes(CKIND, "large", "gpu") == ODD
    assert fill_sizes(Kind("mm", "complex64", "NT"), "large", "gpu") is None
    assert fill_ctiles_tasks(CKIND, ODD, lim) == [
        Task(Variant.of("edge-ctiles-async", tm=256, tn=32, tk=16, rm=8, rn=4, stages=2, rot=3),
             ODD, "here"),
        Task(Variant.of("edge-ctiles-async", tm=128, tn=32, tk=16, rm=4, rn=4, stages=3, rot=3),
             ODD, "here")]
    assert fill_ctiles_tasks(CKIND, {"M": 1000, "N": 1000, "K": 1000}, lim) == []
    assert fill_ctiles_tasks(CKIND, ODD, None) == []
    assert fill_ctiles_tasks(Kind("mm", "float32", "NN"), ODD, lim) == []


def test_tuned_complex_entries_via_here_are_run_at_their_sizes() -> None:
    """`gemm.measured_here` takes the tuner's guarded complex entries (via "here") at their
    very sizes, the fastest of those and the others there."""
    from types import SimpleNamespace

    from liftkit.blas.gemm import measured_here

    p = Profile("dev", "dev", "gpu")
    p.add([Entry(CKIND, "large", ODD, EDGE_ROT, 1.0, 3.8e4, via="here")])
    s = SimpleNamespace(profile=p)
    assert [e.variant for e in measured_here(s, CKIND, ODD)] == [EDGE_ROT]  # type: ignore[arg-type]
    thousand = {"M": 1000, "N": 1000, "K": 1000}
    assert measured_here(s, CKIND, thousand) == []  # type: ignore[arg-type]
    wide = Variant.of("edge-ctiles-async", tm=256, tn=32, tk=16, rm=8, rn=4, stages=2, rot=3)
    p.add([Entry(CKIND, "large", ODD, wide, 1.0, 4.1e4)])
    assert [e.variant for e in measured_here(s, CKIND, ODD)] == [wide, EDGE_ROT]  # type: ignore[arg-type]


@pytest.mark.parametrize("faster", [True, False], ids=["won", "lost"])
def test_the_tuner_keeps_a_complex_fill_entry_only_where_it_won(session: Any, monkeypatch: Any,
                                                                faster: bool) -> None:
    """`tune --edges` with the GPU's limits times complex64's real plan and the guarded complex
    tiles at the split sizes as calls; the fastest tiles become an entry via "here" only where
    they beat the plan (measure replaced: nothing is timed for real)."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas import Session
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.profile import size_class

    seen: list = []

    def fake(s: Any, kind: Kind, variant: Variant, sizes: dict[str, int], plan: bool = False,
             **_: Any) -> Any:
        t = tune_mod.Trial(kind, size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((variant, dict(sizes), plan))
        fill = variant.codelet == "edge-ctiles-async" and dict(sizes) == ODD
        t.rate = ((2.0 + variant.kw["tm"] / 1000 if faster else 0.5) if fill else 1.0)
        t.seconds = 1.0 / t.rate
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    s = Session(session.device, profile=prof)
    tune_mod.tune(s, [CKIND], ["large"], prof, progress=False, peaks=None, max_variants=1,
                  edges=True, limits=SMLimits(**H100))
    at_odd = [x for x in seen if x[1] == ODD]
    assert [x[0].codelet for x in at_odd] == ["real", "edge-ctiles-async", "edge-ctiles-async"]
    assert all(x[2] for x in at_odd)  # (as calls)
    wide = Variant.of("edge-ctiles-async", tm=256, tn=32, tk=16, rm=8, rn=4, stages=2, rot=3)
    assert [e.variant for e in prof.at_sizes(CKIND, ODD, "here")] == ([wide] if faster else [])
    assert len(prof.notes["splits"][f"{CKIND}|large"]["here"]) == 2
