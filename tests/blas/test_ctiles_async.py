"""The complex FFMA tiles (codelet `ctiles-async`): mm-tiles-async over complex64 scalars, each
complex multiply-add four FMAs (rules/mm.py `mad_fma_cfloat`), the tiles copied by 8-byte
cp.async. Soundness in the interpreter (bit for bit on integer-valued operands), the CUDA C
(NVRTC, no GPU needed: 4·rm·rn·tk fma.rn.f32 per tile step, 8-byte copies), the tuning space,
and on a CUDA GPU liftkit.blas running it per the profile for every layout."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.blas import Kind, Profile, Session, Variant
from liftkit.blas.codelets import CodeletError, derive, multiples, space
from liftkit.blas.profile import Entry
from liftkit.semantics import interpret

CT = Variant.of("ctiles-async", tm=64, tn=64, tk=16, rm=4, rn=8, stages=2)


def _operands(layout: str, m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, ...]:
    """(want, X, Y): op(X)·op(Y) from integer-valued complex64 operands stored as the layout
    says (T: transposed, C: conjugate transposed, R: conjugated)."""
    rng = np.random.default_rng(seed)
    cplx = lambda shape: (rng.integers(-8, 9, shape) + 1j * rng.integers(-8, 9, shape)  # noqa: E731
                          ).astype(np.complex64)
    A, B = cplx((m, k)), cplx((k, n))

    def stored(x: np.ndarray, letter: str) -> np.ndarray:
        y = np.conj(x) if letter in "RC" else x
        return (y.T if letter in "TC" else y).copy()

    return A @ B, stored(A, layout[0]), stored(B, layout[1])


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "CN", "NR", "RN-rot"])
def test_ctiles_async_is_sound(layout: str) -> None:
    """Every layout (conjugations through the product, transposes through the views) derives,
    needs the tiles' multiples, and equals op(A)·op(B) bit for bit in the interpreter; rot=1
    without kt rotates A's rows of 8-byte complex numbers in local memory."""
    layout, _, rot = layout.partition("-")
    k = Kind("mm", "complex64", layout)
    v = Variant.of("ctiles-async", tm=32, tn=32, tk=16, rm=4, rn=4, stages=2) \
        if layout in ("NN", "TN") else Variant.of("ctiles-async", **CT.kw, rot=1) if rot else CT
    tm, tn, tk = v.kw["tm"], v.kw["tn"], v.kw["tk"]
    assert multiples(k, v) == {"M": tm, "N": tn, "K": tk}
    want, X, Y = _operands(layout, 2 * tm, tn, 3 * tk, 7)
    np.testing.assert_array_equal(np.asarray(interpret(derive(k, v).final, X, Y)), want)


KT = [("TN", Variant.of("ctiles-async", tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, kt=1)),
      ("NT", Variant.of("ctiles-async", tm=64, tn=64, tk=16, rm=4, rn=8, stages=2, kt=1, rot=1)),
      ("CR", Variant.of("ctiles-async", tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, kt=1)),
      ("NC", Variant.of("ctiles-async", tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, kt=1, rot=1))]


@pytest.mark.parametrize("layout,v", KT, ids=[k[0] for k in KT])
def test_transposed_operands_tiled_as_stored_are_sound(layout: str, v: Variant) -> None:
    """kt=1 over complex scalars (mm-local-tiles kt, rules/mm_layouts.py, w=1): Aᵀ or Bᵀ tiled
    as stored, Bᵀ's rows rotated in local memory (rot=1): op(A)·op(B) bit for bit; its copies
    of the transposed operand run along its stored rows (8-byte cp.async of consecutive
    elements by consecutive work-items)."""
    from liftkit.codegen import CompileOptions, compile_program

    k = Kind("mm", "complex64", layout)
    d = derive(k, v)
    assert [s.choice.params.get("kt") for s in d.steps if s.choice.rule == "mm-local-tiles"] \
        in ([1], [])  # (the macro's own step: mm-tiles-async names kt itself)
    want, X, Y = _operands(layout, 2 * v.kw["tm"], 2 * v.kw["tn"], 3 * v.kw["tk"], 11)
    np.testing.assert_array_equal(np.asarray(interpret(d.final, X, Y)), want)
    src = compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source
    copies = re.findall(r'"l"\(&([XY])\[([^\]]*)\]\)', src)
    stored = "X" if layout[0] in "TC" else "Y"
    # the transposed operand's copies: the local x id (l_id of the copy's inner mapLcl) adds 1
    inner = [addr for name, addr in copies if name == stored]
    assert inner and all(re.search(r"(^|[ +])l_id_\d+( |$|\))|% 16\]?$", a) for a in inner)
    assert "cp.async.ca.shared.global [%0], [%1], 8;" in src


