"""GEMV T on a CUDA GPU beside cuBLAS (CuPy), session 25, helper H11: the one-kernel tree form
(codelet column-groups-tree) with u rows per step into u private accumulators (u loads in
flight per work-item), the whole column block's rows in one work-group, no sum across
work-groups — cuBLAS's float32 GEMV T at 4096² runs 128 blocks of 32 columns at 128 registers
(gemv25b run 2) — beside the shipped choices (the lastWrg form), at 4096² and 8192²
float32/float64; then per call in alternating rounds: cuBLAS, the best lastWrg kernel (the
profile's), the run's best kernel, the profile's choice.

    python results/issue15/gemv25c/gemv25c.py --out DIR [--set 2]     # on the GPU machine

gemv25b.py's harness and method (gemv25's): kernels compiled ahead; per variant y poisoned with
NaN, two calls (general path, call plan) checked against a float64 product before and after
its timings; kernel = 30 calls queued behind a long product (min of 3); call = 30 calls back to
back (median of 5 batches); the profile's and the best kernel also launched through CuPy alone
("raw"); then each tree kernel's registers on the card (regs.jsonl).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "gemv25b", Path(__file__).resolve().parents[1] / "gemv25b" / "gemv25b.py")
g25b = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(g25b)  # type: ignore[union-attr]


def _last(lanes: int, g: int, w: int, r: int, b: int = 0, u: int = 1) -> str:
    return (f"column-groups-last(lanes={lanes},g={g},w={w},r={r}" + (f",b={b}" if b else "")
            + (f",u={u}" if u > 1 else "") + ")")


def _tree(lanes: int, g: int, w: int, u: int = 1) -> str:
    return f"column-groups-tree(lanes={lanes},g={g},w={w}" + (f",u={u}" if u > 1 else "") + ")"


# (lanes, g, w, u): 32 columns a work-group (128 at 4096: one per multiprocessor, as cuBLAS),
# 16 (256: two on most), 64 at 8192 (128); 256 work-items (the code generator's cap), 128 where
# lanes·g = 128; registers at NVRTC 13 here: u = 4/8/16 of float4 54/78/164. Then the lastWrg
# form with u accumulators (lanes, g, w, r, b, u): u = 2 of the shipped shape stays at 32
# registers (one wave of 1024 groups), u = 4 takes 48 (5 groups a multiprocessor: r halved)
VARIANTS = {
    ("float32", 4096): [_tree(*p) for p in [
        (8, 32, 4, 8), (8, 32, 4, 16), (8, 32, 4, 4), (8, 32, 4, 2), (8, 32, 4, 1),
        (4, 64, 4, 8), (4, 64, 4, 16), (4, 64, 4, 4),
        (16, 16, 2, 8), (16, 16, 2, 16),
        (8, 16, 4, 8), (8, 16, 4, 16),
        (4, 64, 8, 4), (4, 64, 8, 8), (4, 64, 8, 2),
        (2, 128, 8, 2), (2, 128, 8, 4),
        (32, 8, 1, 16), (4, 32, 8, 4), (2, 128, 8, 1)]]
    + [_last(*p) for p in [(16, 16, 4, 16, 0, 2), (16, 16, 4, 8, 0, 4), (8, 32, 4, 4, 0, 4),
                           (8, 32, 4, 8, 8, 2), (16, 16, 4, 4, 0, 4), (32, 8, 4, 16, 0, 4)]],
    ("float64", 4096): [_tree(*p) for p in [
        (8, 32, 4, 4), (8, 32, 4, 2), (8, 32, 4, 8),
        (16, 16, 2, 4), (16, 16, 2, 8),
        (8, 32, 2, 8), (8, 32, 2, 16), (4, 64, 4, 4), (4, 128, 4, 1)]]
    + [_last(*p) for p in [(16, 16, 4, 8, 0, 2), (8, 32, 4, 4, 0, 2)]],
    ("float32", 8192): [_tree(*p) for p in [
        (8, 32, 4, 8), (8, 32, 4, 16), (16, 16, 4, 4), (16, 16, 4, 8),
        (8, 32, 8, 2), (8, 32, 8, 4), (4, 64, 8, 4)]]
    + [_last(*p) for p in [(16, 16, 4, 8, 0, 2), (16, 16, 4, 8, 0, 4)]],
    ("float64", 8192): [_tree(*p) for p in [
        (8, 32, 4, 4), (8, 32, 4, 8), (16, 16, 4, 4), (16, 16, 2, 8), (8, 32, 2, 8)]],
}


# run 2 (for an H100: run 1 came on an H200): run 1's fastest of each case and their
# neighbours, the lastWrg form with u beside the profile's choice (always timed first)
VARIANTS2 = {
    ("float32", 4096): [_tree(*p) for p in [(8, 32, 4, 16), (4, 64, 8, 8), (4, 64, 8, 4),
                                            (4, 64, 4, 8), (8, 16, 4, 16), (2, 128, 8, 2)]]
    + [_last(*p) for p in [(16, 16, 4, 16, 0, 2), (32, 8, 4, 16, 0, 4), (16, 16, 4, 8, 0, 4),
                           # two work-groups of 256 a multiprocessor (90 / 80 registers), each
                           # half of a 32-column block's rows, 8 / 4 float4 / float8 in flight
                           (8, 32, 4, 2, 0, 8), (4, 64, 8, 2, 0, 4)]],
    ("float64", 4096): [_tree(*p) for p in [(8, 32, 4, 8), (4, 64, 4, 4), (8, 32, 2, 8)]]
    + [_last(*p) for p in [(8, 32, 4, 4, 0, 2), (16, 16, 4, 8, 0, 2), (8, 32, 4, 2, 0, 4)]],
    ("float32", 8192): [_tree(*p) for p in [(4, 64, 8, 4), (8, 32, 4, 16)]]
    + [_last(*p) for p in [(16, 16, 4, 8, 0, 2)]],
    ("float64", 8192): [_tree(*p) for p in [(8, 32, 4, 4), (16, 16, 2, 8), (8, 32, 4, 8)]],
}


def main(argv: list[str]) -> int:
    g25b.VARIANTS, g25b.VARIANTS2 = VARIANTS, VARIANTS2
    g25b._cublas_kernels = lambda out_dir: None  # gemv25b run 2 has them
    rc = g25b.main(argv)
    out_dir = Path(argv[argv.index("--out") + 1]) if "--out" in argv else Path(".")
    import cupy  # noqa: F401 - the run's CUDA context
    lists = VARIANTS2 if "--set" in argv and argv[argv.index("--set") + 1] == "2" else VARIANTS
    with open(out_dir / "regs_tree.jsonl", "w") as regs:
        for (dt_name, n), vs in lists.items():
            if n != 4096:
                continue
            vs = [v for v in vs if "tree" in v or "u=" in v]
            from liftkit.blas.codelets import Kind, lookup_variant
            for v in vs:
                vtext = str(lookup_variant(Kind("gemv", dt_name, "T"), v))
                try:
                    row = g25b._registers(cupy, dt_name, vtext)
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"registers of {vtext}: {type(err).__name__}", flush=True)
                    continue
                regs.write(json.dumps(row) + "\n")
                print(f"{dt_name:8s} {vtext:48s} {row['regs']:3d} registers, "
                      f"{row['local_bytes']} B local", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
