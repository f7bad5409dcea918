"""The CUDA tuning space without a GPU (issue 15): the DMMA m16n8k8 variants (ik=8, ahead 0/2;
ahead 2 also in groups of 4 row tiles) and the SGEMM split tail (mm-split-tail: slots from the
device's multiprocessor limits, read through a stubbed driver) are offered where they apply,
derive, carry the launch bound and shared memory the slots were computed for, and compile with
NVRTC where cuda-python is installed; the untuned defaults are unchanged."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from liftkit.backends.cuda.occupancy import (SMLimits, bounded_slots, register_cap,
                                             resident_blocks, sm_limits)
from liftkit.blas.codelets import (CUDA_DEFAULTS, SPLIT_PARTS, Kind, Variant, default_variant,
                                   derive, space, space_at, split_tail_space,
                                   tiles_async_footprint)
from liftkit.blas.profile import Profile
from liftkit.blas.tune import Trial, sizes_for
from liftkit.codegen import CompileOptions, compile_program

# what the H100 SXM's driver reports (cuDeviceGetAttribute)
H100 = {"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132,
        "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472,
        "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR": 2048,
        "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
        "CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK": 1024}
SGEMM, DGEMM = Kind("mm", "float32", "NN"), Kind("mm", "float64", "NN")
CUDA = CompileOptions(dialect="cuda")


def stub_driver(attributes: dict[str, int]) -> Any:
    """The driver calls `sm_limits` makes, answering from `attributes` for device 0."""
    ok = "CUDA_SUCCESS"
    return SimpleNamespace(
        CUresult=SimpleNamespace(CUDA_SUCCESS=ok, CUDA_ERROR_INVALID_DEVICE="invalid device"),
        CUdevice_attribute=SimpleNamespace(**{k: k for k in attributes}),
        cuDeviceGet=lambda k: (ok, k) if k == 0 else ("invalid device", None),
        cuDeviceGetAttribute=lambda a, dev: (ok, attributes[a]))


@pytest.fixture()
def h100() -> SMLimits:
    return sm_limits(0, driver=stub_driver(H100))


def test_limits_come_from_the_driver(h100: SMLimits) -> None:
    assert h100 == SMLimits(132, 65536, 233472, 2048, 32, 1024)
    from liftkit.backends.cuda import CUDAError

    with pytest.raises(CUDAError, match="device query"):
        sm_limits(1, driver=stub_driver(H100))


def test_occupancy_of_the_h100s_sgemm_tiles(h100: SMLimits) -> None:
    """128 threads under __launch_bounds__(128, 3): 168 registers, 3 blocks (the 396 slots the
    shipped profile's split tail was measured with); 4 at 128 registers; 48 KiB of shared
    memory alone would allow 4; 64-thread blocks: the cap (255) does not fix the count."""
    assert register_cap(h100, 128, 3) == 168
    assert resident_blocks(h100, 128, 168, 49152) == 3
    assert resident_blocks(h100, 128, 128, 49152) == 4
    assert resident_blocks(h100, 128, 0, 49152) == 4
    assert resident_blocks(h100, 128, 64, 120000) == 1
    assert bounded_slots(h100, 128, 49152, 3) == 396
    assert bounded_slots(h100, 64, 16384, 3) is None
    assert bounded_slots(h100, 128, 100000, 3) is None  # shared memory holds 2, not 3


def test_the_split_tail_is_offered_where_the_last_wave_is_partial(h100: SMLimits) -> None:
    huge = sizes_for(SGEMM, "huge", "gpu")
    got = split_tail_space(SGEMM, huge, h100)
    tilings = {(v.kw["tm"], v.kw["tn"], v.kw["tk"]) for v in got}
    assert tilings == {(128, 64, 32), (64, 128, 16), (64, 128, 32)}  # 128 threads: bound fixes 3
    assert len(got) == 3 * len(SPLIT_PARTS) == 9
    assert {(v.kw["slots"], v.kw["bound"]) for v in got} == {(396, 3)}
    assert sorted({v.kw["split"] for v in got}) == [3, 4, 5]
    shipped = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, split=5,
                         slots=396, bound=3)
    assert shipped in got and shipped in space_at(SGEMM, "gpu", "cuda", huge, h100)
    # 4096² in 128×64 tiles: 2048 = 5 waves of 396 + 68; at 1024 (128 tiles) no full wave
    for cls in ("small", "medium", "large"):
        assert split_tail_space(SGEMM, sizes_for(SGEMM, cls, "gpu"), h100) == []
    # 128 SMs × 3 = 384 slots: 2048 tiles = 5 waves + 128, offered; 768 tiles = 2 whole waves
    whole = SMLimits(128, 65536, 233472, 2048, 32, 1024)
    assert {v.kw["slots"] for v in split_tail_space(SGEMM, huge, whole)} == {384}
    assert split_tail_space(SGEMM, {"M": 3072, "N": 2048, "K": 4096}, whole) == []
    # another device: its own slots (H100 PCIe: 114 SMs)
    pcie = sm_limits(0, driver=stub_driver(
        {**H100, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 114}))
    assert {v.kw["slots"] for v in split_tail_space(SGEMM, huge, pcie)} == {342}
    # other kinds, backends, and no limits: none
    assert split_tail_space(DGEMM, huge, h100) == []
    # NT and TN (tiles-async with the transposed operand tiled as stored) split as NN does
    assert split_tail_space(Kind("mm", "float32", "NT"), huge, h100) == got
    assert space_at(SGEMM, "gpu", "opencl", huge, h100) == space(SGEMM, "gpu", "opencl")
    assert space_at(SGEMM, "gpu", "cuda", huge, None) == space(SGEMM, "gpu", "cuda")


def test_dmma_k8_variants_follow_the_m16n8k16_tilings() -> None:
    for lay in ("NN", "TN"):
        mma = [v for v in space(Kind("mm", "float64", lay), "gpu", "cuda") if v.codelet == "mma"]
        # last of all the k-row layouts (lines 2, 3: results/issue15/fp64-26), then the rest
        krows, mma = mma[-5:], mma[:-5]
        assert all(v.kw["lines"] in (2, 3) and v.kw["ahead"] == 2 for v in krows)
        k8 = [v for v in mma[:-7] if v.kw.get("ik")]
        assert len(k8) == 12 and all(v.kw["ik"] == 8 and v.kw["lines"] == 1 for v in k8)
        assert sorted(v.kw.get("ahead", 0) for v in k8) == [0] * 4 + [2] * 8
        assert [v.kw.get("group", 0) for v in k8] == [0] * 8 + [4] * 4  # grouped order last
        assert mma.index(k8[0]) == len(mma) - 19  # after the m16n8k16 tilings
        # then two warps per scheduler at 1024 (128×64 on 8 warps, 64×64 on 4), with and
        # without the k-permuted 16-byte fragment reads (fp64-25)
        two = mma[-7:-3]
        assert [(v.kw["tm"], v.kw["warps"], v.kw.get("pairs", 0)) for v in two] == \
            [(128, 8, 1), (64, 4, 1), (128, 8, 0), (64, 4, 0)]
        assert all(v.kw["ahead"] == 2 and v.kw["tk"] == 16 and v.kw["staged"] == 4 for v in two)
        # then the read-ahead loops on 32-deep tiles (cuBLAS's shape), last
        assert all(v.kw["tk"] == 32 and v.kw["ahead"] == 2 and v.kw["lines"] == 1 for v in mma[-3:])
    shipped = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)
    assert shipped in space(DGEMM, "gpu", "cuda")
    nt = space(Kind("mm", "float64", "NT"), "gpu", "cuda")  # no operand copied as k rows
    assert not any(v.kw.get("lines", 0) >= 2 for v in nt)
    assert all(not v.kw.get("ik") for v in space(DGEMM, "cpu", "cuda"))


def test_class_gains(h100: SMLimits) -> None:
    """What each (kind, class) gains over the space before: DGEMM NN and TN 12 + 3 DMMA
    variants at every class (in `space`; then 4 of two warps per scheduler and 5 k-row layouts), SGEMM NN 9 split-tail variants at `huge` and `giant`
    only."""
    assert len([v for v in space(DGEMM, "gpu", "cuda") if v.codelet == "mma"]) == 12 + 12 + 3 + 4 + 5
    for kind, gains in ((SGEMM, {"small": 0, "medium": 0, "large": 0, "huge": 9, "giant": 9}),
                        (DGEMM, {"small": 0, "medium": 0, "large": 0, "huge": 0, "giant": 0})):
        for cls, gain in gains.items():
            at = space_at(kind, "gpu", "cuda", sizes_for(kind, cls, "gpu"), h100)
            assert len(at) - len(space(kind, "gpu", "cuda")) == gain, (kind, cls)


def _offered(limits: SMLimits) -> list[tuple[Kind, Variant]]:
    huge = sizes_for(SGEMM, "huge", "gpu")
    k8 = [(k, v) for k in (DGEMM, Kind("mm", "float64", "TN"))
          for v in space(k, "gpu", "cuda") if v.kw.get("ik")]
    return k8 + [(SGEMM, v) for v in split_tail_space(SGEMM, huge, limits)]


def test_offered_variants_derive_with_the_footprint_the_slots_assume(h100: SMLimits) -> None:
    for kind, v in _offered(h100):
        src = compile_program(derive(kind, v).final, CUDA).kernels[0].source
        if v.codelet != "tiles-async":
            continue
        threads, shared = tiles_async_footprint(*(v.kw[p] for p in ("tm", "tn", "tk", "rm", "rn",
                                                                     "stages")))
        assert f"__launch_bounds__({threads}, 3)" in src, v
        staged = re.findall(r"__shared__ __align__\(16\) float \w+\[(\d+)\];", src)
        assert sum(int(n) for n in staged) * 4 == shared, v


def test_offered_variants_compile_with_nvrtc(h100: SMLimits, compile_cuda: Any) -> None:
    for kind, v in _offered(h100):
        for k in compile_program(derive(kind, v).final, CUDA).kernels:
            compile_cuda(k.source, "compute_90a", k.build_options, name=f"{k.name}.cu")


def test_untuned_choices_are_unchanged() -> None:
    for n in (1024, 4096):
        sizes = {"M": n, "N": n, "K": n}
        for kind in (SGEMM, DGEMM, Kind("mm", "float64", "TN")):
            got = default_variant(kind, "gpu", sizes, "cuda")
            assert got == CUDA_DEFAULTS[(kind.op, kind.dtype, kind.layout)]
            assert not {"split", "slots", "bound", "ik", "ahead"} & set(got.kw)
    assert space(SGEMM, "gpu", "cuda")[0] == Variant.of("tiles-async", tm=128, tn=64, tk=32,
                                                          rm=8, rn=8, stages=2)
    assert space(DGEMM, "gpu", "cuda")[0] == Variant.of("mma", tm=128, tn=64, tk=16, warps=4,
                                                          staged=4, lines=1)


def test_tune_tries_the_split_tail_with_the_devices_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA tuning run reads the limits through the driver (stubbed here) and measures the
    split tail at `huge` only; nothing is measured for real (measure is replaced)."""
    from liftkit.blas import tune as tune_mod

    driver = stub_driver(H100)
    monkeypatch.setitem(sys.modules, "cuda",
                        SimpleNamespace(bindings=SimpleNamespace(driver=driver)))
    monkeypatch.setitem(sys.modules, "cuda.bindings", SimpleNamespace(driver=driver))
    seen: list[tuple[str, Variant]] = []

    def fake(session: Any, kind: Kind, variant: Variant, sizes: dict[str, int], **_: Any) -> Trial:
        t = Trial(kind, tune_mod.size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((t.size_class, variant))
        t.seconds, t.rate = 1.0, 1.0
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    session = SimpleNamespace(
        device=SimpleNamespace(fingerprint="cuda|stub H100", label="stub H100", ordinal=0),
        device_kind="gpu", backend="cuda", profile=None, forget_choices=lambda: None)
    prof = Profile("cuda|stub H100", "stub H100", "gpu")
    tune_mod.tune(session, [SGEMM], ["large", "huge"], prof,  # type: ignore[arg-type]
                  progress=False, peaks=None, edges=False)
    split = [(c, v) for c, v in seen if v.kw.get("split")]
    assert len(split) == 9 and {c for c, _ in split} == {"huge"}
    assert {v.kw["slots"] for _, v in split} == {396}
    assert len(seen) == 2 * len(space(SGEMM, "gpu", "cuda")) + 9


@pytest.mark.parametrize("regs, slots", [(168, 396), (128, 528), (0, None)])
def test_split_slots_follow_the_built_kernel(h100: SMLimits, regs: int, slots: Any) -> None:
    """On a device, the tuner builds one split kernel per tiling and reads its registers and
    shared memory (cuda.core's kernel attributes, stubbed here): at the cap the bound's 396
    slots stay; a kernel needing 128 registers holds 4 blocks (528 slots); a build that fails
    leaves the bound's slots (the trial reports the failure)."""
    from liftkit.blas.tune import built_slots

    built: list[Variant] = []

    def get(kind: Kind, v: Variant) -> Any:
        built.append(v)
        if not regs:
            raise RuntimeError("NVRTC failed")
        attrs = SimpleNamespace(num_regs=regs, shared_size_bytes=49152)
        return SimpleNamespace(kernels=[SimpleNamespace(attributes=attrs)])

    session = SimpleNamespace(store=SimpleNamespace(get=get))
    offered = space_at(SGEMM, "gpu", "cuda", sizes_for(SGEMM, "huge", "gpu"), h100)
    got = built_slots(session, SGEMM, offered, h100)  # type: ignore[arg-type]
    assert len(built) == 3 and len(got) == len(offered)  # one build per tiling
    assert [v for v in got if not v.kw.get("split")] == [v for v in offered
                                                         if not v.kw.get("split")]
    want = 396 if slots is None else slots
    assert {v.kw["slots"] for v in got if v.kw.get("split")} == {want}
    assert got == offered if want == 396 else got != offered
    assert built_slots(session, SGEMM, offered, None) == offered


def _stub_cuda(monkeypatch: pytest.MonkeyPatch) -> Any:
    driver = stub_driver(H100)
    monkeypatch.setitem(sys.modules, "cuda",
                        SimpleNamespace(bindings=SimpleNamespace(driver=driver)))
    monkeypatch.setitem(sys.modules, "cuda.bindings", SimpleNamespace(driver=driver))
    return SimpleNamespace(
        device=SimpleNamespace(fingerprint="cuda|stub H100", label="stub H100", ordinal=0),
        device_kind="gpu", backend="cuda", profile=None, forget_choices=lambda: None)


def test_tune_measures_guarded_forms_against_the_padded_choice(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After each S/D GEMM NN class's variants, the tuner times at an odd size (n − 24: 1000 for
    1024) the class's choice padded (its copies included: `plan`) and the guarded forms of its
    two fastest variants (vector forms first, split tail and DMMA ik/ahead kept); the guarded
    forms faster than the padded choice become guarded entries, the rest is noted; a second
    run measures nothing. The count is what the GPU tuning of S/D GEMM NN from nothing makes
    (printed with -s); nothing is measured for real (measure is replaced)."""
    from liftkit.blas import tune as tune_mod
    from liftkit.blas.codelets import fit_choice
    from liftkit.blas.gemm import profiled_edge

    session = _stub_cuda(monkeypatch)
    seen: list[tuple[Kind, str, Variant, dict[str, int], bool]] = []

    def rate(kind: Kind, v: Variant, plan: bool) -> float:
        if plan:
            return 50.0
        if v.codelet.startswith("edge-"):  # vector forms beat padding, element copies do not
            return 40.0 if v.kw.get("elems") or (v.codelet == "edge-mma"
                                                 and not v.kw.get("lines")) else 60.0
        base = 100.0 if v.codelet in ("tiles-async", "mma") else 30.0  # CUDA's own first
        return base - len(seen) % 7 - (0 if v.kw.get("split") or v.kw.get("ahead") else 5)

    def fake(session: Any, kind: Kind, variant: Variant, sizes: dict[str, int],
             plan: bool = False, **_: Any) -> Trial:
        t = Trial(kind, tune_mod.size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((kind, t.size_class, variant, dict(sizes), plan))
        t.rate = rate(kind, variant, plan)
        t.seconds = 1.0 / t.rate
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = Profile("cuda|stub H100", "stub H100", "gpu")
    classes = tune_mod.CLASSES
    want_n, want_more = tune_mod.planned_measurements([SGEMM, DGEMM], classes, "gpu", "cuda",
                                                      sm_limits(0, driver=stub_driver(H100)))
    tune_mod.tune(session, [SGEMM, DGEMM], classes, prof,  # type: ignore[arg-type]
                  progress=False, peaks=None)
    aligned = [x for x in seen if x[3]["M"] % 64 == 0]
    odd = [x for x in seen if x[3]["M"] % 64]
    print(f"\nGPU tuning of S/D GEMM NN from nothing (H100 limits): {len(aligned)} variants + "
          f"{len(odd)} guarded/padded = {len(seen)} measurements (bound {want_n} + {want_more})")
    assert len(aligned) == want_n and 0 < len(odd) <= want_more
    for kind in (SGEMM, DGEMM):
        for cls in classes:
            n = tune_mod.SIZES["gpu"]["mm"][cls] - 24
            at = [x for x in odd if x[0] == kind and x[1] == cls]
            assert at and all(x[3] == {"M": n, "N": n, "K": n} for x in at)
            padded = [x for x in at if x[4]]
            guarded = [x[2] for x in at if not x[4]]
            choice = fit_choice(kind, prof.ranked(kind, cls)[0].variant, {"M": n, "N": n, "K": n})
            assert [x[2] for x in padded] == [choice] and at[0][4]  # the padded choice first
            assert all(v.codelet == ("edge-tiles-async" if kind == SGEMM else "edge-mma")
                       for v in guarded)
            vector = [not (v.kw.get("elems") or v.codelet == "edge-mma" and not v.kw.get("lines"))
                      for v in guarded]
            assert vector == sorted(vector, reverse=True) and vector[0]  # vector forms first
            assert len(guarded) <= 2 * tune_mod.EDGE_TOP
            # the guarded entries: the forms faster than the padded choice (here the vector ones)
            entries = prof.guarded(kind, cls)
            assert {e.variant for e in entries} == {v for v, ok in zip(guarded, vector) if ok}
            assert all(e.sizes == {"M": n, "N": n, "K": n} for e in entries)
            note = prof.notes["edges"][f"{kind}|{cls}"]
            assert note["padded"]["variant"] == str(choice) and len(note["guarded"]) == len(guarded)
            # and the library runs the first of them at odd sizes of the class
            s = SimpleNamespace(profile=prof)
            assert profiled_edge(s, kind, {"M": n + 2, "N": n, "K": n}) == entries[0].variant \
                or profiled_edge(s, kind, {"M": n + 2, "N": n, "K": n}) in {e.variant
                                                                            for e in entries}
    # the split tail and DMMA's ik/ahead are kept in the guarded forms offered
    huge = [x[2] for x in odd if x[0] == SGEMM and x[1] == "huge" and not x[4]]
    assert any(v.kw.get("split") for v in huge)
    dmma = [x[2] for x in odd if x[0] == DGEMM and not x[4]]
    assert any(v.kw.get("ik") == 8 and v.kw.get("ahead") for v in dmma)
    assert not any(v.kw.get("group") for v in dmma)
    seen.clear()  # resumed: everything was measured
    tune_mod.tune(session, [SGEMM, DGEMM], classes, prof,  # type: ignore[arg-type]
                  progress=False, peaks=None)
    assert seen == []


def test_guarded_forms_the_shipped_rankings_offer_compile_with_nvrtc(compile_cuda: Any) -> None:
    """With the shipped H100 profile's rankings, the guarded forms the tuner would time for
    S/D GEMM NN (`tune.edge_tasks`: the split tail and DMMA ik/ahead kept, the grouped order
    dropped) derive, and compile with NVRTC where cuda-python is installed."""
    from liftkit.blas.profile import SHIPPED
    from liftkit.blas.tune import edge_tasks

    prof = Profile.load(SHIPPED / "profile-397cb6df054d2a73.json")
    offered: dict[tuple[Kind, Variant], None] = {}
    for kind in (SGEMM, DGEMM):
        for cls in ("large", "huge", "giant"):  # (the classes the profile has)
            tasks = edge_tasks(prof, kind, cls, "gpu")
            assert tasks and tasks[0].mode == "plan"
            assert tasks[0].variant == prof.ranked(kind, cls)[0].variant
            offered.update({(kind, t.variant): None for t in tasks[1:]})
    assert any(k == SGEMM and v.kw.get("split") for k, v in offered)
    assert any(k == DGEMM and v.kw.get("ahead") == 2 and v.kw.get("ik") == 8 for k, v in offered)
    assert not any(v.kw.get("group") for _, v in offered)
    sources = [k for kind, v in offered
               for k in compile_program(derive(kind, v).final, CUDA).kernels]
    for k in sources:
        compile_cuda(k.source, "compute_90a", k.build_options, name=f"{k.name}.cu")


def test_tune_times_the_complex_plan_on_the_real_dtypes_best_kernels(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a complex NN class's `real` plan, the tuner times that plan on the real dtype's two
    fastest kernels of the real product's class (CGEMM 4096: a giant SGEMM) and of the complex
    class, and keeps them as the complex kind's entries with via "real"; the plan itself and
    the other layouts are not timed again, nor anything on a resumed run."""
    from liftkit.blas import tune as tune_mod

    session = _stub_cuda(monkeypatch)
    seen: list[tuple[Kind, str, Variant, Any]] = []

    def fake(session: Any, kind: Kind, variant: Variant, sizes: dict[str, int],
             real: Any = None, **_: Any) -> Trial:
        t = Trial(kind, tune_mod.size_class(kind.op, sizes), variant, dict(sizes))
        seen.append((kind, t.size_class, variant, real))
        t.rate = 50.0 - len(seen) % 5 if real is None else 60.0 + (real.kw.get("split") or 0)
        t.seconds = 1.0 / t.rate
        if real is not None:
            t.variant, t.via = real, "real"
        return t

    monkeypatch.setattr(tune_mod, "measure", fake)
    prof = Profile("cuda|stub H100", "stub H100", "gpu")
    cgemm = Kind("mm", "complex64", "NN")
    tune_mod.tune(session, [SGEMM, cgemm, Kind("mm", "complex64", "NT")], ["huge", "giant"],
                  prof, progress=False, peaks=None, edges=False)  # type: ignore[arg-type]
    real = [(k, c, r) for k, c, _, r in seen if r is not None]
    assert {k for k, _, _ in real} == {cgemm}
    for cls, classes in (("huge", ("giant", "huge")), ("giant", ("giant",))):
        want = list(dict.fromkeys(e.variant for c in classes
                                  for e in prof.ranked(SGEMM, c)[:tune_mod.REAL_TOP]))
        assert [r for _, c, r in real if c == cls] == want
        own = prof.ranked(cgemm, cls, "real")
        assert {e.variant for e in own} == set(want) and own[0].rate >= own[-1].rate
        assert all(e.sizes == tune_mod.sizes_for(cgemm, cls, "gpu") for e in own)
    assert len([1 for k, _, v, r in seen if k == cgemm and v == Variant.of("real")
                and r is None]) == 2  # the plan itself once per class
    seen.clear()
    tune_mod.tune(session, [SGEMM, cgemm], ["huge", "giant"],  # type: ignore[arg-type]
                  prof, progress=False, peaks=None, edges=False)
    assert seen == []