@pytest.mark.parametrize("layout", ["NN", "TN", "NC"])
def test_the_split_tail_adds_complex_parts(layout: str, compile_cuda: Any) -> None:
    """split/slots: mm-split-tail over the complex tile loop (its last partial wave, here the
    whole small grid, split along K): sound bit for bit; the fix-up passes each complex
    accumulator through the workspace as two floats; NVRTC compiles it."""
    from liftkit.codegen import CompileOptions, compile_program

    k = Kind("mm", "complex64", layout)
    kt = {"kt": 1} if layout != "NN" else {}
    v = Variant.of("ctiles-async", tm=64, tn=32, tk=16, rm=8, rn=4, stages=2, split=3,
                   slots=396, **kt)
    want, X, Y = _operands(layout, 128, 64, 96, 13)
    d = derive(k, v)
    np.testing.assert_array_equal(np.asarray(interpret(d.final, X, Y)), want)
    src = compile_program(d.final, CompileOptions(dialect="cuda")).kernels[0].source
    assert "int* sk_flags" in src and "float* sk_ws" in src and "cfloat_new((" in src
    assert compile_cuda(src, "compute_90a", name="cgemm_split.cu").ptx


@pytest.mark.parametrize("layout,mad", [
    ("NN", "fma(-x.y, y.y, fma(x.x, y.x, acc.x)), fma(x.y, y.x, fma(x.x, y.y, acc.y))"),
    ("RC", "fma(-x.y, y.y, fma(x.x, y.x, acc.x)), fma(-x.y, y.x, fma(x.x, -y.y, acc.y))")])
