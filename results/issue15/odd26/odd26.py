"""SGEMM at 1023×1025×999 on guarded tiles whose rows of A are rotated or swizzled in shared
memory (`rot`), beside the shipped entry and cuBLAS (CuPy), session 26 (helper H1).

    python results/issue15/odd26/odd26.py --build kernels.pkl.gz [--ptxas]   # no GPU
    python results/issue15/odd26/odd26.py --out DIR --kernels kernels.pkl.gz [--rounds 5]

Why: the shipped entry (`edge-tiles-async` 256×32×16, 8×8 blocks, 4-byte copies, split along K
in 3: 0.76x cuBLAS on the H100, results/final25/run2) runs warps of 4 × 8 work-items that read
one float4 of K from 8 rows of A at once; rows of 16 floats (64 bytes) put rows r and r + 2 on
the same banks: 4 wavefronts per LDS.128 of A where 1 would do. Counting a warp's shared-memory
wavefronts per 16-deep K tile: A 8 rows × 4 K vectors × 4-way = 128, B 32, the 4-byte cp.async
stores 36: 196 against 1024 FFMA issue slots; with A's rows swizzled (rot=2: vector j of row r
at j xor (r/2 mod 4)) or rotated (rot=1) A's reads take 32, 100 in all. tk = 32 rows are 128
bytes: 8-way without, conflict-free with. mm-local-tiles' rot now applies over padded views
and element copies (rules/mm.py `rotated_rows(lanes=…)`), mm-edge-tiles offers rot 1 and 2
for float4 tiles.

Rows and method: odd25b.py's (`build`, `gpu`: each row's variant put in the in-memory H100
profile as an entry at its sizes, the plan checked to run it, C NaN-poisoned and compared with
cuBLAS's product after the first call and after the timing, 5 alternating rounds per call).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("odd25b", HERE.parent / "odd25b" / "odd25b.py")
odd25b = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(odd25b)  # type: ignore[union-attr]
SIZES = odd25b.SIZES


def _e(tm: int, tn: int, tk: int, rm: int, rn: int, stages: int = 2, elems: int = 1,
       rot: int = 0, split: int = 0, slots: int = 0, bound: int = 0) -> tuple:
    return ("edge-tiles-async", dict(
        tm=tm, tn=tn, tk=tk, rm=rm, rn=rn, stages=stages, **({"elems": 1} if elems else {}),
        **({"rot": rot} if rot else {}), **({"split": split, "slots": slots} if split else {}),
        **({"bound": bound} if bound else {})))


def _s3(rot: int = 0, **kw: int) -> tuple:
    """256×32×16 8×8 split in 3 at 396 slots, bound 3 (the shipped entry's grid), with `kw`."""
    args = dict(tm=256, tn=32, tk=16, rm=8, rn=8, split=3, slots=396, bound=3)
    args.update(kw)
    return _e(**args, rot=rot)  # type: ignore[arg-type]


ROWS = [("odd", "auto (no entry)", None),
        ("odd", "shipped 256x32x16 8x8 split3", _s3()),
        ("odd", "rot1 256x32x16 8x8 split3", _s3(1)),
        ("odd", "rot2 256x32x16 8x8 split3", _s3(2)),
        ("odd", "rot2 256x32x32 8x8 split3", _s3(2, tk=32)),
        ("odd", "rot1 256x32x32 8x8 split3", _s3(1, tk=32)),
        ("odd", "rot2 256x32x16 16x4 split3", _s3(2, rm=16, rn=4)),
        ("odd", "rot2 256x32x16 8x8 s3 split3", _s3(2, stages=3)),
        ("odd", "rot2 256x32x16 8x8 split2", _s3(2, split=2, bound=0)),
        ("odd", "rot2 128x64x32 split4 b3", _s3(2, tm=128, tn=64, tk=32, split=4)),
        ("odd", "rot2 128x64x32 split6", _s3(2, tm=128, tn=64, tk=32, split=6, bound=0)),
        ("odd", "rot2 128x32x16 split2 528 b4", _s3(2, tm=128, split=2, slots=528, bound=4)),
        ("odd", "rot2 float4 256x32x16 split3 padded", _s3(2, elems=0)),
        ("odd", "shipped again", _s3()),
        ("1000", "auto", None),
        ("1000", "rot2 64x64x16 split2 924", _e(64, 64, 16, 8, 8, elems=0, rot=2, split=2,
                                                 slots=924)),
        ("4097", "auto", None)]


# run 2 (`--run2`): run 1's two best (A's rows swizzled: 16×4 and 8×8 blocks, split in 3) timed
# again beside the session-25 entry and the plan without entries, each twice in another order;
# 16×4 without the register bound and with 3 stages; 256×32×32 with 8×4 blocks (256 work-items,
# 128 registers) split in 2 at 264 slots (two blocks, 16 warps, on every multiprocessor)
ROWS2 = [("odd", "auto (no entry)", None),
         ("odd", "session-25 256x32x16 8x8 split3", _s3()),
         ("odd", "rot2 256x32x16 16x4 split3", _s3(2, rm=16, rn=4)),
         ("odd", "rot2 256x32x16 8x8 split3", _s3(2)),
         ("odd", "rot2 256x32x16 16x4 split3 nobound", _s3(2, rm=16, rn=4, bound=0)),
         ("odd", "rot2 256x32x16 16x4 s3 split3", _s3(2, rm=16, rn=4, stages=3)),
         ("odd", "rot2 256x32x32 8x4 split2 264 b2", _s3(2, tk=32, rn=4, split=2, slots=264,
                                                          bound=2)),
         ("odd", "rot2 256x32x16 8x8 split3 (again)", _s3(2)),
         ("odd", "rot2 256x32x16 16x4 split3 (again)", _s3(2, rm=16, rn=4)),
         ("odd", "session-25 256x32x16 8x8 split3 (again)", _s3()),
         ("1000", "auto", None),
         ("4097", "auto", None)]


def main(argv: list[str]) -> int:
    args = odd25b.argparse.ArgumentParser()
    args.add_argument("--build", default="")
    args.add_argument("--ptxas", action="store_true")
    args.add_argument("--out", default=".")
    args.add_argument("--kernels", default="")
    args.add_argument("--rounds", type=int, default=5)
    args.add_argument("--only", default="", help="comma-separated row labels")
    args.add_argument("--run2", action="store_true", help="run 2's rows (ROWS2)")
    a = args.parse_args(argv)
    rows = [r for r in (ROWS2 if a.run2 else ROWS) if not a.only or r[1] in a.only.split(",")]
    if a.build:
        return odd25b.build(Path(a.build), rows, a.ptxas)
    return odd25b.gpu(Path(a.out), a.rounds, Path(a.kernels) if a.kernels else None, rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
