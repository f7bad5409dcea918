"""The shipped H200 profiles (results/issue15/h200-26): found for the fingerprint the GPU
machine's H200 gives (CUDA: name, compute capability, the driver's CUDA version; OpenCL: the
platform, name and driver version), also after a driver update, and choosing a measured
derivation for every GEMM, GEMV and transpose of the per-call table."""

from __future__ import annotations

from pathlib import Path

import pytest

from liftkit.blas.codelets import Kind, fit_choice, multiples
from liftkit.blas.profile import SHIPPED, file_name, find_profile, find_profile_any_driver

H200_CUDA = "cuda|NVIDIA H200|sm9.0|driver13000"  # what run1/card.txt printed on the H200
H100_CUDA = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"
H200_OPENCL = "NVIDIA CUDA|NVIDIA H200|580.159.04"


def test_the_h200_profile_is_found_by_its_fingerprint(tmp_path: Path) -> None:
    prof = find_profile(H200_CUDA, [tmp_path, SHIPPED])  # (an empty user directory first)
    assert prof is not None and prof.fingerprint == H200_CUDA and prof.device_type == "gpu"
    assert (SHIPPED / file_name(H200_CUDA)).is_file()
    assert prof.label == "CUDA / NVIDIA H200 (device 0)" and prof.peaks is not None
    # tuned on the H200 itself, seeded by the H100's profile (whose entries it re-measured)
    assert list(prof.notes["seeded"]) == [H100_CUDA]
    later = find_profile_any_driver("cuda|NVIDIA H200|sm9.0|driver13010", [tmp_path, SHIPPED])
    assert later is not None and later.fingerprint == H200_CUDA
    h100 = find_profile(H100_CUDA, [SHIPPED])
    assert h100 is not None and h100.fingerprint != prof.fingerprint
    # the 1024³ GEMMs, GEMVs and transposes timed back to back (`tune --timing batch`)
    batch = prof.notes["batch_timing"]
    assert batch["seconds"] == 1e-3 and "mm/float32/NN|large" in batch["classes"]
    assert "gemv/float32/T|large" in batch["classes"]


def test_the_h200_opencl_profile_is_found_by_its_fingerprint() -> None:
    prof = find_profile(H200_OPENCL, [SHIPPED])
    assert prof is not None and prof.label == "NVIDIA CUDA / NVIDIA H200"
    assert list(prof.notes["seeded"]) == ["NVIDIA CUDA|NVIDIA H100 80GB HBM3|580.159.04"]
    for dt in ("float32", "float64", "complex64", "complex128"):
        for n in (128, 512, 1024):
            sizes = {"M": n, "N": n, "K": n}
            assert prof.choose(Kind("mm", dt, "NN"), sizes, multiples) is not None


def test_the_h200_runs_sgemm_1024_on_its_per_call_winner() -> None:
    """Batch timing ranked SGEMM 1024³'s 64×64 tiles first (per call 1.02x cuBLAS in run 2,
    1.01x as run 1's untuned default), where one launch per timed run had ranked 64×128 first
    (0.94x per call in run 1)."""
    from liftkit.blas.codelets import Variant

    prof = find_profile(H200_CUDA, [SHIPPED])
    assert prof is not None
    got = prof.choose(Kind("mm", "float32", "NN"), {"M": 1024, "N": 1024, "K": 1024}, multiples)
    assert got == Variant.of("tiles-async", tm=64, tn=64, tk=16, rm=8, rn=8, stages=2)


@pytest.mark.parametrize("op, dtype, layout, n", [
    *[("mm", dt, lay, n) for dt in ("float32", "float64", "complex64", "complex128")
      for lay in ("NN", "TN") for n in (1024, 4096)],
    *[("mm", dt, "NT", n) for dt in ("float64", "complex64", "complex128") for n in (1024, 4096)],
    *[("gemv", dt, lay, n) for dt in ("float32", "float64") for lay in "NT" for n in (4096, 8192)],
    *[("transpose", dt, "-", n) for dt in ("float32", "float64") for n in (4096, 8192)],
])
def test_the_h200_profile_chooses_for_the_table(op: str, dtype: str, layout: str, n: int) -> None:
    """A measured entry, of the class the size falls in, whose padding is acceptable (float32 NT
    has none: its default, the nn plan, as on the H100)."""
    prof = find_profile(H200_CUDA, [SHIPPED])
    assert prof is not None
    kind = Kind(op, dtype, layout)
    sizes = {"M": n, "N": n, "K": n} if op == "mm" else {"M": n, "N": n}
    v = prof.choose(kind, sizes, multiples)
    assert v is not None, kind
    fit_choice(kind, v, sizes)  # derives at these sizes