def test_the_kernel_is_four_fmas_per_complex_multiply_add(layout: str, mad: str,
                                                          compile_cuda: Any) -> None:
    """The CUDA C copies 8-byte elements by cp.async (two stages of both tiles) and its PTX
    has 4·rm·rn·tk fma.rn.f32 (no separate multiplies and adds), conjugated factors too
    (their signs in the FMAs: conj(x)·conj(y) for RC)."""
    from liftkit.codegen import CompileOptions, compile_program

    tm, tn, tk, rm, rn, s = 64, 64, 16, 4, 8, 2
    src = compile_program(derive(Kind("mm", "complex64", layout), CT).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    assert "cp.async.ca.shared.global [%0], [%1], 8;" in src
    assert f"cfloat stage[{tm * tk * s}];" in src and f"cfloat stage_2[{tn * tk * s}];" in src
    assert mad in src
    ptx = compile_cuda(src, "compute_90a", name="cgemm.cu").ptx
    assert ptx.count("fma.rn.f32") == 4 * rm * rn * tk
    assert "mul.rn.f32" not in ptx and "add.rn.f32" not in ptx  # (sub: an add of -x)


def test_ctiles_async_is_a_cuda_complex64_codelet() -> None:
    got = [v for v in space(Kind("mm", "complex64", "NN"), "gpu", "cuda")
           if v.codelet == "ctiles-async"]
    assert CT in got and len(got) >= 8
    for lay in ("NT", "TN", "RC"):
        assert CT in space(Kind("mm", "complex64", lay), "gpu", "cuda")
    assert Variant.of("real") in space(Kind("mm", "complex64", "NN"), "gpu", "cuda")
    for kind, backend in ((Kind("mm", "complex64", "NN"), "opencl"),
                          (Kind("mm", "complex128", "NN"), "cuda"),
                          (Kind("mm", "float32", "NN"), "cuda")):
        assert all(v.codelet != "ctiles-async" for v in space(kind, "gpu", backend))
    kt = {lay: [v for v in space(Kind("mm", "complex64", lay), "gpu", "cuda") if v.kw.get("kt")]
          for lay in ("NN", "RN", "NT", "TN", "NC", "CR")}
    assert not kt["NN"] and not kt["RN"]  # kt needs a transposed operand
    # (kt alone, rot=1, rot=3 over CTILES_KT's tilings for NT/NC; kt alone for TN/CR)
    assert len(kt["NT"]) == len(kt["NC"]) == 9 and len(kt["TN"]) == len(kt["CR"]) == 3
    assert not any(v.kw.get("rot") for v in kt["TN"] + kt["CR"])  # rot: Bᵀ's rows only
    with pytest.raises(CodeletError, match="has none"):
        derive(Kind("mm", "complex64", "NN"), Variant.of("ctiles-async", **CT.kw, kt=1))
    with pytest.raises(CodeletError, match="complex64 only"):
        derive(Kind("mm", "float32", "NN"), CT)


# -- on a CUDA GPU ------------------------------------------------------------------------------
def _profiled(session: Session, variants: dict[str, Variant]) -> None:
    """A profile whose choice for complex64 GEMMs of each layout (every class) is its variant."""
    prof = Profile(session.device.fingerprint, session.device.label, "gpu")
    prof.add(Entry(Kind("mm", "complex64", lay), c, {"M": 1024, "N": 1024, "K": 1024}, v,
                   1e-3, 1.0, "GFLOP/s")
             for lay, v in variants.items() for c in ("small", "medium", "large", "huge"))
    session.profile = prof
    session.forget_choices()


KT_128 = {"tm": 128, "tn": 64, "tk": 16, "rm": 8, "rn": 4, "stages": 2, "kt": 1}
SPLIT = {"split": 2, "slots": 396}  # (a small grid: every tile split)
PROFILES = {"plain": {"NN": CT, "NT": CT, "TN": CT},
            "kt": {"NN": CT, "NT": Variant.of("ctiles-async", **KT_128, rot=1),
                   "TN": Variant.of("ctiles-async", **KT_128)},
            "split": {"NN": Variant.of("ctiles-async", **CT.kw, **SPLIT),
                      "NT": Variant.of("ctiles-async", **KT_128, rot=1, **SPLIT),
                      "TN": Variant.of("ctiles-async", **KT_128, **SPLIT)}}


@pytest.mark.gpu
@pytest.mark.parametrize("which", PROFILES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False),
                                             ("C", False), (False, "C"), (True, True)])
def test_blas_runs_complex_gemm_on_ctiles_async(cuda_session: Session, which: str, trans_a: Any,
                                                trans_b: Any) -> None:
    """CuPy operands in and out; the profile's ctiles-async runs every layout (TT through NN,
    Aᴴ through CN's kernel, Bᴴ through NC's; sizes off the tiles through the real plan), within
    rounding of complex128; with kt the transposed operands tiled as stored."""
    cp = pytest.importorskip("cupy")
    _profiled(cuda_session, PROFILES[which])
    rng = np.random.default_rng(1)
    for m, n, k in ((256, 192, 64), (100, 70, 50)):
        shape_a = (k, m) if trans_a else (m, k)
        shape_b = (n, k) if trans_b else (k, n)
        A = (rng.uniform(-1, 1, shape_a) + 1j * rng.uniform(-1, 1, shape_a)).astype(np.complex64)
        B = (rng.uniform(-1, 1, shape_b) + 1j * rng.uniform(-1, 1, shape_b)).astype(np.complex64)
        op = {False: lambda x: x, True: lambda x: x.T, "C": lambda x: np.conj(x.T)}
        want = op[trans_a](A.astype(np.complex128)) @ op[trans_b](B.astype(np.complex128))
        C = cuda_session.gemm(cp.asarray(A), cp.asarray(B), trans_a=trans_a,
                              trans_b=trans_b).result()
        got = cp.asnumpy(C)
        assert np.abs(got - want).max() <= 1e-5 * k * np.abs(want).max()
    kind = Kind("mm", "complex64", "TN")
    assert cuda_session.choose(kind, {"M": 256, "N": 192, "K": 64}) == PROFILES[which]["TN"]


