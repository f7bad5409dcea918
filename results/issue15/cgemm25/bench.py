"""cgemm25: CGEMM (complex64) through liftkit.blas beside cuBLAS (CuPy `matmul`) per call, the
profile's shipped choice and the ctiles-async forms session 25 added to the tuning space:
A's rows swizzled in 16-byte units (rot=3: the two rows of A a warp reads at once, 128 bytes
apart, in different banks, still read by LDS.128; with kt NT's Bᵀ swizzled too), Bᵀ's rows
swizzled alone (rot=2: chunk j of row r at j xor r, 128 registers where the rotation's take 150),
B's elements (NN; with kt TN's Aᵀ's too) owned in consecutive pairs (pair=1: each pair one
LDS.128) and the 128×64 8×4 tiles 32 deep (tk=32: half the tile steps, barriers and copy rounds
per K). The method is cgemm24b's (`../cgemm24b/bench.py`, run
with these cases): every candidate's product (output poisoned with NaN) checked against cuBLAS's
complex64 product of the same operands (max |diff| / max |cuBLAS| ≤ 1e-4), then timed per call
in alternating rounds (a batch of cuBLAS calls, a batch of liftkit calls, between CUDA events;
two passes, forward then backward), each side's median, ratio = cuBLAS time / liftkit time,
complex flops 8mnk; kernels compiled ahead in a pool before anything is timed.

    python3 results/issue15/cgemm25/bench.py --jsonl rows.jsonl [--cases NT:1024,...]
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

T16, T32 = "tm=128,tn=64,tk=16,rm=8,rn=4", "tm=128,tn=64,tk=32,rm=8,rn=4"
# (layout, n, candidates beside the shipped choice: at 1024 ctiles-async 128×64×16 (NT kt rot=1,
# TN kt); at 4096 / 8192 what results/final24 ran: the real plan or ctiles (capped kt rot))
B2 = "bound=2,slots=264"  # __launch_bounds__(256, 2): two blocks per SM at 128 registers
CASES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("NN", 1024, (f"{T16},stages=2,rot=3", f"{T16},stages=2,pair=1", f"{T16},stages=2,rot=3,pair=1",
                  f"{T32},stages=2,rot=3,pair=1", f"{T32},stages=2,pair=1", f"{T32},stages=2",
                  f"{T16},stages=3,rot=3,pair=1", f"{T16},stages=2,rot=3,pair=1,split=2,{B2}")),
    ("NT", 1024, (f"{T16},stages=2,kt=1,rot=3", f"{T16},stages=2,kt=1,rot=2",
                  f"{T32},stages=2,kt=1,rot=3", f"{T16},stages=3,kt=1,rot=3")),
    ("TN", 1024, (f"{T16},stages=2,kt=1,pair=1", f"{T32},stages=2,kt=1,pair=1",
                  f"{T32},stages=2,kt=1", f"{T16},stages=3,kt=1,pair=1")),
    ("NN", 4096, (f"{T16},stages=2,rot=3,pair=1", f"{T16},stages=2,pair=1",
                  f"{T16},stages=2,rot=3,pair=1,{B2}", f"{T32},stages=2,rot=3,pair=1")),
    ("NT", 4096, (f"{T16},stages=2,kt=1,rot=3", f"{T16},stages=2,kt=1,rot=2",
                  f"{T16},stages=2,kt=1,rot=3,{B2}", f"{T16},stages=3,kt=1,rot=3,{B2}",
                  f"{T32},stages=2,kt=1,rot=3")),
    ("TN", 4096, (f"{T16},stages=2,kt=1,pair=1", f"{T32},stages=2,kt=1,pair=1",
                  f"{T16},stages=3,kt=1,pair=1")),
    ("NN", 8192, (f"{T16},stages=2,pair=1", f"{T16},stages=2,rot=3,pair=1,{B2}")),
    ("NT", 8192, (f"{T32},stages=2,kt=1,rot=3", f"{T16},stages=3,kt=1,rot=3,{B2}")),
    ("TN", 8192, (f"{T16},stages=2,kt=1,pair=1", f"{T32},stages=2,kt=1,pair=1")),
)

# run 2 (CGEMM25_SET=2): A's rows swizzled without pairs at 4096 and 8192 (run 1 timed only the
# paired forms there), the capped forms two blocks per SM
RUN2: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("NN", 4096, (f"{T16},stages=2,rot=3", f"{T16},stages=2,rot=3,{B2}",
                  f"{T16},stages=3,rot=3,{B2}")),
    ("NN", 8192, (f"{T16},stages=2,rot=3,{B2}", f"{T16},stages=3,rot=3,{B2}")),
)


def _method():  # type: ignore[no-untyped-def]
    """cgemm24b's bench module (checks, alternating rounds, the pool), to run these cases."""
    path = Path(__file__).resolve().parent.parent / "cgemm24b" / "bench.py"
    spec = importlib.util.spec_from_file_location("cgemm24b_bench", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


if __name__ == "__main__":
    bench = _method()
    bench.CASES = RUN2 if os.environ.get("CGEMM25_SET") == "2" else CASES
    sys.exit(bench.main(sys.argv[1:]))