def test_the_h200_refresh_runs_dgemm_on_the_k_row_layouts() -> None:
    """results/issue15/h200-26b: DGEMM TN re-tuned on the H200 with the H100's k-row layouts
    (mma lines=3: 128-byte segments rotated) ranks them first at 1024³ and 4096³ (per call 1.02x /
    0.98x cuBLAS, the old lines=1 choices 0.92x / 0.90x in the same run), NN likewise (lines=2 at
    1024³: 1.07x, was 0.96x); the classes are batch-timed."""
    from liftkit.blas.codelets import Variant

    prof = find_profile(H200_CUDA, [SHIPPED])
    assert prof is not None
    for lay, n, lines in (("NN", 1024, 2), ("NN", 4096, 3), ("TN", 1024, 3), ("TN", 4096, 3)):
        got = prof.choose(Kind("mm", "float64", lay), {"M": n, "N": n, "K": n}, multiples)
        assert isinstance(got, Variant) and got.codelet == "mma", (lay, n, got)
        assert got.kw["lines"] == lines, (lay, n, got)
        assert f"mm/float64/{lay}|{'large' if n == 1024 else 'huge'}" in \
            prof.notes["batch_timing"]["classes"]


def test_the_h200_refresh_measured_every_transpose_and_the_odd_follow_ups() -> None:
    """The transposes explored in full (13 variants a class, the 64-wide tiles among them: none
    beat tiles-t r=32 on the H200); CGEMM 1023x1025x999 has its one wave of swizzled guarded
    complex tiles as the entry there (39.9 TFLOP/s tuned against the real plan's 11.7)."""
    prof = find_profile(H200_CUDA, [SHIPPED])
    assert prof is not None
    for dt in ("float32", "float64"):
        for cls in ("large", "huge"):
            ranked = prof.ranked(Kind("transpose", dt), cls)
            assert len(ranked) == 13 and ranked[0].variant.kw["r"] == 32, (dt, cls)
            assert any(e.variant.kw.get("r") == 64 for e in ranked)
    odd = {"M": 1023, "N": 1025, "K": 999}
    here = prof.at_sizes(Kind("mm", "complex64", "NN"), odd, via="here")
    assert [e.variant.codelet for e in here] == ["edge-ctiles-async"]
    assert "mm/complex64/NN|large" in prof.notes["splits"]


def test_the_h200_refresh_runs_zgemm_4096_and_the_gemvs_on_the_h100s_later_winners() -> None:
    """results/issue15/h200-26c: re-tuned on the H200 seeded by the H100 profile, ZGEMM NN/NT
    4096³ rank zmma first (per call 0.98x cuBLAS, was 0.95x on the real plan), TN keeps the real
    plan, whose kernel is now the mma lines=3 k-row layout (ranked first via real); ZGEMM 1000³ runs edge-zmma (1.04x, was 0.87x);
    GEMV T 4096² copies y first (p=1) with the streamed load hint (h=1)."""
    from liftkit.blas.codelets import Variant

    prof = find_profile(H200_CUDA, [SHIPPED])
    assert prof is not None
    cube = {"M": 4096, "N": 4096, "K": 4096}
    for lay, group in (("NN", 8), ("NT", 2)):
        got = prof.choose(Kind("mm", "complex128", lay), cube, multiples)
        assert isinstance(got, Variant) and got.codelet == "zmma", (lay, got)
        assert got.kw["group"] == group and got.kw["tm"] == 128 and got.kw["tn"] == 32
    assert prof.choose(Kind("mm", "complex128", "TN"), cube, multiples) == Variant.of("real")
    real = prof.ranked(Kind("mm", "complex128", "NN"), "huge", via="real")
    assert real[0].variant.codelet == "mma" and real[0].variant.kw["lines"] == 3
    for lay in ("NN", "NT", "TN"):
        odd = prof.at_sizes(Kind("mm", "complex128", lay), {"M": 1000, "N": 1000, "K": 1000})
        assert odd and odd[0].variant.codelet == "edge-zmma", (lay, odd)
    for dt in ("float32", "float64"):
        got = prof.choose(Kind("gemv", dt, "T"), {"M": 4096, "N": 4096}, multiples)
        assert isinstance(got, Variant) and got.kw.get("p") == 1 and got.kw.get("h") == 1, got
    assert "h200_26c" in prof.notes