def test_the_h100_profile_runs_cgemm_on_the_faster_of_ctiles_and_real() -> None:
    """The shipped H100 profile (results/issue15/cgemm24 runs 1-2, per call beside cuBLAS):
    CGEMM on ctiles-async 128×64×16 8×4 — NN as stored, TN with Aᵀ tiled as stored, NT with
    Bᵀ tiled as stored and its rows rotated — except NN and NT at 4096³ (the real plan);
    conjugating layouts follow their plain ones; where results/issue15/cgemm24b shipped a
    faster form (its `notes.cgemm24b.won`, by ship.py), that one, and where cgemm25 did after
    it (`notes.cgemm25.won`: rows swizzled), that one."""
    from liftkit.blas.profile import SHIPPED, file_name
    from liftkit.blas.session import _tuned_kinds

    prof = Profile.load(SHIPPED / file_name("cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"))
    tiles = {"tm": 128, "tn": 64, "tk": 16, "rm": 8, "rn": 4, "stages": 2}
    want = {"NN": Variant.of("ctiles-async", **tiles),
            "NT": Variant.of("ctiles-async", **tiles, kt=1, rot=1),
            "TN": Variant.of("ctiles-async", **tiles, kt=1)}
    won = {**prof.notes.get("cgemm24b", {}).get("won", {}),
           **prof.notes.get("cgemm25", {}).get("won", {})}
    for lay in ("NN", "NT", "TN"):
        for n, cls in ((1024, "large"), (4096, "huge"), (8192, "giant")):
            got = prof.choose(Kind("mm", "complex64", lay), {"M": n, "N": n, "K": n}, multiples)
            shipped = Variant.of("real") if n == 4096 and lay != "TN" else want[lay]
            if f"{lay}|{cls}" in won:
                shipped = Variant.from_json(won[f"{lay}|{cls}"]["variant"])
            assert got == shipped, (lay, n, got)
    assert _tuned_kinds(Kind("mm", "complex64", "RC"))[1] == Kind("mm", "complex64", "NT")


def test_sizes_off_the_complex_tiles_take_the_real_plan() -> None:
    """ctiles-async has no guarded form: where its tiles would pad, the session runs the real
    plan instead (whose real kernel has guarded forms and odd-size entries), as DGEMM NT's own
    DMMA kernel gives way to the nn plan."""
    from liftkit.blas.codelets import fit_choice

    nn = Kind("mm", "complex64", "NN")
    best = Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2)
    assert fit_choice(nn, best, {"M": 1024, "N": 1024, "K": 1024}) == best
    for odd in ({"M": 1000, "N": 1000, "K": 1000}, {"M": 1023, "N": 1025, "K": 999},
                {"M": 1024, "N": 1024, "K": 1000}):
        assert fit_choice(nn, best, odd) == Variant.of("real")


