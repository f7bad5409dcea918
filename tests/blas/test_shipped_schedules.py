"""What the shipped H100 CUDA profile and bundled SGEMM derivations run at 4096³/8192³
(results/issue12/sgemm22, results/issue12/dmma22): every entry of every shipped profile derives;
SGEMM NN takes the tiles-async codelet with the tail split (mm-split-tail), DGEMM NN the DMMA
codelet with fragments read ahead (ahead=2); the codelet options give the kernel of
`sgemm_schedule_derivation` byte for byte and a DMMA kernel other than ik=8's; the guarded forms drop them; the
bundled 4096³/8192³/1024×1024×8192 `mm` derivations replay to the split kernels; NVRTC compiles both."""

from __future__ import annotations

from typing import Any

import pytest

from liftkit.blas.codelets import (
    Kind, Variant, derive, edge_forms, edge_lossy, get_codelet, multiples,
)
from liftkit.blas.gemm import REAL_OF
from liftkit.blas.profile import SHIPPED, Profile, file_name
from liftkit.codegen import CompileOptions, compile_program

CUDA = CompileOptions(dialect="cuda")
H100 = "cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"
PLANS = ("real", "nn", "split")  # plans over other kernels (liftkit.blas.gemm, blas.split)


def _source(low) -> str:  # type: ignore[no-untyped-def]
    return compile_program(low, CUDA).kernels[0].source


def test_every_shipped_entry_derives() -> None:
    for f in sorted(SHIPPED.glob("*.json")):
        prof = Profile.load(f)
        for kind, variant, via in {(e.kind, e.variant, e.via) for e in prof.entries}:
            if via == "real":  # a complex kind's `real` plan: its kernel is the real NN GEMM
                kind = Kind("mm", REAL_OF[kind.dtype], "NN")
            if variant.codelet in PLANS:  # a plan of several kernels, timed as a whole call
                assert get_codelet(variant, kind) is not None, (f.name, kind, variant)
                continue
            assert derive(kind, variant).final is not None, (f.name, kind, variant)


def _profile() -> Profile:
    return Profile.load(SHIPPED / file_name(H100))


@pytest.mark.parametrize("n", [4096, 8192])
def test_the_h100_profile_runs_the_split_tail_and_dmma_ahead(n: int) -> None:
    prof = _profile()
    sizes = {"M": n, "N": n, "K": n}
    s = prof.choose(Kind("mm", "float32", "NN"), sizes, multiples)
    assert s is not None and s.codelet == "tiles-async"
    # each size its measured winner: 4096 (`huge`) split 5 ways, 8192 (`giant`) 4 ways
    assert s.kw["split"] == {4096: 5, 8192: 4}[n] and s.kw["slots"] == 396 and s.kw["bound"] == 3
    d = prof.choose(Kind("mm", "float64", "NN"), sizes, multiples)  # in groups of 4 row tiles
    assert d == Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=3, ik=8, ahead=2,
                           group=4)  # (results/issue15/dmma23; B's segments rotated: fp64-26)
    # complex through `real`: the same real kind at doubled N and K, the class of 2n
    doubled = prof.choose(Kind("mm", "float32", "NN"), {"M": n, "N": 2 * n, "K": 2 * n}, multiples)
    assert doubled is not None and doubled.kw["split"] == 4


def test_the_codelet_options_are_the_measured_kernels() -> None:
    from liftkit.rewrite.rules.mm_schedule import sgemm_schedule_derivation

    v = Variant.of("tiles-async", tm=128, tn=64, tk=32, rm=8, rn=8, stages=2, split=5, slots=396,
                   bound=3)
    got = _source(derive(Kind("mm", "float32", "NN"), v).final)
    want = _source(sgemm_schedule_derivation(4096, 4096, 4096, 128, 64, 32, 8, 8, 2, 5, 396, 3).final)
    # the blas program names its inputs X, Y where the bundled mm names them A, B
    assert got.replace("X", "A").replace("Y", "B") == want.replace("X", "A").replace("Y", "B")
    assert "int* sk_flags" in got and "__launch_bounds__(128, 3)" in got
    assert multiples(Kind("mm", "float32", "NN"), v) == {"M": 128, "N": 64, "K": 32}
    ahead = Variant.of("mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8, ahead=2)
    src = _source(derive(Kind("mm", "float64", "NN"), ahead).final)
    plain = _source(derive(Kind("mm", "float64", "NN"), Variant.of(
        "mma", tm=128, tn=64, tk=16, warps=4, staged=4, lines=1, ik=8)).final)
    assert src != plain and "cp.async.wait_group" in src
    for var in (v, ahead):  # the closest guarded forms keep them (split tail, m16n8k8 ahead)
        forms = edge_forms(var)
        assert forms and all(forms[0].kw.get(k) == var.kw.get(k)
                             for k in ("split", "slots", "bound", "ik", "ahead"))
        assert not edge_lossy(var, forms[0]) and edge_lossy(var, forms[1])


def test_the_bundled_sgemm_derivations_replay_to_the_split_kernel() -> None:
    from liftkit.explore import bundled
    from liftkit.programs.apps import mm
    from liftkit.rewrite.rules.mm_schedule import sgemm_schedule_derivation

    found = {(d.sizes["M"], d.sizes["N"], d.sizes["K"]): d for d in bundled.load_all()
             if d.device == H100 and d.program == "mm"}
    for (m, n, k), args in {(4096, 4096, 4096): (128, 64, 32, 8, 8, 2, 5, 396, 3),
                            (8192, 8192, 8192): (128, 64, 32, 8, 8, 2, 4, 396, 3),
                            (1024, 1024, 8192): (64, 64, 16, 8, 8, 3, 4, 924, 0)}.items():
        d = found[(m, n, k)]
        assert [c.rule for c in d.steps] == ["mm-local-tiles", "tiles-async", "mm-split-tail"]
        want = sgemm_schedule_derivation(m, n, k, *args).final
        assert _source(bundled.low_level_program(d, mm())) == _source(want)


def test_nvrtc_compiles_the_shipped_kernels(compile_cuda: Any) -> None:
    prof = _profile()
    for dt in ("float32", "float64"):
        v = prof.choose(Kind("mm", dt, "NN"), {"M": 4096, "N": 4096, "K": 4096}, multiples)
        assert v is not None
        for k in compile_program(derive(Kind("mm", dt, "NN"), v).final, CUDA).kernels:
            compile_cuda(k.source, "compute_90a", k.build_options, name=f"{k.name}.cu")
