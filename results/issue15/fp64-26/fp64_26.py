"""DGEMM on the FP64 tensor cores through liftkit.blas beside cuBLAS (CuPy), one process (issue
15, session 26, helper H4): the operands copied as k rows (A of TN, B of NN and TN) kept in
blocks of 4 rows (`mma(…, lines=2)`, rules/cuda.py `blocked_position`: every fragment read a
lane offset plus a constant, no rotation to compute per read) against the shipped rotated rows
(lines=1), at TN 1024/2048/4096/8192 and NN 1024/4096/8192; and CGEMM TN (complex FFMA tiles,
`ctiles-async` kt) capped at two blocks per multiprocessor (`bound=2,slots=264`: 126 registers
instead of 143 under NVRTC 13.0) at 1024/4096/8192, NN 1024 capped.

    python3 results/issue15/fp64-26/fp64_26.py [--set 1|2] [--rounds 7] [--dry] [--only TN] [--jsonl FILE]

A row is forced through the profile as a tuning run would leave it: an entry at the row's very
sizes (`Profile.at_sizes`), "profile" rows change nothing. Each kernel is built ahead by NVRTC in
worker processes (registers, spill bytes from ptxas); each row: C poisoned with NaN, one call,
max |C - ref| / max |ref| < 1e-12 against cuBLAS's product of the same operands (checked again
after the timing); then alternating rounds (cuBLAS, liftkit) of per call timing (`repeat` calls
between CUDA events, median of `batches` batches; fewer where a call takes milliseconds) and the
device work (calls queued behind a long product), as results/issue15/fp64-25b measures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))

TOL = {"float64": 1e-12, "complex64": 1e-5}
PROFILE = "profile"
# (calls per batch, batches, rounds) by n
TIMING = {1024: (20, 5, 7), 2048: (10, 5, 7), 4096: (5, 3, 9), 8192: (2, 3, 3)}


def _m(tm: int, tn: int, w: int, s: int, lines: int = 2, **extra: int) -> str:
    more = "".join(f",{k}={v}" for k, v in extra.items())
    return f"mma(tm={tm},tn={tn},tk=16,warps={w},staged={s},lines={lines},ik=8,ahead=2{more})"


CT = "ctiles-async(kt=1,rm=8,rn=4,stages=2,tk=16,tm=128,tn=64"
CAP = ",bound=2,slots=264"
ROWS: list[tuple[str, int, list[str]]] = [
    ("TN", 1024, [PROFILE, _m(64, 64, 4, 4), _m(64, 64, 4, 3), _m(128, 64, 8, 4), _m(128, 64, 8, 3),
                  _m(64, 128, 8, 4), _m(128, 64, 4, 4, group=8), _m(128, 64, 4, 3, group=4)]),
    ("NN", 1024, [PROFILE, _m(128, 64, 4, 3, group=4), _m(128, 64, 4, 4, group=4),
                  _m(128, 64, 8, 4), _m(64, 64, 4, 4)]),
    ("TN", 2048, [PROFILE, _m(64, 64, 4, 4), _m(128, 64, 8, 4), _m(128, 64, 4, 4, group=8),
                  _m(128, 64, 4, 3, group=4)]),
    ("TN", 4096, [PROFILE, _m(128, 64, 4, 4, 1, group=8), _m(128, 64, 4, 4, group=8),
                  _m(128, 64, 4, 4, group=4), _m(128, 64, 4, 3, group=4), _m(128, 64, 8, 4),
                  _m(128, 64, 8, 3)]),
    ("NN", 4096, [PROFILE, _m(128, 64, 4, 4, group=4), _m(128, 64, 4, 3, group=4)]),
    ("TN", 8192, [PROFILE, _m(128, 64, 4, 4, group=8), _m(128, 64, 4, 3, group=4)]),
    ("NN", 8192, [PROFILE, _m(128, 64, 4, 4, group=4)]),
    ("cTN", 1024, [PROFILE, CT + CAP + ")", CT.replace("stages=2", "stages=3") + CAP + ")"]),
    ("cNN", 1024, [PROFILE, "ctiles-async(rm=8,rn=4,rot=3,stages=2,tk=16,tm=128,tn=64" + CAP + ")"]),
    ("cTN", 4096, [PROFILE, CT + CAP + ")", CT.replace("stages=2", "stages=3") + CAP + ")"]),
    ("cTN", 8192, [PROFILE, CT + CAP + ")"]),
]


# run 2 (`--set 2`): k rows with their 128-byte segments rotated (lines=3) beside run 1's
# winners (NN: B in blocks of 4, lines=2, on 8 warps), the profile's choices again; every round
# alternates which side runs first (a clock that drifts under sustained FP64 load weighs on both)
ROWS2: list[tuple[str, int, list[str]]] = [
    ("TN", 1024, [PROFILE, _m(64, 64, 4, 4, 3), _m(64, 64, 4, 3, 3), _m(128, 64, 8, 4, 3),
                  _m(128, 64, 8, 3, 3), _m(64, 128, 8, 4, 3), _m(128, 64, 4, 4, 3, group=8)]),
    ("NN", 1024, [PROFILE, _m(128, 64, 8, 4), _m(128, 64, 8, 3), _m(128, 64, 8, 4, 3),
                  _m(64, 64, 4, 4, 3), _m(128, 64, 4, 3, 3, group=4)]),
    ("TN", 2048, [PROFILE, _m(64, 64, 4, 4, 3), _m(128, 64, 8, 3, 3), _m(128, 64, 4, 4, 3, group=8)]),
    ("NN", 2048, [PROFILE, _m(128, 64, 8, 4), _m(128, 64, 8, 4, 3)]),
    ("TN", 4096, [PROFILE, _m(128, 64, 4, 4, 3, group=8), _m(128, 64, 4, 3, 3, group=4),
                  _m(128, 64, 8, 3, 3)]),
    ("NN", 4096, [PROFILE, _m(128, 64, 4, 4, 3, group=4), _m(128, 64, 4, 3, group=4),
                  _m(128, 64, 8, 4)]),
    ("TN", 8192, [PROFILE, _m(128, 64, 4, 4, 3, group=8)]),
    ("NN", 8192, [PROFILE, _m(128, 64, 4, 4, 3, group=4), _m(128, 64, 8, 4)]),
    ("cNN", 1024, [PROFILE, "ctiles-async(rm=8,rn=4,rot=3,stages=2,tk=16,tm=128,tn=64" + CAP + ")"]),
]
SETS = {1: ROWS, 2: ROWS2}


def _kind(lay: str) -> Any:
    """The GEMM kind of a row's layout ("cTN": complex64 TN, else float64)."""
    from liftkit.blas.codelets import Kind

    return Kind("mm", "complex64", lay[1:]) if lay.startswith("c") else Kind("mm", "float64", lay)