# -- the register caps and the whole-grid split the tuner tries on a CUDA device ----------------
def test_the_tuner_tries_the_complex_tiles_capped_and_split_across_a_small_grid() -> None:
    """`ctiles_split_space` (in `space_at` on CUDA): for layouts tiled as stored (kt=1) or with
    rows swizzled (rot=3: NN's A, NT's A and Bᵀ), whose kernels exceed 128 registers (one block
    per SM), the 128×64 tiles (2 or 3 stages) and the 64×64 tiles capped at 2 and 4 resident
    blocks per SM; where the grid fills at most half of those slots (1024²: 128 tiles of 128×64
    for 264, 256 of 64×64 for 528) also split in 2 along K across the whole grid; nothing for
    other dtypes; every one derives (NT's and NN's splits bit for bit in the interpreter)."""
    from liftkit.backends.cuda.occupancy import SMLimits
    from liftkit.blas.codelets import ctiles_split_space, space_at

    h100 = SMLimits(132, 65536, 233472, 2048, 32, 1024)
    big = {"tm": 128, "tn": 64, "tk": 16, "rm": 8, "rn": 4, "stages": 2}
    small = {"tm": 64, "tn": 64, "tk": 16, "rm": 4, "rn": 8, "stages": 2}
    b2, b4, s2 = {"bound": 2, "slots": 264}, {"bound": 4, "slots": 528}, {"split": 2}
    at = {n: {"M": n, "N": n, "K": n} for n in (1024, 4096)}
    ct = lambda **kw: Variant.of("ctiles-async", **kw)  # noqa: E731
    nt, nn = {"kt": 1, "rot": 3}, {"rot": 3}  # (rows swizzled: results/issue15/cgemm25)
    deep = {**big, "stages": 3}
    want = {("NN", 1024): [ct(**big, **nn, **b2), ct(**big, **nn, **b2, **s2),
                           ct(**deep, **nn, **b2), ct(**deep, **nn, **b2, **s2),
                           ct(**small, **nn, **b4), ct(**small, **nn, **b4, **s2)],
            ("NN", 4096): [ct(**big, **nn, **b2), ct(**deep, **nn, **b2), ct(**small, **nn, **b4)],
            ("NT", 1024): [ct(**big, **nt, **b2), ct(**big, **nt, **b2, **s2),
                           ct(**deep, **nt, **b2), ct(**deep, **nt, **b2, **s2),
                           ct(**small, **nt, **b4), ct(**small, **nt, **b4, **s2)],
            ("NT", 4096): [ct(**big, **nt, **b2), ct(**deep, **nt, **b2), ct(**small, **nt, **b4)],
            ("TN", 4096): [ct(**big, kt=1, **b2), ct(**deep, kt=1, **b2),
                           ct(**small, kt=1, **b4)]}
    for (lay, n), vs in want.items():
        kind = Kind("mm", "complex64", lay)
        assert ctiles_split_space(kind, at[n], h100) == vs, (lay, n)
        got = space_at(kind, "gpu", "cuda", at[n], h100)
        assert got[len(got) - len(vs):] == vs and got[:len(got) - len(vs)] == \
            space(kind, "gpu", "cuda")
        for v in vs:
            assert multiples(kind, v) == {"M": v.kw["tm"], "N": v.kw["tn"], "K": 16}
    for dt in ("complex128", "float32"):
        assert ctiles_split_space(Kind("mm", dt, "NT"), at[1024], h100) == []
    for lay, v in (("NT", ct(**big, **nt, **b2, **s2)), ("NN", ct(**small, **nn, **b4, **s2))):
        want_, X, Y = _operands(lay, 128, 64, 48, 17)
        np.testing.assert_array_equal(
            np.asarray(interpret(derive(Kind("mm", "complex64", lay), v).final, X, Y)), want_)


@pytest.mark.parametrize("layout,v", [
    ("NT", Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, kt=1, rot=1,
                      bound=2, slots=264)),
    ("TN", Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=2, kt=1,
                      bound=2, slots=264)),
    ("NT", Variant.of("ctiles-async", tm=128, tn=64, tk=16, rm=8, rn=4, stages=3, kt=1, rot=1,
                      bound=2, slots=264))])
def test_the_cap_holds_the_tiled_as_stored_kernels_to_128_registers(layout: str, v: Variant,
                                                                     compile_cuda: Any) -> None:
    """__launch_bounds__(256, 2): NVRTC (sm_90a, ptxas -v) keeps NT's and TN's kt kernels at
    ≤ 128 registers without spilling (uncapped: 143-156, one block per SM)."""
    from liftkit.codegen import CompileOptions, compile_program

    src = compile_program(derive(Kind("mm", "complex64", layout), v).final,
                          CompileOptions(dialect="cuda")).kernels[0].source
    assert "__launch_bounds__(256, 2)" in src
    log = compile_cuda(src, "sm_90a", ["--ptxas-options=-v"], name="cgemm_bound.cu").log
    regs = re.search(r"Used (\d+) registers", log)
    assert regs and int(regs.group(1)) <= 128, log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
