"""SGEMM at sizes off its tiles on narrow guarded tiles (results/issue15/odd25b): mm-edge-tiles'
float32 shapes EDGE_TILES_FLOAT4 (128×32 and 256×32: one wave of tiles at 1023×1025 on the
H100) derive for `edge-tiles-async` with 4-byte copies (elems=1, any sizes) and equal the
product bit for bit in the interpreter; NVRTC compiles them without spills; the same tiles in
OpenCL (`edge-tiles`) on the CPU device against NumPy at random shapes; entries at a call's
very sizes launch them alone (stubbed CUDA queue), the H100 profile's SGEMM 1023×1025×999
entry (via "here": those sizes only); the tuner's balanced follow-up (`followups.
balanced_tasks`); (gpu marker) entries at 1023×1025×999 and 511×127×253 against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, Variant, derive, multiples
from liftkit.rewrite.rules.mm_edges import EDGE_TILES_FLOAT4
from liftkit.semantics import interpret

KIND = Kind("mm", "float32", "NN")
TILINGS = [dict(tm=tm, tn=tn, tk=tk, rm=rm, rn=rn)
           for tm, tn, tk, rm, rn, _, _ in EDGE_TILES_FLOAT4]


def _ints(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.integers(-8, 9, shape).astype(np.float32)


@pytest.mark.parametrize("tiles", TILINGS, ids=lambda t: "x".join(str(v) for v in t.values()))
def test_the_narrow_float32_edge_tilings_are_sound_at_any_sizes(tiles: dict) -> None:
    """No size multiples with elems; off every tile (M, N, K odd, K over two tile steps) the
    guarded kernel equals A·B exactly on integer-valued operands."""
    v = Variant.of("edge-tiles-async", **tiles, stages=2, elems=1)
    assert multiples(KIND, v) == {}
    rng = np.random.default_rng(tiles["tm"] + tiles["tk"] + tiles["rn"])
    m, n, k = tiles["tm"] + 3, tiles["tn"] + 5, tiles["tk"] + 7
    A, B = _ints(rng, (m, k)), _ints(rng, (k, n))
    got = np.asarray(interpret(derive(KIND, v).final, A, B))
    np.testing.assert_array_equal(got, A @ B)


def test_the_narrow_tiles_compile_without_spills(compile_cuda: Any) -> None:
    """128×32 8×8 and 256×32 8×8, 4-byte copies: NVRTC for sm_90a, no spill (ptxas -v)."""
    from liftkit.codegen import CompileOptions, compile_program

    for tm in (128, 256):
        v = Variant.of("edge-tiles-async", tm=tm, tn=32, tk=16, rm=8, rn=8, stages=2, elems=1)
        k = compile_program(derive(KIND, v).final, CompileOptions(dialect="cuda")).kernels[0]
        assert "cp.async.ca.shared.global [%0], [%1], 4, %2;" in k.source
        log = str(compile_cuda(k.source, "sm_90a", [*k.build_options, "--ptxas-options=-v"],
                               name="sgemm_narrow.cu").log)
        assert "registers" in log and "0 bytes spill stores" in log, log


@pytest.mark.parametrize("seed", range(3))
def test_narrow_guarded_tiles_on_the_cpu_device(session: Any, seed: int) -> None:
    """mm-edge-tiles' 128×32 shape in OpenCL (`edge-tiles`, element copies where 4 divides
    neither N nor K) at random shapes 1…300 against NumPy."""
    rng = np.random.default_rng(seed)
    m, n, k = (int(x) for x in rng.integers(1, 301, 3))
    v = Variant.of("edge-tiles", tm=128, tn=32, tk=16, rm=8, rn=4, **(
        {} if n % 4 == 0 and k % 4 == 0 else {"elems": 1}))
    check_forced_sgemm(session, v, rng, m, n, k)


def check_forced_sgemm(session: Any, v: Variant, rng: np.random.Generator, m: int, n: int,
                       k: int) -> None:
    """An m×k by k×n SGEMM planned with `v` forced (operands from `rng`): unpadded, NaN-poisoned
    C, against NumPy."""
    from liftkit.blas.gemm import plan_gemm

    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    plan = plan_gemm(session, A.shape, B.shape, "float32", variant=v)
    assert plan.built.variant == v and plan.padded == plan.sizes
    C = np.full((m, n), np.nan, np.float32)
    ws = plan.workspace()
    plan.run(plan.pack("A", A, ws), plan.pack("B", B, ws), C).result()
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4 * k)


SHAPES = ((1023, 1025, 999), (511, 127, 253))


def _profile(fingerprint: str, label: str, v: Variant) -> Any:
    """A GPU profile whose classes (large, medium) choose tiles-async 128×64 (as the H100's
    does: its tiles divide neither shape), with entries of `v` at SHAPES."""
    from liftkit.blas.profile import Entry, Profile

    tiles = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2)
    prof = Profile(fingerprint, label, "gpu")
    prof.add([Entry(KIND, c, {"M": n, "N": n, "K": n}, tiles, 1.0, 4e4)
              for c, n in (("large", 1024), ("medium", 512))])
    prof.add([Entry(KIND, c, dict(zip("MNK", sh)), v, 1.0, 1e6)
              for c, sh in zip(("large", "medium"), SHAPES)])
    return prof


def _narrow(tm: int) -> Variant:
    return Variant.of("edge-tiles-async", tm=tm, tn=32, tk=16, rm=8, rn=8, stages=2, elems=1)


@pytest.mark.parametrize("tm", [128, 256])
def test_entries_at_the_very_sizes_launch_the_narrow_tiles_alone(blas_host: Any, stub_cuda: Any,
                                                                 tm: int) -> None:
    """The CUDA queue stubbed: an entry at a call's sizes (`gemm.profiled_edge`) runs its
    guarded kernel, one launch, no copies, on the first and the repeated call."""
    s, v = stub_cuda, _narrow(tm)
    s.profile = _profile(s.device.fingerprint, s.device.label, v)
    s.forget_choices()
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    for m, n, k in SHAPES:
        plan = s.plan_gemm((m, k), (k, n), np.float32)
        assert plan.built.variant == v and plan.padded == plan.sizes
        A, B, C = (blas_host.ndarray(sh, "float32") for sh in ((m, k), (k, n), (m, n)))
        for _ in range(2):
            got.clear()
            blas_host.COUNTS.clear()
            s.gemm(A, B, C)
            assert len(got) == 1 and blas_host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    assert s.plan_gemm((1024, 1024), (1024, 1024), np.float32).built.variant.codelet == \
        "tiles-async"


@pytest.mark.gpu
@pytest.mark.parametrize("tm", [128, 256])
def test_narrow_guarded_tiles_on_a_cuda_gpu(cuda_session: Any, tm: int) -> None:
    """Entries at 1023×1025×999 and 511×127×253 (`gemm.profiled_edge` runs them there), CuPy
    operands, NaN-poisoned C, against NumPy, twice (the repeated call's plan)."""
    check_entry_at_odd_shapes(cuda_session, _narrow(tm), tm)


def check_entry_at_odd_shapes(cuda_session: Any, v: Variant, seed: int) -> None:
    """A profile whose one entry is `v` (measured at SHAPES): each shape's SGEMM plan runs `v`
    unpadded; CuPy operands, NaN-poisoned C, against NumPy, twice (the repeated call's plan)."""
    cp = pytest.importorskip("cupy")
    cuda_session.profile = _profile(cuda_session.device.fingerprint, cuda_session.device.label, v)
    cuda_session.forget_choices()
    rng = np.random.default_rng(seed)
    for m, n, k in SHAPES:
        A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        want = A.astype(np.float64) @ B
        plan = cuda_session.plan_gemm(A.shape, B.shape, "float32")
        assert plan.built.variant == v and plan.padded == plan.sizes
        dA, dB = cp.asarray(A), cp.asarray(B)
        for _ in range(2):
            C = cp.full((m, n), np.nan, np.float32)
            cuda_session.gemm(dA, dB, C).result()
            assert np.abs(cp.asnumpy(C) - want).max() <= 1e-4 * np.abs(want).max()


def test_the_h100_profile_runs_sgemm_1023_on_256x32_tiles_split_in_3(blas_host: Any,
                                                                     stub_cuda: Any) -> None:
    """results/issue15/odd26 (ship.py): SGEMM 1023×1025×999 NN on 256×32×16 guarded tiles
    with 16×4 blocks and A's rows swizzled (rot=2), split along K in 3 (132 tiles × 3 parts =
    396: three blocks on every multiprocessor; 0.805x cuBLAS per call on the H100 against
    odd25b's 8×8 unswizzled entry's 0.753x), one launch, no copies; 1000³, 4097×4095² and the
    class's other odd sizes as before (the entry is via "here": for its sizes alone)."""
    s = stub_cuda
    got: list = []
    s.q._core.launch = lambda stream, config, kernel, *args: got.append(kernel)
    v = Variant.of("edge-tiles-async", tm=256, tn=32, tk=16, rm=16, rn=4, stages=2, elems=1,
                   rot=2, split=3, slots=396, bound=3)
    plan = s.plan_gemm((1023, 999), (999, 1025), np.float32)
    assert plan.built.variant == v and plan.padded == plan.sizes
    A, B, C = (blas_host.ndarray(sh, "float32") for sh in ((1023, 999), (999, 1025), (1023, 1025)))
    for _ in range(2):
        got.clear()
        blas_host.COUNTS.clear()
        s.gemm(A, B, C)
        assert len(got) == 1 and blas_host.COUNTS.get("cuMemcpy2DAsync", 0) == 0
    assert s.plan_gemm((1000, 1000), (1000, 1000), np.float32).built.variant == Variant.of(
        "edge-tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2, split=2, slots=924)
    big = s.plan_gemm((4097, 4095), (4095, 4095), np.float32).built.variant
    assert big.codelet == "tiles-async" and big.kw["split"] == 5
    # via "here": other odd sizes of the class keep the class's guarded forms (nearest measured)
    for m, n, k in ((1023, 1027, 999), (777, 777, 777), (1201, 1201, 1201)):
        assert s.plan_gemm((m, k), (k, n), np.float32).built.variant == Variant.of(
            "edge-tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, elems=1, split=4,
            slots=396, bound=3)


H100 = dict(multiprocessors=132, registers=65536, shared=233472, threads=2048, blocks=32,
            reserved_shared=1024)


def test_balanced_tasks_fill_every_multiprocessor() -> None:
    """At 1023×1025×999 on the H100's limits: 256×32 tiles (132) in 3 parts at 396 slots
    (bound 3) and 4 parts at 528 (bound 4), element copies (N, K off 4); none without the
    limits, for other kinds, or where no split fills the slots evenly (1000³: 4×32 tiles)."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas.followups import balanced_tasks

    lim = SMLimits(**H100)
    at = {"M": 1023, "N": 1025, "K": 999}
    got = balanced_tasks(KIND, at, lim)
    base = dict(tm=256, tn=32, tk=16, stages=2, elems=1)
    assert [(t.variant, t.sizes, t.mode) for t in got] == [
        (Variant.of("edge-tiles-async", **base, **blocks, split=p, slots=n, bound=b), at, "here")
        for blocks in (dict(rm=8, rn=8), dict(rm=8, rn=8, rot=2), dict(rm=16, rn=4, rot=2))
        for p, n, b in ((3, 396, 3), (4, 528, 4))]
    assert balanced_tasks(KIND, at, None) == []
    assert balanced_tasks(Kind("mm", "float64", "NN"), at, lim) == []
    assert balanced_tasks(KIND, {"M": 1000, "N": 1000, "K": 1000}, lim) == []


@pytest.mark.parametrize("faster", [True, False], ids=["won", "lost"])
def test_the_tuner_keeps_a_balanced_entry_only_where_it_won(session: Any, monkeypatch: Any,
                                                            faster: bool) -> None:
    """`tune --edges` with the GPU's limits times the balanced tiles at the split sizes as a
    call runs them, beside the GEMM's own plan there; the fastest becomes an entry via "here"
    only where it won (measure replaced: nothing is timed for real)."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas import Profile, Session
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.profile import size_class

    at = {"M": 1023, "N": 1025, "K": 999}
    seen: list = []

    def fake(s: Any, kind: Kind, variant: Variant, sizes: dict[str, int], plan: bool = False,
             **_: Any) -> Any:
        t = tune_mod.Trial(kind, size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((variant, dict(sizes), plan))
        t.rate = (1.5 + variant.kw.get("split", 0) + variant.kw.get("rm", 0) / 100
                  if faster else 0.5) if variant.kw.get("tm") == 256 else 1.0
        t.seconds = 1.0 / t.rate
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = Profile(session.profile.fingerprint, session.profile.label, "cpu")
    s = Session(session.device, profile=prof)
    tune_mod.tune(s, [KIND], ["large"], prof, progress=False, peaks=None, max_variants=1,
                  edges=True, limits=SMLimits(**H100))
    here = [x for x in seen if x[1] == at and x[0].kw.get("tm") == 256]
    assert len(here) == 6 and all(x[2] for x in here)  # (as calls)
    best = Variant.of("edge-tiles-async", tm=256, tn=32, tk=16, rm=16, rn=4, stages=2, elems=1,
                      rot=2, split=4, slots=528, bound=4)  # (the faster here)
    entries = prof.at_sizes(KIND, at, "here")
    assert [e.variant for e in entries] == ([best] if faster else [])
    assert len(prof.notes["splits"][f"{KIND}|large"]["here"]) == 6