def _jobs(rows: list[tuple[str, int, list[str]]], only: str = "") -> list[tuple[str, str]]:
    out = [(lay, v) for lay, _, vs in rows for v in vs if v != PROFILE and lay.startswith(only)]
    return list(dict.fromkeys(out))


def _build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker process: one variant's CUDA C, NVRTC's cubin and ptxas's report."""
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import derive, lookup_variant
    from liftkit.codegen import CompileOptions, compile_program

    lay, text, arch = job
    try:
        kind = _kind(lay)
        (k,) = compile_program(derive(kind, lookup_variant(kind, text)).final,
                               CompileOptions(dialect="cuda")).kernels
        o = compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name="k.cu")
        regs = re.findall(r"Used (\d+) registers", o.log or "")
        spill = re.findall(r"(\d+) bytes spill stores", o.log or "")
        return {"job": (lay, text), "source": k.source, "options": list(k.build_options),
                "cubin": o.cubin, "regs": int(regs[0]) if regs else -1,
                "spill": int(spill[0]) if spill else -1}
    except Exception as err:  # noqa: BLE001 - reported, the session builds it again
        return {"job": (lay, text), "error": f"{type(err).__name__}: {err}"[:300]}


def _prebuild(jobs: list[tuple[str, str]], arch: str, cache: Any
              ) -> dict[tuple[str, str], tuple[int, int]]:
    """Every kernel built by NVRTC in spawned workers; with `cache` (ModuleCache, device) each
    cubin stored under the key the session's kernel store looks up. (registers, spill bytes)."""
    import concurrent.futures as cf
    import multiprocessing

    out = {}
    with cf.ProcessPoolExecutor(min(len(jobs), max(1, (os.cpu_count() or 2) - 2)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(_build, [(lay, t, arch) for lay, t in jobs]):
            if "error" in r:
                print(f"prebuild {r['job']}: {r['error']}", flush=True)
                continue
            if cache is not None:
                cache[0].put(cache[1], r["source"], r["options"], r["cubin"])
            out[r["job"]] = (r["regs"], r["spill"])
    return out


def force(s: Any, lay: str, sizes: dict[str, int], body: str) -> None:
    """The session's profile as shipped, with the row's entry at its sizes (the docstring)."""
    from liftkit.blas.codelets import lookup_variant
    from liftkit.blas.profile import Entry, size_class

    kind = _kind(lay)
    s.profile.entries = list(s.h4_shipped)
    if body != PROFILE:
        s.profile.entries = [e for e in s.h4_shipped
                             if not (e.kind == kind and dict(e.sizes) == dict(sizes))]
        s.profile.add([Entry(kind, size_class("mm", sizes), dict(sizes),
                             lookup_variant(kind, body), 1.0, 1e9)])
    s.forget_choices()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=0, help="alternating rounds (0: by size)")
    p.add_argument("--only", default="", help="layouts starting so (TN, NN)")
    p.add_argument("--max-n", type=int, default=8192)
    p.add_argument("--set", type=int, default=1, choices=sorted(SETS), help="run 1's rows or run 2's")
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "fp64_26.jsonl"))
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every kernel "
                   "here (no GPU), print registers and spills, and stop")
    a = p.parse_args(argv)
    if a.dry:
        for (klay, text), (regs, spill) in _prebuild(_jobs(SETS[a.set], a.only), "sm_90a", None).items():
            print(f"{klay} {text:90s} regs {regs} spill {spill}", flush=True)
        return 0

    import cupy as cp

    from blas_cuda import _kernel_and_host, _rand_gpu, _time
    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.codelets import lookup_variant

    device = list_devices()[0]
    t0 = time.time()
    attrs = _prebuild(_jobs(SETS[a.set], a.only), arch_for(device.compute_capability), (ModuleCache(), device))
    print(f"built {len(attrs)} kernels in {time.time() - t0:.1f} s", flush=True)
    canon = {(lay, str(lookup_variant(_kind(lay), text))): ra
             for (lay, text), ra in attrs.items()}
    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    if s.profile is None:  # another card (an H200): the shipped H100 profile's entries
        from liftkit.blas.profile import Profile

        s.profile = Profile.load(next(
            f for f in (Path(__import__("liftkit.blas").blas.__file__).parent / "profiles").glob("*.json")
            if "cuda|NVIDIA H100" in f.read_text()[:400]))
        print(f"no profile for {s.device.label}: the H100 profile's entries", flush=True)
    s.h4_shipped = list(s.profile.entries)
    print(f"liftkit.blas on {s.device.label} ({s.backend})", flush=True)
    out = open(a.jsonl, "a")
    table = []
    for lay, n, variants in SETS[a.set]:
        if not lay.startswith(a.only) or n > a.max_n:
            continue
        kind = _kind(lay)
        dt, tol = np.dtype(kind.dtype), TOL[kind.dtype]
        m = k = n
        repeat, batches, rounds = TIMING[n]
        rounds = a.rounds or rounds
        ta, tb = kind.layout[0] == "T", kind.layout[1] == "T"
        sizes = {"M": m, "N": n, "K": k}
        A = _rand_gpu(cp, (k, m) if ta else (m, k), dt)
        B = _rand_gpu(cp, (n, k) if tb else (k, n), dt)
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C, ref = cp.full((m, n), np.nan, dtype=dt), cp.empty((m, n), dtype=dt)
        cp.matmul(opA, opB, out=ref)
        scale = float(cp.max(cp.abs(ref)))
        size = f"{lay} {n}"
        for body in variants:
            force(s, lay, sizes, body)

            def check() -> float:
                C.fill(np.nan)
                s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                return float(cp.max(cp.abs(C - ref))) / scale

            try:
                err = check()
                gp = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{size} {body}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            built = getattr(gp, "built", None)
            ran = str(built.variant) if built is not None else type(gp).__name__
            if not err < tol:
                print(f"{size} {body} ran {ran}: WRONG (max rel error {err:.1e})", flush=True)
                table.append((size, body, ran, None))
                continue
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            blas = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            pairs = []
            for i in range(rounds):  # run 2: the side that runs first alternates
                if a.set > 1 and i % 2:
                    lk = _time(cp, call, repeat, batches)
                    pairs.append((_time(cp, blas, repeat, batches), lk))
                else:
                    pairs.append((_time(cp, blas, repeat, batches), _time(cp, call, repeat, batches)))
            t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
            err2 = check()
            ratios = sorted(r / lk for r, lk in pairs)
            regs, spill = canon.get((lay, ran), (-1, -1))
            row = {"layout": lay, "size": [m, n, k], "variant": body, "ran": ran, "err": err,
                   "err_after": err2, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "cublas_median_s": statistics.median(q[0] for q in pairs),
                   "call_median_s": statistics.median(q[1] for q in pairs), "kernel_s": t_k,
                   "host_us": t_h * 1e6, "regs": regs, "spill": spill, "device": s.device.label,
                   "timing": [repeat, batches, rounds]}
            row["kernel_ratio"] = row["cublas_median_s"] / t_k
            out.write(json.dumps(row) + "\n")
            out.flush()
            table.append((size, body, ran, row))
            print(f"  {size} {body} [{ran}]: x{row['ratio_median']:.3f} ({row['ratio_min']:.3f}-"
                  f"{row['ratio_max']:.3f}) cuBLAS {row['cublas_median_s'] * 1e6:.1f} us liftkit "
                  f"{row['call_median_s'] * 1e6:.1f} us device {t_k * 1e6:.1f} us "
                  f"x{row['kernel_ratio']:.3f} regs {regs} spill {spill} err {err:.1e}/{err2:.1e}",
                  flush=True)
        del A, B, C, ref, opA, opB
        cp.get_default_memory_pool().free_all_blocks()
    out.close()
    print(f"\ndevice: {s.device.label}; alternating rounds (cuBLAS, liftkit), per call: "
          "x cuBLAS (spread), cuBLAS us, liftkit us, device us, regs, spill")
    for size, body, ran, r in table:
        if r is None:
            print(f"{size:10} WRONG {body} [{ran}]")
            continue
        print(f"{size:10} {r['ratio_median']:6.3f} {r['ratio_min']:.3f}-{r['ratio_max']:.3f} "
              f"{r['cublas_median_s'] * 1e6:8.1f} {r['call_median_s'] * 1e6:8.1f} "
              f"{r['kernel_s'] * 1e6:8.1f} {r['regs']:>4} {r['spill']:>4}  {body} [{ran}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
