"""FP64 operands copied as k rows kept in blocks of 4 rows (mm-tensor-cores `lines=2`, the `mma`
codelet's lines=2; rules/cuda.py `blocked_position`) or with their 128-byte segments rotated
(lines=3, `segment_position`): each layout is a bijection whose copy rounds fill whole 128-byte
lines of global memory and 512 contiguous bytes of shared memory (lines=3: each global line into
one shared segment), and whose fragment reads (k rows t + 4j, columns g + 8q) hit the 4 quarters
of a bank line; the
product keeps its meaning (interpreter, bit for bit on integers, NN and TN through liftkit.blas)
and prints back; the rule offers it after the k-permuted reads, for the read-ahead loops with
an operand copied as k rows, and refuses it elsewhere (NT, pairs); the CUDA C reads those
operands at a lane offset plus constants (no rotation per read); NVRTC compiles it; (gpu marker)
the kernels against NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from liftkit.codegen import CompileOptions, compile_program
from liftkit.rewrite.rules.cuda import (blocked_chunk, blocked_position, segment_chunk,
                                       segment_position, tensor_core_mm)

from .f64_mma import assert_sound_and_round_trips, ints, tensor_core_offers

CUDA = CompileOptions(dialect="cuda")
TN64 = "mma(tm=64,tn=64,tk=16,warps=4,staged=4,lines=2,ik=8,ahead=2)"
LAYOUTS = {2: (blocked_position, blocked_chunk), 3: (segment_position, segment_chunk)}


@pytest.mark.parametrize("c", [32, 64])
@pytest.mark.parametrize("lines", [2, 3])
def test_blocked_layout_is_a_bijection_with_whole_lines_and_conflict_free_reads(c: int, lines: int) -> None:
    rows = 16
    position, chunk = LAYOUTS[lines]
    pos = [position(i, c) for i in range(rows * c)]
    assert sorted(pos) == list(range(rows * c))
    assert all(chunk(p, c) == i for i, p in enumerate(pos))
    where = {p: divmod(i, c) for i, p in enumerate(pos)}  # position -> (k row, chunk)
    for start in range(0, rows * c, 32):  # a warp's copy round: 32 consecutive positions
        got = [where[p] for p in range(start, start + 32)]
        lines_read = {(r, ch // 8) for r, ch in got}  # 8 chunks = one 128-byte line of global memory
        assert len(lines_read) == 4 and all(
            sum(1 for r, ch in got if (r, ch // 8) == ln) == 8 for ln in lines_read)
        if lines == 3:  # each global line into one 128-byte segment of shared memory
            assert all(len({where_p // 8 for where_p in range(start, start + 32)
                            if (where[where_p][0], where[where_p][1] // 8) == ln}) == 1
                       for ln in lines_read)
    for j in range(rows // 4):  # a fragment read: lane (g, t) reads double g + 8q of k row t + 4j
        for q in range(2 * c // 8):
            for half in (0, 1):  # lanes g 0-3, then 4-7: each 16 lanes one 128-byte wavefront
                banks = {(2 * pos[(t + 4 * j) * c + (g + 8 * q) // 2] + g % 2) % 16
                         for g in range(4 * half, 4 * half + 4) for t in range(4)}
                assert len(banks) == 16, (j, q, half)


@pytest.mark.parametrize("tiles, ik, lines", [((64, 64, 16, 4, 4), 8, 2), ((128, 64, 16, 8, 3), 8, 2),
                                              ((64, 64, 32, 4, 3), 16, 2), ((64, 64, 16, 4, 4), 8, 3),
                                              ((128, 64, 16, 4, 3), 8, 3)])
def test_blocked_product_is_sound_and_round_trips(tiles: tuple[int, ...], ik: int, lines: int) -> None:
    tm, tn, tk, warps, staged = tiles
    d = tensor_core_mm("f64", tm, tn, tk, warps, staged, lines=lines, ik=ik, ahead=2)
    assert d.steps[0].choice.params.get("lines") == lines
    assert_sound_and_round_trips(d.final, tm, tn, tk)


@pytest.mark.parametrize("layout", ["NN", "TN"])
@pytest.mark.parametrize("lines", [2, 3])
def test_blocked_codelet_is_exact(layout: str, lines: int) -> None:
    from liftkit.blas.codelets import Kind, derive, lookup_variant, multiples
    from liftkit.rewrite.rules.corpus import run

    kind = Kind("mm", "float64", layout)
    v = lookup_variant(kind, TN64.replace("lines=2", f"lines={lines}"))
    assert multiples(kind, v) == {"M": 64, "N": 64, "K": 16}
    d = derive(kind, v)
    m, n, k = 64, 128, 48
    a = ints((k, m) if layout[0] == "T" else (m, k), 5)
    b = ints((k, n), 6)
    got = np.asarray(run(d.final, [a, b], {"M": m, "N": n, "K": k})).reshape(m, n)
    np.testing.assert_array_equal(got, (a.T if layout[0] == "T" else a) @ b)


def test_the_rule_offers_blocked_rows_after_pairs_and_refuses_them_elsewhere() -> None:
    from liftkit.blas.codelets import CodeletError, Kind, derive, lookup_variant

    offers = tensor_core_offers(pairs=True, blocked=True)
    first = next(i for i, o in enumerate(offers) if o.get("lines") == 2)
    tail = offers[first:]
    assert all(o.get("lines") in (2, 3) and o["ahead"] == 2 and not o.get("pairs") for o in tail)
    base = [o for o in offers[:first] if o.get("ahead") == 2 and not o.get("pairs")]
    assert [{**o, "lines": True} for o in tail] == base + base  # lines=2 for all, then 3
    from liftkit.rewrite.core import RewriteError

    with pytest.raises(RewriteError, match="applies nowhere"):  # not offered with pairs
        tensor_core_mm("f64", 64, 64, 16, 4, 4, lines=2, ik=8, ahead=2, pairs=True)
    nt = Kind("mm", "float64", "NT")  # both operands stored along k: nothing copied as k rows
    with pytest.raises(CodeletError, match="does not derive"):
        derive(nt, lookup_variant(nt, TN64))


def _loop(src: str) -> str:
    start = re.search(r"for \(int (i\w*) = 0; \1 < K/", src)
    assert start is not None
    return src[start.start():src.index("cp.async.wait_group 0;")]


def test_blocked_reads_are_a_lane_offset_plus_constants_and_compile(compile_cuda: Any) -> None:
    from liftkit.blas.codelets import Kind, derive, lookup_variant

    kind = Kind("mm", "float64", "TN")  # A and B copied as k rows
    src = compile_program(derive(kind, lookup_variant(kind, TN64)).final, CUDA).kernels[0].source
    seg = TN64.replace("lines=2", "lines=3")
    src3 = compile_program(derive(kind, lookup_variant(kind, seg)).final, CUDA).kernels[0].source
    loop3 = _loop(src3).split("#else")[0]
    # lines=3: two lane offsets an operand (the column's 8-double half of a segment)
    for buf in ("stage", "stage_2"):
        offs = set(re.findall(rf"= {buf}\[[^;]*?(\(2\*lk_t \+ lk_g/2(?: \+ 4)?\) % 8)", loop3))
        assert offs == {"(2*lk_t + lk_g/2) % 8", "(2*lk_t + lk_g/2 + 4) % 8"}, offs
    assert "mma.sync.aligned" in compile_cuda(src3, "compute_90a", name="segments.cu").ptx
    reads = re.findall(r"= (stage(?:_2)?)\[([^;]*)\];", _loop(src).split("#else")[0])
    assert len(reads) >= 32  # 16 of A, 16 of B a tile at least
    lane = {}
    for buf, index in reads:
        assert "%" not in index.replace("(i % 4)", "").replace("((i + 1) % 4)", "").replace(
            "lk_g % 2", "").replace("lk_g/2 % 2", ""), index  # no rotation to compute
        terms = index.replace("1024*((i + 1) % 4)", "1024*(i % 4)").split(" + ")
        lane.setdefault(buf, set()).add(" + ".join(sorted(t for t in terms if not t.isdigit())))
    assert all(len(v) == 1 for v in lane.values()), lane  # one lane offset per operand
    assert "mma.sync.aligned" in compile_cuda(src, "compute_90a", name="blocked.cu").ptx


@pytest.mark.gpu
def test_blocked_products_on_the_gpu() -> None:
    cuda = pytest.importorskip("liftkit.backends.cuda")
    devices = cuda.list_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    from liftkit.blas.codelets import Kind, derive, lookup_variant

    runner = cuda.CUDARunner(devices[0], cuda.ModuleCache(disk=False))
    for tiles, ik, lines in [((64, 64, 16, 4, 4), 8, 2), ((128, 64, 16, 8, 3), 8, 2),
                             ((128, 64, 16, 4, 4), 8, 2), ((64, 64, 16, 4, 4), 8, 3),
                             ((128, 64, 16, 8, 3), 8, 3)]:
        d = tensor_core_mm("f64", *tiles, lines=lines, ik=ik, ahead=2)
        A, B = ints((256, 96), 3), ints((96, 192), 4)
        np.testing.assert_array_equal(runner.run(compile_program(d.final, CUDA), A, B), A @ B)
    kind = Kind("mm", "float64", "TN")
    for text in (TN64, "mma(tm=128,tn=64,tk=16,warps=4,staged=4,lines=3,ik=8,ahead=2,group=8)",
                 "mma(tm=128,tn=64,tk=16,warps=8,staged=3,lines=3,ik=8,ahead=2)"):
        d = derive(kind, lookup_variant(kind, text))
        At, B = ints((96, 1024), 7), ints((96, 192), 8)
        got = runner.run(compile_program(d.final, CUDA), At, B)
        np.testing.assert_array_equal(np.asarray(got).reshape(1024, 192), At.T @ B)
