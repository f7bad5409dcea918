"""The DMMA read-ahead loops' fragment reads through a pointer per buffer slot (codegen/cuda_mma
`_Reads`, SLOT_POINTERS): the slot's part of an offset (the loop's tile i mod the stages) is
added to the shared buffer once per tile, each read indexes that pointer by the lane's own
part alone, in bytes (so ptxas reads LDS [R + UR + imm] with the lane's offset kept in a
register instead of adding and scaling per read; off by default: it lost on the device's
compiler, results/issue15/fp64-25b). The same elements are read (the CUDA C against the source
without slot pointers, read for read), NVRTC compiles it; (gpu marker) the kernels against
NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.blas.codelets import Kind, derive, lookup_variant
from liftkit.codegen import CompileOptions, compile_program, cuda_mma

CUDA = CompileOptions(dialect="cuda")
TN64 = "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=1,ik=8,ahead=2)"


def _source(layout: str, text: str, slots: bool) -> str:
    kind = Kind("mm", "float64", layout)
    old = cuda_mma.SLOT_POINTERS
    cuda_mma.SLOT_POINTERS = slots
    try:
        return compile_program(derive(kind, lookup_variant(kind, text)).final, CUDA).kernels[0].source
    finally:
        cuda_mma.SLOT_POINTERS = old


def _hopper_loop(src: str) -> str:
    start = re.search(r"for \(int (i\w*) = 0; \1 < K/", src)
    assert start is not None
    loop = src[start.start():src.index("cp.async.wait_group 0;")]
    return "".join(part.split("#endif")[0] for part in loop.split("#if __CUDA_ARCH__ >= 900")[1:])


@pytest.mark.parametrize("layout,text", [("TN", TN64), ("NN", TN64),
                                         ("NT", TN64.replace(")", ",pairs=1)"))])
def test_slot_pointers_read_the_same_elements(layout: str, text: str) -> None:
    new, old = _hopper_loop(_source(layout, text, True)), _hopper_loop(_source(layout, text, False))
    slots = dict(re.findall(r"double\* (stage\w*_slot\w*) = (stage\w*) \+ ", new))
    assert slots and all(not re.search(r"\bi\b", o) for o in
                         re.findall(r"\(char\*\)stage\w*_slot\w* \+ 8\*\(([^;]*)\)\)\);", new))
    base = dict(re.findall(r"double\* (stage\w*_slot\w*) = stage\w* \+ ([^;]*);", new))

    def reads(text_: str) -> list[str]:  # each read as buffer[slot + lane part]
        text_ = "\n".join(ln for ln in text_.splitlines() if "cp.async" not in ln)  # (copies)
        out = []
        for name, off in re.findall(r"\(\(char\*\)(stage\w*_slot\w*) \+ 8\*\(([^;]*)\)\)\)", text_):
            out.append(f"{slots[name]}[{base[name]} + {off}]")
        for name, off in re.findall(r"\b(stage(?:_2)?)\[([^\]]*)\]", text_):
            out.append(f"{name}[{off}]")
        for name, off in re.findall(r"\(\(double2\*\)(stage(?:_2)?)\)\[([^\]]*)\]", text_):
            out.append(f"{name}[2*({off})]")  # (a vector: its first element)
        return out

    assert len(reads(new)) == len(reads(old))
    for lane in ((0, 0, 0, 0, 0), (3, 2, 1, 1, 5), (7, 3, 1, 0, 2)):
        ev = dict(zip(("lk_g", "lk_t", "lk_warp_m", "lk_warp_n", "i"), lane))

        def value(r: str) -> tuple[str, int]:
            name, off = r.split("[", 1)
            return name, eval(off[:-1].replace("/", "//"), {}, dict(ev))  # noqa: S307 - our C

        assert sorted(map(value, reads(new))) == sorted(map(value, reads(old)))


def test_slot_pointer_reads_build_with_nvrtc(compile_cuda: Any) -> None:
    out = compile_cuda(_source("TN", TN64, True), "compute_90a", name="slots.cu")
    assert "mma.sync.aligned" in out.ptx


@pytest.mark.gpu
def test_slot_pointer_products_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    g = np.random.default_rng(3)
    for layout in ("TN", "NN", "NT"):
        kind = Kind("mm", "float64", layout)
        old, cuda_mma.SLOT_POINTERS = cuda_mma.SLOT_POINTERS, True
        try:
            prog = compile_program(derive(kind, lookup_variant(kind, TN64)).final, CUDA)
        finally:
            cuda_mma.SLOT_POINTERS = old
        A = g.integers(-3, 4, (128, 192) if layout[0] == "T" else (192, 128)).astype(np.float64)
        B = g.integers(-3, 4, (64, 128) if layout[1] == "T" else (128, 64)).astype(np.float64)
        want = (A.T if layout[0] == "T" else A) @ (B.T if layout[1] == "T" else B)
        np.testing.assert_array_equal(runner.run(prog, A, B), want)
