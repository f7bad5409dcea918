"""CGEMM at odd sizes on the guarded complex tiles with A's rows swizzled (rot=3), session 26
(helper H2): oddc25.py's method and timer on this session's rows.

    python results/issue15/oddc26/oddc26.py --build kernels.pkl [--ptxas]   # no GPU: derive + NVRTC
    python results/issue15/oddc26/oddc26.py --out DIR [--kernels kernels.pkl] [--rounds 5]

Rows (complex64 NN; each row's variant put in the in-memory profile as an entry at its very
sizes, what `ship.py` writes for a winner; the plan's kernel checked to be the row's; C poisoned
with NaN and checked against cuBLAS after the first call and after the timing; 5 alternating
rounds beside cuBLAS per call, medians):

- 1023×1025×999: the shipped entry (128×32 tiles, 4×4 accumulators), the same with A's rows
  swizzled in 16-byte units (rot=3: a warp of 8 × 4 work-items reads 4 rows of A at one K
  offset, 128 bytes apart, the same banks without it), the same three stages deep, 128×32 8×4
  rot=3, 256×32 8×4 (132 tiles: one block on every SM) with and without rot=3 (and three
  stages), 256×32 rot=3 split in 2 along K under the 2-blocks cap (264 halves), 128×32 4×4
  rot=3 split in 2 under a 4-blocks cap (528 halves).
- 1000³: the shipped entry (128×64 split 2 @264 bound 2), the same with rot=3, 128×32 4×4
  rot=3 (256 tiles), 256×32 8×4 rot=3 (128 tiles).
- 4097×4095×4095: the shipped plan (`real`), 128×64 rot=3 capped at 2 blocks (2112 tiles
  are 8 waves of 264), 128×32 4×4 rot=3.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _oddc25():
    spec = importlib.util.spec_from_file_location("oddc25", HERE.parent / "oddc25" / "oddc25.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    mod.SIZES["big"] = (4097, 4095, 4095)
    return mod


def _e(**kw: int) -> tuple[str, dict]:
    return ("edge-ctiles-async", {"tk": 16, "stages": 2, **kw})


T32 = dict(tm=128, tn=32)
T256 = dict(tm=256, tn=32, rm=8, rn=4)
T64 = dict(tm=128, tn=64, rm=8, rn=4)
CAP2 = dict(slots=264, bound=2)
ROWS = [("complex64", "odd", *r) for r in [
    ("shipped 128x32 4x4", _e(**T32, rm=4, rn=4), ""),
    ("128x32 4x4 rot3", _e(**T32, rm=4, rn=4, rot=3), ""),
    ("128x32 4x4 rot3 s3", _e(**T32, rm=4, rn=4, rot=3, stages=3), ""),
    ("128x32 8x4 rot3", _e(**T32, rm=8, rn=4, rot=3), ""),
    ("256x32 8x4", _e(**T256), ""),
    ("256x32 8x4 rot3", _e(**T256, rot=3), ""),
    ("256x32 8x4 rot3 s3", _e(**T256, rot=3, stages=3), ""),
    ("256x32 rot3 split2 b2", _e(**T256, rot=3, split=2, **CAP2), ""),
    ("128x32 4x4 rot3 split2 b4", _e(**T32, rm=4, rn=4, rot=3, split=2, slots=528, bound=4), ""),
]] + [("complex64", "1000", *r) for r in [
    ("shipped 128x64 split2 b2", _e(**T64, split=2, **CAP2), ""),
    ("128x64 rot3 split2 b2", _e(**T64, rot=3, split=2, **CAP2), ""),
    ("128x32 4x4 rot3", _e(**T32, rm=4, rn=4, rot=3), ""),
    ("256x32 8x4 rot3", _e(**T256, rot=3), ""),
]] + [("complex64", "big", *r) for r in [
    ("shipped (real)", None, ""),
    ("128x64 rot3 b2", _e(**T64, rot=3, **CAP2), ""),
    ("128x32 4x4 rot3", _e(**T32, rm=4, rn=4, rot=3), ""),
]]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="")
    p.add_argument("--out", default=".")
    p.add_argument("--kernels", default="")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    o = _oddc25()
    if args.build:
        return o.build(Path(args.build), ROWS)
    rc = o.gpu(Path(args.out), args.rounds, Path(args.kernels) if args.kernels else None, "",
               ROWS)
    src = Path(args.out) / "oddc25.json"
    if src.exists():
        src.rename(Path(args.out) / "oddc26.json")
        (Path(args.out) / "oddc25.log").rename(Path(args.out) / "oddc26.log")
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
